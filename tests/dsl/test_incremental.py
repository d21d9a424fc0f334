"""The front end spliced from a file's previous version (`pedrag.dsl.incremental`) is the
front end `load_bytes` gives the new bytes: the same resolved theory, model, positions,
source lines and spans inside every condition, for random edits of one rule's condition,
and it declines every edit it cannot be sure of."""

from __future__ import annotations

import random
import sys
from pathlib import Path

from pedrag.dsl import ast
from pedrag.dsl.incremental import splice_condition_edit
from pedrag.dsl.loader import LoadedFile, load_bytes

ROOT = Path(__file__).resolve().parents[2]


def _generated(rules: int) -> str:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from theory_gen import generate

    return generate(rules, 7, "weighted")


def _same(spliced: LoadedFile, full: LoadedFile) -> None:
    assert spliced.theory == full.theory
    assert spliced.model == full.model
    assert spliced.diagnostics == full.diagnostics == []
    assert spliced.source.text == full.source.text
    assert spliced.source._line_starts == full.source._line_starts
    assert spliced.positions is not None and full.positions is not None
    assert spliced.positions.values == full.positions.values
    assert spliced.positions.keys == full.positions.keys
    assert spliced.positions.scalars == full.positions.scalars
    assert spliced.theory is not None and full.theory is not None
    for mine, theirs in zip(spliced.theory.rules, full.theory.rules, strict=True):
        for node in ast.walk(mine.when.expr):
            assert mine.when.node_span(node) == theirs.when.node_span(node)
        assert mine.when.scalar is not None and theirs.when.scalar is not None
        assert mine.when.scalar.source is spliced.source  # no part of the previous text kept
        assert (mine.when.scalar.start, mine.when.scalar._offsets) == (
            theirs.when.scalar.start,
            theirs.when.scalar._offsets,
        )


def test_a_spliced_condition_edit_gives_the_whole_front_ends_result() -> None:
    text = _generated(120)
    previous = load_bytes(text.encode("utf-8"), "g.yaml")
    lines = text.split("\n")
    rules = [i for i, line in enumerate(lines) if line.startswith("  - {id: r")]
    rng = random.Random(5)
    spliced = 0
    for trial in range(40):
        index = rng.choice(rules)
        line = lines[index]
        start = line.index('when: "') + len('when: "')
        end = line.index('"', start)
        condition = line[start:end]
        new = rng.choice(
            [
                f"frustration >= 0.{trial:02d}1 and {condition}",
                condition.replace(" and ", " or ", 1)
                if " and " in condition
                else "not exam_active",
                f"({condition})",
                "frustration >= 0.5 and frustration < 0.2",
                "engagement < 0.3",
            ]
        )
        edited = [*lines[:index], line[:start] + new + line[end:], *lines[index + 1 :]]
        raw = "\n".join(edited).encode("utf-8")
        if trial % 2 and previous.theory is not None:  # offsets already aligned move too
            for rule in previous.theory.rules:
                assert rule.when.scalar is not None and rule.when.scalar._offsets
        made = splice_condition_edit(previous, raw)
        previous = load_bytes(text.encode("utf-8"), "g.yaml")  # the splice used it up
        assert made is not None, new
        _same(made, load_bytes(raw, "g.yaml"))
        spliced += 1
    assert spliced == 40


def test_edits_it_cannot_be_sure_of_are_declined() -> None:
    text = _generated(30)
    previous = load_bytes(text.encode("utf-8"), "g.yaml")
    first = text.index('when: "') + len('when: "')
    declined = {
        "a syntax error": text[:first] + "frustration >" + text[first + 30 :],
        "an unknown name": text[:first] + "nosuch > 1 and " + text[first:],
        "an escape": text[:first] + "\\u0066rustration > 0.1 and " + text[first:],
        "another line": text.replace("a0: {rung: H0", "a0: {rung: H1", 1),
        "a line break": text[:first] + "frustration > 0.1\n  and " + text[first:],
        "the quote": text[: first - 1] + "'" + text[first:],
        "no change": text,
        "two rules": text.replace(" and ", " or ", 2),
    }
    for name, edited in declined.items():
        assert edited != text or name == "no change"
        assert splice_condition_edit(previous, edited.encode("utf-8")) is None, name
