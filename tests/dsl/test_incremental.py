"""The front end spliced from a file's previous version (`pedrag.dsl.incremental`) is the
front end `load_bytes` gives the new bytes: the same resolved theory, model, positions,
source lines and spans inside every condition, for random edits of one rule's condition,
id, action, priority or weight, and it declines every edit it cannot be sure of."""

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
        assert mine.when.reads == theirs.when.reads == ast.metric_names(mine.when.expr)
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


def _with_scalars(rules: int) -> str:
    """A generated theory whose rules also give `priority:` (int) and `weight:` (every other
    rule an int, the rest a decimal)."""
    lines = _generated(rules).split("\n")
    for i, line in enumerate(lines):
        if line.startswith("  - {id: r") and line.endswith("}"):
            weight = "2" if i % 2 else "1.5"
            lines[i] = line[:-1] + f", priority: {i % 10 + 1}, weight: {weight}}}"
    return "\n".join(lines)


def _replaced(line: str, key: str, new: str) -> str:
    start = line.index(f"{key}: ") + len(key) + 2
    end = min(i for i in (line.find(",", start), line.find("}", start)) if i >= 0)
    return line[:start] + new + line[end:]


def test_a_spliced_scalar_edit_gives_the_whole_front_ends_result() -> None:
    text = _with_scalars(120)
    lines = text.split("\n")
    rules = [i for i, line in enumerate(lines) if line.startswith("  - {id: r")]
    rng = random.Random(11)
    kinds: dict[str, int] = {}
    for trial in range(40):
        index = rng.choice(rules)
        line = lines[index]
        weight = line[line.index("weight: ") + 8 : -1]
        key, new = rng.choice(
            [
                ("id", f"renamed_{trial}"),
                ("id", f"r{trial}x"),
                ("then", f"a{rng.randrange(30)}"),
                ("priority", str(rng.randint(1, 10))),
                ("weight", str(rng.randint(1, 9)) if "." not in weight else f"{trial}.25"),
            ]
        )
        if new == line[line.index(f"{key}: ") + len(key) + 2 :].split(",")[0].rstrip("}"):
            continue
        edited = [*lines[:index], _replaced(line, key, new), *lines[index + 1 :]]
        raw = "\n".join(edited).encode("utf-8")
        previous = load_bytes(text.encode("utf-8"), "g.yaml")
        made = splice_condition_edit(previous, raw)
        assert made is not None, (key, new)
        _same(made, load_bytes(raw, "g.yaml"))
        kinds[key] = kinds.get(key, 0) + 1
    assert set(kinds) == {"id", "then", "priority", "weight"} and sum(kinds.values()) >= 30


def test_scalar_edits_it_cannot_be_sure_of_are_declined() -> None:
    text = _with_scalars(30)
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("  - {id: r1,"))
    line = lines[at]

    def edit(key: str, new: str) -> str:
        return "\n".join([*lines[:at], _replaced(line, key, new), *lines[at + 1 :]])

    declined = {
        "a duplicate id": edit("id", "r2"),
        "an unknown action": edit("then", "nosuch"),
        "an id not lower_snake_case": edit("id", "R1"),
        "a priority out of range": edit("priority", "11"),
        "a weight of zero": edit("weight", "0.0"),
        "an int weight made a decimal": edit("weight", "2.5" if "2}" in line else "2"),
        "an action read as a bool": edit("then", "yes"),
        "an action read as null": edit("then", "null"),
        "a priority read as text": edit("priority", "high"),
        "a priority in octal": edit("priority", "010"),
        "a quoted action": edit("then", '"a2"'),
        "an anchor": edit("then", "&x a2"),
        "a tag": edit("then", "!!str a2"),
        "a comment": text.replace(line, line + "  # new", 1),
        "a comment after a value": edit("then", "a2 # x"),
        "two values": edit("then", "a2, priority: 3"),
    }
    aliased = text.replace("then: a", "then: &t a", 1).replace(line, _replaced(line, "then", "*t"))
    assert load_bytes(aliased.encode("utf-8"), "g.yaml").diagnostics == []
    first = next(i for i, x in enumerate(aliased.split("\n")) if x.startswith("  - {id: r0,"))
    target = aliased.split("\n")[first]
    for name, edited in declined.items():
        assert edited != text, name
        previous = load_bytes(text.encode("utf-8"), "g.yaml")
        assert splice_condition_edit(previous, edited.encode("utf-8")) is None, name
    previous = load_bytes(aliased.encode("utf-8"), "g.yaml")
    edited = aliased.replace(target, target.replace("&t a", "&t a2", 1), 1)
    assert edited != aliased
    assert splice_condition_edit(previous, edited.encode("utf-8")) is None, "an alias's target"


def test_an_edit_with_another_rule_after_it_on_its_line_is_declined() -> None:
    """The other rule's spans (columns) move with the edit: the whole front end runs."""
    text = _generated(2)
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("  - {id: r0,"))
    joined = "rules: [" + lines[at][4:] + ", " + lines[at + 1][4:] + "]"
    text = "\n".join([*lines[: at - 1], joined, *lines[at + 2 :]])
    assert load_bytes(text.encode("utf-8"), "g.yaml").diagnostics == []
    for edited in (
        text.replace('when: "', 'when: "engagement < 0.3 and ', 1),
        text.replace("then: a", "then: a2", 1),
        text.replace("id: r0,", "id: renamed,", 1),
    ):
        assert edited != text
        previous = load_bytes(text.encode("utf-8"), "g.yaml")
        assert splice_condition_edit(previous, edited.encode("utf-8")) is None, edited
