"""The resolved theory: what the compiler and the runtime read.

Frozen dataclasses built by `pedrag.dsl.resolve` from a validated `model.Theory`: every
condition parsed and resolved (names replaced by metric, enum, action references), rungs as
integers, defaults filled in (rule priority = its action's), spans kept for diagnostics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pedrag.dsl import ast
from pedrag.dsl.model import Curriculum, Theory
from pedrag.dsl.spans import ScalarMap, Span
from pedrag.kernel.sources import Writer

MetricType = Literal["int", "float", "bool", "enum"]


@dataclass(frozen=True)
class MetricInfo:
    name: str
    type: MetricType
    source: str
    low: float = 0.0
    high: float = 0.0
    values: tuple[str, ...] = ()
    default: float | int | bool | str = 0
    compute: ast.Expr | None = None
    span: Span | None = None
    writer: Writer | None = None  # trusted metrics: the runtime events that write it

    @property
    def numeric(self) -> bool:
        return self.type in ("int", "float")


@dataclass(frozen=True)
class ActionInfo:
    name: str
    rung: int
    priority: int
    description: str
    tags: frozenset[str] = frozenset()  # declared and derived: invariants and the runtime read them
    conflicts: tuple[str, ...] = ()
    guidance: str | None = None
    template: str | None = None
    variants: tuple[str, ...] = ()
    span: Span | None = None
    ignore: frozenset[str] = frozenset()
    # (tag, placeholder): the tags in `tags` that only its wordings give it (`{hint}` -> hint,
    # `kernel.wording.derived_tags`), for a designer reading a proof about them
    derived: tuple[tuple[str, str], ...] = ()


_READS: dict[frozenset[str], frozenset[str]] = {}
"""Each distinct set of metrics some condition reads, once (`Located.reads`)."""


@dataclass(frozen=True)
class Located:
    """A condition with what a diagnostic needs to point inside it."""

    expr: ast.Expr
    text: str
    span: Span
    scalar: ScalarMap | None = field(default=None, compare=False, repr=False)

    @property
    def reads(self) -> frozenset[str]:
        """The metrics the condition reads (`ast.metric_names`), walked once and kept with it
        (in its `__dict__`, so a pickled front end carries them: the resolver walks every
        rule's before the front end is kept). unwritten-metric and unused-metric read every
        condition's, and walking 5,000 conditions again was a twelfth of a one-rule edit's
        re-check. `replace` makes a new object, which walks its own expression."""
        found: frozenset[str] | None = self.__dict__.get("_reads")
        if found is None:
            found = ast.metric_names(self.expr)
            # One object per set: rules read a few hundred distinct sets, and a pickle of the
            # front end then holds each once (5,000 sets made it 2% larger and slower to read).
            found = _READS.setdefault(found, found)
            object.__setattr__(self, "_reads", found)
        return found

    def node_span(self, node: ast.Expr) -> Span:
        if self.scalar is None or node.span == ast.NO_SPAN:
            return self.span
        return self.scalar.span(node.span[0], node.span[1])


@dataclass(frozen=True)
class RuleInfo:
    id: str
    index: int
    when: Located
    action: str
    weight: float
    priority: int
    span: Span
    ignore: frozenset[str] = frozenset()


@dataclass(frozen=True)
class CeilingStepInfo:
    index: int
    when: Located
    effect: Literal["at_most", "at_least", "set"]
    rung: int
    span: Span
    runtime: str | None = None  # a runtime step's id (pedrag.kernel.ceiling), not the theory's

    @property
    def label(self) -> str:
        """How a trace names the step: its condition, or the runtime step's id."""
        return f"runtime: {self.runtime}" if self.runtime else self.when.text


@dataclass(frozen=True)
class InvariantInfo:
    id: str
    kind: Literal["never", "always"]
    condition: Located
    span: Span


@dataclass(frozen=True)
class SwitchInfo:
    index: int
    when: Located
    to: str
    span: Span


@dataclass(frozen=True)
class ResolvedTheory:
    id: str
    name: str
    file: str
    selection: Literal["weighted", "priority"]
    metrics: dict[str, MetricInfo]
    actions: dict[str, ActionInfo]
    rules: tuple[RuleInfo, ...]
    ceiling_start: int
    ceiling_steps: tuple[CeilingStepInfo, ...]
    invariants: tuple[InvariantInfo, ...]
    monitors: dict[str, Located]
    escalate: dict[str, str]
    alternatives: dict[str, tuple[str, ...]]
    switches: tuple[SwitchInfo, ...]
    model: Theory = field(compare=False, repr=False)
    span: Span | None = None
    ignore: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ResolvedCurriculum:
    id: str
    file: str
    model: Curriculum = field(compare=False, repr=False)
    goal_spans: dict[str, Span] = field(default_factory=dict)
    requires_spans: dict[tuple[str, str], Span] = field(default_factory=dict)
    ignore: frozenset[str] = frozenset()
    span: Span | None = None  # of the curriculum's `id`
