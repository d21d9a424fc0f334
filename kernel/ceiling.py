"""How the per-turn help ceiling is computed: steps in order, then the runtime's own steps.

A theory's ceiling starts at ``start`` and each step whose condition holds applies in file
order: ``at_most`` lowers to its rung, ``at_least`` raises to it, ``set`` replaces. After the
theory's steps come the **runtime steps** below, declared here as data: the resolver appends
them to every theory that declares their metric (a trusted bool), so the compiler proves over,
`why` explains, and the runtime applies one and the same ceiling.

seed 2, §3.2: an exam lockdown caps the turn at no help whatever the theory says (so an
instructor's explain mode, a theory step, never passes it), and conduct restriction is applied
last, so nothing can lift it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

Effect = Literal["at_most", "at_least", "set"]
EFFECTS: tuple[Effect, ...] = ("at_most", "at_least", "set")
DEFAULT_START = 4  # a theory without `ceiling:` starts low (the `missing-ceiling` finding)


def apply_step(rung: int, effect: str, step_rung: int) -> int:
    """The ceiling after one step that holds."""
    if effect == "at_most":
        return min(rung, step_rung)
    if effect == "at_least":
        return max(rung, step_rung)
    if effect == "set":
        return step_rung
    raise ValueError(f"unknown ceiling effect {effect!r}")


@dataclass(frozen=True)
class StepApplied:
    """One step that held: its position, effect and rung, and the ceiling before and after."""

    position: int
    effect: str
    rung: int
    before: int
    after: int


def apply_steps(
    start: int, held: Iterable[tuple[int, str, int]]
) -> tuple[int, tuple[StepApplied, ...]]:
    """The ceiling after the steps that held, given in order as ``(position, effect, rung)``."""
    rung = start
    trace = []
    for position, effect, step_rung in held:
        after = apply_step(rung, effect, step_rung)
        trace.append(StepApplied(position, effect, step_rung, rung, after))
        rung = after
    return rung, tuple(trace)


@dataclass(frozen=True)
class RuntimeStep:
    """A ceiling step the runtime adds after a theory's own steps, when the theory declares
    ``metric`` as a trusted bool; it holds exactly when that metric is true."""

    id: str
    metric: str
    effect: Effect
    rung: int
    why: str


RUNTIME_STEPS: tuple[RuntimeStep, ...] = (
    RuntimeStep(
        "exam_lockdown",
        "exam_active",
        "set",
        0,
        "an exam lockdown allows no help, whatever the theory's steps gave (seed 2, §3.2)",
    ),
    RuntimeStep(
        "conduct_restriction",
        "conduct_restricted",
        "at_most",
        1,
        "conduct restriction is applied last, so nothing can lift it (seed 2, §3.2)",
    ),
)


def most_permissive(ceilings: Sequence[int]) -> int:
    """Which of several candidate ceilings a turn gets: the most permissive (the highest rung),
    the first on a tie. seed 2, §3.2: with several goals in scope the most permissive mastery
    band wins, so the learner is met at their weakest goal."""
    if not ceilings:
        raise ValueError("no candidate ceiling")
    return max(range(len(ceilings)), key=lambda index: (ceilings[index], -index))


def runtime_steps_for(metrics: Mapping[str, tuple[str, str]]) -> tuple[RuntimeStep, ...]:
    """The runtime steps that apply to a theory, from its metrics as ``name -> (type, source)``."""
    return tuple(step for step in RUNTIME_STEPS if metrics.get(step.metric) == ("bool", "trusted"))


def runtime_step(step_id: str) -> RuntimeStep:
    for step in RUNTIME_STEPS:
        if step.id == step_id:
            return step
    raise KeyError(step_id)
