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


def test_rungs_are_spelled_and_compared_only_in_the_kernel() -> None:
    """No module formats a rung by hand (`f"H{...}"`) or strips the `H` to parse one: the
    kernel's rung module is the one place, and `kernel.selection.eligible_under` the one
    comparison with a ceiling (evaluate/ is exempt on purpose: the evaluator
    shares no code with the tutor)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    by_hand = re.compile(
        r"""f["'][^"']*(?<![A-Za-z_])H\{|\.lstrip\(["']H["']\)|\brung\s*<=\s*ceiling\b"""
        r"""|<=\s*contract\.ceiling\b"""
    )
    known: set[tuple[str, str]] = set()  # none left; a new entry needs a reason
    offenders = []
    for folder in ("dsl", "compiler", "runtime", "kernel", "extract", "pedrag"):
        for path in sorted((root / folder).glob("**/*.py")):
            if path.parent.name == "kernel" and path.name in ("rungs.py", "selection.py"):
                continue  # the rung module, and eligibility (`eligible_under`) itself
            if (
                folder == "pedrag"
                and path.parent.name != "pedrag"
                and "commands" not in path.parts
                and "lsp" not in path.parts
            ):
                continue  # the stage symlinks are walked under their own names
            where = str(path.relative_to(root))
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if any(where == file and text in line for file, text in known):
                    continue
                if by_hand.search(line) and not line.lstrip().startswith(("#", '"""')):
                    offenders.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    assert not offenders, offenders
