"""Stage 10, the behavioural monitor and adaptation: failure patterns -> the next move.

Takes the compiled policy, the metric history (current snapshot last, after the response
monitor; or the policy's preparation of it, which the turn passes so it is prepared once), the action just used, the ceiling and the theory set's ids; gives an
:class:`Adaptation`: the monitors that fired and what to do about it, in seed 1's order —
*escalate* (the theory's next action up), *alternatives* (another strategy at the same level),
then *switch* theory (a declared switch whose target is loaded). Escalations and alternatives
become a plan the rule engine applies next turn, only if the new action fits under that
turn's ceiling; a theory switch takes effect from the next turn.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Adaptation:
    fired: tuple[str, ...] = ()
    level: str | None = None  # "escalate" | "alternatives" | "switch"
    plan: Mapping[str, Any] | None = None
    switch_to: str | None = None
    reason: str = "no monitor fired"

    def to_dict(self) -> dict[str, Any]:
        return {
            "fired": list(self.fired),
            "level": self.level,
            "plan": dict(self.plan) if self.plan else None,
            "switch_to": self.switch_to,
            "reason": self.reason,
        }


def adapt(
    policy: Any,
    history: Sequence[Mapping[str, Any]] | Any,
    *,
    action: str,
    rung_of: Mapping[str, int],
    ceiling: int,
    theory_ids: Collection[str],
    previous: Mapping[str, Any] | None = None,
) -> Adaptation:
    """``previous`` is the plan made last turn: when the same monitor fires again, the next
    level is tried (escalate, then alternatives, then switch)."""
    fired = tuple(policy.monitors_fired(history))
    if not fired:
        # No problem signalled, but a switch's condition holds: the evidence the theory names
        # for handing over (e.g. direct instruction handing back once graded answers show
        # progress). Switches are otherwise the last level after a monitor fires.
        target = policy.switch_target(history)
        if target is not None and target in theory_ids:
            return Adaptation(
                (), "switch", None, target, f"switch to {target}: its condition holds"
            )
        return Adaptation()
    monitor = fired[0]
    target = policy.switch_target(history)
    tried = previous.get("level") if previous and previous.get("monitor") == monitor else None
    skip = {"escalate": 1, "alternatives": 2}.get(str(tried), 0)
    escalation = policy.escalate.get(action) if skip < 1 else None
    if escalation is not None and rung_of.get(escalation, 99) <= max(
        ceiling, rung_of.get(action, 0) + 1
    ):
        return Adaptation(
            fired,
            "escalate",
            {"avoid": action, "prefer": [escalation], "monitor": monitor, "level": "escalate"},
            reason=f"{monitor}: escalate {action} -> {escalation}",
        )
    alternatives = (
        [name for name in policy.alternatives.get(action, ()) if name != action] if skip < 2 else []
    )
    if alternatives:
        return Adaptation(
            fired,
            "alternatives",
            {"avoid": action, "prefer": alternatives, "monitor": monitor, "level": "alternatives"},
            reason=f"{monitor}: try {', '.join(alternatives)} instead of {action}",
        )
    if target is not None and target in theory_ids:
        return Adaptation(fired, "switch", None, target, f"{monitor}: switch theory to {target}")
    if target is not None:
        return Adaptation(fired, None, None, None, f"{monitor}: switch target {target} not loaded")
    return Adaptation(fired, None, None, None, f"{monitor}: no adaptation declared for {action}")
