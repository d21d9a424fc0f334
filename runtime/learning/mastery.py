"""Per-goal mastery from graded evidence: Bayesian Knowledge Tracing, and goal gating.

Runtime, between the grader and the policy core. Takes a goal's knowledge-tracing parameters
(the curriculum's ``knowledge_tracing:``) and the grader's verdicts; gives the probability the
learner has mastered the goal, which the theory reads as its trusted ``mastery`` metric and the
curriculum's ``mastery_threshold`` compares against to unlock the goals that require it.

The update rule itself is the kernel's (`pedrag.kernel.knowledge_tracing`), which the
compiler's `unreachable-goal` check uses too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pedrag.kernel.knowledge_tracing import Tracing, update

__all__ = ["Tracing", "unlocked", "update"]


def unlocked(
    goal_requires: Iterable[str], mastery: Mapping[str, float], thresholds: Mapping[str, float]
) -> bool:
    """A goal is open when every goal it requires is mastered (at or above its threshold)."""
    return all(mastery.get(g, 0.0) >= thresholds.get(g, 0.8) for g in goal_requires)
