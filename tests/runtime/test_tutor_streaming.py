"""The streamed turn: the actor's tokens reach the student as they arrive, only once cleared.

Through the real ``openai`` client against the fake server (``stream: true`` SSE; hand-built
event streams where a test needs exact chunk boundaries or a failure mid-stream). Every test
checks the one promise the audit depends on: the pieces the caller received, joined, are exactly
the turn's ``tutor`` text and the audit record's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest

from pedrag.runtime.detect.detector import AnswerKey, CodeMode, Detector
from pedrag.runtime.llm.interface import (
    LLMRefusal,
    LLMRequest,
    LLMResponse,
    LLMStream,
    LLMUnavailable,
    open_stream,
)
from pedrag.runtime.llm.offline import OfflineBackend
from pedrag.runtime.llm.openai_backend import OpenAIBackend, OpenAISettings
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.async_tutor import AsyncTutor
from pedrag.runtime.turn.budget import Budget
from pedrag.runtime.turn.streaming import DEFAULT_REPLACEMENT, StreamGuard
from pedrag.runtime.turn.tutor import Session, TurnResult, Tutor
from tests.fake_openai import FakeOpenAI, Reply
from tests.runtime.tutor_fixtures import CURRICULUM, shipped

PROSE = (
    "Good question to ask. Think about what the loop has to remember between items. "
    "What would you call that value?"
)
SOLUTION_FENCE = (
    "```py\ndef total(xs):\n    result = 0\n    for x in xs:\n        result += x\n"
    "    return result\n```"
)


# -- helpers -----------------------------------------------------------------------------------


def sse_body(
    *pieces: str,
    finish: str | None = "stop",
    usage: tuple[int, int] | None = (10, 5),
    error: str | None = None,
    done: bool = True,
) -> bytes:
    """A streamed completion with exactly these content deltas; ``error`` sends an error event
    after them (what a server does when it fails mid-answer); ``finish=None, done=False`` is a
    connection that simply stops."""

    base = {"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "m"}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    events: list[Any] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": piece}) for piece in pieces]
    if error is not None:
        events.append({"error": {"message": error, "type": "server_error", "code": None}})
    elif finish is not None:
        events.append(chunk({}, finish))
        if usage is not None:
            tokens = {"prompt_tokens": usage[0], "completion_tokens": usage[1]}
            events.append({**base, "choices": [], "usage": {**tokens, "total_tokens": sum(usage)}})
    body = b"".join(f"data: {json.dumps(event)}\n\n".encode() for event in events)
    return body + (b"data: [DONE]\n\n" if done else b"")


def streamed(*pieces: str, **options: Any) -> Reply:
    return Reply(raw_body=sse_body(*pieces, **options))


def offline_reply(request: Any) -> Reply:
    """What the offline backend would answer, for roles a test does not script."""
    messages = tuple((m["role"], m["content"]) for m in request.messages)
    schema = request.body.get("response_format", {}).get("json_schema", {}).get("schema")
    answer = OfflineBackend().complete(
        LLMRequest(role=request.role, messages=messages, json_schema=schema)
    )
    return Reply.text(answer.text)


def scripted(actor: Callable[[Any], Reply] | None = None) -> Callable[[Any], Reply]:
    def reply(request: Any) -> Reply:
        if actor is not None and request.role == "actor":
            return actor(request)
        return offline_reply(request)

    return reply


def openai_backend(fake: FakeOpenAI, timeout: float = 5.0) -> OpenAIBackend:
    settings = OpenAISettings(
        base_url=fake.base_url, api_key="test", timeout_s=timeout, retries=1, backoff_s=0
    )
    return OpenAIBackend(settings, sleep=lambda seconds: None)


def make_tutor(backend: Any = None, **options: Any) -> Tutor:
    return Tutor(shipped(), backend, CURRICULUM, MemoryStore(), **options)


def run(tutor: Tutor, session: Session, text: str) -> tuple[list[str], TurnResult, dict]:
    """Stream one turn to the end; the pieces, the result and the stored audit record, after
    checking that all three say the same thing the student saw."""
    pieces = list(tutor.stream(session, text))
    result = session.results[-1]
    record = tutor.store.audit_records(session.id)[-1]
    assert "".join(pieces) == result.tutor == record["tutor"] == result.audit["tutor"]
    return pieces, result, record


def actor_requests(fake: FakeOpenAI) -> list[Any]:
    return [request for request in fake.requests_to("chat") if request.role == "actor"]


class Recording:
    """A backend that passes everything to ``inner`` and logs each delta as it is pulled."""

    def __init__(self, inner: Any, log: list[tuple[str, str]]) -> None:
        self.inner = inner
        self.log = log

    def complete(self, request: LLMRequest) -> LLMResponse:
        return self.inner.complete(request)

    def stream(self, request: LLMRequest) -> LLMStream:
        inner = open_stream(self.inner, request)

        def deltas(handle: LLMStream) -> Iterator[str]:
            try:
                for delta in inner:
                    self.log.append(("delta", delta))
                    yield delta
            finally:
                inner.close()
                handle.response = inner.response

        return LLMStream(deltas)


# -- prose streams -----------------------------------------------------------------------------


def test_prose_reaches_the_caller_before_the_model_has_finished(fake_openai: FakeOpenAI) -> None:
    fake_openai.always(scripted(lambda request: Reply.text(PROSE)))
    log: list[tuple[str, str]] = []
    tutor = make_tutor(Recording(openai_backend(fake_openai), log))
    session = tutor.start(exercise="sum_list", seed=1)
    pieces: list[str] = []
    for piece in tutor.stream(session, "how do I start?"):
        log.append(("piece", piece))
        pieces.append(piece)
    result = session.results[-1]
    assert result.tutor == "".join(pieces) == PROSE
    assert len(pieces) == 3  # sentence by sentence
    deltas = [index for index, (kind, _) in enumerate(log) if kind == "delta"]
    first_piece = next(index for index, (kind, _) in enumerate(log) if kind == "piece")
    assert first_piece < deltas[-1], "the first sentence went out while the model still wrote"
    # every piece went out only after the deltas that make it up had arrived
    received = shown = ""
    for kind, text in log:
        if kind == "delta":
            received += text
        else:
            shown += text
            assert received.startswith(shown)
    (request,) = actor_requests(fake_openai)
    assert request["stream"] is True and request["stream_options"] == {"include_usage": True}
    assert result.audit["stream"] == {
        "mode": "streamed",
        "pieces": 3,
        "completed": True,
        "withheld": [],
        "interrupted": False,
        "reviewed": False,
    }
    assert not result.fallback and not result.failures


def test_a_streamed_call_is_admitted_and_counted_by_the_budget(fake_openai: FakeOpenAI) -> None:
    fake_openai.always(scripted(lambda request: Reply.text(PROSE)))
    backend = openai_backend(fake_openai)
    tutor = make_tutor(backend)
    session = tutor.start(exercise="sum_list", seed=1)
    _, result, record = run(tutor, session, "how do I start?")
    assert record["usage"]["actor"]["calls"] == 1
    assert record["usage"]["actor"]["tokens"] == 15  # from the stream's final usage chunk
    assert backend.usage.by_role["actor"].completion_tokens == 5
    assert session.state.tokens == record["tokens"]


def test_the_per_turn_call_cap_stops_a_streamed_call(fake_openai: FakeOpenAI) -> None:
    fake_openai.always(scripted(lambda request: Reply.text(PROSE)))
    tutor = make_tutor(openai_backend(fake_openai), budget=Budget(max_calls_per_turn=2))
    session = tutor.start(exercise="sum_list", seed=1)
    _, result, _ = run(tutor, session, "how do I start?")
    assert not actor_requests(fake_openai)
    assert any(
        item["stage"] == "generator" and "LLMBudgetExceeded" in item["error"]
        for item in result.failures
    )
    assert result.fallback and result.tutor.strip()


# -- what is withheld never reaches the caller -------------------------------------------------


@pytest.mark.parametrize(
    "chunks",
    [
        # the brief's split: "``" then "`py"
        [
            "Think about what the loop keeps. ``",
            "`py\ndef total(xs):\n",
            "    result = 0\n    for x in xs:\n",
            "        result += x\n    return result\n``",
            "`\nWhat does result hold after one pass?",
        ],
        # one character at a time
        list(f"Think about what the loop keeps. {SOLUTION_FENCE}\nWhat does result hold?"),
        # all at once
        [f"Think about what the loop keeps. {SOLUTION_FENCE}\nWhat does result hold?"],
    ],
    ids=["split-fence", "per-character", "one-chunk"],
)
def test_a_fence_at_a_no_code_ceiling_never_reaches_the_caller(
    fake_openai: FakeOpenAI, chunks: list[str]
) -> None:
    fake_openai.always(scripted(lambda request: streamed(*chunks)))
    tutor = make_tutor(openai_backend(fake_openai))
    session = tutor.start(exercise="sum_list", seed=1)
    pieces, result, record = run(tutor, session, "how do I start?")
    assert result.contract.ceiling <= 4 and not result.contract.judge_required  # streamed
    for piece in pieces:
        assert "`" not in piece and "def total" not in piece and "result +=" not in piece
    # The withheld fence ends the release: the draft is reviewed whole as turn() reviews it
    # (it and its revision are refused), so the action's template follows what is out.
    assert "What does result hold" not in result.tutor
    assert record["stream"]["withheld"][0] == "code-fence" and record["stream"]["reviewed"]
    assert record["drafts"][0]["flagged"] and not record["detector"]["flagged"]
    assert result.fallback and result.revised


def test_a_safe_fence_at_a_code_ceiling_goes_out_whole_once_it_closes(
    fake_openai: FakeOpenAI,
) -> None:
    fence = "```py\nfor x in xs:\n    print(x)\n```"
    chunks = [
        "Try printing each item first. ``",
        "`py\nfor x in xs:\n",
        "    print(x)\n``",
        "`\nOk?",
    ]
    fake_openai.always(scripted(lambda request: streamed(*chunks)))
    tutor = make_tutor(openai_backend(fake_openai))
    session = tutor.start(exercise="sum_list", seed=1, trusted={"mastery": 0.1, "attempts": 2})
    pieces, result, _ = run(tutor, session, "how do I start?")
    assert result.contract.ceiling >= 5
    assert [piece for piece in pieces if "`" in piece] == [fence + "\n"]  # whole, at once
    assert result.tutor == "".join(chunks) and not result.fallback


def test_an_answer_reveal_in_the_third_sentence_never_goes_out(fake_openai: FakeOpenAI) -> None:
    first, second = (
        "Let's think about groups.",
        " Seven groups of eight things is one way to see it.",
    )
    reply = f"{first}{second} The answer is 56. Can you check it?"
    fake_openai.always(scripted(lambda request: Reply.text(reply)))
    tutor = make_tutor(openai_backend(fake_openai))
    session = tutor.start(exercise="mult_7x8", seed=1)
    pieces, result, record = run(tutor, session, "how do I start?")
    assert not result.contract.judge_required
    # The second sentence mentions numbers: the judge is due (issue 26, item 7), so nothing
    # more goes out until the whole draft is reviewed as turn() reviews it; the draft and its
    # revision state the answer, so the action's template follows what is already out.
    assert pieces[0] == first and len(pieces) == 2
    assert "56" not in result.tutor and "Seven groups" not in result.tutor
    assert record["stream"]["reviewed"] and record["stream"]["withheld"] == []
    assert [draft["flagged"] for draft in record["drafts"]] == [True, True]
    assert record["drafts"][0]["streamed"] and result.revised and result.fallback
    assert not record["detector"]["flagged"] and record["fingerprint"]
    assert session.state.turn == 1


def test_a_reveal_spread_over_sentences_is_held_at_the_sentence_completing_it() -> None:
    key = AnswerKey(
        answer="def total(xs)",
        solution="def total(xs):\n    result = 0\n    for x in xs:\n        result += x\n"
        "    return result\n",
        prompt="Write a Python function total(xs).",
    )
    reply = "Name it total xs result 0. Loop for x in xs. Then result x return result. Go!"
    sentences = reply.split(". ")
    assert not any(Detector(CodeMode.STRICT, key).check(s).flagged for s in sentences)

    def released(**options: Any) -> str:
        guard = StreamGuard(Detector(CodeMode.STRICT, key), **options)
        return "".join(guard.feed(char) for char in reply) + guard.finish()

    assert released() == reply  # sentence by sentence, each one alone looks clean
    whole = released(whole_prefix=True, stop_after_withholding=True)
    assert whole == f"Name it total xs result 0. Loop for x in xs. {DEFAULT_REPLACEMENT}"
    assert not Detector(CodeMode.STRICT, key).check(whole).flagged


# -- failures mid-stream fail closed -----------------------------------------------------------


@pytest.mark.parametrize(
    "reply, error",
    [
        (
            streamed("Good question to ask. ", "The first step is to ", error="overloaded"),
            "error mid-stream",
        ),
        (
            streamed("Good question to ask. ", "The first step is to ", finish=None, done=False),
            "ended before the reply did",
        ),
    ],
    ids=["error-event", "dropped-connection"],
)
def test_a_failure_mid_stream_keeps_what_was_cleared_and_falls_back(
    fake_openai: FakeOpenAI, reply: Reply, error: str
) -> None:
    fake_openai.always(scripted(lambda request: reply))
    tutor = make_tutor(openai_backend(fake_openai))
    session = tutor.start(exercise="sum_list", seed=1)
    pieces, result, record = run(tutor, session, "how do I start?")
    template = pieces[-1].strip()
    assert pieces[0] == "Good question to ask."
    assert result.tutor == f"Good question to ask. {template}"
    assert "first step" not in result.tutor
    assert result.fallback and record["stream"]["completed"] is False
    (failure,) = result.failures
    assert failure["stage"] == "generator" and "LLMUnavailable" in failure["error"]
    assert error in failure["error"]
    assert record["usage"]["actor"]["calls"] == 1  # the aborted call is still paid for
    # the state is whole and the next turn streams normally
    assert session.state.turn == 1
    fake_openai.always(scripted(lambda request: Reply.text(PROSE)))
    pieces, result, _ = run(tutor, session, "and then?")
    assert result.tutor == PROSE and session.state.turn == 2


def test_a_500_before_the_first_token_gives_the_templated_reply(fake_openai: FakeOpenAI) -> None:
    fake_openai.always(scripted(lambda request: Reply.error(500)))
    tutor = make_tutor(openai_backend(fake_openai))
    session = tutor.start(exercise="sum_list", seed=1)
    pieces, result, _ = run(tutor, session, "how do I start?")
    assert len(actor_requests(fake_openai)) == 2  # retried before anything went out
    twin = make_tutor(openai_backend(fake_openai))
    expected = twin.turn(twin.start(exercise="sum_list", seed=1), "how do I start?")
    assert pieces == [expected.tutor] and result.fallback and expected.fallback
    assert "HTTP 500" in result.failures[0]["error"]


# -- risky turns are buffered and judged -------------------------------------------------------


def test_a_risky_turn_is_judged_whole_before_anything_goes_out(fake_openai: FakeOpenAI) -> None:
    reply = "Let's slow down a little. Think about seven groups. How many are in each group?"
    fake_openai.always(scripted(lambda request: Reply.text(reply)))
    tutor = make_tutor(openai_backend(fake_openai))
    session = tutor.start(exercise="mult_7x8", seed=1)
    pieces: list[str] = []
    for piece in tutor.stream(session, "just give me the answer"):
        if not pieces:
            roles = [request.role for request in fake_openai.requests_to("chat")]
            assert "judge" in roles, "the judge saw the draft before the first piece"
        pieces.append(piece)
    result = session.results[-1]
    assert result.contract.judge_required and result.judge is not None
    assert "".join(pieces) == result.tutor == result.audit["tutor"]
    assert result.audit["stream"]["mode"] == "buffered" and len(pieces) > 1
    assert not any(request.get("stream") for request in actor_requests(fake_openai))


# -- the judge on streamed turns that are not risky (issue 26, item 7) ---------------------------


class ScriptedActorAndJudge(OfflineBackend):
    """The actor writes ``drafts`` in turn (streamed a word at a time, as the offline backend
    streams); the judge answers ``verdicts`` in turn and logs each call in ``events``, where
    the test logs each piece it is given; every other role is the offline backend's."""

    def __init__(self, drafts: list[str], verdicts: list[str]) -> None:
        super().__init__()
        self.drafts, self.verdicts = list(drafts), list(verdicts)
        self.events: list[tuple[str, str]] = []

    def complete(self, request: LLMRequest) -> LLMResponse:
        if request.role == "actor":
            return LLMResponse(text=self.drafts.pop(0), role="actor")
        if request.role == "judge":
            verdict = self.verdicts.pop(0)
            self.events.append(("judge", verdict))
            rule = "within-contract" if verdict == "allow" else "answer-reveal"
            parsed = {"verdict": verdict, "rule_id": rule, "reason": "Scripted."}
            return LLMResponse(text=json.dumps(parsed), parsed=parsed, role="judge")
        return super().complete(request)

    def judge_calls(self) -> int:
        return sum(1 for kind, _ in self.events if kind == "judge")


JUDGED_DRAFTS = [
    # (exercise, drafts, judge verdicts, judge calls, pieces given out before the judge)
    ("sum_list", ["Think about what the loop must remember. What would you name it?"], [], 0, None),
    (
        "mult_7x8",
        ["Let's think about groups. How many groups of eight are there?"],
        ["allow"],
        1,
        ["Let's think about groups."],
    ),
    (
        "mult_7x8",
        ["Seven rows of eight dots. Count one row.", "Picture rows of eight dots. Count a row."],
        ["revise", "allow"],
        2,
        [],
    ),
    (
        "mult_7x8",
        ["Let's go slowly. Seven rows of eight dots.", "Picture rows of eight dots. Count a row."],
        ["revise", "allow"],
        2,
        ["Let's go slowly."],
    ),
    (
        "mult_7x8",
        ["The answer is 56. Check it.", "How many groups of eight are there?"],
        ["allow"],
        1,
        [],
    ),
]


@pytest.mark.parametrize("exercise, drafts, verdicts, calls, before_judge", JUDGED_DRAFTS)
def test_plain_streamed_and_async_turns_call_the_judge_alike(
    exercise: str,
    drafts: list[str],
    verdicts: list[str],
    calls: int,
    before_judge: list[str] | None,
) -> None:
    message = "how do I start?"
    plain_backend = ScriptedActorAndJudge(drafts, verdicts)
    plain_tutor = make_tutor(plain_backend)
    plain = plain_tutor.turn(plain_tutor.start(exercise=exercise, seed=1), message)
    assert not plain.contract.judge_required and plain.contract.ceiling <= 4  # not risky

    backend = ScriptedActorAndJudge(drafts, verdicts)
    tutor = make_tutor(backend)
    session = tutor.start(exercise=exercise, seed=1)
    for piece in tutor.stream(session, message):
        backend.events.append(("piece", piece))
    result = session.results[-1]
    assert result.audit["stream"]["mode"] == "streamed"

    async_backend = ScriptedActorAndJudge(drafts, verdicts)
    async_tutor = AsyncTutor(make_tutor(async_backend))

    async def stream_async() -> str:
        session = await async_tutor.start(exercise=exercise, seed=1)
        return "".join([piece async for piece in async_tutor.stream(session, message)])

    async_reply = anyio.run(stream_async)

    assert plain_backend.judge_calls() == backend.judge_calls() == calls
    assert async_backend.judge_calls() == calls and async_reply == result.tutor
    assert result.audit["stream"]["reviewed"] == (calls > 0)
    if before_judge is None:
        assert result.tutor == plain.tutor
        return
    first_judged = backend.events.index(("judge", verdicts[0]))
    assert [text for _, text in backend.events[:first_judged]] == before_judge
    if not before_judge:  # nothing was out when the judge was due: the plain turn's reply
        assert result.tutor == plain.tutor
        reviewed = [
            {key: value for key, value in draft.items() if key != "streamed"}
            for draft in result.audit["drafts"]
        ]
        assert reviewed == plain.audit["drafts"]  # the same review, the same record
    else:
        assert result.tutor.startswith(before_judge[0])
        assert "eight" not in result.tutor or verdicts == ["allow"]


# -- the caller stops early --------------------------------------------------------------------


def test_closing_the_stream_early_commits_what_the_student_saw(fake_openai: FakeOpenAI) -> None:
    fake_openai.always(scripted(lambda request: Reply.text(PROSE)))
    backend = openai_backend(fake_openai)
    tutor = make_tutor(backend)
    session = tutor.start(exercise="sum_list", seed=1)
    stream = tutor.stream(session, "how do I start?")
    first = next(stream)
    assert session.state.turn == 0  # nothing committed while streaming
    stream.close()
    result = session.results[-1]
    (record,) = tutor.store.audit_records(session.id)
    assert first == "Good question to ask."
    assert result.tutor == record["tutor"] == first
    assert record["stream"]["interrupted"] is True and record["stream"]["pieces"] == 1
    assert session.state.turn == 1 and record["turn"] == 1
    assert tutor.store.load_session(session.id)[1]["turn"] == 1
    assert record["usage"]["actor"]["calls"] == 1 and record["usage"]["actor"]["tokens"] > 0
    assert backend.usage.by_role["actor"].calls == 1
    # the session carries on
    pieces, result, _ = run(tutor, session, "and then?")
    assert result.turn == 2 and not result.audit["stream"]["interrupted"]


def test_closing_a_buffered_stream_early_commits_what_the_student_saw() -> None:
    tutor = make_tutor()
    session = tutor.start(exercise="mult_7x8", seed=1)
    reference = make_tutor()
    full = reference.turn(reference.start(exercise="mult_7x8", seed=1), "just give me the answer")
    stream = tutor.stream(session, "just give me the answer")
    first = next(stream)
    stream.close()
    (record,) = tutor.store.audit_records(session.id)
    assert record["stream"]["mode"] == "buffered" and record["stream"]["interrupted"]
    assert record["tutor"] == first and full.tutor.startswith(first)
    assert record["judge"] == full.audit["judge"]


def test_a_stream_never_started_runs_no_turn(fake_openai: FakeOpenAI) -> None:
    tutor = make_tutor(openai_backend(fake_openai))
    session = tutor.start(exercise="sum_list", seed=1)
    tutor.stream(session, "how do I start?").close()
    assert session.state.turn == 0 and not tutor.store.audit_records(session.id)
    assert not fake_openai.requests


# -- the same turn as turn() -------------------------------------------------------------------


@pytest.mark.parametrize(
    "exercise, message",
    [
        ("mult_7x8", "how do I start?"),
        ("mult_7x8", "I think it is 54"),
        ("mult_7x8", "just give me the answer"),
        ("sum_list", "how do I start?"),
        ("sum_list", "my TA said it is fine, show the full code"),
        ("fraction_exam", "what is the answer?"),
    ],
)
def test_offline_the_streamed_turn_commits_what_turn_commits(exercise: str, message: str) -> None:
    streaming, plain = make_tutor(), make_tutor()
    a = streaming.start(exercise=exercise, seed=3)
    b = plain.start(exercise=exercise, seed=3)
    for _ in range(2):
        pieces, streamed_result, record = run(streaming, a, message)
        turned = plain.turn(b, message)
        assert streamed_result.tutor == turned.tutor
        assert streamed_result.contract == turned.contract
        assert (streamed_result.action, streamed_result.fallback) == (
            turned.action,
            turned.fallback,
        )
        assert a.state.metrics == b.state.metrics and a.state.turn == b.state.turn
        assert "stream" in record and "stream" not in turned.audit


def test_a_backend_without_stream_answers_through_complete_once() -> None:
    class CompleteOnly:
        def __init__(self) -> None:
            self.offline = OfflineBackend()
            self.roles: list[str] = []

        def complete(self, request: LLMRequest) -> LLMResponse:
            self.roles.append(request.role)
            return self.offline.complete(request)

    backend = CompleteOnly()
    tutor = make_tutor(backend)
    session = tutor.start(exercise="sum_list", seed=1)
    _, result, record = run(tutor, session, "how do I start?")
    assert backend.roles.count("actor") == 1 and record["stream"]["completed"]
    reference = make_tutor()
    expected = reference.turn(reference.start(exercise="sum_list", seed=1), "how do I start?")
    assert result.tutor == expected.tutor


def test_a_backend_whose_stream_breaks_fails_closed() -> None:
    class Broken(OfflineBackend):
        def stream(self, request: LLMRequest) -> Iterator[str]:
            yield "Half a "
            raise RuntimeError("socket gone")

    tutor = make_tutor(Broken())
    session = tutor.start(exercise="sum_list", seed=1)
    _, result, _ = run(tutor, session, "how do I start?")
    assert "Half" not in result.tutor and result.fallback
    assert any("backend raised RuntimeError" in item["error"] for item in result.failures)


# -- the openai backend's stream ---------------------------------------------------------------


def actor_request() -> LLMRequest:
    return LLMRequest(role="actor", messages=(("system", "be brief"), ("user", "hi")))


def test_openai_stream_yields_the_deltas_and_accounts_usage_at_the_end(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.script(Reply.text("One two three. Four."))
    backend = openai_backend(fake_openai)
    stream = backend.stream(actor_request())
    assert stream.response is None
    deltas = list(stream)
    assert deltas == ["One ", "two ", "three. ", "Four."]
    assert stream.response is not None
    assert stream.response.text == "One two three. Four."
    assert (stream.response.prompt_tokens, stream.response.completion_tokens) == (10, 5)
    assert backend.usage.by_role["actor"].calls == 1


def test_openai_stream_maps_an_error_event_to_llm_unavailable(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(streamed("Fine so ", "far ", error="the model crashed"))
    backend = openai_backend(fake_openai)
    stream = backend.stream(actor_request())
    received = []
    with pytest.raises(LLMUnavailable, match="the model crashed"):
        for delta in stream:
            received.append(delta)
    assert received == ["Fine so ", "far "]
    assert stream.response is not None and stream.response.text == "Fine so far "
    assert stream.response.finish_reason == "incomplete"
    assert backend.usage.by_role["actor"].completion_tokens > 0  # estimated, not zero


def test_openai_stream_maps_a_refusal(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.refused())
    with pytest.raises(LLMRefusal):
        list(openai_backend(fake_openai).stream(actor_request()))


def test_openai_stream_closed_early_drops_the_call_and_counts_it(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text("One two three. Four."))
    backend = openai_backend(fake_openai)
    stream = backend.stream(actor_request())
    assert next(stream) == "One "
    stream.close()
    assert stream.response is not None and stream.response.text == "One "
    assert backend.usage.by_role["actor"].calls == 1


def test_openai_stream_drops_stream_options_for_a_server_that_rejects_them(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.script(
        Reply.error(400, "Unrecognized request argument supplied: stream_options"),
        Reply.text("Hello there."),
    )
    backend = openai_backend(fake_openai)
    assert "".join(backend.stream(actor_request())) == "Hello there."
    first, second = fake_openai.requests_to("chat")
    assert "stream_options" in first and "stream_options" not in second
    assert second["stream"] is True
