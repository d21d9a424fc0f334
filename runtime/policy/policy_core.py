"""Stage 4, the policy core: trusted + classified metric values -> the per-turn contract.

Takes a :class:`PolicyInput` — metric values only (bools, numbers, enum labels), no field that
can hold student text — and the theory's ceiling function; gives a :class:`Contract`: the help
ceiling, exam lockdown, whether the turn must be grounded, whether the judge must review it,
and the trace of ceiling steps that set it.

Why so narrow: seed 2, §3.2 and §6 — "put the irreversible decision in code, not in a prompt".
The core makes no model call and never sees prose, so no injected text can raise the ceiling;
tests/test_architecture.py fails if this module, or anything it imports, reaches the
classifier, the analyzer, the generator or the LLM layer. Only the standard library and `pedrag.kernel` are
imported here: the compiled policy is passed in and used through the small :class:`CeilingSource`
protocol.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from pedrag.kernel.rungs import allows_code, parse_rung, rung_name
from pedrag.kernel.sources import (
    ADVERSARIAL_INTENTS,
    CODE_ATTEMPT_METRIC,
    CONCEPT_QUESTION_METRIC,
    GROUNDED_TAG,
    GROUNDING_MIN_RUNG,
    INTENT_METRIC,
)

Scalar = bool | int | float | str
"""A metric value; a ``str`` must be an enum label (checked), never free text."""

_LABEL = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
EXAM_LOCKDOWN = "exam_lockdown"  # the kernel's runtime step whose holding is the lockdown


class CeilingSource(Protocol):
    """What the core needs from a compiled policy: the ceiling over trusted values."""

    def ceiling(self, trusted: Mapping[str, Any]) -> Any: ...


@dataclass(frozen=True)
class PolicyInput:
    """Trusted and classified metric values, as sorted ``(name, value)`` pairs."""

    trusted: tuple[tuple[str, Scalar], ...]
    classified: tuple[tuple[str, Scalar], ...]

    def __post_init__(self) -> None:
        for name, value in (*self.trusted, *self.classified):
            if not _LABEL.match(name):
                raise ValueError(f"not a metric name: {name[:40]!r}")
            if isinstance(value, str) and not _LABEL.match(value):
                # The trust boundary in one line: a string here is a label or nothing.
                raise ValueError(f"metric {name!r} carries text, not an enum label")
            if not isinstance(value, bool | int | float | str):
                raise TypeError(f"metric {name!r} has a {type(value).__name__} value")

    @classmethod
    def of(cls, trusted: Mapping[str, Scalar], classified: Mapping[str, Scalar]) -> PolicyInput:
        return cls(tuple(sorted(trusted.items())), tuple(sorted(classified.items())))

    def values(self) -> dict[str, Scalar]:
        return {**dict(self.trusted), **dict(self.classified)}


@dataclass(frozen=True)
class CeilingStep:
    """One ceiling step that held this turn: which, what it did, the rung before and after."""

    step: str
    effect: str
    before: int
    after: int


@dataclass(frozen=True)
class Contract:
    """The per-turn contract (seed 2, §3.2). Rungs are ints 0..7 (H0..H7)."""

    ceiling: int
    exam_lockdown: bool
    grounding_required: bool
    judge_required: bool
    start: int
    step_trace: tuple[CeilingStep, ...] = ()
    risks: tuple[str, ...] = ()

    @property
    def code_allowed(self) -> bool:
        return allows_code(self.ceiling)

    @property
    def set_by(self) -> str:
        """The step that last changed the ceiling, or ``start``."""
        changed = [step for step in self.step_trace if step.before != step.after]
        return changed[-1].step if changed else "start"

    def to_dict(self) -> dict[str, Any]:
        return {
            "ceiling": rung_name(self.ceiling),
            "start": rung_name(self.start),
            "exam_lockdown": self.exam_lockdown,
            "grounding_required": self.grounding_required,
            "judge_required": self.judge_required,
            "code_allowed": self.code_allowed,
            "set_by": self.set_by,
            "risks": list(self.risks),
            "step_trace": [
                {
                    "step": s.step,
                    "effect": s.effect,
                    "before": rung_name(s.before),
                    "after": rung_name(s.after),
                }
                for s in self.step_trace
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Contract:
        """The contract back from :meth:`to_dict` (an audit record, a judge's prompt); raises
        ``KeyError``/``ValueError`` for a dict that is not one."""
        return cls(
            ceiling=parse_rung(data["ceiling"]),
            exam_lockdown=bool(data["exam_lockdown"]),
            grounding_required=bool(data["grounding_required"]),
            judge_required=bool(data["judge_required"]),
            start=parse_rung(data["start"]),
            step_trace=tuple(
                CeilingStep(
                    str(step["step"]),
                    str(step["effect"]),
                    parse_rung(step["before"]),
                    parse_rung(step["after"]),
                )
                for step in data.get("step_trace", ())
            ),
            risks=tuple(str(risk) for risk in data.get("risks", ())),
        )


def compute_contract(
    policy_input: PolicyInput, policy: CeilingSource, *, materials: bool = False
) -> Contract:
    """The contract for one turn. Pure: the same input always gives the same contract.

    ``materials`` is the system's fact that the session's course has indexed materials. The
    turn must be grounded (seed 2, §3.2) when the pre-classifier classified a concept question
    (``concept_question``), the course has materials, no exam is locked down and the ceiling
    reaches H2, the rung that points to a concept or source; a grounded turn is judged.

    The ceiling is the compiled policy's, computed by `pedrag.kernel.ceiling` over the theory's
    steps and the runtime steps the kernel declares (exam lockdown, conduct restriction), so it
    is exactly the ceiling the compiler's checks and `pedrag why` reason about: nothing here
    changes it."""
    values = policy_input.values()
    decision = policy.ceiling(values)
    labels = {spec.index: spec for spec in getattr(policy, "ceiling_specs", ())}
    trace = []
    exam = False
    for applied in decision.trace:
        spec = labels.get(applied.position)
        if spec is not None and spec.runtime == EXAM_LOCKDOWN:
            exam = True
        name = spec.label if spec is not None else ""
        trace.append(
            CeilingStep(
                f"step {applied.position}" + (f": {name}" if name else ""),
                f"{applied.effect} {rung_name(applied.rung)}",
                applied.before,
                applied.after,
            )
        )
    rung = int(decision.rung)
    intent = values.get(INTENT_METRIC)
    risks = []
    if exam:
        risks.append("exam_lockdown")
    if intent in ADVERSARIAL_INTENTS:
        risks.append(f"adversarial_intent:{intent}")
    if values.get(CODE_ATTEMPT_METRIC) is True and not allows_code(rung):
        risks.append("code_adjacent_no_code_ceiling")
    grounded = _may_ground(materials, exam, rung) and values.get(CONCEPT_QUESTION_METRIC) is True
    if grounded:
        risks.append("grounded:concept_question")
    return Contract(
        ceiling=rung,
        exam_lockdown=exam,
        grounding_required=grounded,
        judge_required=bool(risks),  # a grounded turn is judged: its risk is listed
        start=int(decision.start),
        step_trace=tuple(trace),
        risks=tuple(risks),
    )


def _may_ground(materials: bool, exam: bool, rung: int) -> bool:
    return materials and not exam and rung >= GROUNDING_MIN_RUNG


def ground_for_action(contract: Contract, tags: frozenset[str], *, materials: bool) -> Contract:
    """The contract once the rule engine chose an action: an action tagged ``grounded`` (it
    points to a concept or course source, DESIGN's H2) makes the turn grounded too, under the
    same conditions as a concept question. ``tags`` are the theory's labels, never text."""
    if contract.grounding_required or GROUNDED_TAG not in tags:
        return contract
    if not _may_ground(materials, contract.exam_lockdown, contract.ceiling):
        return contract
    return replace(
        contract,
        grounding_required=True,
        judge_required=True,
        risks=(*contract.risks, "grounded:action"),
    )
