"""Several goals in scope: the most permissive mastery band sets the ceiling (seed 2, §3.2:
"the student is met at their weakest goal"), chosen by the kernel's one rule."""

from __future__ import annotations

from pathlib import Path

from pedrag.kernel.ceiling import most_permissive
from pedrag.runtime.policy.theory_set import TheorySet
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor

CURRICULUM = """\
pedrag: 1
kind: curriculum
id: scoped
goals:
  - {id: times, domain: mathematics, topic: arithmetic}
  - {id: plus, domain: mathematics, topic: arithmetic}
exercises:
  - {id: t1, goal: times, prompt: What is 7 times 8?, answer: "56"}
  - {id: t2, goal: times, prompt: What is 6 times 9?, answer: "54"}
  - id: mixed
    goal: times
    practises: [plus]
    prompt: What is 3 times 4 plus 5?
    answer: "17"
"""


def _tutor(tmp_path: Path, text: str) -> Tutor:
    path = tmp_path / "scoped.yaml"
    path.write_text(text, "utf-8")
    return Tutor(TheorySet.shipped(), curriculum=path, store=MemoryStore())


def _master_times(tutor: Tutor) -> None:
    session = tutor.start("socratic", "t1", seed=0, learner="kim")
    tutor.turn(session, "56")
    assert session.exercise is not None and session.exercise.id == "t2"
    tutor.turn(session, "54")
    assert tutor.learner_mastery("kim")["times"] >= 0.7


def test_the_weakest_goal_in_scope_sets_the_ceiling(tmp_path: Path) -> None:
    tutor = _tutor(tmp_path, CURRICULUM)
    _master_times(tutor)
    session = tutor.start("socratic", "mixed", seed=0, learner="kim")
    result = tutor.turn(session, "how should I start?")
    # `times` is mastered (socratic: mastery >= 0.7 -> at most H3); `plus` is not, and its
    # band (the start, H4) is the more permissive one
    assert result.ceiling == 4
    assert result.audit["goal_in_scope"] == "plus"
    assert session.state.metrics["mastery"] < 0.7


def test_with_one_goal_in_scope_its_own_band_holds(tmp_path: Path) -> None:
    tutor = _tutor(tmp_path, CURRICULUM.replace("    practises: [plus]\n", ""))
    _master_times(tutor)
    session = tutor.start("socratic", "mixed", seed=0, learner="kim")
    result = tutor.turn(session, "how should I start?")
    assert result.ceiling == 3
    assert result.audit["goal_in_scope"] == "times"


def test_the_kernel_picks_the_highest_ceiling_and_the_first_on_a_tie() -> None:
    assert most_permissive([3, 5, 4]) == 1
    assert most_permissive([4, 4]) == 0
    assert most_permissive([0]) == 0


def test_an_unknown_practised_goal_is_a_diagnostic(tmp_path: Path) -> None:
    from pedrag.dsl.loader import load_text

    loaded = load_text(CURRICULUM.replace("[plus]", "[plsu]"), "scoped.yaml")
    assert not loaded.ok
    assert any(
        "practises unknown goal `plsu`" in d.message and str(d.span).startswith("scoped.yaml:12:")
        for d in loaded.diagnostics
    )
