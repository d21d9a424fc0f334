"""`pedrag check` proves "no hint after a correct answer" over every action that gives a hint:
a wording that fills `{hint}` makes its action a hint (a derived tag), so a rule that can choose
it right after a correct answer is an invariant violation at file:line:column with its
counterexample, even where the action's `tags:` do not say `hint`. Before the tags were
derived, the shipped theories needed a hand-written guard on each such rule, and removing one
passed the check silently.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from pedrag.cli import main
from pedrag.compiler import analysis as analysis_module
from pedrag.compiler import kept_front_ends
from pedrag.compiler.check_cache import ENV_CACHE_DIR

ROOT = Path(__file__).resolve().parents[2]

# constructivism's `too_hard_scaffold` chooses `scaffold_in_zpd` (tags: scaffold, explain),
# whose variant "A rough plan: {hint} Fill in the rest yourself." gives a hint.
GUARDED = (
    'when: "task_fit == too_hard and attempts >= 2 and frustration < 0.8 and not told_last_turn '
    'and not last_answer_correct"'
)
UNGUARDED = GUARDED.replace(" and not last_answer_correct", "")


def _check(path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    analysis_module._CACHE.clear()  # as a fresh process: only the disk remembers
    status = main(["check", str(path), *args])
    return status, capsys.readouterr().out


def test_a_removed_guard_on_a_rule_whose_action_fills_hint_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(ROOT / "theories", tmp_path / "theories")  # its switches' targets too
    path = tmp_path / "theories" / "constructivism.yaml"
    text = path.read_text("utf-8")
    assert text.count(GUARDED) == 1
    path.write_text(text.replace(GUARDED, UNGUARDED), "utf-8")
    line = next(n for n, row in enumerate(text.splitlines(), 1) if GUARDED in row)
    column = text.splitlines()[line - 1].index('"task_fit') + 1

    status, out = _check(path.parent, capsys, "--no-cache")

    assert status == 1
    head = (
        f"{path}:{line}:{column}: error[invariant-violation] rule `too_hard_scaffold` can "
        "choose `scaffold_in_zpd` where invariant `no_hint_after_correct_answer`"
    )
    assert head in out, out
    witness = next(row for row in out.splitlines() if "= witness:" in row)
    assert "last_answer_correct=true" in witness
    assert "task_fit=too_hard" in witness
    assert "tag `hint` derived: a wording fills `{hint}`" in witness
    assert "1 error, 0 warnings" in out


def test_the_shipped_theory_as_written_keeps_the_invariant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The guard the derived tag now demands is there: the same theories check clean."""
    shutil.copytree(ROOT / "theories", tmp_path / "theories")
    status, out = _check(tmp_path / "theories", capsys, "--no-cache")
    assert status == 0, out
    assert "0 errors, 0 warnings" in out


THEORY = """\
pedrag: 1
theory: {id: spliced, name: Spliced}
metrics:
  solved: {type: bool, source: trusted}
  attempts: {type: int, range: [0, 5], source: trusted}
actions:
  tinker: {rung: H3, priority: 5, description: Tinker., tags: [experiment], variants: ['Try: {hint}']}
  praise: {rung: H0, priority: 5, description: Praise., tags: [affect_support]}
rules:
  - {id: stuck, when: "attempts >= 2 and not solved", then: tinker}
  - {id: well_done, when: "solved or attempts < 2", then: praise}
ceiling: {start: H7}
invariants:
  - {id: no_hint_when_solved, never: "solved and 'hint' in tags"}
"""


def test_a_spliced_condition_edit_keeps_the_derived_tag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-rule `when:` edit re-checked from the cache is spliced into the kept front end
    (`dsl.incremental`); the actions it keeps still carry their derived tags, so the proof
    after the edit is the uncached one."""
    spliced: list[bool] = []
    splice = kept_front_ends.splice_condition_edit

    def counting(previous, raw):  # type: ignore[no-untyped-def]
        result = splice(previous, raw)
        spliced.append(result is not None)
        return result

    monkeypatch.setattr(kept_front_ends, "splice_condition_edit", counting)
    monkeypatch.setitem(os.environ, ENV_CACHE_DIR, str(tmp_path / "cache"))
    path = tmp_path / "spliced.yaml"
    path.write_text(THEORY, "utf-8")
    for _ in range(2):  # seen, then kept whole
        status, out = _check(path, capsys, "--format", "json")
        assert status == 0, out
    path.write_text(THEORY.replace("attempts >= 2 and not solved", "attempts >= 2"), "utf-8")

    status, cached = _check(path, capsys, "--format", "json")
    fresh_status, fresh = _check(path, capsys, "--format", "json", "--no-cache")

    assert spliced and spliced[-1] is True
    assert status == fresh_status == 1
    assert cached == fresh
    (found,) = json.loads(cached)["diagnostics"]
    assert found["check"] == "invariant-violation"
    assert found["items"] == ["rule:stuck", "invariant:no_hint_when_solved"]
    assert found["witness"]["solved"] is True
