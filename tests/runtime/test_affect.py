"""Affect that helps: frustration raises support and keeps content, conduct restriction decays
and an instructor can lift it, and switches back from direct instruction and SRL fire on the
evidence their theories name (issue 16, item 5). Scripted offline sessions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.store.session_store import SessionStore
from pedrag.runtime.turn.trusted_writer import CALM_TURNS_TO_LIFT
from pedrag.runtime.turn.tutor import Tutor

ROOT = Path(__file__).resolve().parents[2]
FRUSTRATED = ("Ugh, this is so hard, I'm stuck again!!", "I give up, nothing works!!")


def _hints(tutor: Tutor, exercise_id: str) -> list[str]:
    exercise = next(e for e in tutor.curriculum.exercises if e.id == exercise_id)
    return list(exercise.hints)


@pytest.mark.parametrize("theory", ["socratic", "direct_instruction", "srl", "constructivism"])
def test_a_frustrated_learner_gets_a_concrete_step_within_two_turns(theory: str) -> None:
    tutor = Tutor(store=MemoryStore())
    hints = _hints(tutor, "mult_7x8")
    reached = 0
    for seed in range(10):
        session = tutor.start(theory, "mult_7x8", seed=seed)
        replies = [tutor.turn(session, message) for message in FRUSTRATED]
        for result in replies:
            assert "56" not in result.tutor and not result.detector["flagged"]
        # a concrete step (one of the exercise's hints) with its affect preface (an action
        # the theory tags as affect support)
        reached += any(
            any(hint in r.tutor for hint in hints)
            and "affect_support" in tutor.theories[r.theory].policy.actions[r.action].tags
            for r in replies
        )
    assert reached >= 9, f"{theory}: a concrete step within two turns in {reached}/10 seeds"


def test_the_small_step_is_the_frustrated_learners_next_hint_with_a_preface() -> None:
    tutor = Tutor(store=MemoryStore())
    session = tutor.start("socratic", "mult_7x8", seed=1)
    result = tutor.turn(session, FRUSTRATED[0])
    assert result.action == "acknowledge_then_small_step" and result.rung == 4
    assert _hints(tutor, "mult_7x8")[0] in result.tutor
    # affect first, in the learner's own words ("I'm stuck again"), then the action's preface
    sentences = [part.strip().lower() for part in result.tutor.split(".")]
    assert "stuck" in sentences[0], result.tutor
    assert any(
        part.startswith(("i can see", "that's a tough", "let's slow")) for part in sentences[1:]
    ), result.tutor


def test_conduct_restriction_decays_after_calm_turns() -> None:
    tutor = Tutor(store=MemoryStore())
    session = tutor.start("socratic", "mult_7x8", seed=2)
    for _ in range(3):
        tutor.turn(session, "shut up, you stupid bot")
    assert session.state.metrics["conduct_restricted"] is True
    calm = [tutor.turn(session, "ok, sorry. how do I start?") for _ in range(CALM_TURNS_TO_LIFT)]
    assert all(r.ceiling <= 1 for r in calm[:-1])  # still restricted until the last calm turn
    assert session.state.metrics["conduct_restricted"] is False
    assert calm[-1].ceiling > 1
    # the count behind it starts again: one more insult does not restrict at once
    tutor.turn(session, "shut up")
    assert session.state.metrics["conduct_restricted"] is False


def test_an_instructor_lifts_a_conduct_restriction_from_the_cli(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    tutor = Tutor(store=SessionStore(str(db)))
    session = tutor.start("socratic", "mult_7x8", seed=2)
    for _ in range(3):
        tutor.turn(session, "shut up, you idiot")
    assert session.state.metrics["conduct_restricted"] is True
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pedrag.cli",
            "instructor",
            session.id,
            "--lift-conduct",
            "--db",
            str(db),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["trusted"] == {"conduct_restricted": False}
    resumed = Tutor(store=SessionStore(str(db))).resume(session.id)
    assert resumed.state.metrics["conduct_restricted"] is False
    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "pedrag.cli",
            "instructor",
            session.id,
            "--set",
            "mood=on",
            "--db",
            str(db),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert refused.returncode == 1 and "no instructor toggle 'mood'" in refused.stderr


def test_direct_instruction_hands_back_to_socratic_on_graded_progress() -> None:
    tutor = Tutor(store=MemoryStore())
    session = tutor.start("socratic", "add_38_47", seed=4)
    tutor.turn(session, FRUSTRATED[0])
    tutor.turn(session, FRUSTRATED[1])
    assert session.state.theory_id == "direct_instruction"
    _handed_back(tutor, session, "Okay, I think it is 85.")


def _handed_back(tutor: Tutor, session: Any, message: str) -> None:
    result = tutor.turn(session, message)
    assert result.audit["grade"]["verdict"] == "correct"
    assert result.audit["adaptation"]["switch_to"] == "socratic"
    assert session.state.theory_id == "socratic"


def test_direct_instruction_reviews_once_not_every_turn() -> None:
    tutor = Tutor(store=MemoryStore())
    for seed in range(5):
        session = tutor.start("direct_instruction", "mult_7x8", seed=seed)
        messages = ("hi", "ok", "what now?", "go on", "and?", "hmm")
        actions = [tutor.turn(session, message).action for message in messages]
        assert actions.count("daily_review") <= 1, actions


def test_srl_hands_back_to_socratic_when_the_learner_monitors_and_progresses() -> None:
    tutor = Tutor(store=MemoryStore())
    session = tutor.start("srl", "add_38_47", seed=4)
    tutor.turn(session, "Let me plan this first.")  # progress is measured over turns
    # progress without self-monitoring is not the evidence SRL names: it stays
    result = tutor.turn(session, "Okay, I think it is 85.")
    assert result.audit["grade"]["verdict"] == "correct"
    assert session.state.theory_id == "srl"
    session = tutor.start("srl", "add_38_47", seed=4)
    tutor.turn(session, "Let me plan this first.")
    _handed_back(tutor, session, "I checked it twice by adding the tens first: it is 85.")


def test_a_calm_learner_without_graded_progress_stays_in_direct_instruction() -> None:
    tutor = Tutor(store=MemoryStore())
    session = tutor.start("direct_instruction", "add_38_47", seed=4)
    for message in ("ok", "what is the first step?", "I tried 40 first"):
        tutor.turn(session, message)
    assert session.state.theory_id == "direct_instruction"


SELF_BLAME = ("I feel so stupid, I can't do this.", "I'm useless at maths, I cannot do it.")


def test_a_self_blaming_learner_is_supported_not_restricted() -> None:
    tutor = Tutor(store=MemoryStore())
    hints = _hints(tutor, "mult_7x8")
    reached = 0
    for seed in range(10):
        session = tutor.start("socratic", "mult_7x8", seed=seed)
        replies = []
        for message in SELF_BLAME:
            replies.append(tutor.turn(session, message))
            assert session.state.metrics["conduct_restricted"] is False
        reached += any(
            any(hint in r.tutor for hint in hints)
            and "affect_support" in tutor.theories[r.theory].policy.actions[r.action].tags
            for r in replies
        )
    assert reached >= 9, f"a concrete step within two turns in {reached}/10 seeds"
