"""Help computed from the finding: the guard a conflict or invariant-violation finding names is
proved by the solver, and applied to the file the finding disappears with no new error."""

from __future__ import annotations

from pathlib import Path

import pytest

from pedrag.cli import main
from pedrag.compiler.driver import check_text
from pedrag.compiler.fixes import guard_edit
from pedrag.compiler.guards import guard_change
from pedrag.dsl.diagnostics import Diagnostic, Severity

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "checks"

# No `frustration` metric: the catalog's old fixed help named one.
NO_FRUSTRATION = """\
pedrag: 1
theory: {id: tie, name: Tie}
selection: priority
metrics:
  confidence: {type: float, range: [0, 1], source: inferred}
  attempts: {type: int, range: [0, 10], source: trusted}
  affect: {type: enum, values: [calm, bored, upset], source: inferred}
actions:
  praise: {rung: H0, priority: 5, description: Praise.}
  probe: {rung: H2, priority: 5, description: Probe.}
rules:
  - {id: confident, when: "confidence >= 0.6 and affect != upset", then: praise}
  - {id: trying, when: "attempts >= 2", then: probe}
ceiling: {start: H4}
"""

# The witness of the violation has `exam_active` false already: the old fixed help (`add not
# exam_active`) would exclude nothing here.
EXAM_ALREADY_OFF = """\
pedrag: 1
theory: {id: exam, name: Exam}
metrics:
  exam_active: {type: bool, source: trusted}
  attempts: {type: int, range: [0, 10], source: trusted}
actions:
  encourage: {rung: H0, priority: 5, description: Encourage.}
  hint: {rung: H3, priority: 5, description: Hint.}
rules:
  - {id: always, when: "true", then: encourage}
  - {id: stuck, when: "attempts >= 1 and not exam_active", then: hint}
invariants:
  - {id: try_twice_first, never: "attempts < 2 and rung > H0"}
ceiling: {start: H4}
"""


def _findings(text: str, path: str, check: str) -> list[Diagnostic]:
    return [d for d in check_text(text, path).diagnostics if d.check == check]


def _errors(text: str, path: str) -> set[tuple[str, tuple[str, ...]]]:
    return {
        (d.check, d.items)
        for d in check_text(text, path).diagnostics
        if d.severity is Severity.ERROR
    }


@pytest.mark.parametrize(
    ("text", "check"),
    [
        ((DATA / "conflict.yaml").read_text("utf-8"), "conflict"),
        ((DATA / "invariant-violation.yaml").read_text("utf-8"), "invariant-violation"),
        (NO_FRUSTRATION, "conflict"),
        (EXAM_ALREADY_OFF, "invariant-violation"),
    ],
)
def test_applying_the_suggested_guard_removes_the_finding_with_no_new_error(
    text: str, check: str
) -> None:
    path = "theories/t.yaml"
    (finding,) = _findings(text, path, check)
    guard = finding.data["guard"]
    assert (finding.help or "").startswith(f'{guard_change(guard)} (when: "{guard["when"]}")')
    edited = guard_edit(text, path, guard)
    assert edited is not None
    assert _findings(edited, path, check) == []
    before = _errors(text, path)
    after = _errors(edited, path)
    assert after < before  # the finding gone, nothing new (no dead rule, no unknown name)


def test_the_guard_reads_only_metrics_the_theory_declares() -> None:
    (finding,) = _findings(NO_FRUSTRATION, "t.yaml", "conflict")
    assert "frustration" not in (finding.help or "")
    assert finding.data["guard"]["add"].split()[0] in {"confidence", "attempts", "affect"}


def test_the_invariant_guard_is_not_one_the_witness_already_meets() -> None:
    (finding,) = _findings(EXAM_ALREADY_OFF, "t.yaml", "invariant-violation")
    assert finding.witness and finding.witness["exam_active"] is False
    assert "exam_active" not in finding.data["guard"]["add"]
    # The witness's own value (attempts=1), excluded: the value taken from the witness.
    assert finding.witness["attempts"] == 1
    assert finding.data["guard"] == {
        "rule": "stuck",
        "add": "attempts > 1",
        "when": "attempts > 1 and not exam_active",  # `attempts >= 1` is implied: dropped
        "replaces": "attempts >= 1",
    }
    assert (finding.help or "").startswith("narrow `attempts >= 1` to `attempts > 1` in rule")


def test_without_a_separating_comparison_the_help_says_which_rule_to_drop() -> None:
    text = (DATA / "conflict.yaml").read_text("utf-8").replace("confidence >= 0.5", "true")
    text = text.replace("frustration >= 0.5", "true")
    (finding,) = _findings(text, "t.yaml", "conflict")
    assert "guard" not in finding.data
    assert (finding.help or "").startswith("no single comparison separates them: drop rule")


def test_fix_applies_the_guard_only_with_unsafe_fixes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "conflict.yaml"
    original = (DATA / "conflict.yaml").read_text("utf-8")
    path.write_text(original, "utf-8")
    assert main(["check", str(path), "--fix", "--no-cache"]) == 1
    assert path.read_text("utf-8") == original
    assert main(["check", str(path), "--diff", "--no-cache"]) == 1
    assert "fixes are unsafe (a guard changes where a rule applies)" in capsys.readouterr().err
    assert main(["check", str(path), "--fix", "--unsafe-fixes", "--no-cache"]) == 0
    fixed = path.read_text("utf-8")
    assert 'when: "confidence >= 0.5 and frustration < 0.5"' in fixed
    # Nothing but that condition changed.
    assert fixed.replace('"confidence >= 0.5 and frustration < 0.5"', '"confidence >= 0.5"') == (
        original
    )
    assert ": applied: add `frustration < 0.5` to rule `push`\n" in capsys.readouterr().err


def test_the_fix_writes_the_tightest_bound_not_a_conjunction_of_bounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`attempts >= 3` narrowed by `attempts >= 5` is written `attempts >= 5`, and the fixed
    file, checked again by the real checker, is clean."""
    path = tmp_path / "invariant-violation.yaml"
    original = (DATA / "invariant-violation.yaml").read_text("utf-8")
    path.write_text(original, "utf-8")
    assert main(["check", str(path), "--fix", "--unsafe-fixes", "--no-cache"]) == 0
    fixed = path.read_text("utf-8")
    assert fixed == original.replace('"attempts >= 3"', '"attempts >= 5"')
    # The guard stood in for the looser bound: the report says it narrowed it, not "added".
    assert (
        ": applied: narrow `attempts >= 3` to `attempts >= 5` in rule `stuck`\n"
        in capsys.readouterr().err
    )
    assert _errors(fixed, str(path)) == set()


@pytest.mark.parametrize(
    ("when", "tidy"),
    [
        # Only the bound the guard tightens goes; the rest stay as written, in place.
        (
            "attempts  >=  3 and (hints > 1 or not exam_active)",
            "attempts >= 5 and (hints > 1 or not exam_active)",
        ),
        # A chain is a conjunction of bounds: the link the guard tightens goes.
        ("hints > 1 and 3 <= attempts <= 9", "hints > 1 and attempts >= 5 and attempts <= 9"),
        ("true", "attempts >= 5"),
        # The guard taken from the witness (attempts = 4) makes `attempts >= 4` redundant.
        ("attempts >= 4", "attempts > 4"),
        # Nothing implied: the guard is added at the end, as before.
        ("attempts <= 9 or hints > 1", "(attempts <= 9 or hints > 1) and attempts >= 5"),
    ],
)
def test_a_conjunct_the_guard_implies_is_dropped_and_the_rest_kept_as_written(
    when: str, tidy: str
) -> None:
    text = f"""\
pedrag: 1
theory: {{id: t, name: T}}
metrics:
  attempts: {{type: int, range: [0, 10], source: trusted}}
  hints: {{type: int, range: [0, 10], source: inferred}}
  exam_active: {{type: bool, source: trusted}}
actions:
  encourage: {{rung: H0, priority: 5, description: Encourage.}}
  leading_question: {{rung: H3, priority: 5, description: Ask a leading question.}}
rules:
  - {{id: always, when: "true", then: encourage}}
  - {{id: stuck, when: "{when}", then: leading_question}}
invariants:
  - {{id: five_tries, never: "attempts < 5 and rung > H0"}}
ceiling: {{start: H4, steps: []}}
"""
    (finding,) = _findings(text, "t.yaml", "invariant-violation")
    assert finding.data["guard"]["when"] == tidy
    edited = guard_edit(text, "t.yaml", finding.data["guard"])
    assert edited is not None and _findings(edited, "t.yaml", "invariant-violation") == []


def test_guards_of_a_generated_theory_each_remove_their_finding() -> None:
    """Beyond the fixtures: the first guards proposed for a generated 40-rule theory under
    priority selection (ties conflict), each applied alone, remove that finding and add no
    error; the check re-run is the real one, not the solver question the guard was proved by."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from theory_gen import generate

    text = generate(40, 3, "priority")
    path = "generated.yaml"
    guarded = [d for d in _findings(text, path, "conflict") if "guard" in d.data][:3]
    assert len(guarded) == 3
    before = _errors(text, path)
    for finding in guarded:
        edited = guard_edit(text, path, finding.data["guard"])
        assert edited is not None
        after = _errors(edited, path)
        assert ("conflict", finding.items) not in after
        assert after < before, after - before
