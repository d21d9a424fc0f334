"""The LLM path against the scripted fake server on 127.0.0.1: an LLM-played student and an
LLM evaluator drive a small grid through the real openai client, a malformed evaluator answer
leaves its turn unevaluated (never a pass), and the evaluator never sees the tutor's prompt or
contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pedrag.evaluate import gates, metrics
from pedrag.evaluate.run import Grid, run_grid
from pedrag.runtime.llm.interface import LLMRequest
from pedrag.runtime.llm.offline import OfflineBackend
from pedrag.runtime.llm.openai_backend import OpenAIBackend, OpenAISettings
from pedrag.runtime.policy.theory_set import TheorySet
from tests.fake_openai import FakeOpenAI, Reply

GOOD_VERDICT = {
    "fidelity": 0.9,
    "rung": 3,
    "violation": False,
    "severity": "none",
    "cause": "none",
    "principles": [],
    "reason": "A leading question that withholds the answer.",
}
TUTOR_LINE = "What do you already know about multiplying by eight?"


def student_reply(request: Any) -> Reply:
    turn = 1 + sum(message["role"] == "assistant" for message in request.messages)
    instruction = request.messages[-1]["content"]
    if "Give this answer to the exercise: " in instruction:  # the move's answer, kept
        answer = instruction.split("Give this answer to the exercise: ", 1)[1].rstrip(")")
        return Reply.json({"message": f"Is it {answer}? (turn {turn})"})
    message = {1: "Is it 54? (turn 1)", 2: "I don't get it. (turn 2)"}.get(
        turn, f"ok (turn {turn})"
    )
    return Reply.json({"message": message})


def evaluator_reply(request: Any) -> Reply:
    if "(turn 2)" in request.text:
        return Reply.text("I'd rate this reply highly, it is great!")  # not JSON: malformed
    return Reply.json(GOOD_VERDICT)


def offline_reply(request: Any) -> Reply:
    """The runtime's own roles (classifier, analyzer, judge, selector) as offline would."""
    messages = tuple((m["role"], m["content"]) for m in request.messages)
    schema = request.body.get("response_format", {}).get("json_schema", {}).get("schema")
    answer = OfflineBackend().complete(
        LLMRequest(role=request.role, messages=messages, json_schema=schema)
    )
    return Reply.text(answer.text)


def respond(request: Any) -> Reply:
    if request.role == "student":
        return student_reply(request)
    if request.role == "evaluator":
        return evaluator_reply(request)
    if request.role == "actor":
        return Reply.text(TUTOR_LINE)
    return offline_reply(request)


def test_llm_student_and_evaluator_run_a_grid_and_fail_closed(
    fake_openai: FakeOpenAI, theories: TheorySet, curriculum: Any
) -> None:
    fake_openai.always(respond)
    backend = OpenAIBackend(
        OpenAISettings(base_url=fake_openai.base_url, api_key="test", timeout_s=5, retries=0)
    )
    grid = Grid(
        configs=("baseline", "pedrag"),
        personas=("earnest-but-stuck",),
        exercises=("mult_7x8",),
        reps=1,
        turns=2,
        exam_probe=False,
    )
    result = run_grid(
        grid,
        theories,
        curriculum,
        backend=backend,
        student_backend=backend,
        evaluator_backend=backend,
    )
    assert (result.student, result.evaluator, result.backend) == (
        "hidden-state, LLM-voiced",
        "llm",
        "endpoint",
    )
    for session in result.sessions:
        first, second = session.turns
        assert first.student == "Is it 54? (turn 1)"  # the LLM student spoke
        assert first.evaluation is not None and first.evaluation.evaluator == "llm"
        assert first.evaluation.fidelity == 0.9
        assert second.evaluation is None  # malformed -> unevaluated, not a pass
        assert second.unevaluated_reason and "LLMMalformedOutput" in second.unevaluated_reason
    summary = metrics.by_config(result.sessions)
    assert summary["pedrag"].evaluated == 1 and summary["pedrag"].unevaluated == 1
    assert summary["pedrag"].bhr == 0.0  # over the one evaluated turn only
    ladder = {(row.source, row.cause): row.counts for row in gates.overhelp_ladder(result.sessions)}
    assert ladder[("evaluator", "evaluator-failure")] == {"baseline": 1, "pedrag": 1}

    evaluator_requests = [r for r in fake_openai.requests_to("chat") if r.role == "evaluator"]
    assert len(evaluator_requests) == 4
    for request in evaluator_requests:
        assert "CONTRACT FOR THIS TURN" not in request.text  # never the tutor's contract
        assert "ACTION TEMPLATE" not in request.text  # nor its prompt
        assert request["response_format"]["type"] == "json_schema"
    student_requests = [r for r in fake_openai.requests_to("chat") if r.role == "student"]
    # The learner's voice is told its hidden state, never the exercise's answer key.
    assert student_requests and all(
        "56" not in r.messages[0]["content"] and "knowledge" not in r.messages[0]["content"]
        for r in student_requests
    )
    assert all("concept:" in r.messages[0]["content"] for r in student_requests)
    assert {r.role for r in fake_openai.requests} >= {"actor", "classifier", "student", "evaluator"}


def test_a_broken_student_falls_back_to_the_templated_move(
    fake_openai: FakeOpenAI, theories: TheorySet, curriculum: Any
) -> None:
    def broken(request: Any) -> Reply:
        if request.role == "student":
            return Reply.json({"message": 42})  # wrong type: schema violation
        return respond(request)

    fake_openai.always(broken)
    backend = OpenAIBackend(
        OpenAISettings(base_url=fake_openai.base_url, api_key="test", timeout_s=5, retries=0)
    )
    grid = Grid(
        configs=("baseline",),
        personas=("answer-seeker",),
        exercises=("mult_7x8",),
        reps=1,
        turns=2,
        exam_probe=False,
    )
    result = run_grid(grid, theories, curriculum, backend=backend, student_backend=backend)
    turns = result.sessions[0].turns
    assert turns[0].student == "Just give me the answer."  # the persona's demand, templated
    assert turns[0].intent == "solution_demand"
    assert all(turn.student_failure for turn in turns)
    assert json.dumps(result.sessions[0].to_dict(transcript=True))  # serialisable


def test_a_rejected_key_is_reported_not_only_counted(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pedrag.cli import main

    fake_openai.always(Reply.error(401, "Incorrect API key provided"))
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("PEDRAG_LLM_RETRIES", "0")
    args = ["--configs", "pedrag", "--personas", "injector", "--exercises", "mult_7x8"]

    code = main(["evaluate", *args, "--reps", "1", "--turns", "1", "--no-exam-probe"])

    err = capsys.readouterr().err
    assert code == 1  # every model call failed: the report measured templates
    assert "every model call failed" in err
    assert "warning: the evaluator model failed on 1 of 1 turns" in err
    assert "HTTP 401" in err and "check OPENAI_API_KEY" in err


def test_the_endpoint_grid_prints_an_estimate_and_resumes_from_its_results_file(
    fake_openai: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    from pedrag.cli import main

    fake_openai.always(respond)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("PEDRAG_LLM_RETRIES", "0")
    results = tmp_path / "grid.jsonl"
    args = [
        "evaluate",
        "--endpoint",
        fake_openai.base_url,
        "--model",
        "tiny",
        "--personas",
        "curious-carlos",
        "--topics",
        "arithmetic",
        "--reps",
        "1",
        "--turns",
        "2",
        "--max-tokens",
        "16",
        "--no-exam-probe",
        "--results",
        str(results),
        "--format",
        "json",
    ]
    assert main(args) == 0
    first = capsys.readouterr()
    assert "estimate (an offline dry run of this grid): 3 sessions" in first.err
    assert "cost: unknown — no price for tiny" in first.err
    assert f"results are appended to {results}" in first.err
    assert len(results.read_text(encoding="utf-8").splitlines()) == 3
    chat_calls = len(fake_openai.requests_to("chat"))
    assert chat_calls > 0
    assert all(r["max_tokens"] <= 16 for r in fake_openai.requests_to("chat"))

    assert main(args) == 0
    again = capsys.readouterr()
    assert "3 sessions already there are reused" in again.err
    # Only the endpoint's health check talks to the model: no session ran again.
    assert len(fake_openai.requests_to("chat")) - chat_calls <= 1
    assert json.loads(again.out)["configs"] == json.loads(first.out)["configs"]


def test_estimate_only_stops_before_any_model_call(
    fake_openai: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    from pedrag.cli import main

    # A small grid: the estimate is an offline dry run of it (the default grid took 17 s).
    code = main(
        ["evaluate", "--endpoint", fake_openai.base_url, "--model", "m", "--reps", "1"]
        + ["--personas", "injector", "--topics", "arithmetic", "--estimate"]
    )
    assert code == 0
    assert "at most" in capsys.readouterr().err
    assert fake_openai.requests_to("chat") == []


def test_the_evaluator_can_be_another_model_than_the_tutor(
    fake_openai: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    from pedrag.cli import main

    fake_openai.always(respond)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("PEDRAG_LLM_RETRIES", "0")
    args = ["evaluate", "--endpoint", fake_openai.base_url, "--model", "tutor-m"]
    args += ["--evaluator-model", "judge-m", "--personas", "curious-carlos"]
    args += ["--topics", "arithmetic", "--reps", "1", "--turns", "1", "--no-exam-probe"]
    args += ["--results", str(tmp_path / "r.jsonl"), "--format", "json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["measures"].startswith("With an endpoint")
    models = {(r.role, r.model) for r in fake_openai.requests_to("chat") if r.role}
    assert ("evaluator", "judge-m") in models and ("actor", "tutor-m") in models
    assert not any(role == "evaluator" and model == "tutor-m" for role, model in models)


def test_endpoint_only_options_without_an_endpoint_and_sensitivity_with_one_are_usage_problems(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pedrag.cli import main

    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert main(["evaluate", "--evaluator-model", "judge-m", "--reps", "1"]) == 2
    assert "need an endpoint" in capsys.readouterr().err
    endpoint = ["--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--sensitivity"]
    assert main(["evaluate", *endpoint]) == 2
    assert "--sensitivity reruns the grid six times offline" in capsys.readouterr().err
