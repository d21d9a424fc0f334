"""Bayesian Knowledge Tracing: one update rule for the runtime and the compiler.

Kernel. Takes a goal's knowledge-tracing parameters (the curriculum's ``knowledge_tracing:``)
and graded answers; gives the probability the learner has mastered the goal after each. The
runtime traces learners with it (`pedrag.runtime.learning.mastery`); the compiler's
`unreachable-goal` check asks how high mastery can climb with the exercises a goal has — the
same rule, so the check's answer is the runtime's.

The update is standard BKT (Corbett & Anderson 1995, as OATutor uses it): condition on the
answer (a slip makes a known goal answer wrong, a guess makes an unknown one answer right), then
apply the chance of learning at this opportunity. Small and exact enough that a library would
add weight without adding a feature (pyBKT fits parameters from data; pedrag takes them from
the curriculum).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_OPPORTUNITIES = 100  # beyond this, a goal counts as never reaching its threshold


@dataclass(frozen=True)
class Tracing:
    prior: float = 0.2
    learn: float = 0.15
    slip: float = 0.1
    guess: float = 0.2

    @classmethod
    def of(cls, model: Any) -> Tracing:
        if model is None:
            return cls()
        return cls(float(model.prior), float(model.learn), float(model.slip), float(model.guess))


def update(known: float, correct: bool, tracing: Tracing) -> float:
    """P(mastered) after one graded answer."""
    if correct:
        evidence = known * (1 - tracing.slip)
        posterior = evidence / (evidence + (1 - known) * tracing.guess)
    else:
        evidence = known * tracing.slip
        posterior = evidence / (evidence + (1 - known) * (1 - tracing.guess))
    return posterior + (1 - posterior) * tracing.learn


def best_mastery(tracing: Tracing, correct_answers: int) -> float:
    """The highest mastery ``correct_answers`` graded answers can give: all of them correct
    (each raises it; a wrong one lowers it)."""
    known = tracing.prior
    for _ in range(correct_answers):
        known = update(known, True, tracing)
    return known


def answers_needed(tracing: Tracing, threshold: float) -> int | None:
    """The fewest correct answers that take mastery to ``threshold``, or None when no number
    up to `MAX_OPPORTUNITIES` does."""
    known = tracing.prior
    for count in range(MAX_OPPORTUNITIES + 1):
        if known >= threshold:
            return count
        known = update(known, True, tracing)
    return None
