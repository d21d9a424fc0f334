"""Per-goal mastery from graded evidence: Bayesian Knowledge Tracing, and goal gating.

Runtime, between the grader and the policy core. Takes a goal's knowledge-tracing parameters
(the curriculum's ``knowledge_tracing:``) and the grader's verdicts; gives the probability the
learner has mastered the goal, which the theory reads as its trusted ``mastery`` metric and the
curriculum's ``mastery_threshold`` compares against to unlock the goals that require it.

The update is standard BKT (Corbett & Anderson 1995, as OATutor uses it): condition on the
answer (a slip makes a known goal answer wrong, a guess makes an unknown one answer right), then
apply the chance of learning at this opportunity. Small and exact enough that a library would
add weight without adding a feature (pyBKT fits parameters from data; pedrag takes them from
the curriculum).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


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
        return cls(
            float(model.prior),
            float(model.learn),
            float(model.slip),
            float(model.guess),
        )


def update(known: float, correct: bool, tracing: Tracing) -> float:
    """P(mastered) after one graded answer."""
    if correct:
        evidence = known * (1 - tracing.slip)
        posterior = evidence / (evidence + (1 - known) * tracing.guess)
    else:
        evidence = known * tracing.slip
        posterior = evidence / (evidence + (1 - known) * (1 - tracing.guess))
    return posterior + (1 - posterior) * tracing.learn


def unlocked(
    goal_requires: Iterable[str], mastery: Mapping[str, float], thresholds: Mapping[str, float]
) -> bool:
    """A goal is open when every goal it requires is mastered (at or above its threshold)."""
    return all(mastery.get(g, 0.0) >= thresholds.get(g, 0.8) for g in goal_requires)
