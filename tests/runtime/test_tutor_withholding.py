"""Withholding through whole turns (issue 15): lists never count as answers, missing ceilings,
and an adversarial actor with an adversarial judge on the scripted server."""

from __future__ import annotations

from pathlib import Path

from pedrag.runtime.llm import LLMRequest, LLMResponse
from pedrag.runtime.memory_store import MemoryStore
from pedrag.runtime.offline import OfflineBackend
from pedrag.runtime.theory_set import TheorySet
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


# -- a missing or H7 ceiling (case 3) -----------------------------------------------------------

PLAIN = """\
pedrag: 1
theory: {{id: plain, name: Plain fixture}}
metrics:
  intent: {{type: enum, values: [question, attempt, solution_demand, injection, hostile, other], default: other, source: classified}}
  explain_mode: {{type: bool, default: false, source: trusted}}
actions:
  encourage: {{rung: H0, priority: 5, description: Encourage., template: "Keep going with {{topic}}."}}
  full_solution: {{rung: H7, priority: 6, description: Work the whole solution., template: "Let's look at {{topic}} together."}}
rules:
  - {{id: encourage_always, when: "intent != solution_demand", then: encourage}}
  - {{id: solve_on_demand, when: "intent == solution_demand", then: full_solution}}
{ceiling}
"""


def _plain(tmp_path: Path, ceiling: str) -> TheorySet:
    path = tmp_path / "plain.yaml"
    path.write_text(PLAIN.format(ceiling=ceiling), "utf-8")
    return TheorySet.from_paths([path])


def test_a_theory_without_a_ceiling_starts_at_h4(tmp_path: Path) -> None:
    tutor = Tutor(_plain(tmp_path, ""), ActorSays("Keep at it."), CURRICULUM, MemoryStore())
    session = tutor.start("plain", exercise="mult_7x8", seed=1)
    assert tutor.turn(session, "how do I start?").ceiling == 4


def test_an_h7_ceiling_alone_does_not_turn_answer_detection_off(tmp_path: Path) -> None:
    theories = _plain(tmp_path, "ceiling: {start: H7}")
    tutor = Tutor(theories, ActorSays("The answer is 56."), CURRICULUM, MemoryStore())
    session = tutor.start("plain", exercise="mult_7x8", seed=1)
    result = tutor.turn(session, "how do I start?")
    assert result.ceiling == 7 and "56" not in result.tutor and result.fallback
    assert all(draft["flagged"] for draft in result.audit["drafts"])
    assert "56" not in "".join(tutor.stream(session, "how do I start?"))


def test_trusted_explain_mode_at_h7_may_state_the_answer(tmp_path: Path) -> None:
    theories = _plain(tmp_path, "ceiling: {start: H4, steps: [{when: explain_mode, set: H7}]}")
    tutor = Tutor(theories, ActorSays("The answer is 56."), CURRICULUM, MemoryStore())
    session = tutor.start("plain", exercise="mult_7x8", seed=1, trusted={"explain_mode": True})
    result = tutor.turn(session, "how do I start?")
    assert result.ceiling == 7 and result.tutor == "The answer is 56."
