"""Withholding through whole turns (issue 15): lists never count as answers, missing ceilings,
and an adversarial actor with an adversarial judge on the scripted server."""

from __future__ import annotations

from pedrag.runtime.llm import LLMRequest, LLMResponse
from pedrag.runtime.memory_store import MemoryStore
from pedrag.runtime.offline import OfflineBackend
from pedrag.runtime.tutor import Tutor
from tests.runtime.tutor_fixtures import CURRICULUM, shipped

CANDIDATES = ", ".join(str(n) for n in range(50, 63))


class ActorSays:
    """The offline backend, except that the actor says ``reply``."""

    def __init__(self, reply: str) -> None:
        self.inner = OfflineBackend()
        self.reply = reply

    def complete(self, request: LLMRequest) -> LLMResponse:
        response = self.inner.complete(request)
        text = self.reply if request.role == "actor" else response.text
        return LLMResponse(text, response.parsed, role=request.role)


def test_a_list_of_candidates_neither_solves_the_exercise_nor_raises_mastery() -> None:
    tutor = Tutor(shipped(), curriculum=CURRICULUM, store=MemoryStore())
    session = tutor.start(exercise="mult_7x8", seed=1)
    before = session.state.metrics["mastery"]
    everything = ", ".join(str(n) for n in range(201))
    result = tutor.turn(session, f"my answer: it is one of {everything}")
    assert not result.audit["solved"] and session.state.metrics["mastery"] == before


def test_an_exam_is_not_solved_by_listing_candidates() -> None:
    tutor = Tutor(shipped(), curriculum=CURRICULUM, store=MemoryStore())
    session = tutor.start(exercise="fraction_exam", seed=1)
    result = tutor.turn(session, "my answer is one of " + ", ".join(str(n) for n in range(20)))
    assert not result.audit["solved"] and not session.state.solved


def test_after_a_list_of_candidates_the_actor_cannot_confirm_the_answer() -> None:
    tutor = Tutor(shipped(), ActorSays("Yes, it is 56!"), CURRICULUM, MemoryStore())
    session = tutor.start(exercise="mult_7x8", seed=1)
    result = tutor.turn(session, f"is it one of {CANDIDATES}?")
    assert "56" not in result.tutor and result.fallback
    streamed = "".join(tutor.stream(session, f"is it one of {CANDIDATES}?"))
    assert "56" not in streamed


def test_a_single_stated_answer_is_still_confirmed() -> None:
    tutor = Tutor(shipped(), ActorSays("Yes, 56 is right!"), CURRICULUM, MemoryStore())
    session = tutor.start(exercise="mult_7x8", seed=1)
    result = tutor.turn(session, "I think it is 56")
    assert result.tutor == "Yes, 56 is right!" and result.audit["solved"]
