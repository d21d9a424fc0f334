"""The actor gets a bounded, framed conversation history; the policy core still gets none."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pedrag.runtime.llm.interface import ActorPlan, LLMRequest, LLMResponse
from pedrag.runtime.llm.offline import OfflineBackend
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.classifier import CLOSE, OPEN
from pedrag.runtime.turn.generator import MATERIAL_MARK, SAFE_LINE, TEMPLATE_MARK, TURN_MARK
from pedrag.runtime.turn.tutor import HISTORY_TURNS, Tutor
from tests.runtime.tutor_fixtures import CURRICULUM, shipped

# The shipped curriculum: exercises with teaching material (hints, misconceptions).
SHIPPED_CURRICULUM = Path(__file__).parent.parent.parent / "theories" / "curriculum.yaml"


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


def test_the_per_turn_suffix_carries_no_machine_data_and_the_plan_carries_it() -> None:
    # Issue 30: the offline backend's data (every wording, reply fingerprints, the previous
    # reply) travels on the request as an ActorPlan; the prompt's per-turn message holds only
    # what a model can use, and what holds all session long is said once, in the stable text.
    backend = RecordingActor()
    tutor = Tutor(shipped(), backend, SHIPPED_CURRICULUM, MemoryStore())
    session = tutor.start(theory="socratic", exercise="mult_7x8", seed=2)
    messages = ["hello", "I added 7 and 8 and got 15", "I'm stuck, can you give me a hint?"]
    for message in messages:
        tutor.turn(session, message)
    last = backend.actor_requests[-1]
    plan = last.actor
    assert plan is not None and plan.said["recent"] and plan.said["last_fp"]
    suffix = last.messages[-2][1]
    for fingerprint in [*plan.said["recent"], plan.said["last_fp"]]:
        assert fingerprint not in suffix
    assert plan.said["last"] not in suffix  # the previous reply is in the history already
    assert len(plan.wordings) > 1 and not any(w in suffix for w in plan.wordings[1:])
    assert plan.wordings[0] == plan.template and f"{TEMPLATE_MARK} {plan.template}" in suffix
    # The material is there, without the exercise's prompt the stable text already has.
    assert MATERIAL_MARK in suffix and "What is 7 times 8?" not in suffix
    assert "What is 7 times 8?" in last.messages[0][1]
    assert "never repeat an earlier reply" in last.messages[0][1]
    assert "never repeat" not in suffix and "Help ceiling" in suffix


def test_the_offline_actor_writes_its_reply_from_the_plan_not_from_the_prompt() -> None:
    plan = ActorPlan(
        template="What do you notice?",
        wordings=("What do you notice?", "Here's a hint: {hint}"),
        material={"prompt": "What is 7 times 8?", "hint": "Double 7 times 4."},
        said={"fresh": ["hint"], "count": 0},
        grader_facts=("the learner's answer '54' is not correct",),
    )
    bare = (("system", "You are a tutor."), ("user", f"{OPEN}\nis it 54?\n{CLOSE}"))
    reply = OfflineBackend().complete(LLMRequest(role="actor", messages=bare, actor=plan)).text
    assert reply == "Not quite: 54 isn't it. Here's a hint: Double 7 times 4."
    # Without a plan (a plain chat request), the safe line, whatever the prompt says.
    plain = OfflineBackend().complete(LLMRequest(role="actor", messages=bare)).text
    assert plain == SAFE_LINE


def test_most_of_each_actor_prompt_is_the_previous_ones_prefix() -> None:
    # Issue 30's floor (benchmarks/model_calls.py measures it over 60 turns): with the
    # per-turn message short, about half of an actor prompt or more is what the previous one
    # started with, so a server's prompt cache covers it. On this curriculum, with its
    # teaching material in the per-turn message, the median was 0.33 before (WORDINGS and
    # ALREADY SAID in the prompt) and 0.49 after. Since the help path starts above the highest
    # rung given, "I'm stuck" and "can I get a hint?" here get the approach and the worked
    # example, whose material makes those turns' per-turn messages longer: 0.44 (the 60-turn
    # benchmark's actor median is unchanged, 54.4% -> 54.3%).
    backend = RecordingActor()
    tutor = Tutor(shipped(), backend, SHIPPED_CURRICULUM, MemoryStore())
    session = tutor.start(theory="socratic", exercise="mult_7x8", seed=3)
    messages = ["hello", "is it 54?", "I'm stuck", "I added 7 and 8", "can I get a hint?", "hmm"]
    for message in [*messages, "I think 7 x 4 is 28", "so double it?"]:
        tutor.turn(session, message)
    prompts = [
        "".join(f"<{who}>{text}" for who, text in r.messages) for r in backend.actor_requests
    ]
    shares = []
    for earlier, later in zip(prompts, prompts[1:], strict=False):
        shares.append(len(os.path.commonprefix([earlier, later])) / len(later))
    assert sorted(shares)[len(shares) // 2] > 0.42


@pytest.mark.parametrize(
    ("question", "material", "instruction"),
    [
        # the offline wording says it belongs to Python loops
        ("what is a for loop?", '"elsewhere": "Python loops"', "a term of another part of"),
        # the offline wording says the material has nothing on it and won't guess
        ("what is a quaternion?", '"unexplained": "quaternion"', "a term no concept of the"),
    ],
)
def test_a_model_actor_is_told_what_to_do_with_a_term_this_exercise_does_not_teach(
    question: str, material: str, instruction: str
) -> None:
    """On an arithmetic exercise, a term another domain explains ("for loop") is placed
    there, and one no concept of the course explains ("quaternion") is said to be outside it
    rather than guessed at; a model gets the same instruction as the offline wording, with
    the topic or the term in its material."""
    backend = RecordingActor()
    tutor = Tutor(shipped(), backend, SHIPPED_CURRICULUM, MemoryStore())
    session = tutor.start("socratic", "mult_7x8", seed=2)
    tutor.turn(session, question)
    prompt = "\n".join(text for _, text in backend.actor_requests[-1].messages)
    assert material in prompt
    assert f"FIRST: the learner asked about {instruction}" in prompt
