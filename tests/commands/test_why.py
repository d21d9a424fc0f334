"""`pedrag why`: rules that hold, the ceiling and its step, eligibility and probabilities."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pedrag.cli import main

ROOT = Path(__file__).resolve().parents[2]
SOCRATIC = str(ROOT / "theories" / "socratic.yaml")


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(["why", SOCRATIC, *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_why_reports_rules_ceiling_and_probabilities(capsys: pytest.CaptureFixture[str]) -> None:
    report = _json(capsys, "--state", "frustration=0.8,attempts=3,intent=attempt")
    held = {r["rule"] for r in report["matching"]}
    assert "frustrated_learner" in held or "very_frustrated_any" in held
    assert report["ceiling"]["rung"] == 4
    assert sum(report["probabilities"].values()) == pytest.approx(1.0)
    assert set(report["eligible"]) == set(report["probabilities"])
    assert "mastery" in report["defaults"] and "frustration" not in report["defaults"]
    assert report["switch"] == "direct_instruction"


def test_why_names_the_step_that_set_the_ceiling(capsys: pytest.CaptureFixture[str]) -> None:
    report = _json(capsys, "--state", "exam_active=true,explain_mode=true,intent=solution_demand")
    ceiling = report["ceiling"]
    assert ceiling["rung"] == 0
    # The kernel's exam-lockdown runtime step, after the theory's explain-mode step.
    assert ceiling["set_by"]["when"] == "runtime: exam_lockdown"
    assert ceiling["set_by"]["runtime"] == "exam_lockdown" and ceiling["set_by"]["effect"] == "set"
    assert [s["rung"] for s in ceiling["steps_applied"]] == [7, 0]
    above = [r for r in report["matching"] if not r["eligible"]]
    assert all(r["rung"] > 0 for r in above)


def test_why_text_says_which_metrics_are_at_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["why", SOCRATIC, "--state", "frustration=0.9"]) == 0
    out = capsys.readouterr().out
    assert "at default (not given): mastery=0.3" in out
    assert "ceiling: H4" in out and "rules that hold:" in out and "%" in out


def test_why_accepts_computed_metrics_directly(capsys: pytest.CaptureFixture[str]) -> None:
    report = _json(capsys, "--state", "stuck_turns=3")
    assert report["state"]["stuck_turns"] == 3
    assert "long_stuck_decompose" in {r["rule"] for r in report["matching"]}


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ("frustration=2", "`frustration` is a float in [0, 1]"),
        ("frustration=high", "not a number"),
        ("attempts=1.5", "`attempts` is an int in [0, 20]"),
        ("affect=angry", "`affect` is one of calm, curious"),
        ("affect=frustated", "did you mean `frustrated`"),
        ("exam_active=yes", "`exam_active` is true or false"),
        ("frustation=0.5", "unknown metric `frustation`; did you mean `frustration`?"),
        ("frustration", "not NAME=VALUE"),
        ("frustration=0.1,frustration=0.2", "given twice"),
    ],
)
def test_bad_state_strings_exit_2_naming_the_metric_and_domain(
    capsys: pytest.CaptureFixture[str], state: str, expected: str
) -> None:
    assert main(["why", SOCRATIC, "--state", state]) == 2
    assert expected in capsys.readouterr().err


def test_why_reads_a_compiled_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "p.json"
    assert main(["compile", SOCRATIC, "-o", str(policy), "--no-semantic"]) == 0
    capsys.readouterr()
    assert main(["why", str(policy), "--state", "frustration=0.9", "--format", "json"]) == 0
    from_policy = json.loads(capsys.readouterr().out)
    assert from_policy == _json(capsys, "--state", "frustration=0.9")


@pytest.mark.parametrize(
    ("state", "problem"),
    [
        ("frustration=nan", "is not a number"),
        ("frustration=1_0", "is not a number"),
        ("attempts=\uff13", "is not a number"),
        ("attempts=3.5", "is not a whole number"),
        ("attempts=1e400", "is outside the domain"),
    ],
)
def test_why_rejects_numbers_the_condition_language_would_not_write(
    capsys: pytest.CaptureFixture[str], state: str, problem: str
) -> None:
    assert main(["why", SOCRATIC, "--state", state]) == 2
    err = capsys.readouterr().err
    assert problem in err and "Traceback" not in err


def test_why_accepts_whole_floats_for_ints_and_quoted_enum_values(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = _json(capsys, "--state", "attempts=3.0,intent='attempt',frustration=-0")
    assert report["state"]["attempts"] == 3 and isinstance(report["state"]["attempts"], int)
    assert report["state"]["intent"] == "attempt"
    assert str(report["state"]["frustration"]) == "0.0"


@pytest.mark.parametrize(
    "condition",
    [
        " implies ".join(["f >= 0.5"] * 60),  # two parentheses per level in generated code
        " - ".join(["f"] * 60) + " <= 1",
        "(not " * 60 + "f >= 0.5" + ")" * 60,
    ],
)
def test_conditions_at_the_nesting_limit_check_compile_and_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], condition: str
) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(
        "pedrag: 1\ntheory: {id: deep, name: Deep}\n"
        "metrics:\n  f: {type: float, range: [0, 1], source: inferred}\n"
        "actions:\n  a: {rung: H0, priority: 5, description: A.}\n"
        f'rules:\n  - {{id: r1, when: "{condition}", then: a}}\n'
        '  - {id: r2, when: "true", then: a}\n'
    )
    assert main(["why", str(path), "--state", "f=0.7"]) == 0
    assert main(["check", str(path), "--no-semantic"]) == 0
    deeper = path.read_text().replace(condition, "not " * 100 + "f >= 0.5")
    path.write_text(deeper)
    assert main(["check", str(path), "--format", "json"]) == 1
    out = capsys.readouterr().out
    assert "nested too deeply" in out and "Traceback" not in out


SRL = str(ROOT / "theories" / "srl.yaml")
REFLECT = "intent=attempt,attempts=2"  # `failed_attempt_reflect` -> error_reflection, `{hint}`


def test_why_shows_which_tags_a_wording_gives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "srl.json"
    assert main(["compile", SRL, "-o", str(policy), "--no-semantic"]) == 0
    capsys.readouterr()
    reports = []
    for source in (SRL, str(policy)):
        assert main(["why", source, "--state", REFLECT, "--format", "json"]) == 0
        reports.append(json.loads(capsys.readouterr().out))
    assert reports[0] == reports[1]  # the compiled policy carries them too
    matching = {r["rule"]: r for r in reports[0]["matching"]}
    reflect = matching["failed_attempt_reflect"]
    assert "hint" in reflect["tags"] and reflect["derived_tags"] == {"hint": "hint"}
    strategy = matching["no_strategy_suggest"]  # declares `hint`: not derived
    assert "hint" in strategy["tags"] and strategy["derived_tags"] == {}

    assert main(["why", SRL, "--state", REFLECT]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if "failed_attempt_reflect" in line)
    assert lines[at + 1].split() == [
        "tags:",
        "probe,",
        "self_reflection,",
        "hint",
        "(derived:",
        "fills",
        "`{hint}`)",
    ]
    at = next(i for i, line in enumerate(lines) if "no_strategy_suggest" in line)
    assert lines[at + 1].split() == ["tags:", "hint,", "strategy"]
