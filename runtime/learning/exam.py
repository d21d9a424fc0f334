"""Exams that fail closed (seed 2, §3.5): a declared number of submissions, no correctness
feedback until the end, the pass from the grader's score, replies from templates only.

Runtime stage 2 (after the grader) for an exercise marked ``exam: true``. Takes the exam's
record (``state.extra[EXAM]``: submissions used, over or not, passed or not), the grade of this
message and the exercise's declared ``submissions:``; gives the new record, whether this
message was the last submission (so its verdict is written as the exam's score), and the reply:
one of the templates below, never a model's text — the actor is not called while an exam is
active, so no model output can confirm, hint at or grade an answer.

A submission is a message the grader reads as an answer (``correct``, ``wrong``) or code it
could not run (``error``: counted, and scored as not passed). The last submission is the score.
A learner who says they are done ("I'm done", "end the exam": :func:`asks_to_end`) ends the
exam there (:func:`end_exam`): the latest submission is the score, none is not passed, and the
reply is the one result line, as when the submissions run out. An instructor's end (the
``ending`` mark, set between turns) ends it the same way at the learner's next message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

EXAM = "exam"  # state.extra key: the exam's record

RECORDED = (
    "Answer recorded (submission {used} of {allowed}). You may send a revised answer; the "
    "result comes when the exam ends."
)
WAITING = (
    "This is an exam, so I can't help with it or comment on answers. Send your answer when "
    "you are ready ({left} of {allowed} submissions left)."
)
# The same hold said in other words on later turns (issue 27: no reply twice in a session);
# none carries help, and every one names the submissions left.
_HOLD_OPENINGS = (
    "This is an exam, so I can't help with it or comment on answers.",
    "During the exam I can't give hints or say whether an answer is right.",
    "I have to stay quiet on the content while the exam runs.",
    "No help during the exam, I'm afraid: that is how exams work here.",
    "The exam is still on, so I can't discuss the question.",
)
_HOLD_CLOSINGS = (
    "Send your answer when you are ready ({left} of {allowed} submissions left).",
    "When you have an answer, send it ({left} of {allowed} submissions left).",
    "Take your time, then send your answer ({left} of {allowed} submissions left).",
)


def waiting_line(held: int, left: int, allowed: int) -> str:
    """The hold line for the ``held``-th message that was no submission (0 first)."""
    if held == 0:
        return WAITING.format(left=left, allowed=allowed)
    opening = _HOLD_OPENINGS[held % len(_HOLD_OPENINGS)]
    closing = _HOLD_CLOSINGS[(held // len(_HOLD_OPENINGS)) % len(_HOLD_CLOSINGS)]
    return f"{opening} {closing.format(left=left, allowed=allowed)}"


PASSED = "The exam is over: your answer was correct. You passed."
FAILED = "The exam is over: your answer was not correct, so this exam is not passed."
NO_ANSWER = "The exam is over: no answer was submitted, so this exam is not passed."

# The whole message says the learner is done with the exam, and nothing else (an answer with
# it, "72, I'm done", is a submission as usual; the next "I'm done" ends the exam).
_ENDING = re.compile(
    r"(?:(?:ok(?:ay)?|so|right)[,.!]?\s+)?"
    r"(?:(?:i[’']?m|i am)\s+(?:done|finished)(?:\s+with\s+(?:the|this|my)\s+exam)?"
    r"|(?:please\s+)?(?:end|finish|close|submit)\s+(?:the|this|my)\s+exam(?:\s+now)?"
    r"|that[’']?s\s+(?:it|all)"
    r"|done)"
    r"(?:[,.!]?\s*(?:please|thanks|thank\s+you))?\s*[.!]*",
    re.IGNORECASE,
)


def asks_to_end(message: str) -> bool:
    """Whether the learner's whole message asks to end the exam now."""
    return _ENDING.fullmatch(message.strip()) is not None


@dataclass(frozen=True)
class ExamRecord:
    used: int = 0
    over: bool = False
    passed: bool = False
    held: int = 0  # messages answered with the hold line so far
    last: str = ""  # the latest submission's verdict, kept unsaid: the score if the exam ends
    ending: bool = False  # an instructor ended the exam: the learner's next message ends it

    def to_dict(self) -> dict[str, Any]:
        return {
            "used": self.used,
            "over": self.over,
            "passed": self.passed,
            "held": self.held,
            "last": self.last,
            "ending": self.ending,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ExamRecord:
        if not data:
            return cls()
        return cls(
            int(data.get("used", 0)),
            bool(data.get("over")),
            bool(data.get("passed")),
            int(data.get("held", 0)),
            str(data.get("last", "")),
            bool(data.get("ending")),
        )


@dataclass(frozen=True)
class ExamStep:
    record: ExamRecord
    submitted: bool  # this message was a submission
    final: bool  # ... and the last one: its verdict is the exam's score
    reply: str


def exam_step(record: ExamRecord, verdict: str, allowed: int) -> ExamStep:
    """The exam after one message graded ``verdict`` ("correct", "wrong", "error", "none")."""
    if record.over:
        return ExamStep(record, False, False, result_line(record))
    if verdict not in ("correct", "wrong", "error"):
        left = max(allowed - record.used, 0)
        held = ExamRecord(record.used, held=record.held + 1, last=record.last)
        return ExamStep(held, False, False, waiting_line(record.held, left, allowed))
    used = record.used + 1
    if used < allowed:
        new = ExamRecord(used, held=record.held, last=verdict)
        return ExamStep(new, True, False, RECORDED.format(used=used, allowed=allowed))
    new = ExamRecord(used, over=True, passed=verdict == "correct", last=verdict)
    return ExamStep(new, True, True, result_line(new))


def end_exam(record: ExamRecord) -> ExamStep:
    """The exam ended before its submissions ran out: the latest submission is the score."""
    if record.over:
        return ExamStep(record, False, False, result_line(record))
    new = ExamRecord(
        record.used, over=True, passed=record.last == "correct", held=record.held, last=record.last
    )
    return ExamStep(new, False, True, result_line(new))


def result_line(record: ExamRecord) -> str:
    if record.passed:
        return PASSED
    return FAILED if record.used else NO_ANSWER
