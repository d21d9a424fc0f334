"""The MRBench answer-reveal benchmark: its step solver, its scoring and its report."""

from __future__ import annotations

import importlib.util
import json
import sys
from fractions import Fraction
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "reveal_mrbench", ROOT / "benchmarks" / "reveal_mrbench.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["reveal_mrbench"] = module  # dataclasses resolve annotations through it
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("question", "value"),
    [
        ("What is the sum of 27 and 16?", Fraction(43)),
        ("What is the value of 5 * 2 * 4?", Fraction(40)),
        ("7*60=?.", Fraction(420)),
        ("What is 25 minus 18?", Fraction(7)),
        ("What times 3 is 24?", Fraction(8)),
        ("How many times does 2 go into 18?", Fraction(9)),
        ("What is the value of 2800 subtracted by 65?", Fraction(2735)),
        ("What is the value of 4 centimeters - 0 centimeters ?", Fraction(4)),
        ("What is the decimal value of 2/3?", Fraction(2, 3)),
        ("What is the name of a 5 sided polygon?", None),
        ("Can you explain your working?", None),
    ],
)
def test_the_step_solver_reads_arithmetic_questions(
    bench: ModuleType, question: str, value: Fraction | None
) -> None:
    assert bench.solve_question(question) == value


@pytest.mark.parametrize(
    ("value", "spelled"),
    [(Fraction(70), "70"), (Fraction(1, 4), "0.25"), (Fraction(2, 3), "2/3")],
)
def test_step_values_are_spelled_for_the_detector(
    bench: ModuleType, value: Fraction, spelled: str
) -> None:
    assert bench.spell(value) == spelled


def reply(text: str, label: str) -> dict[str, Any]:
    return {"response": text, "annotation": {"Revealing_of_the_Answer": label}}


YES, NO = "Yes (and the answer is correct)", "No"
DIALOGUES = [
    {
        "conversation_history": (
            "Tutor: Hi, could you please solve this? The question is: Anna has 4 bags of 20 "
            "apples. How many apples does she have?\n Student: 4 + 20 = 24 apples.\n"
            " Tutor: How many apples are in each bag?\n Student: 20 apples, so 24."
        ),
        "Data": "MathDial",
        "Ground_Truth_Solution": "She has 4 x 20 = 80 apples.\n 80",
        "anno_llm_responses": {
            "a": reply("Not quite: 4 bags of 20 make 80 apples.", YES),
            "b": reply("What does 'bags of 20' tell you to do with the 4?", NO),
            "c": reply("Each bag has 20 apples, as you said.", NO),
            "d": reply("Think about repeated addition.", YES),
        },
    },
    {
        "conversation_history": "Tutor: What is 25 minus 18?\n Student: 8",
        "Data": "Bridge",
        "Ground_Truth_Solution": "Not Available",
        "anno_llm_responses": {
            "a": reply("Close! 25 minus 18 is actually 7.", YES),
            "b": reply("Count up from 18 to 25: how many steps?", NO),
        },
    },
]


def test_the_report_scores_detector_and_baseline_in_one_run(
    bench: ModuleType, tmp_path: Path
) -> None:
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(DIALOGUES), encoding="utf-8")
    report = bench.run(path)
    # detector: flags a (80) and the Bridge a (7); misses d; "20" and "18" are givens.
    assert (report["tp"], report["fp"], report["fn"], report["n"]) == (2, 0, 1, 6)
    assert report["precision"] == 1.0 and report["recall"] == pytest.approx(2 / 3, abs=1e-4)
    # baseline: only the final number of a ground truth, so nothing in the Bridge dialogue.
    assert (report["baseline"]["tp"], report["baseline"]["fn"]) == (1, 2)
    assert set(report["by_source"]) == {"Bridge", "MathDial"}


def test_json_output_has_the_documented_keys(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(DIALOGUES), encoding="utf-8")
    assert bench.main([str(path), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {"precision", "recall", "f1", "n", "baseline"} <= set(report)
    assert {"precision", "recall", "f1", "n"} <= set(report["baseline"])


def test_a_missing_file_is_a_usage_error(bench: ModuleType, tmp_path: Path) -> None:
    assert bench.main([str(tmp_path / "absent.json")]) == 2


def test_the_detector_on_mrbench_dev_keeps_the_figures_issue_26_closed_with(
    bench: ModuleType,
) -> None:
    # The detector's precision fell from 90.2% to 83.5% when the "student already said it" rule
    # began asking the grader's reader for lists: worked prose with several numbers ("220 + 23 =
    # 243. So she used 243 ... and bought 117") read as a list of candidates, so repeating the
    # student's own 243 counted as a reveal. Floors at the figures measured when it closed.
    from tests.evaluate.test_answer_check import mrbench_dev

    report = bench.run(mrbench_dev())
    assert report["n"] == 756
    assert report["precision"] >= 0.90 and report["recall"] >= 0.715, report
