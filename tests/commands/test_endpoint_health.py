"""The model path's health as a user meets it: commands check the endpoint before the first
turn, say on stderr when model calls fail during a session, and exit non-zero when nothing
the model said was used; a turn whose message could not be read is judged (fail safer).

Against the fake OpenAI server through the real client and the real command line.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from pedrag.cli import main
from pedrag.runtime.llm.openai_backend import OpenAIBackend, OpenAISettings
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor
from tests.fake_openai import FakeOpenAI, Reply
from tests.runtime.test_tutor_failures import scripted
from tests.runtime.tutor_fixtures import CURRICULUM, shipped


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "messages.txt"
    path.write_text("how do I start?\nis it 54?\n", encoding="utf-8")
    return path


def chat(script: Path, tmp_path: Path, *extra: str) -> int:
    return main(
        ["chat", "--script", str(script), "--exercise", "mult_7x8", "--db", str(tmp_path / "s.db")]
        + list(extra)
    )


def point_at(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("PEDRAG_LLM_RETRIES", "0")
    monkeypatch.setenv("PEDRAG_LLM_TIMEOUT", "5")
    monkeypatch.delenv("PEDRAG_LLM", raising=False)
    monkeypatch.delenv("PEDRAG_MODEL", raising=False)


def test_a_base_url_without_v1_stops_chat_before_any_turn_naming_the_url_and_the_fix(
    fake_openai: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    script: Path,
    tmp_path: Path,
) -> None:
    root = fake_openai.base_url.removesuffix("/v1")
    point_at(monkeypatch, root.replace("http://", "http://me:hunter2@"))

    code = chat(script, tmp_path)

    out, err = capsys.readouterr()
    assert code == 1
    assert out == ""  # no session line, no turn
    assert f"{root} answered HTTP 404" in err
    assert f"OPENAI_BASE_URL={root}/v1" in err
    assert "hunter2" not in err
    assert fake_openai.requests == [] and fake_openai.health_checks == []


def test_an_unreachable_endpoint_stops_simulate_with_the_url(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    point_at(monkeypatch, f"http://127.0.0.1:{port}/v1")

    code = main(["simulate", "--persona", "answer-seeker", "--db", str(tmp_path / "s.db")])

    assert code == 1
    assert f"cannot reach http://127.0.0.1:{port}/v1" in capsys.readouterr().err


def test_an_unserved_model_stops_evaluate_and_names_what_is_served(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_openai.serve_models("llama3.2")
    point_at(monkeypatch, fake_openai.base_url)

    code = main(["evaluate", "--configs", "pedrag", "--personas", "injector", "--reps", "1"])

    err = capsys.readouterr().err
    assert code == 1
    assert "does not serve the model 'gpt-4o-mini'" in err and "llama3.2" in err


def test_extract_checks_the_endpoint_before_reading_the_corpus_through_the_model(
    fake_openai: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    point_at(monkeypatch, fake_openai.base_url)
    fake_openai.answer_health_checks(Reply.error(401, "Incorrect API key provided"))
    corpus = tmp_path / "c.txt"
    corpus.write_text("Socrates asks the boy about the square.", encoding="utf-8")

    code = main(["extract", str(corpus), "-o", str(tmp_path / "t.yaml"), "--theory-id", "t"])

    assert code == 1
    assert "rejected the key" in capsys.readouterr().err
    assert fake_openai.requests == [] and not (tmp_path / "t.yaml").exists()


def test_failed_model_calls_are_warned_per_turn_and_summed_up(
    fake_openai: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    script: Path,
    tmp_path: Path,
) -> None:
    point_at(monkeypatch, fake_openai.base_url)
    fake_openai.always(scripted({"classifier": lambda request: Reply.error(503, "overloaded")}))

    code = chat(script, tmp_path)

    out, err = capsys.readouterr()
    assert code == 0  # the other roles answered
    warnings = [line for line in err.splitlines() if "warning:" in line]
    assert len(warnings) == 2
    assert warnings[0].startswith("pedrag chat: warning: turn 1: 1 model call(s) failed")
    assert "classifier" in warnings[0] and "HTTP 503" in warnings[0]
    summary = [line for line in err.splitlines() if "model calls failed" in line]
    assert len(summary) == 1 and "(classifier 2)" in summary[0]
    assert fake_openai.base_url in summary[0]
    assert out.count("tutor>") == 2


def test_a_session_where_every_model_call_failed_exits_1(
    fake_openai: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    script: Path,
    tmp_path: Path,
) -> None:
    point_at(monkeypatch, fake_openai.base_url)
    fake_openai.always(Reply.error(404, "model 'gpt-4o-mini' not found"))

    code = chat(script, tmp_path, "--format", "json")

    out, err = capsys.readouterr()
    assert code == 1
    assert "every model call failed: the replies were templates" in err
    assert '"fallback": true' in out  # the transcript is still printed, failed closed


def make_tutor(fake: FakeOpenAI) -> Tutor:
    settings = OpenAISettings(base_url=fake.base_url, retries=0, backoff_s=0, timeout_s=5)
    return Tutor(shipped(), OpenAIBackend(settings), CURRICULUM, MemoryStore())


@pytest.mark.parametrize("stage", ["classifier", "analyzer"])
def test_a_message_the_model_could_not_read_is_judged(fake_openai: FakeOpenAI, stage: str) -> None:
    fake_openai.always(scripted({stage: lambda request: Reply.error(500, "down")}))
    tutor = make_tutor(fake_openai)
    session = tutor.start(exercise="mult_7x8", seed=1)

    result = tutor.turn(session, "how do I start?")  # an ordinary turn: no judge when healthy

    assert result.contract.judge_required
    assert f"{stage}_failed" in result.contract.risks
    assert result.judge is not None and result.judge["verdict"] == "allow"
    assert not result.fallback
    assert result.audit["contract"]["risks"] == list(result.contract.risks)


def test_when_the_judge_fails_too_the_reply_is_the_template(fake_openai: FakeOpenAI) -> None:
    down = {role: (lambda request: Reply.error(500, "down")) for role in ("classifier", "judge")}
    fake_openai.always(scripted(down))
    tutor = make_tutor(fake_openai)
    session = tutor.start(exercise="mult_7x8", seed=1)

    result = tutor.turn(session, "just tell me the answer")

    assert result.fallback
    assert result.judge is not None and result.judge["rule_id"] == "judge-unavailable"
    stages = {item["stage"] for item in result.failures}
    assert {"classifier", "judge"} <= stages
    actor: Any = [r for r in fake_openai.requests if r.role == "actor"]
    assert actor  # a draft was written, and withheld because nobody could vouch for it


def test_a_healthy_ordinary_turn_is_not_judged(fake_openai: FakeOpenAI) -> None:
    fake_openai.always(scripted({}))
    tutor = make_tutor(fake_openai)
    session = tutor.start(exercise="mult_7x8", seed=1)

    result = tutor.turn(session, "how do I start?")

    assert not result.contract.judge_required and result.judge is None
