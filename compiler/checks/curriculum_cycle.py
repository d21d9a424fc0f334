"""curriculum-cycle: goal prerequisites that go round in a circle.

Set-level check (networkx). A curriculum's goals and their `requires:` lists must form a
directed acyclic graph, or no learner can ever start the goals on the cycle. Each cycle is
reported once with its members, at the `requires:` entry that closes it.
"""

from __future__ import annotations

from collections.abc import Iterator

from pedrag.compiler.check_cache import Memo
from pedrag.compiler.checks import CheckInfo
from pedrag.compiler.graphs import simple_cycles
from pedrag.dsl.diagnostics import Diagnostic, Severity
from pedrag.dsl.loader import LoadedFile

INFO = CheckInfo(
    name="curriculum-cycle",
    severity=Severity.ERROR,
    summary="a curriculum's goal prerequisites form a cycle",
    explanation=(
        "Goals list the goals they require. If the requirements go round in a circle "
        "(a requires b, b requires a) none of the goals on the circle can ever be started, and "
        "mastery gating locks the learner out."
    ),
    example=(
        "kind: curriculum\n"
        "goals:\n"
        "  - {id: fractions, requires: [decimals]}\n"
        "  - {id: decimals, requires: [fractions]}\n"
    ),
    fix="Remove one `requires:` entry on the cycle (usually the one pointing back to an earlier goal).",
    stage="set",
)

MAX_CYCLES = 10


def run(files: list[LoadedFile], memo: Memo | None = None) -> Iterator[Diagnostic]:
    """The check over each curriculum; `memo` (the check cache) keeps the cycle answers."""
    for loaded in files:
        curriculum = loaded.curriculum
        if curriculum is None:
            continue
        order = [goal.id for goal in curriculum.model.goals]
        edges = [
            (goal.id, required) for goal in curriculum.model.goals for required in goal.requires
        ]
        found = simple_cycles(order, edges, memo) if edges else []
        cycles = sorted(found, key=lambda c: (len(c), sorted(c)))[:MAX_CYCLES]
        for cycle in cycles:
            start = min(range(len(cycle)), key=lambda i: order.index(cycle[i]))
            cycle = cycle[start:] + cycle[:start]
            closing = (cycle[-1], cycle[0])
            path = " -> ".join([*cycle, cycle[0]])
            yield Diagnostic(
                check=INFO.name,
                severity=INFO.severity,
                message=f"goal prerequisites form a cycle: {path} (each requires the next)",
                span=curriculum.requires_spans.get(closing) or curriculum.goal_spans.get(cycle[0]),
                items=tuple(f"goal:{g}" for g in cycle),
                help=INFO.fix,
                data={"cycle": cycle},
            )
