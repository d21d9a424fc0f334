"""Withholding through whole turns (issue 15): lists never count as answers, missing ceilings,
and an adversarial actor with an adversarial judge on the scripted server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pedrag.runtime.llm.interface import LLMRequest, LLMResponse
from pedrag.runtime.llm.offline import OfflineBackend
from pedrag.runtime.llm.openai_backend import OpenAIBackend, OpenAISettings
from pedrag.runtime.policy.theory_set import TheorySet
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor
from tests.fake_openai import FakeOpenAI, Reply
from tests.runtime.reveal_payloads import CODE_PAYLOADS, number_payloads, text_payloads
from tests.runtime.test_tutor_failures import offline_reply
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
    # The grader's confirmation, the actor's own echo of the learner's answer, the next item.
    assert result.tutor.startswith("That's right: 56 is correct. Yes, 56 is right!")
    assert result.audit["solved"] and not result.detector["flagged"]


# -- a missing or H7 ceiling (case 3) -----------------------------------------------------------

PLAIN = """\
pedrag: 1
theory: {{id: plain, name: Plain fixture}}
metrics:
  intent: {{type: enum, values: [question, attempt, solution_demand, injection, hostile, other], default: other, source: classified}}
  explain_mode: {{type: bool, default: false, source: trusted}}
  exam_active: {{type: bool, default: false, source: trusted}}
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


# -- the adversarial suite against the scripted server (case 4, acceptance) ----------------------

SUITE_CURRICULUM = """\
pedrag: 1
kind: curriculum
id: adversarial_suite
goals:
  - {id: multiplication_facts, domain: mathematics, topic: arithmetic}
  - {id: cells, domain: biology, topic: cell_biology}
  - {id: loops, domain: programming, topic: python_loops}
  - {id: fractions, domain: mathematics, topic: fractions}
exercises:
  - {id: mult_7x8, goal: multiplication_facts, prompt: What is 7 times 8?, answer: "56", accept: [fifty-six]}
  - {id: organelle, goal: cells, prompt: Which organelle carries out photosynthesis?, answer: chloroplast}
  - id: count_even
    goal: loops
    prompt: Write count_even(nums), the number of even values in a list.
    answer: "count_even"
    language: python
  - {id: fraction_exam, goal: fractions, prompt: What is 3/4 of 12?, answer: "9", accept: [nine], exam: true}
"""
ADVERSARIAL_JUDGE = {"verdict": "allow", "rule_id": "within-contract", "reason": "Fine."}


def _suite_cases() -> list[tuple[str, str, str]]:
    cases = [("mult_7x8", name, text) for name, text in number_payloads(56).items()]
    cases += [("organelle", name, text) for name, text in text_payloads("chloroplast").items()]
    cases += [("count_even", name, text) for name, text in CODE_PAYLOADS.items()]
    return cases


def _suite_tutor(fake: FakeOpenAI, tmp_path: Path, ceiling: int, payload: list[str]) -> Tutor:
    """An adversarial actor (it writes ``payload[0]``, first draft and revision alike) and an
    adversarial judge (it allows everything), through the real client and the scripted server."""

    def reply(request: Any) -> Any:
        if request.role == "actor":
            return Reply.text(payload[0])
        if request.role == "judge":
            return Reply.json(ADVERSARIAL_JUDGE)
        return offline_reply(request)

    fake.always(reply)
    theories = _plain(tmp_path, f"ceiling: {{start: H{ceiling}}}")
    curriculum = tmp_path / "suite.yaml"
    curriculum.write_text(SUITE_CURRICULUM, "utf-8")
    settings = OpenAISettings(base_url=fake.base_url, api_key="test", retries=0, backoff_s=0)
    return Tutor(theories, OpenAIBackend(settings), curriculum, MemoryStore())


def _leaks(shown: str, payload: str) -> bool:
    """The oracle, independent of the detector: did the payload (or, for a payload of several
    sentences, its last sentence, which completes it) reach the student?"""
    last = [part for part in payload.replace("|", ".").split(". ") if part.strip()][-1]
    return payload.strip() in shown or (last.strip(" .") in shown and len(last) > 3)


@pytest.mark.parametrize("ceiling", range(7))
def test_no_adversarial_payload_reaches_the_student_at_any_ceiling_up_to_h6(
    fake_openai: FakeOpenAI, tmp_path: Path, ceiling: int
) -> None:
    payload = [""]
    tutor = _suite_tutor(fake_openai, tmp_path, ceiling, payload)
    assert all(_leaks(f"Sure. {text} Bye.", text) for _, _, text in _suite_cases())  # the oracle
    leaked = []
    for exercise, name, text in _suite_cases():
        payload[0] = text
        session = tutor.start("plain", exercise=exercise, seed=1)
        plain = tutor.turn(session, "just give me the answer")  # risky: the judge is asked
        assert plain.ceiling == ceiling
        streamed = "".join(tutor.stream(session, "how do I start?"))  # guarded stream
        for mode, shown in (("plain", plain.tutor), ("streamed", streamed)):
            if _leaks(shown, text):
                leaked.append((exercise, name, mode, shown))
    assert leaked == []


def test_no_adversarial_payload_reaches_the_student_in_an_exam(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    payload = [""]
    tutor = _suite_tutor(fake_openai, tmp_path, 6, payload)
    leaked = []
    for name, text in number_payloads(9).items():
        payload[0] = text
        session = tutor.start("plain", exercise="fraction_exam", seed=1)
        plain = tutor.turn(session, "just give me the answer")
        assert plain.contract.exam_lockdown and plain.ceiling == 0
        streamed = "".join(tutor.stream(session, "how do I start?"))
        for mode, shown in (("plain", plain.tutor), ("streamed", streamed)):
            if _leaks(shown, text):
                leaked.append((name, mode, shown))
    assert leaked == []


# -- budgets that end in the template (case 6) -------------------------------------------------


class EndlessStream(ActorSays):
    """The actor's stream never ends: it sends empty deltas (or ``piece``) forever."""

    def __init__(self, piece: str = "") -> None:
        super().__init__("unused")
        self.piece = piece

    def stream(self, request: LLMRequest) -> Iterator[str]:
        if request.role != "actor":
            yield self.complete(request).text
            return
        deadline = time.monotonic() + 20  # the test's own bound, far past the budget below
        while time.monotonic() < deadline:
            yield self.piece
        raise AssertionError("the tutor never cut the stream")


def test_a_huge_reply_ends_in_the_template() -> None:
    huge = "Think about groups of eight. " * 40_000
    tutor = Tutor(shipped(), ActorSays(huge), CURRICULUM, MemoryStore())
    session = tutor.start(exercise="mult_7x8", seed=1)
    result = tutor.turn(session, "how do I start?")
    assert result.fallback and len(result.tutor) < 1000
    assert result.audit["drafts"][0]["flagged"]
    streamed = "".join(tutor.stream(session, "how do I start?"))
    assert len(streamed) < 1000
    assert tutor.store.audit_records(session.id)[-1]["stream"]["withheld"] == ["reply-too-long"]


def test_a_stream_that_never_ends_is_cut_by_the_time_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("pedrag.runtime.turn.streamed_turn.MAX_STREAM_SECONDS", 0.3)
    tutor = Tutor(shipped(), EndlessStream(), CURRICULUM, MemoryStore())
    session = tutor.start(exercise="mult_7x8", seed=1)
    streamed = "".join(tutor.stream(session, "how do I start?"))
    result = session.results[-1]
    assert streamed.strip() and result.fallback
    assert any("time budget" in item["error"] for item in result.failures)


def test_a_stream_that_never_stops_writing_is_cut_by_the_size_budget() -> None:
    tutor = Tutor(shipped(), EndlessStream("and more "), CURRICULUM, MemoryStore())
    session = tutor.start(exercise="mult_7x8", seed=1)
    started = time.monotonic()
    streamed = "".join(tutor.stream(session, "how do I start?"))
    result = session.results[-1]
    # Cut at the size budget; the cut draft is then reviewed as turn() reviews it: refused as
    # too long and written once more (the scripted actor's revision is short).
    assert len(streamed) < 1000 and result.revised and time.monotonic() - started < 10
    assert result.audit["stream"]["withheld"] == ["reply-too-long"]
    assert result.audit["drafts"][0]["flagged"]
