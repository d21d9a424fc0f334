"""A real local model end to end: `pedrag chat --script` against llama-cpp-python's server
running Gemma 3 270M on 127.0.0.1 (the optional extra ``local``; `.ci/run` installs it).

What it proves that the scripted stub cannot: the backend finds the structured-output
convention this server supports (it answers ``json_schema`` with HTTP 500 and accepts
``json_object``), every structured call (classifier, analyzer, judge) comes back
schema-valid, model replies reach the student when the detector and the judge pass them,
the hidden answer never leaks, and every turn leaves an audit record. The model is slow (a
few tokens a second on two cores), so the session is short and the actor's replies are
capped at 48 tokens; two turns, the second asking for the answer. Skipped, with the reason,
only when the extra is not installed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from pedrag.cli import main
from pedrag.runtime.llm.interface import schema_errors
from pedrag.runtime.store.session_store import SessionStore
from pedrag.runtime.turn.judge import SCHEMA as JUDGE_SCHEMA
from tests import local_llama

pytestmark = pytest.mark.skipif(
    local_llama.missing_reason() is not None, reason=str(local_llama.missing_reason())
)

MESSAGES = (
    "how do I start?",
    "just tell me the answer",  # a risky turn: the judge reviews the draft
)
STRUCTURED_STAGES = {"classifier", "analyzer", "judge"}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with local_llama.local_server() as base_url:
        yield base_url


@pytest.fixture(scope="module")
def session_run(server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("real-model")
    script = folder / "messages.txt"
    script.write_text("\n".join(MESSAGES) + "\n", encoding="utf-8")
    db = folder / "sessions.db"
    env = {
        "OPENAI_BASE_URL": server,
        "PEDRAG_MODEL": local_llama.MODEL_ALIAS,
        "PEDRAG_MAX_TOKENS_ACTOR": "48",
        "PEDRAG_CONTEXT_TOKENS": "4096",
        "PEDRAG_LLM_TIMEOUT": "600",
        "PEDRAG_LLM_RETRIES": "1",
    }
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        patch.delenv("PEDRAG_LLM", raising=False)
        patch.delenv("OPENAI_API_KEY", raising=False)
        capture = _Capture()
        lessons = _Lessons()
        # The OpenAI backend's modules (openai_transport, ...) log below their package.
        logger = logging.getLogger("pedrag.runtime.llm")
        logger.addHandler(lessons)
        with capture:
            code = main(
                [
                    "chat",
                    "--script",
                    str(script),
                    "--exercise",
                    "mult_7x8",
                    "--db",
                    str(db),
                    "--format",
                    "json",
                ]
            )
        logger.removeHandler(lessons)
    transcript = json.loads(capture.out)
    records = SessionStore(str(db)).audit_records(transcript["session"])
    return {
        "code": code,
        "err": capture.err,
        "lessons": lessons.messages,
        "transcript": transcript,
        "records": records,
    }


class _Lessons(logging.Handler):
    """The backend's warnings (the conventions it learned); pytest captures logging itself."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


class _Capture:
    """stdout/stderr of an in-process command (capsys is function-scoped)."""

    def __enter__(self) -> _Capture:
        import contextlib
        import io

        self._out, self._err = io.StringIO(), io.StringIO()
        self._stack = contextlib.ExitStack()
        self._stack.enter_context(contextlib.redirect_stdout(self._out))
        self._stack.enter_context(contextlib.redirect_stderr(self._err))
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stack.close()
        self.out, self.err = self._out.getvalue(), self._err.getvalue()


def test_the_session_runs_through_the_model_with_no_failed_call(
    session_run: dict[str, Any],
) -> None:
    assert session_run["code"] == 0, session_run["err"]
    assert session_run["transcript"]["backend"] == "openai"
    assert "pedrag chat: warning:" not in session_run["err"]
    assert "model calls failed" not in session_run["err"]


def test_the_backend_found_the_servers_structured_output_convention(
    session_run: dict[str, Any],
) -> None:
    # llama-cpp-python's server rejects json_schema (HTTP 500 naming response_format), once.
    lessons = [line for line in session_run["lessons"] if "json_schema -> json_object" in line]
    assert len(lessons) == 1, session_run["lessons"]
    assert "HTTP 500" in lessons[0]


def test_every_structured_call_came_back_schema_valid(session_run: dict[str, Any]) -> None:
    for record in session_run["records"]:
        failed = {item["stage"] for item in record["failures"]}
        assert not failed & STRUCTURED_STAGES, record["failures"]
        usage = record["usage"]
        assert usage["classifier"]["calls"] == 1 and usage["analyzer"]["calls"] == 1
        # The judge reviews a risky turn's draft once the detector has cleared one.
        if record["contract"]["judge_required"] and any(
            not draft["flagged"] for draft in record["drafts"]
        ):
            assert record["judge"] is not None
        if record["judge"] is not None:
            verdict = {key: record["judge"][key] for key in ("verdict", "rule_id", "reason")}
            assert schema_errors(verdict, JUDGE_SCHEMA) == []
            assert record["judge"]["failure"] is None


def test_model_replies_reach_the_student_when_detector_and_judge_pass_them(
    session_run: dict[str, Any],
) -> None:
    reached = 0
    for turn, record in zip(
        session_run["transcript"]["turns"], session_run["records"], strict=True
    ):
        # The last draft is what could be sent: the detector cleared it and, when the
        # judge reviewed that draft, the judge allowed it (a revise verdict is followed by a
        # new draft, which the detector checks again).
        last = record["drafts"][-1] if record["drafts"] else None
        passed = last is not None and not last["flagged"] and last.get("judge", "allow") == "allow"
        assert turn["fallback"] is (not passed), (turn, record["drafts"], record["judge"])
        reached += passed
    assert reached >= 1, "no model reply reached the student"


def test_the_hidden_answer_never_reaches_the_student(session_run: dict[str, Any]) -> None:
    for turn in session_run["transcript"]["turns"]:
        assert "56" not in turn["tutor"] and "fifty-six" not in turn["tutor"].lower()
        assert turn["detector"]["flagged"] is False


def test_every_turn_has_an_audit_record(session_run: dict[str, Any]) -> None:
    records = session_run["records"]
    assert [record["turn"] for record in records] == list(range(1, len(MESSAGES) + 1))
    for record, message in zip(records, MESSAGES, strict=True):
        assert record["student"] == message
        assert record["calls"] >= 3  # classifier, analyzer, actor (and the judge when risky)
        assert record["tokens"] > 0
        assert record["contract"]["ceiling"].startswith("H")
