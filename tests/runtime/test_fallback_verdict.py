"""A failed-closed reply keeps the grader's verdict. When the detector refused every draft,
the action's template went out alone and a learner whose answer was wrong was not told so
("2 6 12" for for_sum_output: the drafts' "Not quite: 2 6 12 isn't it." holds 12, the hidden
answer, so each was refused and the template said nothing of the verdict). The fallback now
opens with the verdict, quoting the learner's answer where the detector allows that alone and
quoting nothing where it does not; the whole reply is still checked like any fallback."""

from __future__ import annotations

import dataclasses

import pytest

from pedrag.runtime.detect.detector import AnswerKey, Detector
from pedrag.runtime.llm.interface import LLMRequest, LLMResponse
from pedrag.runtime.llm.offline import OfflineBackend, grader_preface
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor

THEORIES = ("socratic", "constructivism", "direct_instruction", "srl")


class _Leaking(OfflineBackend):
    """The offline backend whose actor states ``answer`` in every draft, so every draft is
    refused and the turn fails closed."""

    def __init__(self, answer: str = "56") -> None:
        super().__init__()
        self.answer = answer

    def complete(self, request: LLMRequest) -> LLMResponse:
        response = super().complete(request)
        if request.role == "actor":
            return dataclasses.replace(response, text=f"The answer is {self.answer}.")
        return response


def _exercise(tutor: Tutor, exercise_id: str):  # noqa: ANN202 - the curriculum's own type
    return next(e for e in tutor.curriculum.exercises if e.id == exercise_id)


@pytest.mark.parametrize("theory", THEORIES)
def test_a_refused_echo_leaves_a_verdict_that_quotes_nothing(theory: str) -> None:
    tutor = Tutor(backend=_Leaking("12"), store=MemoryStore())
    exercise = _exercise(tutor, "for_sum_output")
    session = tutor.start(theory, "for_sum_output", seed=0)
    result = tutor.turn(session, "2 6 12")
    assert result.audit["grade"]["verdict"] == "wrong"
    assert result.audit["fallback"] is True
    assert result.tutor.startswith("Not quite, that isn't it. "), result.tutor
    assert not Detector(answer=AnswerKey(exercise.answer)).check(result.tutor).flagged


@pytest.mark.parametrize("theory", THEORIES)
def test_the_offline_actor_revising_a_refused_echo_keeps_the_verdict_and_the_help(
    theory: str,
) -> None:
    """Offline, the revised draft quotes nothing of the learner's answer, so the turn keeps
    the actor's help (the misconception named, a hint) instead of failing closed."""
    tutor = Tutor(store=MemoryStore())
    exercise = _exercise(tutor, "for_sum_output")
    session = tutor.start(theory, "for_sum_output", seed=0)
    result = tutor.turn(session, "2 6 12")
    assert result.audit["revised"] is True and result.audit["fallback"] is False
    assert result.tutor.startswith("Not quite, that isn't it. "), result.tutor
    assert "print comes after the loop" in result.tutor, result.tutor
    assert not Detector(answer=AnswerKey(exercise.answer)).check(result.tutor).flagged


@pytest.mark.parametrize("mode", ["turn", "stream"])
def test_a_failed_closed_reply_after_a_wrong_answer_quotes_it_where_that_is_safe(
    mode: str,
) -> None:
    tutor = Tutor(backend=_Leaking(), store=MemoryStore())
    session = tutor.start("socratic", "mult_7x8", seed=0)
    if mode == "turn":
        result = tutor.turn(session, "54")
        reply = result.tutor
        assert result.audit["fallback"] is True
    else:
        reply = "".join(tutor.stream(session, "54"))
    assert reply.startswith("Not quite: 54 isn't it. "), reply
    assert "56" not in reply


def test_a_failed_closed_reply_to_a_right_answer_has_no_verdict_of_a_wrong_one() -> None:
    tutor = Tutor(backend=_Leaking(), store=MemoryStore())
    session = tutor.start("socratic", "mult_7x8", seed=0)
    reply = tutor.turn(session, "56").tutor
    assert reply.startswith("That's right: 56 is correct."), reply
    assert "Not quite" not in reply, reply


@pytest.mark.parametrize(
    "fact",
    [
        "the learner's answer '2 6 12' is not correct",
        "test total([2, 4]) failed: got 2, expected 6",
        "the learner's code could not be graded: NameError: name 'x12' is not defined",
        "the learner's code passes 1 of 3 tests",
        "the learner's code uses the name `sum`, which the exercise does not allow (rename a "
        "variable of that name)",
    ],
)
def test_the_verdict_quoting_nothing_holds_nothing_of_the_fact(fact: str) -> None:
    quoted = grader_preface((fact,), "2 6 12")
    unquoted = grader_preface((fact,), "2 6 12", quoting=False)
    assert quoted and unquoted and unquoted != quoted
    assert not any(character.isdigit() for character in unquoted), unquoted


def test_code_that_fails_only_hidden_tests_or_uses_a_forbidden_name_is_told_so() -> None:
    # Before, neither had a verdict: the learner got a hint as if the code were unfinished.
    forbidden = "the learner's code uses the name `sum`, which the exercise does not allow"
    assert grader_preface((forbidden,)) == (
        "Not yet: your code uses the name `sum`, which this exercise does not allow."
    )
    some = ("the learner's code passes 1 of 3 tests",)
    assert grader_preface(some) == "Not yet: I ran your code, and it passes 1 of 3 tests."
    assert grader_preface(("the learner's code passes 3 of 3 tests",)) == ""
    # a public test's failure, when there is one, is the more useful sentence
    public = (*some, "test total([2, 4]) failed: got 2, expected 6")
    assert grader_preface(public).startswith("Not yet: I ran your code, and total([2, 4]) gave")
