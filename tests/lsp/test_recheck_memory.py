"""The language server's re-check of a one-rule edit, with everything it keeps in memory
between checks (the previous text's front end spliced, answers, parsed and resolved
conditions, conditions' formulas, a collector that freezes what it keeps), gives the
findings of a check that remembers nothing: along random edits a designer makes to one rule
in one process (a condition narrowed, with a history call too, or widened, an action, a
priority, an id, a rule deleted or inserted).
"""

from __future__ import annotations

import gc
import json
import random
from pathlib import Path

import pytest

from pedrag.compiler import analysis as analysis_module
from pedrag.compiler.check_cache import CheckCache
from pedrag.compiler.config import CheckConfig
from pedrag.compiler.driver import check_paths
from pedrag.compiler.reports.json_report import report_dict
from pedrag.dsl import incremental
from pedrag.dsl.diagnostics import Diagnostic
from pedrag.lsp import checking, heap
from tests.compiler.test_recheck_edits import _condition, _rules, _theory


def _lines(path: str, diagnostics: list[Diagnostic]) -> list[str]:
    """The report's diagnostics as `--format json` prints them."""
    report = report_dict([path], diagnostics, {})
    return [json.dumps(d) for d in report["diagnostics"]]


def _remembering_nothing(path: Path) -> list[str]:
    """`--no-cache`'s findings, with the process's answers set aside meanwhile (a fresh
    process; the server's memory is put back after)."""
    kept = dict(analysis_module._CACHE)
    analysis_module._CACHE.clear()
    try:
        result = check_paths([str(path)], CheckConfig(), cache=CheckCache.disabled())
    finally:
        analysis_module._CACHE.clear()
        analysis_module._CACHE.update(kept)
    return _lines(str(path), result.diagnostics)


def _edit(rules: list[str], rng: random.Random, made: list[int]) -> tuple[str, list[str]]:
    """One random one-rule edit of `rules` (each a line `  - {id: .., when: "..", ..}`)."""
    kind = rng.choice(
        ["narrow", "widen", "action", "priority", "id", "delete", "insert", "history"]
    )
    index = rng.randrange(len(rules))
    line = rules[index]
    out = list(rules)
    if kind == "narrow":
        out[index] = line.replace('when: "', f'when: "frustration >= 0.{rng.randint(1, 9)} and ', 1)
    elif kind == "history":  # a history call adds a variable of its own to the analysis
        call = rng.choice(["mean(frustration, 3)", "delta(confidence, 2)", "trend(frustration, 4)"])
        out[index] = line.replace('when: "', f'when: "{call} >= 0.{rng.randint(1, 9)} and ', 1)
    elif kind == "widen":
        start = line.index('when: "') + 7
        end = line.index('"', start)
        out[index] = line[:end] + f" or {_condition(rng)}" + line[end:]
    elif kind == "action":
        now = line[line.index("then: a") + 7]
        out[index] = line.replace(f"then: a{now}", f"then: a{(int(now) + rng.randint(1, 4)) % 5}")
    elif kind == "priority":
        if "priority: " in line:
            now = line[line.index("priority: ") + 10]
            out[index] = line.replace(f"priority: {now}", f"priority: {rng.randint(1, 9)}")
        else:
            out[index] = line[:-1] + f", priority: {rng.randint(1, 9)}}}"
    elif kind == "id":
        rule_id = line[line.index("id: ") + 4 : line.index(",")]
        made.append(len(made))
        out[index] = line.replace(f"id: {rule_id},", f"id: {rule_id}_e{len(made)},")
    elif kind == "delete" and len(rules) > 4:
        del out[index]
    else:
        made.append(len(made))
        new = f'  - {{id: new{len(made)}, when: "{_condition(rng)}", then: a{rng.randrange(5)}}}'
        out.insert(index, new)
    return kind, out


@pytest.mark.parametrize("selection", ["weighted", "priority"])
def test_random_one_rule_edits_in_one_process_give_the_findings_of_a_fresh_check(
    tmp_path: Path, selection: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spliced = []
    splice = incremental.splice_condition_edit

    def counting(previous: object, raw: bytes) -> object:
        found = splice(previous, raw)  # type: ignore[arg-type]
        spliced.append(found is not None)
        return found

    monkeypatch.setattr(incremental, "splice_condition_edit", counting)
    monkeypatch.setattr(checking, "DISK_CACHE", False)
    rng = random.Random(11 if selection == "weighted" else 12)
    rules, made = _rules(), list[int]()
    path = tmp_path / "edits.yaml"
    different, kinds = [], set()
    for step in range(30):
        if step:
            kind, rules = _edit(rules, rng, made)
            kinds.add(kind)
        text = _theory(rules, selection)
        path.write_text(text, "utf-8")
        # As the server does on a keystroke: the front end's findings at once, then both.
        checking.analyse(text, str(path), False, CheckConfig())
        found = checking.analyse(text, str(path), True, CheckConfig())
        if _lines(str(path), found) != _remembering_nothing(path):
            different.append((step, text))
    assert different == []
    assert kinds >= {"narrow", "widen", "action", "priority", "id", "insert", "history"}
    assert sum(spliced) >= 10  # the in-memory splice was exercised, not only whole loads
    assert gc.isenabled()


def test_a_front_end_a_check_still_reads_is_not_spliced(tmp_path: Path) -> None:
    """The server's semantic run (a thread of its own) may still read the previous text's
    front end when a keystroke's front-end run loads the next text: splicing would move that
    front end's offsets under it, so the next text is loaded whole."""
    rules = _rules()
    path = str(tmp_path / "edits.yaml")
    first = _theory(rules, "weighted")
    second = first.replace('"', '"frustration >= 0.3 and ', 1)
    checking.LOADED.clear()
    reading = checking._load(first, path)  # a check under way reads it
    try:
        loaded = checking._load(second, path)
        checking._READING.remove(loaded)
    finally:
        checking._READING.remove(reading)
    assert loaded.source.text == second
    # The first text's conditions still point into the first text.
    assert all(rule.when.scalar.source.text == first for rule in reading.theory.rules)
    assert not any(
        rule.when is other.when
        for rule, other in zip(reading.theory.rules, loaded.theory.rules, strict=True)
    )


def test_the_collector_is_off_during_a_check_and_on_again_after() -> None:
    assert gc.isenabled()
    with heap.quiet_collector():
        assert not gc.isenabled()
        with heap.quiet_collector():  # the server's two runs may overlap
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()  # a host that turned it off keeps it off
    try:
        with heap.quiet_collector():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
