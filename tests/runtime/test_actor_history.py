"""The actor gets a bounded, framed conversation history; the policy core still gets none."""

from __future__ import annotations

from pedrag.runtime.llm.interface import LLMRequest, LLMResponse
from pedrag.runtime.llm.offline import OfflineBackend
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.classifier import OPEN
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
    assert roles[0] == "system" and roles[-1] == "user"
    assert roles[1:-1] == ["user", "assistant"] * HISTORY_TURNS  # bounded: the last N only
    shown_students = [text for role, text in last[1:-1] if role == "user"]
    assert all(text.startswith(OPEN) for text in shown_students)  # framed as data
    assert messages[-2] in shown_students[-1] and messages[0] not in "".join(shown_students)
    assert [text for role, text in last[1:-1] if role == "assistant"][-1] == replies[-2]
    # The contract (the system prompt) is still first and whole.
    assert "contract" in last[0][1].lower()


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
    assert [role for role, _ in backend.actor_requests[-1].messages] == ["system", "user"]
    assert "first message" not in str(session.state.to_dict())


def test_history_is_on_by_default_and_can_be_turned_off() -> None:
    backend = RecordingActor()
    tutor = Tutor(shipped(), backend, CURRICULUM, MemoryStore())
    session = tutor.start(exercise="mult_7x8", seed=1)
    tutor.turn(session, "first message")
    tutor.turn(session, "second message")
    roles = [role for role, _ in backend.actor_requests[-1].messages]
    assert roles == ["system", "user", "assistant", "user"]
    off = RecordingActor()
    tutor = Tutor(shipped(), off, CURRICULUM, MemoryStore(), history_turns=0)
    session = tutor.start(exercise="mult_7x8", seed=1)
    tutor.turn(session, "first message")
    tutor.turn(session, "second message")
    assert [role for role, _ in off.actor_requests[-1].messages] == ["system", "user"]
