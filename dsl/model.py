"""The theory file format, version 1, as pydantic models (and curricula).

These models check *structure*: required keys, value types, unknown keys, ranges of plain
numbers. They hold conditions as text; parsing, name and type resolution happen in
`pedrag.dsl.resolve`, which has the positions needed for good diagnostics. The JSON Schema
editors use (`pedrag schema`) is generated from these models, so it cannot drift.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pedrag.kernel.ceiling import DEFAULT_START
from pedrag.kernel.code_steps import solution_step
from pedrag.kernel.misconceptions import SignalError, Signals, check_pattern
from pedrag.kernel.rungs import rung_name
from pedrag.kernel.sources import COURSE_ID_PATTERN

Identifier = Annotated[
    str, Field(pattern=r"^[a-z][a-z0-9_]*$", description="lower_snake_case identifier")
]
PythonName = Annotated[
    str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", description="a name in the learner's code")
]
RungName = Annotated[str, Field(pattern=r"^H[0-7]$", description="hint-ladder rung H0..H7")]
ConditionText = Annotated[str, Field(description="a condition in the pedrag condition language")]
# Shape only: the compiler checks the name against its catalog (with a "did you mean").
CheckName = Annotated[
    str, Field(pattern=r"^[a-z][a-z_-]*$", description="a check name, e.g. coverage-gap")
]


class _Strict(BaseModel):
    # defer_build: a model's validator is built when a file is first validated, not when this
    # module is imported. A re-check of an unchanged file reads its validated model back from
    # the check cache (`LoadedFiles`) and never validates, so it no longer pays for building
    # every model's schema (the largest part of importing the front end).
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True)


def _condition_text(value: Any) -> Any:
    # YAML reads `when: true` as a bool and `when: 1` as a number; conditions are text, and the
    # condition checker then says what is wrong with `1` in the language's own terms.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return value


class Source(_Strict):
    id: Identifier
    title: str
    locator: str | None = None
    author: str | None = None
    year: int | None = None
    document: str | None = None
    page: int | None = None


class Principle(_Strict):
    id: Identifier
    text: str
    source: Identifier | list[Identifier] | None = None


class TheoryInfo(_Strict):
    id: Identifier
    name: str
    description: str | None = None
    principles: list[Principle] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)


class Metric(_Strict):
    type: Literal["int", "float", "bool", "enum"]
    source: Literal["trusted", "classified", "inferred", "observed", "computed"]
    range: tuple[float, float] | None = None
    values: list[Identifier] | None = None
    default: float | bool | str | None = None
    description: str | None = None
    compute: ConditionText | None = None
    # Who writes a trusted metric (pedrag.kernel.sources): a named writer or an event mapping.
    writer: str | dict[str, Any] | None = None
    # `source` is the trust category here, so a metric cites its sources under `provenance`.
    provenance: Identifier | list[Identifier] | None = None
    ignore: list[CheckName] = Field(default_factory=list)

    @field_validator("range")
    @classmethod
    def _ordered_range(cls, value: tuple[float, float] | None) -> tuple[float, float] | None:
        # A field validator, so the diagnostic points at `range`, not the whole metric.
        if value is not None and not all(math.isfinite(bound) for bound in value):
            raise ValueError("range bounds must be finite numbers")  # "1e400" reads as inf
        if value is not None and value[0] > value[1]:
            raise ValueError(f"range [{value[0]:g}, {value[1]:g}] is empty: low is above high")
        return value

    @model_validator(mode="after")
    def _shape(self) -> Metric:
        if self.type in ("int", "float"):
            if self.range is None:
                raise ValueError(
                    f"{'an' if self.type == 'int' else 'a'} {self.type} metric needs `range: [low, high]`"
                )
            low, high = self.range
            if self.type == "int" and (low != int(low) or high != int(high)):
                raise ValueError("an int metric's range must have integer bounds")
            if self.values is not None:
                raise ValueError("`values` belongs to enum metrics; numeric metrics take `range`")
        elif self.type == "enum":
            if not self.values:
                raise ValueError("an enum metric needs `values: [...]` with at least one value")
            if len(set(self.values)) != len(self.values):
                raise ValueError("enum values must be distinct")
            if self.range is not None:
                raise ValueError("`range` belongs to int/float metrics; enum metrics take `values`")
        else:
            if self.range is not None or self.values is not None:
                raise ValueError("a bool metric takes neither `range` nor `values`")
        return self

    @property
    def default_value(self) -> float | int | bool | str:
        """The declared default, or the lowest value of the domain (DESIGN, format v1)."""
        if self.type == "bool":
            return bool(self.default) if self.default is not None else False
        if self.type == "enum":
            assert self.values
            return str(self.default) if self.default is not None else self.values[0]
        assert self.range is not None
        value = (
            self.default
            if isinstance(self.default, (int, float)) and not isinstance(self.default, bool)
            else self.range[0]
        )
        return int(value) if self.type == "int" else float(value)


class Action(_Strict):
    rung: RungName
    priority: Annotated[int, Field(ge=1, le=10)]
    description: str
    guidance: str | None = None
    tags: list[Identifier] = Field(default_factory=list)
    template: str | None = None
    variants: list[str] = Field(default_factory=list)
    conflicts: list[Identifier] = Field(default_factory=list)
    source: Identifier | list[Identifier] | None = None
    ignore: list[CheckName] = Field(default_factory=list)


class Rule(_Strict):
    id: Identifier
    when: ConditionText
    then: Identifier
    weight: Annotated[float, Field(gt=0)] = 1
    priority: Annotated[int, Field(ge=1, le=10)] | None = None
    description: str | None = None
    source: Identifier | list[Identifier] | None = None
    ignore: list[CheckName] = Field(default_factory=list)

    _normalise_when = field_validator("when", mode="before")(_condition_text)


class CeilingStep(_Strict):
    when: ConditionText
    at_most: RungName | None = None
    at_least: RungName | None = None
    set: RungName | None = None

    _normalise_when = field_validator("when", mode="before")(_condition_text)

    @model_validator(mode="after")
    def _one_effect(self) -> CeilingStep:
        given = [k for k in ("at_most", "at_least", "set") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("a ceiling step takes exactly one of `at_most`, `at_least`, `set`")
        return self

    @property
    def effect(self) -> tuple[str, str]:
        for key in ("at_most", "at_least", "set"):
            value = getattr(self, key)
            if value is not None:
                return key, value
        raise AssertionError("validated")  # pragma: no cover


DEFAULT_CEILING_START = rung_name(DEFAULT_START)
"""The ceiling of a theory that writes none: approach in words, no code, never the solution
(the `missing-ceiling` finding says so). Low, because a ceiling nobody chose must not be H7."""


class Ceiling(_Strict):
    start: RungName = DEFAULT_CEILING_START
    steps: list[CeilingStep] = Field(default_factory=list)


class Invariant(_Strict):
    id: Identifier
    never: ConditionText | None = None
    always: ConditionText | None = None
    description: str | None = None

    _normalise_never = field_validator("never", "always", mode="before")(_condition_text)

    @model_validator(mode="after")
    def _one_kind(self) -> Invariant:
        if (self.never is None) == (self.always is None):
            raise ValueError("an invariant takes exactly one of `never` or `always`")
        return self


class Switch(_Strict):
    when: ConditionText
    to: Identifier

    _normalise_when = field_validator("when", mode="before")(_condition_text)


class Adaptation(_Strict):
    escalate: dict[Identifier, Identifier] = Field(default_factory=dict)
    alternatives: dict[Identifier, list[Identifier]] = Field(default_factory=dict)
    switch: list[Switch] = Field(default_factory=list)


class Theory(_Strict):
    """A theory file (DESIGN: "Theory file format, version 1")."""

    pedrag: Literal[1]
    theory: TheoryInfo
    selection: Literal["weighted", "priority"] = "weighted"
    metrics: dict[Identifier, Metric]
    actions: Annotated[dict[Identifier, Action], Field(min_length=1)]
    rules: list[Rule]
    ceiling: Ceiling = Field(default_factory=Ceiling)
    invariants: list[Invariant] = Field(default_factory=list)
    monitors: dict[Identifier, ConditionText] = Field(default_factory=dict)
    adaptation: Adaptation = Field(default_factory=Adaptation)
    ignore: list[CheckName] = Field(default_factory=list)
    kind: Literal["theory"] = "theory"

    @field_validator("monitors", mode="before")
    @classmethod
    def _monitor_text(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: _condition_text(v) for k, v in value.items()}
        return value


Probability = Annotated[float, Field(ge=0, le=1)]


class KnowledgeTracing(_Strict):
    """Bayesian Knowledge Tracing parameters of a goal (Corbett & Anderson 1995): the chance
    the goal is known before any evidence, of learning it at each graded answer, of a wrong
    answer although known (slip) and of a right one although not known (guess)."""

    prior: Probability = 0.2
    learn: Probability = 0.15
    slip: Annotated[float, Field(ge=0, lt=0.5)] = 0.1
    guess: Annotated[float, Field(ge=0, lt=0.5)] = 0.2


class Goal(_Strict):
    id: Identifier
    domain: str
    topic: Identifier
    description: str | None = None
    requires: list[Identifier] = Field(default_factory=list)
    topic_name: str | None = None
    concept: str | None = None
    mastery_threshold: Probability = 0.8
    knowledge_tracing: KnowledgeTracing = Field(default_factory=KnowledgeTracing)


class CodeTest(_Strict):
    """One test of a programming exercise: a Python expression calling the learner's code and
    the Python literal it must return."""

    call: str
    expect: str
    public: bool = Field(
        default=False,
        description="a public example: feedback may quote its call and result; tests are hidden "
        "by default and feedback says only how many passed",
    )

    @field_validator("expect", mode="before")
    @classmethod
    def _literal(cls, value: Any) -> Any:
        import ast as python_ast

        value = _answer_text(value)
        if isinstance(value, str):
            try:
                python_ast.literal_eval(value)
            except (ValueError, SyntaxError):
                raise ValueError(f"`expect` must be a Python literal, not {value!r}") from None
        return value


def _answer_text(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value


class WorkedExample(_Strict):
    """A parallel problem worked through step by step (never the exercise itself)."""

    problem: str
    steps: list[str] = Field(min_length=1)


class ParallelItem(_Strict):
    """A similar problem to practise on, with its own answer."""

    prompt: str
    answer: str

    _normalise_answer = field_validator("answer", mode="before")(_answer_text)


class Misconception(_Strict):
    """A common misconception: its correction as the learner is told it, and the wrong answers
    or message patterns that signal it. A bare string is the text alone (no signals)."""

    text: str
    answers: list[str] = Field(default_factory=list)
    patterns: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _bare_text(cls, value: Any) -> Any:
        return {"text": value} if isinstance(value, str) else value

    @field_validator("answers", mode="before")
    @classmethod
    def _answer_texts(cls, value: Any) -> Any:
        return [_answer_text(v) for v in value] if isinstance(value, list) else value

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, value: list[str]) -> list[str]:
        try:
            return [check_pattern(pattern) for pattern in value]
        except SignalError as error:
            raise ValueError(str(error)) from None

    @property
    def signals(self) -> Signals:
        return Signals(tuple(self.answers), tuple(self.patterns))

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> Any:
        # The loader takes a bare string as the text alone; so does the editors' schema.
        mapping = handler(core_schema)
        return {"anyOf": [{"type": "string"}, mapping]}


class Exercise(_Strict):
    id: Identifier
    goal: Identifier
    prompt: str
    answer: str
    accept: list[str] = Field(default_factory=list)
    solution: str | None = None
    language: str | None = None
    exam: bool = False
    submissions: int = Field(
        default=1,
        ge=1,
        le=20,
        description="an exam's graded submissions; the last one is scored when they are used up, "
        "with no correctness feedback before",
    )
    tolerance: float | None = Field(
        default=None,
        ge=0,
        description="a numeric answer is correct within this absolute difference (default: "
        "exactly equal, so 0.38 is not 0.375)",
    )
    units: list[str] = Field(
        default_factory=list,
        description="units a numeric answer may carry (`cm`, `centimetres`); an answer in "
        "another unit is wrong",
    )
    tests: list[CodeTest] = Field(default_factory=list)
    forbid: list[PythonName] = Field(
        default_factory=list,
        description="names the learner's code must not use (an exercise that says 'without "
        "calling sum()': `forbid: [sum]`); code that uses one is graded wrong, whatever its "
        "tests say",
    )
    require: list[Literal["for", "while", "loop"]] = Field(
        default_factory=list,
        description="loops the learner's code must contain (an exercise that says 'using a "
        "for loop': `require: [for]`; `loop` is a for or a while loop): a for loop whose "
        "variable its body reads, a while loop whose body changes what its condition reads "
        "(or `while True` with a `break`); code without one is graded wrong, whatever its "
        "tests say",
    )
    practises: list[Identifier] = Field(default_factory=list)
    hints: list[str] = Field(default_factory=list)
    hint_code: list[str] = Field(default_factory=list)
    restatement: str | None = None
    worked_example: WorkedExample | None = None
    parallel: ParallelItem | None = None
    misconceptions: list[Misconception] = Field(default_factory=list)
    outline: str | None = None

    _normalise_answer = field_validator("answer", mode="before")(_answer_text)

    @field_validator("accept", mode="before")
    @classmethod
    def _accept_text(cls, value: Any) -> Any:
        return [_answer_text(v) for v in value] if isinstance(value, list) else value

    @model_validator(mode="after")
    def _hint_code_in_solution(self) -> Exercise:
        # a step the solution does not write could never be told done, or be told done wrongly
        if len(self.hint_code) > len(self.hints):
            raise ValueError(
                f"`hint_code` has {len(self.hint_code)} statements for {len(self.hints)} hints"
            )
        for index, text in enumerate(self.hint_code):
            if text and solution_step(text, self.solution or "") is None:
                raise ValueError(
                    f"`hint_code` {index + 1} ({text!r}) is not one statement of the "
                    "exercise's `solution`"
                )
        return self


class Curriculum(_Strict):
    """A curriculum file: goals with prerequisites and exercises with hidden answers."""

    pedrag: Literal[1]
    kind: Literal["curriculum"]
    id: Identifier
    name: str | None = None
    course: Annotated[str, Field(pattern=COURSE_ID_PATTERN)] | None = Field(
        default=None,
        description="the course whose indexed materials (`pedrag index --course ID`) ground "
        "the tutor's answers on this curriculum's exercises",
    )
    goals: list[Goal]
    exercises: list[Exercise] = Field(default_factory=list)
    ignore: list[CheckName] = Field(default_factory=list)
