"""Selection among eligible rules (DESIGN, "Selection").

A rule is eligible when its condition holds and its action's rung is at or below the ceiling.
``weighted``: each eligible rule is chosen with probability proportional to weight × priority,
from one uniform draw walked over the rules in file order. ``priority``: the highest priority
wins, ties by the larger weight, then by file order. The runtime, `why` and `diff` (which needs
exact probabilities) all call these functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, TypeVar

SELECTIONS = ("weighted", "priority")
Number = TypeVar("Number", float, Fraction)


def eligible_under(rung: int, ceiling: int) -> bool:
    """The ceiling rule: an action is allowed when its rung is at or below the ceiling."""
    return rung <= ceiling


def rule_mass(weight: Number, priority: int) -> Number:
    """A rule's share of the weighted draw before normalising."""
    return weight * priority


def priority_key(priority: int, weight: float | Fraction, index: int) -> tuple[Any, ...]:
    """The order ``priority`` selection ranks rules in: the smallest key wins."""
    return (-priority, -weight, index)


def priority_winner(
    eligible: Sequence[int], priority: Callable[[int], int], weight: Callable[[int], Any]
) -> int:
    """The rule ``priority`` selection picks among ``eligible`` (rule indices in file order)."""
    return min(eligible, key=lambda index: priority_key(priority(index), weight(index), index))


def weighted_pick(eligible: Sequence[int], masses: Sequence[float], draw: float) -> int:
    """The rule a uniform ``draw`` in [0, 1) picks, walking ``eligible`` in file order."""
    point = draw * sum(masses[index] for index in eligible)
    running = 0.0
    for index in eligible:
        running += masses[index]
        if point < running:
            return index
    return eligible[-1]  # rounding at the very top of the range, or every mass zero


def weighted_shares(eligible: Sequence[int], masses: Sequence[Number]) -> dict[int, Number]:
    """Each eligible rule's chance under ``weighted`` selection (exact for Fraction masses).
    When every mass is zero the walk ends on the last rule, so it has the whole chance."""
    total = sum((masses[index] for index in eligible), masses[eligible[0]] * 0)
    if total == 0:
        return {index: total + 1 if index == eligible[-1] else total for index in eligible}
    return {index: masses[index] / total for index in eligible}
