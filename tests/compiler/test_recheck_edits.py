"""A one-rule edit re-checked from the cache gives `--no-cache`'s report, byte for byte, and
shows the finding the edit made: each kind of edit a designer makes to one rule (its
condition, priority, action, id, weight, deletion, insertion, a move) of a file whose whole front end
and answers the cache already keeps (checked twice unchanged, as `benchmarks/recheck.py`
does before it edits).
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from pedrag.compiler import analysis as analysis_module
from pedrag.compiler.check_cache import ENV_CACHE_DIR, CheckCache
from pedrag.compiler.config import CheckConfig
from pedrag.compiler.driver import check_paths
from pedrag.compiler.reports.json_report import format_json

FLOATS = ["frustration", "confidence"]
ENUMS = {"affect": ["calm", "confused", "frustrated"]}


def _condition(rng: random.Random) -> str:
    atoms = []
    for _ in range(rng.randint(1, 2)):
        kind = rng.choice(["float", "float", "int", "enum", "bool"])
        if kind == "float":
            atoms.append(f"{rng.choice(FLOATS)} {rng.choice(['<', '>='])} {rng.randint(1, 9) / 10}")
        elif kind == "int":
            atoms.append(f"hints {rng.choice(['<', '>=', '=='])} {rng.randint(0, 5)}")
        elif kind == "enum":
            atoms.append(f"affect == {rng.choice(ENUMS['affect'])}")
        else:
            atoms.append(rng.choice(["exam", "not exam"]))
    return " and ".join(atoms)


def _rules(count: int = 24) -> list[str]:
    rng = random.Random(3)
    rules = [
        f'  - {{id: r{i}, when: "{_condition(rng)}", then: a{rng.randrange(5)}}}'
        for i in range(count)
    ]
    rules[11] = rules[11][:-1] + ", priority: 6, weight: 2}"  # for the one-value edits
    return rules


def _theory(rules: list[str], selection: str) -> str:
    lines = [
        "pedrag: 1",
        "theory: {id: edits, name: Edits}",
        f"selection: {selection}",
        "metrics:",
        *(f"  {name}: {{type: float, range: [0, 1], source: inferred}}" for name in FLOATS),
        "  hints: {type: int, range: [0, 5], source: trusted}",
        "  affect: {type: enum, values: [calm, confused, frustrated], source: inferred}",
        "  exam: {type: bool, source: trusted}",
        "actions:",
        "  a0: {rung: H0, priority: 5, description: A0., conflicts: [a1]}",
        "  a1: {rung: H1, priority: 5, description: A1.}",
        "  a2: {rung: H2, priority: 3, description: A2.}",
        "  a3: {rung: H3, priority: 7, description: A3.}",
        "  a4: {rung: H4, priority: 5, description: A4.}",
        "ceiling: {start: H3, steps: [{when: exam, set: H0}]}",
        "rules:",
        *rules,
        "",
    ]
    return "\n".join(lines)


def _report(path: Path, cache: CheckCache) -> str:
    analysis_module._CACHE.clear()  # a fresh process: only the disk remembers
    result = check_paths([str(path)], CheckConfig(), cache=cache)
    return format_json([f.path for f in result.files], result.diagnostics, result.summary())


def _findings(report: str) -> set[tuple[str, tuple[str, ...]]]:
    return {(d["check"], tuple(d["items"])) for d in json.loads(report)["diagnostics"]}


def _replace(index: int, line: str) -> Callable[[list[str]], list[str]]:
    return lambda rules: [*rules[:index], line, *rules[index + 1 :]]


def _then(line: str) -> str:
    """The rule with another action, nothing else changed (a one-value edit)."""
    now = line[line.index("then: a") + 7]
    return line.replace(f"then: a{now}", f"then: a{(int(now) + 1) % 5}")


# Each edit, and a finding it must make appear (check, items), or None where any change does.
EDITS: dict[str, tuple[Callable[[list[str]], list[str]], tuple[str, tuple[str, ...]] | None]] = {
    "condition made dead": (
        _replace(5, '  - {id: r5, when: "frustration < 0.2 and frustration >= 0.4", then: a2}'),
        ("dead-rule", ("rule:r5",)),
    ),
    "condition narrowed": (
        _replace(7, '  - {id: r7, when: "frustration >= 0.31 and hints < 2", then: a3}'),
        None,
    ),
    "priority": (
        _replace(3, '  - {id: r3, when: "confidence >= 0.5", then: a3, priority: 9}'),
        None,
    ),
    "action": (
        _replace(4, '  - {id: r4, when: "exam and hints >= 1", then: a4}'),
        ("ceiling-blocked", ("rule:r4", "action:a4")),
    ),
    "id": (
        lambda rules: [rules[0].replace("id: r0,", "id: renamed,"), *rules[1:]],
        None,
    ),
    "action alone": (lambda rules: [*rules[:4], _then(rules[4]), *rules[5:]], None),
    "priority value": (
        lambda rules: [*rules[:11], rules[11].replace("priority: 6", "priority: 1"), *rules[12:]],
        None,
    ),
    "weight value": (
        lambda rules: [*rules[:11], rules[11].replace("weight: 2", "weight: 9"), *rules[12:]],
        None,
    ),
    # A history call is a variable of its own: a rule's kept known state, made before it
    # existed, lacked it (the re-check failed with a KeyError).
    "history call": (
        lambda rules: [
            *rules[:3],
            rules[3].replace('when: "', 'when: "trend(frustration, 4) >= 0.3 and ', 1),
            *rules[4:],
        ],
        None,
    ),
    "delete": (lambda rules: rules[:9] + rules[10:], None),
    "insert": (
        lambda rules: [
            *rules[:6],
            '  - {id: twin, when: "frustration >= 0.5 and frustration >= 0.6", then: a2}',
            '  - {id: twin2, when: "frustration >= 0.6", then: a2}',
            *rules[6:],
        ],
        ("redundant-rule", ("rule:twin2", "rule:twin")),
    ),
    "move": (lambda rules: [rules[-1], *rules[:-1]], None),
}

# The one-value edits no check reports under a selection: a weight ranks the rules that fire
# at run time; under weighted selection a rule's priority does not decide.
SAME_REPORT = {
    ("weighted", "weight value"),
    ("priority", "weight value"),
    ("weighted", "priority value"),
}


@pytest.mark.parametrize("selection", ["weighted", "priority"])
def test_each_kind_of_one_rule_edit_gives_the_uncached_report(
    tmp_path: Path, selection: str
) -> None:
    rules = _rules()
    path = tmp_path / "edits.yaml"
    base = _theory(rules, selection)
    different, missing = [], []
    for name, (edit, expected) in EDITS.items():
        cache = CheckCache(tmp_path / f"cache-{name}")
        path.write_text(base)
        before = [_report(path, cache) for _ in range(3)]  # seen, kept whole, read back
        assert before[0] == before[1] == before[2] == _report(path, CheckCache.disabled())
        assert list((tmp_path / f"cache-{name}" / "fronts").glob("*.front"))
        path.write_text(_theory(edit(rules), selection))
        cached, fresh = _report(path, cache), _report(path, CheckCache.disabled())
        if cached != fresh:
            different.append(name)
        if cached == before[0] and (selection, name) not in SAME_REPORT:
            missing.append(f"{name}: the report did not change")
        if expected is not None and expected not in _findings(cached) - _findings(before[0]):
            missing.append(f"{name}: no new {expected}")
        assert _report(path, cache) == fresh  # and again, from what the edit's check kept
    assert different == []
    assert missing == []


def _cli_report(
    path: Path, cache: Path | None, capsys: pytest.CaptureFixture[str], form: str = "json"
) -> str:
    """The report `pedrag check` prints in `form`, as a fresh process would (only the disk
    remembers), with the cache in `cache` (None: `--no-cache`)."""
    from pedrag.cli import main

    analysis_module._CACHE.clear()
    os.environ[ENV_CACHE_DIR] = str(cache or path.parent / "unused")
    main(["check", str(path), "--format", form, *([] if cache else ["--no-cache"])])
    return capsys.readouterr().out


def _random_edit(rules: list[str], rng: random.Random, step: int) -> list[str]:
    """One designer's edit of one rule: its condition narrowed or widened (a new one), its
    action or priority changed, the rule deleted, or a new rule inserted."""
    index = rng.randrange(len(rules))
    line = rules[index]
    kind = rng.choice(["condition", "condition", "action", "priority", "delete", "insert"])
    if kind == "condition":
        start = line.index('when: "') + 7
        return _replace(index, line[:start] + _condition(rng) + line[line.index('"', start) :])(
            rules
        )
    if kind == "action":
        return _replace(index, _then(line))(rules)
    if kind == "priority":
        stripped = line.split(", priority:")[0].rstrip("}")
        return _replace(index, f"{stripped}, priority: {rng.randint(1, 9)}}}")(rules)
    if kind == "delete" and len(rules) > 4:
        return rules[:index] + rules[index + 1 :]
    new = f'  - {{id: n{step}, when: "{_condition(rng)}", then: a{rng.randrange(5)}}}'
    return [*rules[:index], new, *rules[index:]]


@pytest.mark.parametrize(
    ("selection", "form"), [("weighted", "json"), ("priority", "json"), ("priority", "github")]
)
def test_random_edits_through_the_cli_give_the_uncached_report(
    tmp_path: Path,
    selection: str,
    form: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Random one-rule edits, declaration edits a rule reads (a metric's range) and returns to
    an earlier version, each checked through the CLI's cache path once or three times (the
    report kept at the first, the front end kept at the second, so the next edit is spliced
    into it, the report read back at the third) and compared with `--no-cache`'s report, byte
    for byte."""
    monkeypatch.setenv(ENV_CACHE_DIR, str(tmp_path / "unused"))
    rng = random.Random(f"cli-{selection}")
    path, cache = tmp_path / "edits.yaml", tmp_path / "cache"
    rules, narrow = _rules(), False
    versions: list[str] = []
    different = []
    for step in range(20):
        choice = rng.random()
        if choice < 0.15 and versions:
            text = rng.choice(versions)
        elif choice < 0.3:
            narrow = not narrow
            text = _theory(rules, selection)
        else:
            rules = _random_edit(rules, rng, step)
            text = _theory(rules, selection)
        if narrow:  # a declaration every rule that reads `confidence` depends on
            text = text.replace(
                "confidence: {type: float, range: [0, 1]",
                "confidence: {type: float, range: [0, 0.5]",
            )
        versions.append(text)
        path.write_text(text, "utf-8")
        fresh = _cli_report(path, None, capsys, form)
        for _ in range(rng.choice([1, 3])):
            if _cli_report(path, cache, capsys, form) != fresh:
                different.append((step, text))
    assert different == []
    assert list((cache / "check" / "reports").glob("*.pickle"))  # the kept path was taken
