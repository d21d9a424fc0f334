"""The hint ladder's rungs have one spelling, one parser and one comparison (pedrag.kernel.rungs)."""

from __future__ import annotations

import pytest

from pedrag.kernel.rungs import (
    LADDER,
    RUNGS,
    RungError,
    allows_code,
    is_rung_name,
    parse_rung,
    rung_name,
)
from pedrag.kernel.selection import eligible_under


def test_names_and_parsing_round_trip() -> None:
    assert [rung_name(i) for i in range(RUNGS)] == list(LADDER)
    for level in range(RUNGS):
        assert parse_rung(rung_name(level)) == level
        assert parse_rung(level) == level
        assert parse_rung(f" h{level} ") == level  # a model's JSON may carry it loosely


@pytest.mark.parametrize("bad", ["H8", "H-1", "H", "HH3", "3.0", "", 8, -1, True])
def test_anything_else_is_a_rung_error(bad: object) -> None:
    with pytest.raises(RungError):
        parse_rung(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):  # a RungError is still a ValueError for older callers
        parse_rung(bad)  # type: ignore[arg-type]


def test_the_condition_language_reads_only_exact_names() -> None:
    assert is_rung_name("H0") and is_rung_name("H7")
    assert not any(is_rung_name(t) for t in ("h3", "H8", "H03", " H3", "3"))
    with pytest.raises(RungError):
        rung_name(8)


def test_code_is_allowed_from_the_worked_example_up() -> None:
    assert [allows_code(i) for i in range(RUNGS)] == [False] * 5 + [True] * 3


def test_eligibility_is_rung_at_or_below_the_ceiling() -> None:
    assert all(
        eligible_under(rung, ceiling) == (rung <= ceiling)
        for rung in range(RUNGS)
        for ceiling in range(RUNGS)
    )
