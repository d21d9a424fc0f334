"""`pedrag grade`: the tutor's grader on one message, from the command line and the API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pedrag
from pedrag.cli import main

CURRICULUM = """\
pedrag: 1
kind: curriculum
id: grading_demo
goals:
  - {id: capitals, domain: geography, topic: capitals}
exercises:
  - id: capital
    goal: capitals
    prompt: What is the capital of Australia?
    answer: Canberra
    accept: [Canberra ACT]
  - id: pi
    goal: capitals
    prompt: Give pi to two decimal places.
    answer: "3.14"
    tolerance: 0.005
"""


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main(["grade", *args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_grade_prints_the_verdict_the_committed_answer_and_why(
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = _json(capsys, "--exercise", "mult_7x8", "28 doubled is 56")
    assert (data["verdict"], data["committed"]) == ("correct", "56")
    assert data["reason"] and data["shows_work"] is True
    data = _json(capsys, "--exercise", "mult_7x8", "I don't think it's 56")
    assert (data["verdict"], data["committed"], data["reason"]) == (
        "none",
        None,
        "a negated answer",
    )
    assert main(["grade", "--exercise", "mult_7x8", "is it 54?"]) == 0
    text = capsys.readouterr().out
    assert "verdict:   wrong" in text and "committed: 54" in text and "tentative: yes" in text


def test_grade_reads_a_designers_curriculum_with_its_tolerance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(CURRICULUM, "utf-8")
    curriculum = ("--curriculum", str(path))
    assert _json(capsys, *curriculum, "--exercise", "capital", "canbera")["verdict"] == "correct"
    wrong = _json(capsys, *curriculum, "--exercise", "capital", "Sydney")
    assert (wrong["verdict"], wrong["committed"]) == ("wrong", "Sydney")
    assert _json(capsys, *curriculum, "--exercise", "pi", "3.142")["verdict"] == "correct"
    assert _json(capsys, *curriculum, "--exercise", "pi", "3.15")["verdict"] == "wrong"


def test_grade_is_the_function_the_public_api_exports(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(CURRICULUM, "utf-8")
    tutor = pedrag.Tutor(pedrag.TheorySet.shipped(), curriculum=str(path))
    exercise = next(e for e in tutor.curriculum.exercises if e.id == "capital")
    result = pedrag.grade_exercise("it's Canberra ACT", exercise)
    assert isinstance(result, pedrag.Grade) and result.verdict == "correct"
    session = tutor.start("socratic", exercise="capital", seed=1)
    assert tutor.turn(session, "Melbourne").audit["grade"]["verdict"] == "wrong"


def test_grade_reports_an_unknown_exercise_or_file_as_a_usage_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["grade", "--exercise", "no_such", "56"]) == 2
    assert "unknown exercise 'no_such'" in capsys.readouterr().err
    missing = str(tmp_path / "missing.yaml")
    assert main(["grade", "--curriculum", missing, "--exercise", "x", "56"]) == 2
    assert "pedrag grade:" in capsys.readouterr().err
