"""Metric sources, the trust rule, and who writes each metric (DESIGN, "Writers").

Every metric has exactly one kind of writer. The source names it for four of the five:
``classified`` by the pre-classifier, ``inferred`` by the context analyzer, ``observed`` by the
response monitor, ``computed`` by its history function. A ``trusted`` metric is written by the
system on named **runtime events**, declared with the metric's ``writer:`` (or, for the
conventional names below, by default). A condition that reads a metric nothing writes is the
``unwritten-metric`` finding: no real session can reach the states it needs.

Writers of trusted metrics, as a theory file spells them::

    writer: instructor                 # bool: the instructor API / an exam exercise sets it
    writer: conduct                    # bool: set after repeated hostile turns, cleared
                                       # after as many calm turns in a row
    writer: mastery                    # float in [0, 1]: BKT estimate of the current goal
    writer: highest_rung               # int in [0, 7]: the highest rung given on the exercise
    writer: {count: wrong_answer}      # int: counts an event (reset when an exercise starts)
    writer: {set_on: correct_answer, clear_on: wrong_answer}      # bool
    writer: {advance: {review: turn, presentation: [turn, correct_answer]}}
                                       # enum: on one of the events, move from that value to
                                       # the next one (the last value stays)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pedrag.kernel.errors import PedragError

SOURCES = ("trusted", "classified", "inferred", "observed", "computed")
CEILING_SOURCES = ("trusted", "classified")  # the trust rule: ceiling steps read only these
STAGE_WRITERS = {
    "classified": "the pre-classifier",
    "inferred": "the context analyzer",
    "observed": "the response monitor",
    "computed": "its history function",
}

# What the response monitor writes (seed 1, stage 9): the observed metrics it derives from the
# tutor's own replies, by name and type. The monitor computes exactly these, and an observed
# metric of any other name is written by nothing, so it stays at its default in every session
# (`unwritten-metric`, a warning). One table, read by the runtime and the compiler alike.
OBSERVED_WRITES: dict[str, str] = {
    "same_action_streak": "int",  # turns in a row the same action was taken (1 = new action)
    "hints_in_row": "int",  # replies in a row that gave a hint
    "answer_revealed": "bool",  # the detector found the reply revealing (after the guard)
    "questions_asked": "int",  # replies so far that asked the learner a question
    "told_last_turn": "bool",  # the previous reply explained (H4+ or `explain`, not affect support)
    "explained_last_turn": "bool",  # the same fingerprint, as direct instruction names it
    "reflection_prompted": "bool",  # the previous reply was a reflection prompt (its tags)
}

# What the offline context analyzer's heuristics estimate from one message (seed 1, stage 3;
# `heuristic_inference` in runtime/turn/analyzer.py), by name and type. A model-backed analyzer
# estimates every inferred metric a theory declares; offline, an inferred metric of another name
# keeps its default. Pinned against the analyzer by tests/runtime/test_writers.py.
HEURISTIC_INFERENCES: dict[str, str] = {
    "frustration": "float",
    "hedging": "float",
    "confidence": "float",
    "engagement": "float",
    "self_monitoring": "float",
    "misconception": "bool",
    "reasoning_quality": "enum",
    "affect": "enum",
}
# The offline fallback selector's reading of a state (`offline_select` in
# runtime/policy/rule_engine.py): an estimate of this inferred metric at or above the threshold
# calls for an action tagged `affect_support`. The exam and adversarial intents it reads are the
# ceiling's exam-lockdown step metric and INTENT_METRIC below.
DISTRESS_METRIC = "frustration"
DISTRESS_THRESHOLD = 0.7

# Runtime events a trusted writer can name. `action:<name>` (the tutor took that action this
# turn) is an event too, for every action of the theory.
EVENTS = {
    "turn": "a tutor turn completed",
    "exercise_start": "an exercise started (counts and flags start again; mastery is the new goal's)",
    "answer_graded": "the grader graded the learner's answer (right or wrong)",
    "correct_answer": "the grader found the learner's answer correct",
    "wrong_answer": "the grader found the learner's answer wrong",
    "new_wrong_answer": "the grader found a wrong answer the learner had not given before",
    "worked_wrong_answer": "a new wrong answer whose working checks out (a step that evaluates, "
    "code that ran; not a bare or pseudo-justified guess)",
    "exam_submission": "an exam answer recorded before the last submission (no verdict yet)",
    "grader_error": "the learner's code could not be run (fails closed: neither right nor wrong)",
    "hostile_turn": "the pre-classifier classified the message as hostile",
    "calm_turn": "the pre-classifier did not classify the message as hostile",
}
ACTION_EVENT_PREFIX = "action:"
NAMED_WRITERS = {
    "instructor": ("bool", "the instructor API, or an exam exercise at session start"),
    "conduct": (
        "bool",
        "the conduct check: set after repeated hostile turns, cleared after calm turns in a row",
    ),
    "mastery": ("float", "the learner's BKT mastery of the current goal, from graded answers"),
    # Contingent help (Wood & Wood 1996) needs to know how much help was already given: a
    # learner who asks for help after a leading hint must not get the question restated.
    "highest_rung": (
        "int",
        "the highest rung of the tutor's replies on this exercise (0 when it starts), range [0, 7]",
    ),
}
# Trusted metrics with a conventional meaning are written by default, so a theory need not
# repeat it; any other trusted metric names its writer or is reported as unwritten.
DEFAULT_WRITERS: dict[str, Any] = {
    "exam_active": "instructor",
    "explain_mode": "instructor",
    "conduct_restricted": "conduct",
    "mastery": "mastery",
    # distinct wrong answers that show their work: guessing is not trying (Baker et al. 2004)
    "attempts": {"count": "worked_wrong_answer"},
    "last_answer_correct": {"set_on": "correct_answer", "clear_on": "wrong_answer"},
    "solved": {"set_on": "correct_answer"},
}

# The classified signals the policy core reads for the contract's risks (seed 2, §3.2):
# the intent label and the code-attempt flag, with the intents that make a turn adversarial.
INTENT_METRIC = "intent"
# The instructor's toggle under which (at H7, outside an exam) the detector lets the answer out.
EXPLAIN_MODE_METRIC = "explain_mode"
CODE_ATTEMPT_METRIC = "code_attempt"
QUESTION_INTENT = "question"
# The label the trusted writes give a message the grader graded, whatever the classifier said
# (`pedrag.runtime.turn.trusted_writes.read_as_attempt`).
ATTEMPT_INTENT = "attempt"
ADVERSARIAL_INTENTS = frozenset({"solution_demand", "injection", "exam_leak", "hostile"})

# Grounding (DESIGN, "Grounding"; seed 2, §3.2): the classified signal that the learner asked
# a concept question (the pre-classifier's; a theory may declare it as a classified bool), and
# the action tag by which an action declares that it points to a concept or course source.
# Either makes the turn grounded when the session's course has indexed materials.
CONCEPT_QUESTION_METRIC = "concept_question"
# What the learner asks of the tutor beyond the exercise (issue 27), a classified enum a theory
# may declare: the question in other words, help that is not the answer, a concept question
# (the same signal as CONCEPT_QUESTION_METRIC), an explanation of their own reasoning, an
# apology, a worked example. A demand for the answer is never a request for help.
REQUEST_METRIC = "request"
REQUESTS = ("none", "restate", "help", "concept", "explanation", "apology", "example")
GROUNDED_TAG = "grounded"
GROUNDING_MIN_RUNG = 2  # H2, "point to a concept or source": below it nothing is cited
COURSE_ID_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,127}$"  # a curriculum's `course:`, `pedrag index`


def may_read_in_ceiling(source: str) -> bool:
    return source in CEILING_SOURCES


@dataclass(frozen=True)
class Writer:
    """A trusted metric's writer, normalised: ``kind`` is a named writer, ``count``,
    ``set_on`` or ``advance``; ``events`` the events it listens to."""

    kind: str
    events: tuple[str, ...] = ()
    clear_on: tuple[str, ...] = ()
    advance: tuple[tuple[str, str], ...] = ()  # (from value, event)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "events": list(self.events),
            "clear_on": list(self.clear_on),
            "advance": [list(pair) for pair in self.advance],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Writer:
        return cls(
            str(data["kind"]),
            tuple(data.get("events", ())),
            tuple(data.get("clear_on", ())),
            tuple((str(a), str(b)) for a, b in data.get("advance", ())),
        )


class WriterError(PedragError, ValueError):
    """A `writer:` that does not fit its metric; the message is for the designer."""


def _event(name: Any, actions: frozenset[str]) -> str:
    if not isinstance(name, str):
        raise WriterError(f"an event is a name, not {name!r}")
    if name in EVENTS:
        return name
    if name.startswith(ACTION_EVENT_PREFIX):
        action = name[len(ACTION_EVENT_PREFIX) :]
        if action in actions:
            return name
        raise WriterError(f"`{name}`: the theory has no action `{action}`")
    known = ", ".join([*EVENTS, ACTION_EVENT_PREFIX + "<action>"])
    raise WriterError(f"unknown event `{name}` (events: {known})")


def _events(value: Any, actions: frozenset[str]) -> tuple[str, ...]:
    items = value if isinstance(value, list | tuple) else [value]
    return tuple(_event(item, actions) for item in items)


def _a(metric_type: str) -> str:
    """The type with its article, as a designer reads it: "an int", "a float"."""
    return ("an " if metric_type[:1] in "aeiou" else "a ") + metric_type


def parse_writer(
    spec: Any, metric_type: str, values: tuple[str, ...], actions: frozenset[str]
) -> Writer:
    """A trusted metric's declared ``writer:``, checked against its type; raises WriterError."""
    if isinstance(spec, str):
        if spec not in NAMED_WRITERS:
            raise WriterError(
                f"unknown writer `{spec}` (named writers: {', '.join(NAMED_WRITERS)}; "
                "or {count: EVENT}, {set_on: EVENT}, {advance: {VALUE: EVENT}})"
            )
        needed = NAMED_WRITERS[spec][0]
        if metric_type != needed:
            raise WriterError(f"writer `{spec}` writes {_a(needed)} metric, not {_a(metric_type)}")
        return Writer(spec)
    if not isinstance(spec, Mapping) or len(spec) == 0:
        raise WriterError("a writer is a name or a mapping such as {count: wrong_answer}")
    keys = set(spec)
    if keys == {"count"}:
        if metric_type != "int":
            raise WriterError(f"`count` writes an int metric, not {_a(metric_type)}")
        return Writer("count", _events(spec["count"], actions))
    if keys <= {"set_on", "clear_on"} and "set_on" in keys:
        if metric_type != "bool":
            raise WriterError(f"`set_on` writes a bool metric, not {_a(metric_type)}")
        return Writer(
            "set_on",
            _events(spec["set_on"], actions),
            _events(spec.get("clear_on", []), actions),
        )
    if keys == {"advance"}:
        if metric_type != "enum":
            raise WriterError(f"`advance` writes an enum metric, not {_a(metric_type)}")
        steps = spec["advance"]
        if not isinstance(steps, Mapping) or not steps:
            raise WriterError("`advance` maps a value to the event that moves it on")
        pairs: list[tuple[str, str]] = []
        for value, events in steps.items():
            if value not in values:
                raise WriterError(f"`{value}` is not a value of this enum ({', '.join(values)})")
            if value == values[-1]:
                raise WriterError(f"`{value}` is the last value: there is nothing to advance to")
            pairs.extend((str(value), event) for event in _events(events, actions))
        return Writer("advance", advance=tuple(pairs))
    raise WriterError(
        f"unknown writer keys {sorted(map(str, keys))} "
        "(use {count: EVENT}, {set_on: EVENT, clear_on: EVENT} or {advance: {VALUE: EVENT}})"
    )


def writes_observed(name: str, metric_type: str) -> bool:
    """Whether the response monitor writes an observed metric of this name and type."""
    return OBSERVED_WRITES.get(name) == metric_type


def is_written(name: str, source: str, metric_type: str, has_writer: bool) -> bool:
    """Whether some stage or runtime event writes this metric in a real session: a trusted
    metric only through its declared (or default) writer, an observed one only if the response
    monitor writes that name; the other sources' stages write whatever the theory declares.
    A metric nothing writes keeps its default in every session (`unwritten-metric`)."""
    if source == "trusted":
        return has_writer
    if source == "observed":
        return writes_observed(name, metric_type)
    return True


def default_writer(name: str) -> Any | None:
    """The writer a trusted metric has when it declares none, or None."""
    return DEFAULT_WRITERS.get(name)
