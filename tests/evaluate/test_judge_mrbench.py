"""The judge calibration benchmark on an MRBench-format file: four scorers over the same replies,
the judge seeing only contract and draft (a hand-written fixture, not MRBench's text)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.fake_openai import FakeOpenAI, Reply

ROOT = Path(__file__).resolve().parents[2]
YES, NO = "Yes (and the answer is correct)", "No"
STUDENT_WORK = "3 + 4 = 7 apples"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "judge_mrbench", ROOT / "benchmarks" / "judge_mrbench.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["judge_mrbench"] = module
    spec.loader.exec_module(module)
    return module


def _reply(text: str, label: str) -> dict[str, Any]:
    return {"response": text, "annotation": {"Revealing_of_the_Answer": label}}


def _fixture(path: Path) -> Path:
    history = (
        "Tutor: Hi, could you solve this? The question is: Tom has 3 bags of 4 apples. "
        f"How many apples does he have? \n Student: {STUDENT_WORK} \n Tutor: How did you get 7?"
        " \n Student: I added them."
    )
    dialogues = [
        {
            "conversation_id": "a",
            "conversation_history": history,
            "Data": "fixture",
            "Ground_Truth_Solution": "3 x 4 = 12\n 12",
            "anno_llm_responses": {
                "t1": _reply("The answer is 12.", YES),
                "t2": _reply("Think about the bags: what does each one hold?", NO),
                "t3": _reply("So he has twelve apples in all.", YES),
                "t4": _reply("Great try, 12 is what we want to check together.", NO),
            },
        }
    ]
    path.write_text(json.dumps(dialogues), encoding="utf-8")
    return path


def test_detector_alone_and_with_the_judge_against_the_labels(
    fake_openai: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def judge(request: Any) -> Reply:
        draft = request.text
        if "answer is" in draft or "twelve" in draft:
            return Reply.json(
                {"verdict": "revise", "rule_id": "answer-reveal", "reason": "States it."}
            )
        return Reply.json({"verdict": "allow", "rule_id": "within-contract", "reason": "Fine."})

    fake_openai.always(judge)
    path = _fixture(tmp_path / "mrbench.json")
    bench = _bench()
    code = bench.main(
        [str(path), "--endpoint", fake_openai.base_url, "--model", "m", "--format", "json"]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["replies"], report["positives"]) == (4, 2)
    naive = report["naive baseline"]  # flags the two replies with "12": one right, one wrong
    assert (naive["tp"], naive["fp"], naive["fn"]) == (1, 1, 1)
    judged = report["judge"]
    assert (judged["tp"], judged["fp"], judged["fn"]) == (2, 0, 0)
    combined, detector = report["detector + judge"], report["detector"]
    assert combined["recall"] == 1.0 and combined["recall"] >= detector["recall"]
    assert report["judge_failures"] == 0
    # The judge sees contract and draft only: never the learner's work nor the solution.
    for request in fake_openai.requests_to("chat"):
        assert STUDENT_WORK not in request.text and "3 x 4 = 12" not in request.text
        assert '"ceiling": "H3"' in request.text


def test_a_judge_that_cannot_answer_is_counted_and_flags_nothing(
    fake_openai: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_openai.always(lambda request: Reply.text("I think it is fine!"))  # not the schema
    path = _fixture(tmp_path / "mrbench.json")
    code = _bench().main([str(path), "--endpoint", fake_openai.base_url, "--model", "m"])
    assert code == 0
    out = capsys.readouterr().out
    assert "judge failures (no answer in the schema, counted as not flagged): 4 of 4" in out
    assert "naive baseline" in out and "detector + judge F1 vs the naive baseline" in out
