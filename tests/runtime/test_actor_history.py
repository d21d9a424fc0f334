"""The actor gets a bounded, framed conversation history; the policy core still gets none."""

from __future__ import annotations

from pedrag.runtime.llm.interface import LLMRequest, LLMResponse
from pedrag.runtime.llm.offline import OfflineBackend
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.classifier import OPEN
from pedrag.runtime.turn.generator import TURN_MARK
from pedrag.runtime.turn.tutor import HISTORY_TURNS, Tutor
from tests.runtime.tutor_fixtures import CURRICULUM, shipped


class RecordingActor:
    """The offline backend, recording every actor request."""

    def __init__(self) -> None:
        self.inner = OfflineBackend()
        self.actor_requests: list[LLMRequest] = []

    def complete(self, request: LLMRequest) -> LLMResponse:
        if request.role == "actor":
            self.actor_requests.append(request)
        response = self.inner.complete(request)
        return LLMResponse(response.text, response.parsed, role=request.role)


def test_the_actor_sees_earlier_exchanges_framed_as_data_and_bounded() -> None:
    backend = RecordingActor()
    tutor = Tutor(shipped(), backend, CURRICULUM, MemoryStore(), history_turns=HISTORY_TURNS)
    session = tutor.start(exercise="mult_7x8", seed=1)
    messages = [f"my idea number {n}: I added 7 several times" for n in range(HISTORY_TURNS + 3)]
    replies = [tutor.turn(session, message).tutor for message in messages]
    last = backend.actor_requests[-1].messages
    roles = [role for role, _ in last]
    assert roles[0] == "system" and roles[-2:] == ["system", "user"]
    # Bounded, and trimmed in steps (issue 30: a prompt that only grows keeps its cached
    # prefix): the seventh exchange trims it to the newest half, then it grows again.
    assert roles[1:-2] == ["user", "assistant"] * ((HISTORY_TURNS + 1) // 2 + 1)
    shown = [len(request.messages) - 3 for request in backend.actor_requests]
    assert shown == [2 * n for n in (0, 1, 2, 3, 4, 5, 6, 3, 4)]
    assert max(shown) == 2 * HISTORY_TURNS
    shown_students = [text for role, text in last[1:-2] if role == "user"]
    assert all(text.startswith(OPEN) for text in shown_students)  # framed as data
    assert messages[-2] in shown_students[-1] and messages[0] not in "".join(shown_students)
    assert [text for role, text in last[1:-2] if role == "assistant"][-1] == replies[-2]
    # The contract (this turn's system message) comes whole, right before the message.
    assert "contract for this turn" in last[-2][1].lower()


def test_without_transcripts_no_student_text_is_kept_for_the_actor() -> None:
    backend = RecordingActor()
    tutor = Tutor(
        shipped(),
        backend,
        CURRICULUM,
        MemoryStore(),
        keep_transcript=False,
        history_turns=HISTORY_TURNS,
    )
    session = tutor.start(exercise="mult_7x8", seed=1)
    tutor.turn(session, "first message")
    tutor.turn(session, "second message")
    assert [role for role, _ in backend.actor_requests[-1].messages] == [
        "system",
        "system",
        "user",
    ]
    assert "first message" not in str(session.state.to_dict())


def test_history_is_on_by_default_and_can_be_turned_off() -> None:
    backend = RecordingActor()
    tutor = Tutor(shipped(), backend, CURRICULUM, MemoryStore())
    session = tutor.start(exercise="mult_7x8", seed=1)
    tutor.turn(session, "first message")
    tutor.turn(session, "second message")
    roles = [role for role, _ in backend.actor_requests[-1].messages]
    assert roles == ["system", "user", "assistant", "system", "user"]
    off = RecordingActor()
    tutor = Tutor(shipped(), off, CURRICULUM, MemoryStore(), history_turns=0)
    session = tutor.start(exercise="mult_7x8", seed=1)
    tutor.turn(session, "first message")
    tutor.turn(session, "second message")
    assert [role for role, _ in off.actor_requests[-1].messages] == ["system", "system", "user"]


def test_the_actor_prompt_grows_by_appending_so_a_server_can_cache_its_prefix() -> None:
    # Issue 30: stable text first (identity, ladder, exercise, rules), then the history, then
    # this turn's action and contract; turn n+1's prompt starts with turn n's prompt up to the
    # history, so a prompt cache keeps all of it.
    backend = RecordingActor()
    tutor = Tutor(shipped(), backend, CURRICULUM, MemoryStore(), history_turns=HISTORY_TURNS)
    session = tutor.start(exercise="mult_7x8", seed=1)
    messages = ["hello", "I think I add 7 eight times?", "can you explain it again?"]
    for message in messages:
        tutor.turn(session, message)
    prompts = [request.messages for request in backend.actor_requests]
    assert len(prompts) == len(messages)
    for earlier, later in zip(prompts, prompts[1:], strict=False):
        assert earlier[-2][0] == "system" and TURN_MARK in earlier[-2][1]
        up_to_history = earlier[:-2]  # the stable system message and the earlier exchanges
        assert later[: len(up_to_history)] == up_to_history
        assert len(later) == len(earlier) + 2  # the last exchange, appended
    # What changes from turn to turn is in the per-turn message, not the stable one.
    assert all(TURN_MARK in prompt[-2][1] and "Help ceiling" in prompt[-2][1] for prompt in prompts)
    assert all("Help ceiling" not in prompt[0][1] for prompt in prompts)
