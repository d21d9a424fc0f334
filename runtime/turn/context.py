"""The turn context: the one value a turn's stages read and extend, in order.

Runtime, the turn pipeline's shared state (``pedrag.runtime.turn.pipeline`` runs the stages).
Takes a session and a student message (``opening.open_turn`` creates it); every later stage
reads the fields the stages before it set and sets its own: reading (classification,
inference), trusted writes (assessment, next exercise), contract (the prepared history, the
policy input, the contract), action (choice, material, grounding), supervision (the outcome)
and commit (the :class:`~pedrag.runtime.turn.session.TurnResult`, built from this context).

Why one typed object: each stage's inputs and outputs are named once, here; the metric history
is taken from the state once per turn and the policy's preparation of it travels with the
context instead of being rebuilt by each stage; a stage that reads a field no earlier stage has
set fails loudly (``AttributeError``) instead of reading a default. ``TurnHost`` is what the
stages need from the tutor that runs them (its store, backends, curriculum), so no stage
imports the tutor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pedrag.kernel.sources import EXPLAIN_MODE_METRIC
from pedrag.runtime.course.grounding import Grounding
from pedrag.runtime.detect.detector import DetectorVerdict
from pedrag.runtime.learning.loop import Assessment, CurriculumMap, GoalRecord
from pedrag.runtime.llm.interface import LLMBackend
from pedrag.runtime.policy.policy_core import Contract, PolicyInput
from pedrag.runtime.policy.rule_engine import Choice, RuleEngine
from pedrag.runtime.policy.theory_set import TheorySet
from pedrag.runtime.turn.analyzer import Inference
from pedrag.runtime.turn.budget import Budget, BudgetDecision, BudgetedBackend
from pedrag.runtime.turn.classifier import Classification
from pedrag.runtime.turn.judge import JudgeVerdict
from pedrag.runtime.turn.session import ExerciseInfo, Session
from pedrag.runtime.turn.state import MetricSchema, MetricValue, SessionState, StateWriter

if TYPE_CHECKING:
    from pedrag.runtime.course.index import CourseIndex

HISTORY = "history"  # state.extra key: the last exchanges, for the actor
HISTORY_TURNS = 6  # the actor's history by default: the last six exchanges (docs/runtime.md)
HISTORY_CHARS = 600  # per message: the history is context, not a transcript
GOAL_RECORDS = "goal_records"  # state.extra key: goal -> the session's view of its record

Row = Mapping[str, MetricValue]


class TurnHost(Protocol):
    """What the stages use of the tutor running them."""

    theories: TheorySet
    store: Any
    budget: Budget
    is_offline: bool
    in_process: bool
    curriculum: Any
    course: str | None
    course_index: CourseIndex | None
    history_turns: int
    keep_transcript: bool

    @property
    def backend(self) -> LLMBackend: ...

    @property
    def offline(self) -> LLMBackend: ...  # answers every role when the budget allows no model

    def schema(self, theory_id: str) -> MetricSchema: ...

    def engine(self, theory_id: str) -> RuleEngine: ...

    def curriculum_map(self) -> CurriculumMap: ...

    def exercise_info(self, exercise_id: str) -> ExerciseInfo: ...


@dataclass(frozen=True)
class Outcome:
    """Stages 6-8's result: the reply the student is given and how it was reached."""

    reply: str
    final_verdict: DetectorVerdict
    judge: JudgeVerdict | None
    fallback: bool
    revised: bool
    drafts: list[dict[str, Any]]


@dataclass(eq=False)
class TurnContext:
    """One turn, as far as its stages have taken it (field groups in stage order)."""

    host: TurnHost
    session: Session
    text: str  # the student's message, cleaned
    started: float  # perf_counter at the turn's start, for the audit's latency
    loaded: Any  # the theory being run (its compiled policy is ``loaded.policy``)
    schema: MetricSchema
    writer: StateWriter
    state: SessionState  # extended stage by stage; the session's only once committed
    before: dict[str, MetricValue]  # the metrics as the turn found them (the audit's deltas)
    rows: tuple[Row, ...]  # the earlier turns' metric rows, taken from the state once
    failures: list[dict[str, str]] = field(default_factory=list)
    # 1. budget
    decision: BudgetDecision = field(init=False, repr=False)
    backend: BudgetedBackend = field(init=False, repr=False)
    # 2-3. reading the message
    classification: Classification = field(init=False, repr=False)
    inference: Inference = field(init=False, repr=False)
    # trusted writes
    assessment: Assessment = field(init=False, repr=False)
    solved_now: bool = field(init=False, repr=False)
    following: ExerciseInfo | None = field(init=False, repr=False)  # offered next if solved
    goal_in_scope: str | None = field(init=False, repr=False)  # whose band set the ceiling
    # 4. contract
    prepared: Any = field(init=False, repr=False)  # the policy's prepared history (a Turn)
    policy_input: PolicyInput = field(init=False, repr=False)
    materials: bool = field(init=False, repr=False)  # the course has indexed materials (asked)
    contract: Contract = field(init=False, repr=False)
    # 5. action
    choice: Choice = field(init=False, repr=False)
    action: Any = field(init=False, repr=False)
    material: dict[str, str] = field(init=False, repr=False)  # this turn's teaching material
    said: dict[str, Any] = field(init=False, repr=False)  # what the tutor had said before
    grounding: Grounding | None = field(init=False, repr=False)  # retrieved passages
    exam_reply: str | None = field(init=False, repr=False)  # an exam turn's templated reply
    # 6-8. supervision
    outcome: Outcome = field(init=False, repr=False)

    @property
    def policy(self) -> Any:
        return self.loaded.policy

    @property
    def exercise(self) -> ExerciseInfo | None:
        return self.session.exercise

    def history(self, current: Row) -> list[Row]:
        """The policy's history argument: the earlier rows, then ``current`` (oldest first).
        The rows are shared, not copied: no stage writes into a row."""
        return [*self.rows, current]

    def explains(self) -> bool:
        return explains_now(self.contract, self.policy_input)


def explains_now(contract: Contract, policy_input: PolicyInput) -> bool:
    """The one case in which the answer may be stated: the trusted ``explain_mode`` (an
    instructor's toggle, never student text) lifted this turn to H7 (the full solution) and no
    exam is locked down. An H7 ceiling alone — a theory's start, a step — does not do it."""
    explain = dict(policy_input.trusted).get(EXPLAIN_MODE_METRIC) is True
    return explain and contract.ceiling == 7 and not contract.exam_lockdown


def goal_records(state: SessionState) -> dict[str, GoalRecord]:
    return {g: GoalRecord.from_dict(r) for g, r in state.extra.get(GOAL_RECORDS, {}).items()}


def mastery_metrics(schema: MetricSchema) -> list[str]:
    return [
        name
        for name, field_ in schema.fields.items()
        if field_.source == "trusted"
        and field_.writer is not None
        and field_.writer.kind == "mastery"
    ]


def prepare_again(policy: Any, prepared: Any, before: Row, after: Row, history: list[Row]) -> Any:
    """The policy's preparation of ``history`` (whose current row is ``after``), given its
    preparation ``prepared`` of the same history with current row ``before``: the same when no
    value changed; when only metrics no preparation reads changed, ``prepared`` with their new
    values (the history calls and computed values cannot differ: exactly what preparing again
    would give); otherwise prepared again."""
    changed = {
        name
        for name in before.keys() | after.keys()
        if name not in before
        or name not in after
        or type(before[name]) is not type(after[name])
        or before[name] != after[name]
    }
    if not changed:
        return prepared
    reads = getattr(policy, "preparation_reads", None)
    computed = getattr(policy, "computed_names", None)
    if reads is None or computed is None or changed & reads or not hasattr(prepared, "calls"):
        return policy.prepare(history)
    # A computed metric's new value is the one the preparation wrote; others are copied.
    copied = {name: after[name] for name in changed - computed if name in after}
    if not copied:
        return prepared
    return type(prepared)({**prepared.state, **copied}, prepared.calls)


def same_row(first: Row, second: Row) -> bool:
    """Whether two metric rows hold the same values of the same types (``1 == 1.0 == True``
    in Python, but a policy may read them differently)."""
    return first.keys() == second.keys() and all(
        type(value) is type(second[name]) and value == second[name] for name, value in first.items()
    )
