"""The columns a source line takes in a terminal, which the caret line under it must match."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from pedrag.compiler.reports.text import _width


def _columns(text: str) -> int:
    # Written apart from the module: a tab is four columns, a wide (W, F) character two, a
    # combining mark none, anything else one.
    widths = {"W": 2, "F": 2}
    return sum(
        4
        if char == "\t"
        else 0
        if unicodedata.combining(char)
        else widths.get(unicodedata.east_asian_width(char), 1)
        for char in text
    )


def test_tabs_wide_characters_and_combining_marks() -> None:
    assert _width('when: "a > 1"') == 13
    assert _width("\twhen") == 8
    assert _width("日本") == 4
    assert _width("e\u0301t\u00e9") == 3


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=40))
def test_any_line_takes_the_columns_a_terminal_gives_it(text: str) -> None:
    assert _width(text) == _columns(text)
