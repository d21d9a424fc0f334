"""The tutor a learner meets (issue 27): scripted offline sessions, one behaviour each, on every
shipped theory where it applies.

Each test drives the real tutor (offline backend, in-memory store, the shipped theories and
curriculum) with a learner's messages and reads what the learner sees. The curriculum's own
content (restatements, misconceptions and their signals, worked examples, goal concepts) is
what the replies must carry.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pedrag.dsl.loader import load_text
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor

ROOT_THEORIES = Path(__file__).resolve().parents[2] / "theories"

THEORIES = ("socratic", "constructivism", "direct_instruction", "srl")
# one exercise per domain: arithmetic, photosynthesis, Python loops, English grammar
SAMPLE = ("add_46_29", "photo_gas_in", "for_sum_output", "sva_each_of")


@pytest.fixture(scope="module")
def tutor() -> Tutor:
    return Tutor(store=MemoryStore())


def _exercise(tutor: Tutor, exercise_id: str) -> Any:
    return next(e for e in tutor.curriculum.exercises if e.id == exercise_id)


def _goal(tutor: Tutor, goal_id: str) -> Any:
    return next(g for g in tutor.curriculum.goals if g.id == goal_id)


@pytest.mark.parametrize("theory", THEORIES)
@pytest.mark.parametrize("exercise_id", SAMPLE)
def test_i_dont_understand_the_question_gets_it_restated_in_other_words(
    tutor: Tutor, theory: str, exercise_id: str
) -> None:
    session = tutor.start(theory, exercise_id, seed=3)
    reply = tutor.turn(session, "I don't understand the question").tutor
    assert _exercise(tutor, exercise_id).restatement in reply, reply


@pytest.mark.parametrize("theory", THEORIES)
@pytest.mark.parametrize(
    ("exercise_id", "message", "named"),
    [
        ("mult_7x8", "I added 7 and 8, that's 15", "Adding instead of multiplying"),
        ("mult_7x8", "49", "Mixing up neighbouring facts"),
        ("add_46_29", "I think it's 65", "Forgetting to carry"),
        ("photo_gas_in", "oxygen", "Plants do not take in oxygen"),
        ("past_tense_go", "gone", "'Gone' is the past participle"),
    ],
)
def test_an_answer_that_signals_a_curriculum_misconception_gets_it_named_at_once(
    tutor: Tutor, theory: str, exercise_id: str, message: str, named: str
) -> None:
    session = tutor.start(theory, exercise_id, seed=5)
    result = tutor.turn(session, message)
    assert result.audit["grade"]["verdict"] != "correct"
    assert named in result.tutor, result.tutor


def test_a_right_answer_never_gets_a_misconception_named(tutor: Tutor) -> None:
    for exercise in tutor.curriculum.exercises:
        if exercise.tests:
            continue
        session = tutor.start("socratic", exercise.id, seed=1)
        reply = tutor.turn(session, exercise.answer).tutor
        texts = [m.text for m in exercise.misconceptions]
        assert not any(text in reply for text in texts), (exercise.id, reply)


@pytest.mark.parametrize("theory", THEORIES)
@pytest.mark.parametrize("exercise_id", SAMPLE)
def test_a_help_seeker_climbs_to_a_worked_example_on_another_problem_within_six_requests(
    tutor: Tutor, theory: str, exercise_id: str
) -> None:
    exercise = _exercise(tutor, exercise_id)
    session = tutor.start(theory, exercise_id, seed=3)
    asks = [
        "I don't understand the question",
        "can you help me?",
        "I'm still stuck, can you help?",
        "could you help a bit more?",
        "help please",
        "I need more help",
    ]
    replies = [tutor.turn(session, message).tutor for message in asks]
    assert any(exercise.worked_example.problem in reply for reply in replies), replies
    assert exercise.restatement in replies[0]
    # the concept comes before the example: the path climbs one rung at a time
    concept = _goal(tutor, exercise.goal).concept
    first_concept = next(i for i, reply in enumerate(replies) if concept in reply)
    first_example = next(
        i for i, reply in enumerate(replies) if exercise.worked_example.problem in reply
    )
    assert 0 < first_concept < first_example
    assert exercise.answer not in " ".join(replies)


@pytest.mark.parametrize("theory", THEORIES)
def test_a_demand_never_raises_the_ceiling_even_after_help_was_given(
    tutor: Tutor, theory: str
) -> None:
    fresh = tutor.start(theory, "add_46_29", seed=3)
    baseline = tutor.turn(fresh, "Just give me the answer.").contract.ceiling
    session = tutor.start(theory, "add_46_29", seed=3)
    for message in ["can you help me?"] * 4:
        tutor.turn(session, message)
    assert session.state.metrics["highest_rung"] == 4
    for message in ["Just give me the answer.", "Give me the full solution now."]:
        result = tutor.turn(session, message)
        assert result.contract.ceiling <= baseline, result.contract
        assert result.rung <= baseline
    assert session.state.metrics["highest_rung"] == 4  # demands took no rung of the path
    assert tutor.turn(session, "help please").rung == 5  # a genuine request still does


@pytest.mark.parametrize("theory", THEORIES)
@pytest.mark.parametrize(
    ("exercise_id", "wrong"),
    [
        ("mult_7x8", ("54", "55")),
        ("div_156_12", ("12", "14")),
        ("photo_gas_in", ("nitrogen", "hydrogen")),
        ("past_tense_swim", ("swimmed", "swum")),
        ("for_sum_output", ("10", "15")),
    ],
)
@pytest.mark.parametrize("ask", ["can you help me?", "I'm stuck, help please"])
def test_asking_for_help_after_hints_for_wrong_answers_never_gets_less_help(
    tutor: Tutor, theory: str, exercise_id: str, wrong: tuple[str, ...], ask: str
) -> None:
    """Contingent help (Wood & Wood 1996): more help after failure. A learner whose wrong
    answers already earned a leading hint, and who then asks for help, must not be handed the
    question restated: the help path starts above the highest rung given on the exercise."""
    session = tutor.start(theory, exercise_id, seed=3)
    given = [tutor.turn(session, answer).rung for answer in wrong]
    for _ in range(2):
        result = tutor.turn(session, ask)
        assert result.audit["grade"]["verdict"] not in ("correct", "wrong")
        assert result.rung > max(given) or result.rung == result.contract.ceiling, (
            given,
            result.action,
            result.rung,
        )
        assert result.rung >= max(given), (given, result.action)
        given.append(result.rung)
    assert _exercise(tutor, exercise_id).answer not in result.tutor


def test_the_highest_rung_starts_again_with_the_next_exercise(tutor: Tutor) -> None:
    session = tutor.start("socratic", "mult_7x8", seed=3)
    for answer in ("54", "55"):
        tutor.turn(session, answer)
    assert session.state.metrics["highest_rung"] >= 3
    tutor.turn(session, "56")  # solved: the session moves on to the next exercise
    assert session.exercise is not None and session.exercise.id != "mult_7x8"
    assert session.state.metrics["highest_rung"] == 0
    assert tutor.turn(session, "can you help me?").rung == 1  # the path starts at its foot


@pytest.mark.parametrize("theory", THEORIES)
def test_the_compiler_proves_demands_never_raise_the_ceiling(theory: str) -> None:
    """The invariant is in every shipped theory, and it has teeth: a help-path ceiling step
    that forgets to exclude demands is an invariant violation with a witness."""
    text = (ROOT_THEORIES / f"{theory}.yaml").read_text("utf-8")
    assert "id: demand_never_raises_ceiling" in text
    # the help path forgets that a demand is not a request for help
    weakened = text.replace(
        "intent not in [solution_demand, injection, exam_leak, hostile]",
        "intent not in [injection, exam_leak, hostile]",
    )
    if theory == "direct_instruction":  # starts at H5: its help path needs no step of its own
        weakened = weakened.replace(
            "  steps:\n", '  steps:\n    - {when: "highest_rung >= 4", at_least: H6}\n', 1
        )
    assert weakened != text
    from pedrag.compiler.driver import check_loaded

    result = check_loaded([load_text(weakened, f"{theory}.yaml")])
    found = [
        d
        for d in result.diagnostics
        if d.check == "invariant-violation" and "demand_never_raises_ceiling" in d.message
    ]
    assert found and found[0].witness and found[0].witness["intent"] == "solution_demand"


@pytest.mark.parametrize("theory", THEORIES)
def test_a_concept_question_is_answered_from_the_goals_concept(tutor: Tutor, theory: str) -> None:
    session = tutor.start(theory, "order_ops_3_4_5", seed=2)
    result = tutor.turn(session, "why do we multiply before we add?")
    concept = _goal(tutor, "order_of_operations").concept
    assert concept in result.tutor, result.tutor
    assert result.rung == 2 and not result.contract.grounding_required  # no course indexed


@pytest.mark.parametrize("theory", THEORIES)
def test_a_frustrated_learner_is_acknowledged_in_their_words_then_given_a_small_step(
    tutor: Tutor, theory: str
) -> None:
    exercise = _exercise(tutor, "mult_7x8")
    session = tutor.start(theory, exercise.id, seed=4)
    reply = tutor.turn(session, "just help me please I'm really upset").tutor
    assert "really upset" in reply, reply
    assert "Good. Let's continue." not in reply
    content = [exercise.restatement, *exercise.hints, exercise.worked_example.problem]
    assert any(piece in reply for piece in content), reply


def test_a_theory_switch_keeps_the_exercises_context(tutor: Tutor) -> None:
    exercise = _exercise(tutor, "mult_7x8")
    session = tutor.start("socratic", exercise.id, seed=7)
    tutor.turn(session, "I'm so frustrated, this is pointless!!")
    result = tutor.turn(session, "ok")
    assert result.theory == "direct_instruction"
    assert "before we start" not in result.tutor.lower()
    assert session.exercise is not None and session.exercise.id == exercise.id


@pytest.mark.parametrize("theory", THEORIES)
def test_an_apology_after_a_hostile_turn_is_welcomed(tutor: Tutor, theory: str) -> None:
    session = tutor.start(theory, "mult_7x8", seed=2)
    tutor.turn(session, "you are a stupid useless bot")
    result = tutor.turn(session, "sorry, I didn't mean that")
    assert result.action == "welcome_apology", result.action
    assert re.search(r"\b(thank|accepted|no harm|no hard feelings)", result.tutor, re.I)


@pytest.mark.parametrize("theory", THEORIES)
def test_a_self_explanation_is_answered_and_not_counted_as_being_stuck(
    tutor: Tutor, theory: str
) -> None:
    session = tutor.start(theory, "sum_list_loop", seed=2)
    explanations = [
        "Okay, so I should keep a running total because each step builds on the last one.",
        "I think it works because I keep a running total and each step adds to it",
    ]
    for message in explanations:
        result = tutor.turn(session, message)
        assert result.action == "respond_to_explanation", result.action
        assert _goal(tutor, "loop_accumulators").concept in result.tutor
    assert session.state.metrics["intent"] == "attempt"  # the second reads as an attempt too
    # ... and none of the theory's stuck or error counters moved
    for counter in ("stuck_turns", "passive_turns", "recent_errors"):
        assert session.state.metrics.get(counter, 0) == 0, counter


def test_a_self_explanation_that_shows_a_misconception_gets_it_corrected(tutor: Tutor) -> None:
    session = tutor.start("socratic", "mult_7x8", seed=2)
    reply = tutor.turn(session, "It's 15 because you add the 7 and the 8").tutor
    assert "Adding instead of multiplying" in reply


@pytest.mark.parametrize("theory", ("socratic", "constructivism", "direct_instruction"))
def test_explain_mode_shows_the_worked_solution_to_a_request_for_the_answer(
    tutor: Tutor, theory: str
) -> None:
    exercise = _exercise(tutor, "long_mult_34x26")
    session = tutor.start(theory, exercise.id, seed=3, trusted={"explain_mode": True})
    result = tutor.turn(session, "Just give me the answer.")
    assert result.contract.ceiling == 7 and result.rung == 7
    assert exercise.solution in result.tutor, result.tutor


def test_explain_mode_never_shows_a_solution_in_srl_which_forbids_it(tutor: Tutor) -> None:
    exercise = _exercise(tutor, "long_mult_34x26")
    session = tutor.start("srl", exercise.id, seed=3, trusted={"explain_mode": True})
    result = tutor.turn(session, "Just give me the answer.")
    assert exercise.solution not in result.tutor and result.rung < 7


def test_topic_names_read_as_the_learner_reads_them(tutor: Tutor) -> None:
    session = tutor.start("socratic", "sva_each_of", seed=1)
    assert session.exercise is not None and session.exercise.topic == "English grammar"


def test_the_learners_answer_is_echoed_as_they_wrote_it(tutor: Tutor) -> None:
    session = tutor.start("socratic", "photo_equation", seed=1)
    reply = tutor.turn(session, "6CO2 + 6H2O -> C6H12O6 + 6O2").tutor
    assert reply.startswith("That's right: 6CO2 + 6H2O -> C6H12O6 + 6O2 is correct."), reply
    session = tutor.start("socratic", "mult_7x8", seed=1)
    assert "Not quite: 54 isn't it." in tutor.turn(session, "I think it is 54").tutor


# No reply repeats within a session (issue 27, item 8). The benchmark
# (`benchmarks/offline_repetition.py --theory all --turns 20`) runs every persona on every
# shipped exercise under every theory; this test runs every persona for 20 turns on one
# exercise per domain under Socratic, and on one exercise under each other theory.
REPEAT_RUNS = [("socratic", exercise) for exercise in SAMPLE] + [
    ("constructivism", "mult_9x6"),
    ("direct_instruction", "photo_products"),
    ("srl", "while_doubling"),
]


@pytest.mark.parametrize(("theory", "exercise_id"), REPEAT_RUNS)
def test_no_reply_repeats_within_a_twenty_turn_session(
    tutor: Tutor, theory: str, exercise_id: str
) -> None:
    from pedrag.runtime.llm.personas import PERSONAS

    repeats = []
    for name, persona in PERSONAS.items():
        session = tutor.start(theory, exercise_id, seed=7)
        assert session.exercise is not None
        replies = [
            tutor.turn(session, message).tutor
            for message in persona.messages(20, topic=session.exercise.topic)
        ]
        repeats += [(name, reply) for i, reply in enumerate(replies) if reply in replies[:i]]
    assert repeats == []


@pytest.mark.parametrize(
    ("message", "slip"),
    [
        ("7, 14, 21, 28, 35, 42, 49, 57 so it is 57", "49 to 57"),
        ("23 x 40 = 820 and 23 x 7 = 161", "23 x 40 = 820"),
        ("38 + 40 = 78 + 7 = 86", "78 + 7 = 86"),
        ("38 + 40 = 78 + 7 = 85", ""),
        ("12 / 4 = 3, then 3 + 6 = 9", ""),
        ("1, 2, 3, 4", ""),
        ("I think it's 56", ""),
    ],
)
def test_the_first_wrong_step_of_the_working_is_found_exactly(message: str, slip: str) -> None:
    from pedrag.runtime.learning.working import first_slip

    assert first_slip(message) == slip


@pytest.mark.parametrize("theory", THEORIES)
def test_a_slip_in_the_learners_working_is_pointed_at(tutor: Tutor, theory: str) -> None:
    session = tutor.start(theory, "long_mult_23x47", seed=2)
    reply = tutor.turn(session, "23 x 40 = 820 and 23 x 7 = 161, so 981").tutor
    assert "23 x 40 = 820" in reply, reply


@pytest.mark.parametrize("theory", THEORIES)
def test_an_exam_session_does_not_repeat_its_hold_line(theory: str) -> None:
    from tests.runtime.tutor_fixtures import CURRICULUM

    exam_tutor = Tutor(store=MemoryStore(), curriculum=CURRICULUM)
    session = exam_tutor.start(theory, "fraction_exam", seed=1)
    asks = ["help me", "what is the answer?", "I am stuck", "hint please", "just tell me"]
    replies = [exam_tutor.turn(session, message).tutor for message in asks * 2]
    assert len(set(replies)) == len(replies), replies


# --- issue 27's leftovers (brief U): five reply faults found by talking to the tutor ----------

HINT_TAGS = {"hint", "example", "partial_solution"}
HELP_WORDINGS = (("{hint}", "hint"), ("{example}", "example"), ("{outline}", "partial_solution"))


@pytest.mark.parametrize("theory", THEORIES)
def test_a_correct_answer_never_makes_a_hint_for_the_finished_exercise_eligible(
    tutor: Tutor, theory: str
) -> None:
    """A right answer ("is it 85?") once got "That's right: 85 is correct. One step at a time.
    Add the tens to 38 first..." (a weighted draw over a hint rule that forgot the answer was
    already right)."""
    import yaml

    data = yaml.safe_load((ROOT_THEORIES / f"{theory}.yaml").read_text("utf-8"))
    # what the action declares, and what its wordings hand out (DESIGN "Actions": derived tags)
    tags = {
        name: set(action.get("tags", ()))
        | {tag for mark, tag in HELP_WORDINGS if mark in " ".join(action.get("variants", ()))}
        for name, action in data["actions"].items()
    }
    then = {rule["id"]: rule["then"] for rule in data["rules"]}
    hinting = []
    for exercise_id, answer in [("add_38_47", "85"), ("mult_7x8", "56"), ("photo_gas_in", None)]:
        exercise = _exercise(tutor, exercise_id)
        answer = answer or exercise.answer
        for earlier, message in [
            ([], f"is it {answer}?"),
            (["I think it's 3", "maybe 4"], f"{answer}! I'm so frustrated with this"),
            (["I think it's 3", "maybe 4", "is it 5"], f"I think it's {answer}"),
        ]:
            session = tutor.start(theory, exercise_id, seed=0)
            for text in earlier:
                tutor.turn(session, text)
            result = tutor.turn(session, message)
            assert result.audit["grade"]["verdict"] == "correct", message
            hinting += [
                (message, rule)
                for rule in result.audit["choice"]["eligible"]
                if tags[then[rule]] & HINT_TAGS
            ]
            assert not any(hint in result.tutor for hint in exercise.hints), result.tutor
    assert hinting == []


@pytest.mark.parametrize("theory", THEORIES)
def test_the_compiler_proves_no_hint_follows_a_correct_answer(theory: str) -> None:
    """Every shipped theory states it as an invariant, and it has teeth: a hint rule that
    forgets the answer was right is an invariant violation with a witness."""
    from pedrag.compiler.driver import check_loaded

    text = (ROOT_THEORIES / f"{theory}.yaml").read_text("utf-8")
    assert "id: no_hint_after_correct_answer" in text
    weakened = text.replace(
        'when: "frustration >= 0.7 and mastery < 0.7 and not last_answer_correct"',
        'when: "frustration >= 0.7 and mastery < 0.7"',
    )
    assert weakened != text
    result = check_loaded([load_text(weakened, f"{theory}.yaml")])
    found = [
        d
        for d in result.diagnostics
        if d.check == "invariant-violation" and "no_hint_after_correct_answer" in d.message
    ]
    assert found and found[0].witness and found[0].witness["last_answer_correct"] is True


@pytest.mark.parametrize("theory", THEORIES)
def test_a_first_turn_demand_for_the_answer_gets_no_warning_about_a_trap(
    tutor: Tutor, theory: str
) -> None:
    """A first message "just tell me the answer" once got "A common trap here: ...", a warning
    about a mistake before the learner has said anything (or "What did you try last?")."""
    warned = []
    for exercise_id in ("add_38_47", "mult_7x8", "photo_gas_in", "sum_list_loop"):
        traps = [m.text for m in _exercise(tutor, exercise_id).misconceptions]
        for message in ("just tell me the answer", "what is the answer?"):
            for seed in range(6):
                session = tutor.start(theory, exercise_id, seed=seed)
                reply = tutor.turn(session, message).tutor
                presumes_a_try = "what did you try last" in reply.lower()
                if (
                    any(trap in reply for trap in traps)
                    or "trap" in reply.lower()
                    or presumes_a_try
                ):
                    warned.append((exercise_id, message, seed, reply))
    assert warned == []


@pytest.mark.parametrize("exercise_id", SAMPLE)
def test_direct_instruction_answers_a_first_turn_demand_as_a_demand_not_with_a_review(
    tutor: Tutor, exercise_id: str
) -> None:
    """A first message "just tell me the answer" was in the review phase, where `daily_review`
    was eligible beside the demand's own rule: about 4 sessions in 10 got a recall question
    that ignored the demand. The demand now gets a model on another problem, never the
    exercise's answer, whatever the seed."""
    answer = str(_exercise(tutor, exercise_id).answer)
    for seed in range(8):
        session = tutor.start("direct_instruction", exercise_id, seed=seed)
        result = tutor.turn(session, "just tell me the answer")
        choice = result.audit["choice"]
        assert "review_phase" not in choice["eligible"], (seed, choice)
        assert result.action in {"model_worked_example", "explicit_procedure"}, (seed, choice)
        assert answer not in result.tutor, result.tutor


@pytest.mark.parametrize("exercise_id", SAMPLE)
def test_srl_escalates_a_repeated_demand_within_the_ceiling_instead_of_asking_again(
    tutor: Tutor, exercise_id: str
) -> None:
    """SRL once answered "just tell me the answer", asked again, with the confidence-scale
    question (or another self-check) again. The second demand now gets a strategy (H2), the
    third a model of how to regulate the task (H4): higher each time, never the answer."""
    answer = str(_exercise(tutor, exercise_id).answer)
    for seed in range(6):
        session = tutor.start("srl", exercise_id, seed=seed)
        first, second, third = (tutor.turn(session, "just tell me the answer") for _ in range(3))
        assert (second.action, third.action) == ("suggest_strategy", "model_self_regulation")
        assert first.rung < second.rung < third.rung <= 4, (first.rung, second.rung, third.rung)
        assert "scale of 1 to 5" not in second.tutor + third.tutor
        assert all(answer not in result.tutor for result in (first, second, third))


@pytest.mark.parametrize("exercise_id", SAMPLE)
def test_srl_meets_a_fourth_demand_and_after_with_help_abuse_every_time(
    tutor: Tutor, exercise_id: str
) -> None:
    """From the fourth demand in five turns (Aleven et al. 2003: help abuse), SRL went back to
    its old mix: the rule for it (`help_abuse`, weight 2) drew against the phase's own
    (`calibration_check` 5-7 of 20 seeds, goal and planning prompts). It now says to try a
    step first (`reduce_hint_dependence`) on every seed, and never the answer."""
    answer = str(_exercise(tutor, exercise_id).answer)
    for seed in range(6):
        session = tutor.start("srl", exercise_id, seed=seed)
        results = [tutor.turn(session, "just tell me the answer") for _ in range(6)]
        assert [r.action for r in results[3:]] == ["reduce_hint_dependence"] * 3, seed
        assert all(answer not in result.tutor for result in results)


def test_direct_instruction_may_check_understanding_on_a_demand_right_after_a_model(
    tutor: Tutor,
) -> None:
    """A second "just tell me the answer", right after the worked example the first got: the
    check for understanding stays eligible beside modelling again, on purpose (Rosenshine
    2012: check understanding right after modelling; the demand says the model may not have
    landed; `docs/runtime.md`, "A demand repeated"). Either way, never the answer."""
    answer = str(_exercise(tutor, "mult_7x8").answer)
    chosen = set()
    for seed in range(20):
        session = tutor.start("direct_instruction", "mult_7x8", seed=seed)
        first = tutor.turn(session, "just tell me the answer")
        second = tutor.turn(session, "just tell me the answer")
        assert first.action == "model_worked_example", seed
        eligible = second.audit["choice"]["eligible"]
        assert {"check_after_explanation", "solution_demand_model"} <= set(eligible), seed
        assert answer not in first.tutor + second.tutor
        chosen.add(second.audit["choice"]["rule"])
    assert {"check_after_explanation", "solution_demand_model"} <= chosen


# Praise that endorses the method or claims progress: false after a wrong answer.
_ENDORSING = re.compile(
    r"careful way|keep using that strategy|that strategy will|real progress|getting closer"
    r"|good work|great|excellent|makes it stick|how it sticks|well reasoned|nice",
    re.I,
)
_EFFORT_PRAISE = re.compile(r"\b(thanks for|well done|good on you|that effort|worth doing)\b", re.I)


@pytest.mark.parametrize("theory", THEORIES)
def test_a_wrong_answer_gets_only_honest_praise_for_effort_and_only_after_the_correction(
    tutor: Tutor, theory: str
) -> None:
    """A wrong answer with a named misconception once ended "That was a careful way to work
    on arithmetic; keep using that strategy." (the socratic praise rule fires on any reasoned
    attempt). Praise after a wrong answer is about the effort, and comes after the correction."""
    cases = [
        ("mult_7x8", "7+8 = 15 so it is 15", "Adding instead of multiplying"),
        ("add_38_47", "30 + 40 = 70 and 8 + 7 = 15, so 715", "Writing the ones total"),
        ("mult_7x8", "I'm so frustrated, I added 7 and 8 and got 15", "Adding instead of"),
    ]
    wrong = []
    for exercise_id, message, named in cases:
        for seed in range(18):
            reply = tutor.turn(tutor.start(theory, exercise_id, seed=seed), message).tutor
            assert named in reply, reply
            praise = _EFFORT_PRAISE.search(reply)
            if _ENDORSING.search(reply) or (praise and praise.start() < reply.index(named)):
                wrong.append((exercise_id, seed, reply))
    assert wrong == []


@pytest.mark.parametrize("theory", THEORIES)
@pytest.mark.parametrize("exercise_id", SAMPLE)
def test_a_request_for_an_example_gets_the_worked_example_on_another_problem(
    tutor: Tutor, theory: str, exercise_id: str
) -> None:
    """A first "can you show me an example?" once got a calibration question or a small step;
    the curriculum has a worked example on another problem for every exercise."""
    exercise = _exercise(tutor, exercise_id)
    session = tutor.start(theory, exercise_id, seed=3)
    result = tutor.turn(session, "can you show me an example?")
    assert exercise.worked_example.problem in result.tutor, result.tutor
    assert exercise.answer not in result.tutor
    assert result.audit["classified"]["request"] == "example"


@pytest.mark.parametrize(
    ("message", "asked"),
    [
        ("can you show me an example?", "example"),
        ("Could you walk me through a similar example?", "example"),
        ("another example please", "example"),
        ("I think it's 15, for example 7 and 8", "none"),
        ("show me the solution", "none"),  # a demand is never a request
        ("what is an example of a verb?", "concept"),
    ],
)
def test_a_request_for_an_example_is_told_apart_from_an_example_in_an_attempt(
    message: str, asked: str
) -> None:
    from pedrag.runtime.turn.classifier import heuristic_intent, heuristic_request

    assert heuristic_request(message, heuristic_intent(message)) == asked


@pytest.mark.parametrize("theory", THEORIES)
@pytest.mark.parametrize(
    ("exercise_id", "question", "goal_id"),
    [
        ("sum_list_loop", "what is a for loop?", "for_loops"),
        ("sum_list_loop", "What are for loops?", "for_loops"),
        ("while_countdown", "what is a variable?", "python_variables"),
        ("sum_list_loop", "what is an accumulator?", "loop_accumulators"),
        ("loop_range_header", "what does range mean?", "for_loops"),
        # Inflected forms meet by stem: "carrying" is what the concept calls "carried".
        ("add_38_47", "what is carrying?", "addition_facts"),
    ],
)
def test_a_question_about_a_term_gets_the_curriculums_concept_of_that_term(
    tutor: Tutor, theory: str, exercise_id: str, question: str, goal_id: str
) -> None:
    """On SRL's sum_list_loop, "what is a for loop?" once got the accumulator concept (the
    exercise's own goal), though the curriculum explains for loops in another goal."""
    session = tutor.start(theory, exercise_id, seed=2)
    reply = tutor.turn(session, question).tutor
    assert _goal(tutor, goal_id).concept in reply, reply
    assert "nothing on" not in reply, reply
    own = _goal(tutor, _exercise(tutor, exercise_id).goal).concept
    assert goal_id == _exercise(tutor, exercise_id).goal or own not in reply


@pytest.mark.parametrize(
    ("message", "term"),
    [
        ("what is a for loop?", "for loop"),
        ("explain photosynthesis please", "photosynthesis"),
        ("define a tense", "tense"),
        ("what is it?", ""),
        ("what is 7 times 8?", ""),
        ("why do we multiply before we add?", ""),
    ],
)
def test_the_term_a_concept_question_asks_about(message: str, term: str) -> None:
    from pedrag.runtime.learning.material import asked_term

    assert asked_term(message) == term


@pytest.mark.parametrize("theory", THEORIES)
def test_a_question_about_a_term_the_curriculum_does_not_explain_says_so(
    tutor: Tutor, theory: str
) -> None:
    session = tutor.start(theory, "sum_list_loop", seed=2)
    tutor.turn(session, "can you show me an example?")  # other material still new after it
    reply = tutor.turn(session, "what is a list?").tutor
    assert "nothing on 'list'" in reply, reply
    assert _goal(tutor, "loop_accumulators").concept in reply  # what it can offer, honestly


@pytest.mark.parametrize("theory", THEORIES)
@pytest.mark.parametrize(
    ("exercise_id", "question", "belongs_to", "goal_id"),
    [
        ("mult_7x8", "what is a for loop?", "Python loops", "for_loops"),
        ("photo_gas_in", "what is a variable?", "Python loops", "python_variables"),
        ("sum_list_loop", "what is a verb?", "English grammar", "parts_of_speech"),
        ("past_tense_go", "what is multiplication?", "arithmetic", "multiplication_facts"),
    ],
)
def test_a_term_of_another_domain_is_placed_there_and_the_learner_brought_back(
    tutor: Tutor, theory: str, exercise_id: str, question: str, belongs_to: str, goal_id: str
) -> None:
    """ "what is a for loop?" during an arithmetic exercise once got "the course material here
    has nothing on 'for loop'": only the exercise's own domain was searched. The whole
    curriculum is: the reply says which part of the course the term belongs to and returns
    to the exercise, without teaching the other goal or stating this exercise's answer."""
    exercise = _exercise(tutor, exercise_id)
    session = tutor.start(theory, exercise_id, seed=2)
    result = tutor.turn(session, question)
    assert result.action == "answer_concept_question", result.action
    assert f"({belongs_to})" in result.tutor and exercise.prompt in result.tutor, result.tutor
    assert "nothing on" not in result.tutor
    assert _goal(tutor, goal_id).concept not in result.tutor
    assert str(exercise.answer) not in result.tutor
