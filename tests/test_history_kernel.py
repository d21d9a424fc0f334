"""History functions and exact arithmetic live in the kernel only (pedrag.kernel.history,
pedrag.kernel.exact): the front end, the compiler and the runtime call them, none keeps a copy."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pedrag.kernel import history
from pedrag.kernel.exact import decimal_fraction, exact

ROOT = Path(__file__).resolve().parent.parent

# A second copy of the rules would show as one of these outside the kernel's two modules.
_COPIES = re.compile(
    r"""Fraction\((?:str|repr)\("""  # reading a float by its decimal text
    r"""|^\s*def\s+(?:trend|mean|delta|count|streak)\s*\("""  # a history function's value
    r"""|\bfunc\w*\s*(?:==|!=|\bin\b|\bnot in\b)\s*[(\[{]?\s*["']"""  # dispatch on its name
    r"""|["'](?:trend|streak)["']"""  # the names spelled out (`count`, `delta` and `mean` are
    # ordinary words elsewhere: a writer's `count`, a stream's `delta`)
    r"""|\bHISTORY_FUNCTIONS\s*="""
)


def test_history_functions_and_exact_arithmetic_are_written_only_in_the_kernel() -> None:
    offenders = []
    for folder in ("dsl", "compiler", "runtime", "kernel", "extract", "pedrag"):
        for path in sorted((ROOT / folder).glob("**/*.py")):
            where = path.relative_to(ROOT)
            if folder == "kernel" and path.name in ("history.py", "exact.py"):
                continue  # the one place
            if (
                folder == "pedrag"
                and path.parent.name != "pedrag"
                and not ({"commands", "lsp"} & set(path.parts))
            ):
                continue  # the stage symlinks are walked under their own names
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if _COPIES.search(line) and not line.lstrip().startswith("#"):
                    offenders.append(f"{where}:{number}: {line.strip()}")
    assert not offenders, offenders


def test_the_grep_finds_the_copies_it_is_meant_to_find() -> None:
    """The pattern above is not vacuous: each former copy's shape matches."""
    for line in (
        "    return Fraction(str(value)) if isinstance(value, float) else Fraction(value)",
        "def trend(values: Sequence[float]) -> float:",
        '        if func in ("count", "streak"):',
        '    if func == "delta":',
        '        if node.func in ("count", "streak"):',
        'HISTORY_FUNCTIONS = ("trend", "mean", "delta", "count", "streak")',
    ):
        assert _COPIES.search(line), line


def test_the_table_names_each_function_once_with_its_argument_kind() -> None:
    assert history.NAMES == ("trend", "mean", "delta", "count", "streak")
    assert [history.reads_condition(n) for n in history.NAMES] == [False] * 3 + [True] * 2
    assert history.function("count").signature() == "count(cond, turns)"
    assert history.function("mean").example() == "mean(frustration, 3)"
    with pytest.raises(history.HistoryError, match="unknown history function 'avg'"):
        history.function("avg")
    with pytest.raises(history.HistoryError, match="reads a metric"):
        history.value_range("delta", 3)


def test_exact_reads_a_float_as_the_decimal_it_prints_as() -> None:
    assert decimal_fraction(0.1) + decimal_fraction(0.2) == decimal_fraction(0.3)
    assert decimal_fraction(0.1) != Fraction(0.1)  # not the binary value
    assert decimal_fraction(3) == 3 and decimal_fraction(Fraction(1, 3)) == Fraction(1, 3)
    assert exact(0.7) == Fraction(7, 10)
    assert exact(True) is True and exact("calm") == "calm"  # only numbers are read


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.integers(0, 4), min_size=1, max_size=8),
    window=st.integers(1, 6),
)
def test_every_value_lies_in_the_range_the_front_end_and_compiler_give_it(
    values: list[int], window: int
) -> None:
    rows = [{"n": v} for v in values]
    for name in history.NAMES:
        function = history.function(name)
        if function.reads_condition:
            value = function.value(lambda rows, i: rows[i]["n"] >= 2, rows, window)
        else:
            value = function.value(rows, "n", 0, window)
        low, high, integer = history.value_range(name, window, 0, 4, True)
        assert low - 1e-9 <= value <= high + 1e-9, (name, values, window, value)
        assert not integer or value == int(value)
        needed = history.rows_needed(name, window)
        assert needed >= window
