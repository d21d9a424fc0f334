"""A usable offline tutor: replies filled from the curriculum's teaching material, walking the
hints in order, never the previous reply, rarely any earlier one, and no claim the system
cannot back.

The repetition figures are counted here independently of `benchmarks/offline_repetition.py`
(which prints them): every scripted persona on every shipped exercise, twelve turns each.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pedrag.dsl.loader import load_text
from pedrag.runtime.llm.offline import fill_wording
from pedrag.runtime.llm.personas import PERSONAS
from pedrag.runtime.policy.theory_set import TheoryLoadError, TheorySet
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.action import solved_elsewhere
from pedrag.runtime.turn.tutor import Tutor

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "theories" / "curriculum.yaml"


@pytest.fixture(scope="module")
def sessions() -> dict[tuple[str, str], list[str]]:
    tutor = Tutor(store=MemoryStore())
    out: dict[tuple[str, str], list[str]] = {}
    for exercise in tutor.curriculum.exercises:
        for name, persona in PERSONAS.items():
            session = tutor.start("socratic", exercise.id, seed=7)
            assert session.exercise is not None
            messages = persona.messages(12, topic=session.exercise.topic)
            out[(name, exercise.id)] = [tutor.turn(session, m).tutor for m in messages]
    return out


def test_the_shipped_curriculum_has_five_exercises_in_each_of_four_domains() -> None:
    tutor = Tutor(store=MemoryStore())
    goals = {goal.id: goal.domain for goal in tutor.curriculum.goals}
    per_domain = Counter(goals[e.goal] for e in tutor.curriculum.exercises)
    assert len(per_domain) == 4 and min(per_domain.values()) >= 5, per_domain
    # and every exercise carries the material the offline tutor teaches from
    for exercise in tutor.curriculum.exercises:
        assert len(exercise.hints) >= 2 and exercise.worked_example and exercise.parallel
        assert exercise.misconceptions and exercise.outline


def test_no_reply_repeats_the_one_before(sessions: dict[tuple[str, str], list[str]]) -> None:
    repeats = [
        (key, replies[i])
        for key, replies in sessions.items()
        for i in range(1, len(replies))
        if replies[i] == replies[i - 1]
    ]
    assert repeats == []


def test_each_persona_repeats_an_earlier_reply_in_at_most_a_tenth_of_its_turns(
    sessions: dict[tuple[str, str], list[str]],
) -> None:
    repeated: Counter[str] = Counter()
    turns: Counter[str] = Counter()
    for (persona, _), replies in sessions.items():
        turns[persona] += len(replies)
        repeated[persona] += sum(reply in replies[:i] for i, reply in enumerate(replies))
    shares = {persona: repeated[persona] / turns[persona] for persona in turns}
    assert set(shares) == set(PERSONAS)
    assert max(shares.values()) <= 0.10, shares


def _persona_session(persona: str, exercise_id: str) -> tuple[Any, Any, list[str]]:
    """(the exercise's model, the session, the replies) of a persona's 12-turn session."""
    tutor = Tutor(store=MemoryStore())
    exercise = next(e for e in tutor.curriculum.exercises if e.id == exercise_id)
    session = tutor.start("socratic", exercise_id, seed=7)
    assert session.exercise is not None
    messages = PERSONAS[persona].messages(12, topic=session.exercise.topic)
    return exercise, session, [tutor.turn(session, message).tutor for message in messages]


def test_hints_come_from_the_curriculum_in_order() -> None:
    exercise, session, replies = _persona_session("earnest-but-stuck", "mult_7x8")
    first_seen = [
        next((i for i, reply in enumerate(replies) if hint in reply), None)
        for hint in exercise.hints
    ]
    assert None not in first_seen, (first_seen, replies)
    assert first_seen == sorted(first_seen)
    assert session.state.extra["said"]["hints"] == len(exercise.hints)


def test_a_frustrated_learner_on_direct_instruction_gets_the_worked_parallel_example() -> None:
    exercise, _, replies = _persona_session("struggling-sarah", "photo_gas_in")
    assert any(exercise.worked_example.problem in reply for reply in replies)


def test_no_shipped_wording_promises_content_it_does_not_carry() -> None:
    promise = re.compile(r"\b(here is|here's|here are)\b", re.I)
    broken = []
    for theory_id in TheorySet.shipped().ids:
        policy = TheorySet.shipped()[theory_id].policy
        for name, action in policy.actions.items():
            for text in (action.template or "", *action.variants):
                if promise.search(text) and not re.search(
                    r"\{(hint|example|parallel|outline|solution|misconception|prompt|restatement|concept)\}",
                    text,
                ):
                    broken.append((theory_id, name, text))
    assert broken == []


def test_you_solved_a_similar_problem_is_said_only_on_the_learners_record() -> None:
    wordings = ['Earlier you solved this one: "{solved}" What is the same here?', "Plain."]
    assert fill_wording(wordings, {"topic": "arithmetic"}, {}) == "Plain."
    filled = fill_wording(wordings, {"solved": "What is 7 times 8?"}, {})
    assert filled == 'Earlier you solved this one: "What is 7 times 8?" What is the same here?'

    tutor = Tutor(store=MemoryStore())
    session = tutor.start("socratic", "add_38_47", seed=3, learner="kim")
    multiply = tutor.exercise_info("mult_7x8")  # another arithmetic exercise
    cells = tutor.exercise_info("photo_organelle")  # another topic
    assert solved_elsewhere(tutor, session.state, multiply) == ""
    tutor.turn(session, "85")  # graded correct: the learner's record now holds it
    assert solved_elsewhere(tutor, session.state, multiply) == "What is 38 plus 47?"
    assert solved_elsewhere(tutor, session.state, cells) == ""
    again = tutor.start("socratic", "add_38_47", seed=3, learner="kim")  # the store kept it
    assert solved_elsewhere(tutor, again.state, multiply) == "What is 38 plus 47?"
    stranger = tutor.start("socratic", "add_38_47", seed=3, learner="lee")
    assert solved_elsewhere(tutor, stranger.state, multiply) == ""


def test_the_offline_actor_never_gives_the_previous_reply_even_with_one_wording() -> None:
    said = {"recent": [], "last": "Keep going.", "count": 3}
    reply = fill_wording(["Keep going."], {"prompt": "What is 7 times 8?"}, said)
    assert reply != "Keep going." and "What is 7 times 8?" in reply


_LEAKY = """\
pedrag: 1
kind: curriculum
id: leaky
goals:
  - {id: times, domain: mathematics, topic: arithmetic}
exercises:
  - id: mult_7x8
    goal: times
    prompt: What is 7 times 8?
    answer: "56"
    hints:
      - "Think of 7 times 4 first."
      - "It comes to fifty-six."
"""


def test_a_hint_that_states_the_answer_does_not_load(tmp_path: Path) -> None:
    path = tmp_path / "leaky.yaml"
    path.write_text(_LEAKY, "utf-8")
    with pytest.raises(TheoryLoadError) as caught:
        Tutor(store=MemoryStore(), curriculum=path)
    assert f"{path}:13:9" in str(caught.value)
    assert "hint 2 of exercise `mult_7x8` states its answer" in str(caught.value)
    assert load_text(_LEAKY, "leaky.yaml").ok  # the file parses; the material check refuses it


def test_pedrag_check_reports_a_leaky_hint_at_its_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "leaky.yaml"
    path.write_text(_LEAKY, "utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "pedrag.cli", "check", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 1, result.stderr
    assert f"{path}:13:9: error[material-reveals-answer]" in result.stdout


def test_a_variant_with_an_unknown_placeholder_is_a_diagnostic() -> None:
    theory = (ROOT / "theories" / "socratic.yaml").read_text("utf-8")
    broken = theory.replace("Here's a hint: {hint} What", "Here's a hint: {hnit} What", 1)
    assert broken != theory
    loaded = load_text(broken, "socratic.yaml")
    messages = [str(d.span) + " " + d.message for d in loaded.diagnostics]
    assert any("cannot use `{hnit}`" in m and m.startswith("socratic.yaml:") for m in messages)
    in_template = theory.replace(
        'template: "What do you think the very next step in this {topic} problem should be?"',
        'template: "Next step: {hint}"',
        1,
    )
    assert in_template != theory
    loaded = load_text(in_template, "socratic.yaml")
    assert any("a template cannot use `{hint}`" in d.message for d in loaded.diagnostics)


def test_a_wrong_graded_answer_is_narrated_from_the_graders_fact() -> None:
    tutor = Tutor(store=MemoryStore())
    session = tutor.start("socratic", "mult_7x8", seed=5)
    result = tutor.turn(session, "I think it is 54")
    assert result.audit["grade"]["verdict"] == "wrong"
    assert result.tutor.startswith("Not quite: 54 isn't it. ")
    assert "56" not in result.tutor
    neutral = tutor.turn(session, "what should I look at first?")
    assert neutral.audit["grade"]["verdict"] == "none"
    assert not neutral.tutor.startswith("Not quite")


def test_no_persona_reaches_mastery_without_a_correct_graded_answer() -> None:
    """The scripted personas never give the right answer, so none may reach a goal's mastery
    threshold; a learner who answers correctly twice does (the same loop, same exercises)."""
    tutor = Tutor(store=MemoryStore())
    thresholds = {goal.id: goal.mastery_threshold for goal in tutor.curriculum.goals}
    for exercise in tutor.curriculum.exercises:
        for persona in PERSONAS.values():
            session = tutor.start("socratic", exercise.id, seed=7)
            assert session.exercise is not None
            verdicts = [
                tutor.turn(session, message).audit["grade"]["verdict"]
                for message in persona.messages(12, topic=session.exercise.topic)
            ]
            records = session.state.extra.get("goal_records", {})
            mastered = [g for g, r in records.items() if r["mastery"] >= thresholds[g]]
            assert not mastered or "correct" in verdicts, (persona.name, exercise.id, mastered)
    session = tutor.start("socratic", "photo_organelle", seed=7)
    tutor.turn(session, "the chloroplast")
    tutor.turn(session, "chlorophyll")  # the goal's second exercise
    record = session.state.extra["goal_records"]["plant_cell_structure"]
    assert record["mastery"] >= thresholds["plant_cell_structure"]


def test_with_transcripts_off_the_said_record_keeps_no_reply_text() -> None:
    tutor = Tutor(store=MemoryStore(), keep_transcript=False)
    session = tutor.start("socratic", "mult_7x8", seed=5)
    replies = [tutor.turn(session, "I think it is 54").tutor for _ in range(3)]
    said = session.state.extra["said"]
    assert said["last"] == "" and "54" not in str(said)
    assert replies[0].startswith("Not quite: 54") and replies[1] != replies[0]
    assert replies[2] != replies[1]


def test_material_findings_come_back_from_the_check_cache_until_the_material_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pedrag.compiler.check_cache import CheckCache
    from pedrag.runtime.learning import material

    calls: list[str] = []
    real = material.material_findings

    def counting(exercise: Any, concept: str = "") -> Any:
        calls.append(exercise.id)
        return real(exercise, concept)

    monkeypatch.setattr(material, "material_findings", counting)
    cache = CheckCache(tmp_path / "cache")

    def findings(text: str) -> list[str]:
        memo = cache.memo("material findings")
        loaded = load_text(text, "leaky.yaml")
        out = [f"{d.span} {d.message}" for d in material.material_diagnostics(loaded, memo)]
        memo.save()
        return out

    first = findings(_LEAKY)
    assert calls == ["mult_7x8"] and len(first) == 1 and first[0].startswith("leaky.yaml:13:9 ")
    assert findings(_LEAKY) == first and calls == ["mult_7x8"]  # replayed, detector not run
    moved = _LEAKY.replace("hints:\n", 'hints:\n      - "Skip-count by sevens."\n', 1)
    shifted = findings(moved)
    assert calls == ["mult_7x8", "mult_7x8"]  # the material changed: checked again
    assert len(shifted) == 1 and shifted[0].startswith("leaky.yaml:14:9 hint 3 ")
    reworded = _LEAKY.replace("It comes to fifty-six.", "Then double it.")
    assert findings(reworded) == []
