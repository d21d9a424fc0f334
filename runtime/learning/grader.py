"""The grader: every student message, graded against the current exercise.

Runtime stage 2, beside the pre-classifier. Takes the student's message and the exercise
(its hidden answer, `accept:` spellings, and for programming exercises its `tests:`); gives a
:class:`Grade`: ``correct``, ``wrong`` (with the one candidate the message commits to), ``none``
(the message commits to no answer: a question, a list of candidates, a remark) or ``error``
(code that could not be run). The verdict is trusted state: it is written through the declared
writers (``correct_answer``, ``wrong_answer``, ``new_wrong_answer`` events), never inferred by a
model, and its facts go to the generator as facts to narrate (seed 2, §3.5; seed 1 passes code
execution results to its generator the same way).

Answer equivalence is the detector's own reading (`detect_answer.student_states_answer`: any
spelling of a number, `accept:` spellings, one committed candidate), so "what the learner said"
and "what the tutor may not say" can never disagree.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pedrag.runtime.detect.answer import (
    find_numbers,
    in_working,
    parse_number,
    student_states_answer,
    working_spans,
)
from pedrag.runtime.detect.detector import AnswerKey
from pedrag.runtime.learning.code_runner import RunResult, run_tests

Verdict = Literal["correct", "wrong", "none", "error"]
_FENCED = re.compile(r"```[a-zA-Z0-9_+-]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_CODE_LINE = re.compile(r"^\s*(def |class |return\b|for |while |if |import |from |\w+\s*=)")
_QUESTION = re.compile(r"\?\s*$")
MAX_TEXT_CANDIDATE_WORDS = 4
# Work shown beside an answer: an operation between numbers, or a reasoning cue. A bare guess
# ("I think it's 3") shows none: counting those as attempts is what lets a learner game the
# ceiling by guessing (Baker et al. 2004).
_WORK = re.compile(
    r"\d\s*[-+*/x×÷=]\s*\d|\b(because|since|so|then|first|next|therefore|means|times|plus|minus|"
    r"divided|multipl\w*|add\w*|subtract\w*|carry|borrow|step)\b",
    re.IGNORECASE,
)


def shows_work(message: str) -> bool:
    """Whether a message shows how its answer was reached (not a bare guess)."""
    return bool(_WORK.search(message)) or learner_code(message) is not None


@dataclass(frozen=True)
class Grade:
    verdict: Verdict
    candidate: str | None = None  # the answer graded, normalised (a code hash for code)
    facts: tuple[str, ...] = ()  # for the generation prompt, as facts to narrate
    run: RunResult | None = None

    @property
    def graded(self) -> bool:
        return self.verdict in ("correct", "wrong")


def learner_code(message: str) -> str | None:
    """The code in a message: a fenced block, or the run of lines that read as code."""
    fenced = _FENCED.search(message)
    if fenced:
        return fenced.group(1).strip("\n") or None
    lines = message.splitlines()
    if any(_CODE_LINE.match(line) for line in lines) and any(
        "def " in line or "return" in line for line in lines
    ):
        return message.strip("\n")
    return None


def grade(
    message: str,
    key: AnswerKey | None,
    *,
    tests: Sequence[tuple[str, str]] = (),
    context: str | None = None,
    intent: str | None = None,
) -> Grade:
    """The grade of one student message. Never raises; code that cannot run is ``error``."""
    if key is None:
        return Grade("none")
    code = learner_code(message) if tests else None
    if code is not None:
        return _grade_code(code, tests)
    if student_states_answer(message, key, context=context):
        return Grade(
            "correct",
            _normal(key.answer),
            (f"the learner's answer is correct ({key.answer} or equivalent)",),
        )
    candidate = _candidate(message, key, context=context, intent=intent)
    if candidate is None:
        return Grade("none")
    return Grade("wrong", candidate, (f"the learner's answer {candidate!r} is not correct",))


def _grade_code(code: str, tests: Sequence[tuple[str, str]]) -> Grade:
    result = run_tests(code, tests)
    digest = hashlib.sha256(" ".join(code.split()).encode("utf-8")).hexdigest()[:12]
    if result.error is not None:
        return Grade(
            "error",
            f"code:{digest}",
            (f"the learner's code could not be graded: {result.error}",),
            result,
        )
    facts = tuple(
        f"test {o.call} {'passed' if o.passed else f'failed: got {o.got}, expected {o.expect}'}"
        for o in result.outcomes
    )
    return Grade("correct" if result.passed else "wrong", f"code:{digest}", facts, result)


def _candidate(
    message: str, key: AnswerKey, *, context: str | None, intent: str | None
) -> str | None:
    """The one answer a message commits to, if any: for a numeric answer, the single number
    that is not a given of the exercise (a list, a range or a question with several numbers
    commits to none); for a text answer, a short statement the classifier calls an attempt."""
    givens = [m.value for m in find_numbers("\n".join(p for p in (key.prompt, context) if p))]
    answer = parse_number(key.answer)
    if answer is not None:
        # The values of the worked solution's own steps (7 x 4, 28, ...) are steps the learner
        # is taking, not rival answers: "so 7 times 4 first?" or "that's 28" is not wrong.
        givens += [m.value for m in find_numbers(key.solution or "") if m.value != answer.value]
        workings = working_spans(message)
        values = {
            m.value
            for m in find_numbers(message)
            if m.value not in givens and not in_working(m, workings)
        }
        if len(values) != 1:
            return None
        value = values.pop()
        return (
            str(value.numerator)
            if value.denominator == 1
            else f"{value.numerator}/{value.denominator}"
        )
    words = message.split()
    if (
        intent == "attempt"
        and 0 < len(words) <= MAX_TEXT_CANDIDATE_WORDS
        and not _QUESTION.search(message)
        and not any(ch.isdigit() for ch in message)  # numbers do not answer a text question
    ):
        return _normal(message)
    return None


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s./-]", " ", text.lower()).split())
