"""`pedrag evaluate --endpoint` against a real local model: llama-cpp-python's server running
Gemma 3 270M on 127.0.0.1 (the optional extra ``local``; tests/local_llama.py), seed 1's
protocol end to end — a tutor arm, the LLM-voiced learner and the LLM evaluator all on that
model. The arm is ``baseline`` (one actor call a turn): the real `Tutor` on this model, with
its classifier, analyzer and judge calls, is tests/runtime/test_real_model.py's, and on two
shared cores each call costs seconds to minutes.

What it proves that the scripted fake server cannot: the evaluator's and the learner's
structured requests reach a real server and come back either as a verdict (fidelity, rung,
violations with severity and the evaluator's reason) or as a recorded failure — a reply cut
off at the token cap or not in the schema leaves the turn unevaluated with its reason and is
counted in the over-help ladder, never a pass — and the results file is written per session
and reused by the same command. One session of one turn, every reply capped at 24 tokens:
the model is slow on two shared cores. Skipped, with the reason, only when the extra is not
installed.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pedrag.cli import main
from tests import local_llama

pytestmark = pytest.mark.skipif(
    local_llama.missing_reason() is not None, reason=str(local_llama.missing_reason())
)

SEVERITIES = {"minor", "major", "critical"}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with local_llama.local_server(n_ctx=4096) as base_url:
        yield base_url


def evaluate(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["evaluate", *args])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def run(server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    results = tmp_path_factory.mktemp("real-evaluate") / "smoke.jsonl"
    args = ["--endpoint", server, "--model", local_llama.MODEL_ALIAS, "--max-tokens", "24"]
    args += ["--configs", "baseline", "--personas", "curious-carlos", "--exercises", "mult_7x8"]
    args += ["--reps", "1", "--turns", "1", "--no-exam-probe", "--transcripts"]
    args += ["--results", str(results), "--format", "json"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PEDRAG_LLM_TIMEOUT", "600")
        patch.setenv("PEDRAG_LLM_RETRIES", "0")
        patch.setenv("PEDRAG_CONTEXT_TOKENS", "4096")
        for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PEDRAG_LLM", "PEDRAG_MODEL"):
            patch.delenv(name, raising=False)
        first = evaluate(args)
        again = evaluate(args)
    return {"first": first, "again": again, "results": results}


def test_the_grid_runs_against_the_model_and_writes_its_results_file(
    run: dict[str, Any],
) -> None:
    code, out, err = run["first"]
    assert code == 0, err
    report = json.loads(out)
    assert report["backend"]["tutor"] != "offline" and report["measures"].startswith(
        "With an endpoint"
    )
    assert "estimate (an offline dry run of this grid): 1 sessions" in err
    lines = Path(run["results"]).read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    entry = json.loads(lines[0])
    assert entry["cell"] == ["baseline", "curious-carlos", "mult_7x8", 0, False]
    assert local_llama.MODEL_ALIAS in json.dumps(entry["fingerprint"])  # which model answered
    assert entry["session"]["turns"]  # the session with its turns, to resume from


def test_every_turn_is_judged_by_the_llm_evaluator_or_its_failure_is_recorded(
    run: dict[str, Any],
) -> None:
    report = json.loads(run["first"][1])
    (session,) = report["sessions"]
    assert session["transcript"], session
    unevaluated = 0
    for turn in session["transcript"]:
        assert turn["student"] and turn["tutor"]
        verdict = turn["evaluation"]
        if verdict is None:  # fail closed: unevaluated, with the reason, never a pass
            unevaluated += 1
            assert turn["unevaluated_reason"], turn
            continue
        assert verdict["evaluator"] == "llm" and 0.0 <= verdict["fidelity"] <= 1.0
        assert verdict["reason"]
        assert all(v["severity"] in SEVERITIES and v["cause"] for v in verdict["violations"])
    summary = report["configs"]["baseline"]
    assert summary["unevaluated"] == unevaluated
    assert summary["evaluated"] + unevaluated == len(session["transcript"])
    failures = [
        row
        for row in report["ladder"]
        if (row["source"], row["cause"]) == ("evaluator", "evaluator-failure")
    ]
    assert sum(row["counts"].get("baseline", 0) for row in failures) == unevaluated
    # ... and said on stderr, with the first reason (a failed evaluator is never silent).
    if unevaluated:
        assert f"the evaluator model failed on {unevaluated} of" in run["first"][2]


def test_the_same_command_reuses_the_sessions_its_results_file_holds(
    run: dict[str, Any],
) -> None:
    code, out, err = run["again"]
    assert code == 0, err
    assert "1 sessions already there are reused" in err
    assert json.loads(out)["configs"] == json.loads(run["first"][1])["configs"]
