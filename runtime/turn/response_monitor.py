"""Stage 9, the response monitor: fingerprints of the tutor's own reply -> ``observed`` metrics.

Takes the reply the student saw, the action and rung it carried out, the detector's verdict on
it and the previous observed values; gives :class:`Fingerprint` (question asked, hint given,
explanation, answer revealed) and the theory's observed metrics for the next turn. What it
writes is declared in the kernel's ``OBSERVED_WRITES`` table (the compiler reports an observed
metric outside it as ``unwritten-metric``); others keep their value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from pedrag.kernel.sources import writes_observed
from pedrag.runtime.turn.state import MetricField, MetricValue

HINT_TAGS = frozenset({"hint", "explain", "example", "partial_solution", "debugging"})
REFLECTION_TAGS = frozenset({"self_reflection", "reflection"})


@dataclass(frozen=True)
class Fingerprint:
    question_asked: bool
    hint_given: bool
    explanation: bool
    answer_revealed: bool
    reflection_prompt: bool = False
    # explained or modelled content: an explanation that is not an affect-support step (a
    # "that's hard, one small step" reply at H4 is support, not the explanation a theory's
    # "explained last turn" means)
    taught: bool = False

    def to_dict(self) -> dict[str, bool]:
        # What `dataclasses.asdict` gives for flat bool fields, without its deep copy (a
        # tenth of the commit stage's own time).
        return {field.name: getattr(self, field.name) for field in fields(self)}


def fingerprint(reply: str, *, rung: int, tags: frozenset[str], revealed: bool) -> Fingerprint:
    return Fingerprint(
        question_asked="?" in reply,
        hint_given=bool(tags & HINT_TAGS) or 2 <= rung <= 6,
        explanation=rung >= 4 or "explain" in tags,
        answer_revealed=revealed,
        reflection_prompt=bool(tags & REFLECTION_TAGS),
        taught=(rung >= 4 or "explain" in tags) and "affect_support" not in tags,
    )


def observed_metrics(
    print_: Fingerprint,
    *,
    action: str,
    last_action: str | None,
    previous: Mapping[str, MetricValue],
    fields: Mapping[str, MetricField],
) -> dict[str, MetricValue]:
    derived: dict[str, Any] = {
        "same_action_streak": (int(previous.get("same_action_streak", 0)) + 1)
        if action == last_action
        else 1,
        "hints_in_row": (int(previous.get("hints_in_row", 0)) + 1) if print_.hint_given else 0,
        "answer_revealed": print_.answer_revealed,
        "questions_asked": int(previous.get("questions_asked", 0)) + int(print_.question_asked),
        # the reply just sent, as the next turn's rules read it ("last turn")
        "told_last_turn": print_.taught,
        "explained_last_turn": print_.taught,
        "reflection_prompted": print_.reflection_prompt,
    }
    values: dict[str, MetricValue] = {}
    for name, item in fields.items():
        if name in derived and writes_observed(name, item.type):
            values[name] = item.coerce(derived[name])
    return values
