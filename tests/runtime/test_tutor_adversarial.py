"""Inputs a real deployment meets: odd student text, odd model text, exams under any theory,
two requests racing on one session, and the default store."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from pedrag.runtime.llm.interface import LLMRequest, LLMResponse
from pedrag.runtime.llm.offline import OfflineBackend
from pedrag.runtime.policy.theory_set import TheorySet
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.store.session_store import SessionStore, TurnConflict
from pedrag.runtime.turn.tutor import Session, Tutor
from tests.runtime.tutor_fixtures import CURRICULUM, shipped

NO_EXAM_METRIC = CURRICULUM.parent / "no_exam_metric.yaml"


class ActorSays:
    """The offline backend, except that the actor says ``reply`` and every call costs money."""

    def __init__(self, reply: str | None = None, cost_usd: float = 0.0) -> None:
        self.inner = OfflineBackend()
        self.reply = reply
        self.cost_usd = cost_usd

    def complete(self, request: LLMRequest) -> LLMResponse:
        response = self.inner.complete(request)
        text = self.reply if request.role == "actor" and self.reply is not None else response.text
        return LLMResponse(
            text, response.parsed, role=request.role, cost_usd=self.cost_usd, prompt_tokens=1
        )


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Any:
    with SessionStore(str(tmp_path / "sessions.db")) as store:
        yield store


# -- student text ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        "a\x00b",  # a NUL: the store refuses it (PostgreSQL cannot hold it)
        "\x1b[2J\x1b[Hall clear",  # an ANSI escape that would clear the auditor's terminal
        "bad \ud800 surrogate",  # cannot be written as UTF-8
        "\x07\x08\x7f\x9b",
    ],
)
def test_control_characters_in_a_message_do_not_break_the_turn(
    sqlite_store: SessionStore, message: str
) -> None:
    tutor = Tutor(shipped(), curriculum=CURRICULUM, store=sqlite_store)
    session = tutor.start(exercise="mult_7x8", seed=1)
    result = tutor.turn(session, message)
    saved = sqlite_store.audit_records(session.id)[0]["student"]
    assert saved == result.student and "\ufffd" in saved
    assert all(ch in "\t\n\r" or ch.isprintable() for ch in saved)
    assert sqlite_store.load_session(session.id)[2] == 1
    saved.encode("utf-8")  # printable on any UTF-8 terminal


def test_control_characters_in_the_models_reply_never_reach_the_student(
    sqlite_store: SessionStore,
) -> None:
    backend = ActorSays("Let's think\x00 about it\x1b[2J together. What do you notice?")
    tutor = Tutor(shipped(), backend, CURRICULUM, sqlite_store)
    session = tutor.start(exercise="mult_7x8", seed=1)
    result = tutor.turn(session, "how do I start?")
    assert "\x00" not in result.tutor and "\x1b" not in result.tutor
    assert sqlite_store.audit_records(session.id)[0]["tutor"] == result.tutor
    streamed = "".join(tutor.stream(session, "how do I start?"))
    assert "\x00" not in streamed and "\x1b" not in streamed


def test_a_message_must_be_text() -> None:
    tutor = Tutor(shipped(), curriculum=CURRICULUM, store=MemoryStore())
    session = tutor.start(exercise="mult_7x8", seed=1)
    with pytest.raises(TypeError, match="str, got bytes"):
        tutor.turn(session, b"56")  # type: ignore[arg-type]
    assert session.state.turn == 0


@pytest.mark.parametrize(
    "answer", ["fifty\u2011six", "fifty\u2013six", "5\u200b6", "fifty\u00adsix"]
)
def test_an_answer_the_student_states_first_in_any_hyphen_raises_mastery(answer: str) -> None:
    tutor = Tutor(shipped(), curriculum=CURRICULUM, store=MemoryStore())
    session = tutor.start(exercise="mult_7x8", seed=1)
    before = session.state.metrics["mastery"]
    result = tutor.turn(session, f"I think it is {answer}")
    goal = session.state.extra["goal_records"]["multiplication_facts"]
    assert result.audit["solved"] and goal["mastery"] > before
    assert not result.detector["flagged"]


# -- exams -------------------------------------------------------------------------------------


def test_an_exam_needs_a_theory_that_declares_the_lockdown() -> None:
    # The lockdown is the kernel's runtime step on the theory's `exam_active`; a theory without
    # that metric has no lockdown the compiler proved, so it cannot run an exam at all.
    theories = TheorySet.from_paths([NO_EXAM_METRIC])
    tutor = Tutor(theories, curriculum=CURRICULUM, store=MemoryStore())
    with pytest.raises(ValueError, match="exam_active"):
        tutor.start("plain", exercise="fraction_exam", seed=1)
    practice = tutor.start("plain", exercise="mult_7x8", seed=1)
    assert tutor.turn(practice, "how do I start?").ceiling == 4  # the theory's own start


def test_an_exam_session_never_switches_theory() -> None:
    theories = shipped()
    plain = TheorySet.from_paths([NO_EXAM_METRIC])
    both = TheorySet({**theories.theories, **plain.theories}, dict(theories.curricula))
    tutor = Tutor(both, curriculum=CURRICULUM, store=MemoryStore())
    session = tutor.start("socratic", exercise="fraction_exam", seed=1)
    from pedrag.runtime.turn.state import StateError, StateWriter, SwitchTheory

    with pytest.raises(StateError, match="exam"):
        StateWriter(tutor.schema("socratic")).apply(
            session.state, SwitchTheory("plain", tutor.schema("plain"))
        )
    # Frustration that would switch socratic to direct instruction keeps the exam theory.
    for message in ("I'm so frustrated, I hate this, nothing works!!",) * 4:
        result = tutor.turn(session, message)
        assert result.theory == "socratic" and result.contract.exam_lockdown
        assert result.ceiling == 0 and result.rung == 0


def test_racing_turns_on_one_session_commit_one_and_count_both_costs(
    sqlite_store: SessionStore,
) -> None:
    """Two workers take the same session at turn 0 and post a turn each at once: one commits
    turn 1, the other is refused (compare-and-set on the turn count), and both turns' model
    calls are paid for. Each worker has its own copy of the session, as two processes do, so
    the race does not depend on which thread the scheduler runs first."""
    tutor = Tutor(shipped(), ActorSays(cost_usd=0.01), CURRICULUM, sqlite_store)
    session = tutor.start(exercise="mult_7x8", seed=1)
    workers = [tutor.resume(session.id) for _ in range(2)]
    assert all(worker.state.turn == 0 for worker in workers)
    barrier = threading.Barrier(2)
    outcomes: list[object] = []

    def turn(worker: Session, message: str) -> None:
        barrier.wait()
        try:
            outcomes.append(tutor.turn(worker, message).turn)
        except TurnConflict as error:
            outcomes.append(error)

    threads = [
        threading.Thread(target=turn, args=(worker, f"how do I start, {n}?"))
        for n, worker in enumerate(workers, 1)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(map(str, outcomes))[0] == "1" and any(
        isinstance(item, TurnConflict) for item in outcomes
    )
    (winner,) = [worker for worker in workers if worker.results]
    assert winner.state.turn == 1 and len(winner.results) == 1
    assert sqlite_store.load_session(session.id)[2] == 1
    assert len(sqlite_store.audit_records(session.id)) == 1
    # The losing turn's model calls were paid for: the deployment cap must see them.
    assert sqlite_store.spend("deployment") == pytest.approx(2 * winner.state.cost_usd)
    assert tutor.turn(tutor.resume(session.id), "and then?").turn == 2


# -- the default store -------------------------------------------------------------------------


def test_a_tutor_persists_to_pedrag_db_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PEDRAG_DB", str(tmp_path / "default.db"))
    tutor = Tutor(shipped(), curriculum=CURRICULUM)
    session = tutor.start(exercise="mult_7x8", seed=1)
    tutor.turn(session, "how do I start?")
    assert Tutor(shipped(), curriculum=CURRICULUM).store is tutor.store  # one pool per database
    with SessionStore(str(tmp_path / "default.db")) as store:
        assert store.load_session(session.id)[2] == 1
        assert len(store.audit_records(session.id)) == 1
