"""No finding rests on a value nothing writes (issue 23, writers as data): a conflict or an
invariant violation is shown with a state a session can reach, where every metric no stage or
event writes keeps its default, and is not reported when only such a state has it."""

from __future__ import annotations

from pathlib import Path

from pedrag.compiler.driver import check_paths
from pedrag.dsl.diagnostics import Diagnostic

PROBE = """\
pedrag: 1
theory: {id: obs, name: Observed probe}
metrics:
  METRIC: {type: int, range: [0, 50], source: observed}
  curiosity: {type: float, range: [0, 1], default: 0.6, source: inferred}
  exam_mode: {type: bool, source: trusted}
actions:
  encourage: {rung: H0, priority: 5, description: Encourage., conflicts: [nudge]}
  nudge: {rung: H3, priority: 5, description: Ask about the next step.}
rules:
  - {id: lots_of_code, when: "METRIC >= 5 or curiosity >= 0.9", then: encourage}
  - {id: curious, when: "curiosity >= 0.5", then: nudge}
  - {id: other, when: "curiosity < 0.5", then: nudge}
invariants:
  - {id: exam_quiet, never: "exam_mode and rung > H0"}
ceiling: {start: H4}
"""


def _check(tmp_path: Path, metric: str, exam_writer: str = "") -> list[Diagnostic]:
    text = PROBE.replace("METRIC", metric)
    if exam_writer:
        text = text.replace("source: trusted}", f"source: trusted, writer: {exam_writer}}}")
    path = tmp_path / "obs.yaml"
    path.write_text(text)
    return check_paths([path]).diagnostics


def _found(diagnostics: list[Diagnostic], check: str) -> list[tuple[tuple[str, ...], object]]:
    return [(d.items, d.witness) for d in diagnostics if d.check == check]


def test_the_tutor_code_lines_probe_reports_no_conflict_only_an_unwritten_state_has(
    tmp_path: Path,
) -> None:
    found = _check(tmp_path, "tutor_code_lines")
    conflicts = _found(found, "conflict")
    # `other` (curiosity < 0.5) meets `lots_of_code` only where tutor_code_lines >= 5, which the
    # response monitor never writes; `curious` meets it at curiosity >= 0.9 too, shown there.
    assert conflicts == [
        (("rule:curious", "rule:lots_of_code"), {"tutor_code_lines": 0, "curiosity": 0.95})
    ]
    unwritten = _found(found, "unwritten-metric")
    assert [items for items, _ in unwritten] == [
        ("metric:tutor_code_lines", "rule:lots_of_code"),
        ("metric:exam_mode", "invariant:exam_quiet"),
    ]


def test_the_same_theory_with_a_written_metric_keeps_every_finding(tmp_path: Path) -> None:
    """The control: `hints_in_row` is the response monitor's, and `instructor` writes the flag."""
    found = _check(tmp_path, "hints_in_row", exam_writer="instructor")
    pairs = [items for items, _ in _found(found, "conflict")]
    assert pairs == [
        ("rule:curious", "rule:lots_of_code"),
        ("rule:other", "rule:lots_of_code"),
    ]
    assert [items for items, _ in _found(found, "invariant-violation")] == [
        ("rule:curious", "invariant:exam_quiet"),
        ("rule:other", "invariant:exam_quiet"),
    ]
    assert _found(found, "unwritten-metric") == []


def test_an_invariant_broken_only_by_an_unwritten_flag_is_not_a_violation(tmp_path: Path) -> None:
    found = _check(tmp_path, "hints_in_row")
    assert _found(found, "invariant-violation") == []
    assert [d.severity.value for d in found if d.check == "unwritten-metric"] == ["error"]
