"""What the tutor says first and which step it points to (scripted offline sessions, read as
the learner reads them).

A first reply cannot rephrase an earlier reply (there is none), and a hint never asks for a
step the learner's own working, or code, has done already.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from pedrag.runtime.llm.offline import OfflineBackend
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor
from tests.runtime.tutor_fixtures import CURRICULUM, shipped

THEORIES = ("socratic", "constructivism", "direct_instruction", "srl")
SAMPLE = ("mult_7x8", "add_46_29", "photo_gas_in", "for_sum_output", "sva_each_of")
# what a reply says when it presents itself as saying an earlier reply again
REPHRASING = re.compile(r"another way|in other words|said differently", re.I)


@pytest.fixture(scope="module")
def tutor() -> Tutor:
    return Tutor(store=MemoryStore())


@pytest.mark.parametrize("theory", THEORIES)
@pytest.mark.parametrize("exercise_id", SAMPLE)
@pytest.mark.parametrize("message", ["I don't understand the question.", "Can you help me?"])
def test_the_first_reply_never_rephrases_a_reply_that_was_never_said(
    tutor: Tutor, theory: str, exercise_id: str, message: str
) -> None:
    session = tutor.start(theory, exercise_id, seed=0)
    result = tutor.turn(session, message)
    assert not REPHRASING.search(result.tutor), result.tutor
    if result.audit["choice"]["action"] == "help_restate":
        exercise = next(e for e in tutor.curriculum.exercises if e.id == exercise_id)
        assert exercise.restatement in result.tutor  # the question is still said plainer


def test_a_later_restatement_may_say_it_puts_the_question_another_way(tutor: Tutor) -> None:
    session = tutor.start("socratic", "mult_7x8", seed=0)
    tutor.turn(session, "hi")
    replies = [tutor.turn(session, "I don't understand the question.").tutor for _ in range(3)]
    assert any(REPHRASING.search(reply) for reply in replies), replies


# Code whose first step (per the exercise's `hint_code:`) is done and whose second is not.
FIRST_STEP_DONE = {
    "sum_list_loop": "def total(nums):\n    total = 0\n    for x in nums:\n        total = x\n    return total",
    "count_evens_loop": "def count_evens(nums):\n    count = 0\n    for n in nums:\n        count += 1\n    return count",
    "max_list_loop": "def biggest(nums):\n    best = 0\n    for n in nums:\n        if n > best:\n            best = n\n    return best",
    "count_char_loop": "def count_a(text):\n    count = 0\n    for i in range(len(text)):\n        count += 1\n    return count",
    "running_product_loop": "def product(nums):\n    result = 0\n    for n in nums:\n        result *= n\n    return result",
}


def _hints(tutor: Tutor, exercise_id: str) -> list[str]:
    return list(next(e for e in tutor.curriculum.exercises if e.id == exercise_id).hints)


@pytest.mark.parametrize("theory", ["socratic", "direct_instruction"])
@pytest.mark.parametrize("exercise_id", sorted(FIRST_STEP_DONE))
def test_a_hint_after_code_is_the_first_step_the_code_has_not_done(
    tutor: Tutor, theory: str, exercise_id: str
) -> None:
    session = tutor.start(theory, exercise_id, seed=0)
    tutor.turn(session, f"```\n{FIRST_STEP_DONE[exercise_id]}\n```")
    reply = tutor.turn(session, "I'm stuck, can you give me a hint?").tutor
    first, second, *_ = _hints(tutor, exercise_id)
    assert first not in reply, reply  # the step the learner's code has done
    assert second in reply, reply


@pytest.mark.parametrize("theory", ["socratic", "direct_instruction"])
def test_a_total_reset_inside_the_loop_still_gets_the_step_of_setting_it_before(
    tutor: Tutor, theory: str
) -> None:
    code = "def total(nums):\n    for n in nums:\n        result = 0\n        result += n\n    return result"
    session = tutor.start(theory, "sum_list_loop", seed=0)
    tutor.turn(session, f"```\n{code}\n```")
    reply = tutor.turn(session, "I'm stuck, can you give me a hint?").tutor
    assert _hints(tutor, "sum_list_loop")[0] in reply, reply


@pytest.mark.parametrize("theory", THEORIES)
@pytest.mark.parametrize("exercise_id", SAMPLE)
@pytest.mark.parametrize("message", ["hi", "ok", "hello, let's start"])
def test_a_first_reply_speaks_of_an_example_only_when_it_shows_one(
    tutor: Tutor, theory: str, exercise_id: str, message: str
) -> None:
    session = tutor.start(theory, exercise_id, seed=0)
    reply = tutor.turn(session, message).tutor
    worked = next(e for e in tutor.curriculum.exercises if e.id == exercise_id).worked_example
    if re.search(r"\bthis \w+(?: \w+)? example\b", reply, re.I):
        assert worked is not None and worked.problem in reply, reply


# Sets the total and returns it, but replaces it with each number: step 2 of 3 not done.
RETURNS_WITHOUT_ADDING = (
    "def total(nums):\n    result = 0\n    for n in nums:\n        result = n\n    return result"
)


@pytest.mark.parametrize("theory", ["socratic", "direct_instruction"])
def test_after_hint_two_code_that_returns_gets_hint_two_again_not_the_return_step(
    tutor: Tutor, theory: str
) -> None:
    session = tutor.start(theory, "sum_list_loop", seed=0)
    code = f"```\n{RETURNS_WITHOUT_ADDING}\n```"
    tutor.turn(session, code)
    second, third = _hints(tutor, "sum_list_loop")[1:3]
    assert second in tutor.turn(session, "I'm stuck, can you give me a hint?").tutor
    reply = tutor.turn(session, code).tutor  # the same code: it still does not add
    assert third not in reply, reply  # "After the loop, return the running total": it does
    assert second in reply, reply


class _LeakingActor(OfflineBackend):
    """The offline backend whose actor states the answer: every draft is refused, so the turn
    fails closed to the action's template."""

    @staticmethod
    def _actor(plan: Any, message: str = "") -> str:
        return "It's 56, since 7 x 8 = 56."


@pytest.mark.parametrize("theory", THEORIES)
@pytest.mark.parametrize("message", ["I don't understand the question.", "Can you help me?"])
@pytest.mark.parametrize("exercise_id", ["mult_7x8", "sum_list"])
def test_a_first_reply_without_a_restatement_does_not_say_it_puts_anything_another_way(
    theory: str, message: str, exercise_id: str
) -> None:
    # the runtime fixture's exercises have no restatement: help_restate's only wording is its
    # template, "Let me put it another way: what does this ... question give you, ..."
    tutor = Tutor(shipped(), OfflineBackend(), CURRICULUM, MemoryStore())
    reply = tutor.turn(tutor.start(theory, exercise_id, seed=0), message).tutor
    assert not REPHRASING.search(reply), reply


@pytest.mark.parametrize("theory", THEORIES)
def test_a_first_reply_failed_closed_does_not_say_it_puts_anything_another_way(
    theory: str,
) -> None:
    tutor = Tutor(shipped(), _LeakingActor(), None, MemoryStore())
    result = tutor.turn(tutor.start(theory, "mult_7x8", seed=0), "I don't understand the question.")
    assert result.audit["choice"]["action"] == "help_restate"
    assert "56" not in result.tutor
    assert not REPHRASING.search(result.tutor), result.tutor


def test_a_models_first_turn_is_not_told_to_put_anything_another_way() -> None:
    """The offline wordings and the fail-closed replies already kept "Let me put it another
    way" out of a first reply; a model was still handed that template as the wording to use
    (socratic help_restate, its only template): the same rule now shapes the prompt's line."""
    from pedrag.runtime.llm.offline import OfflineBackend
    from pedrag.runtime.policy.theory_set import TheorySet
    from pedrag.runtime.turn.generator import TEMPLATE_MARK

    requests = []

    class Recording(OfflineBackend):
        def complete(self, request):  # type: ignore[no-untyped-def]
            if request.role == "actor":
                requests.append(request)
            return super().complete(request)

    tutor = Tutor(TheorySet.shipped(), Recording(), None, MemoryStore())
    session = tutor.start("socratic", "mult_7x8", seed=0)
    first = tutor.turn(session, "I don't understand the question")
    second = tutor.turn(session, "I don't understand the question")
    assert (first.action, second.action) == ("help_restate", "help_restate")

    def template_line(index: int) -> str:
        turn_block = requests[index].messages[-2][1]
        return next(line for line in turn_block.splitlines() if line.startswith(TEMPLATE_MARK))

    assert "another way" not in template_line(0).lower()
    assert "What does this arithmetic question give you" in template_line(0)
    assert "another way" in template_line(-1).lower()  # a later turn may say it again
