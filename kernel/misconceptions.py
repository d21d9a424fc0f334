"""When a learner's message signals a curriculum misconception (DESIGN, "Learners, grading and
mastery": `misconceptions:` with the answers or patterns that signal them).

Kernel, stdlib only. Takes a misconception's signals — wrong answers (matched as whole words or
numbers, case and spacing ignored) and patterns (regular expressions, case-insensitive) — and a
text; gives whether the text signals it. One definition for the compiler's
`misconception-matches-answer` check (a signal that the right answer itself sets off is useless,
and would name a misconception to a learner who is right) and the runtime's diagnosis of a
learner's message before any probing (issue 27: "Diagnosis before probing").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pedrag.kernel.errors import PedragError


class SignalError(PedragError, ValueError):
    """A pattern that is not a valid regular expression."""


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as error:
        raise SignalError(f"`{pattern}` is not a regular expression: {error}") from None


@functools.lru_cache(maxsize=1024)
def _whole(answer: str) -> re.Pattern[str]:
    words = r"\s+".join(re.escape(word) for word in answer.split())
    return re.compile(rf"(?<![\w.]){words}(?![\w]|\.\d)", re.IGNORECASE)


def check_pattern(pattern: str) -> str:
    """``pattern`` when it compiles; else :class:`SignalError` with the reason."""
    _compiled(pattern)
    return pattern


@dataclass(frozen=True)
class Signals:
    """What signals one misconception: wrong answers and message patterns."""

    answers: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.answers or self.patterns)

    def matched_by(self, text: str, *, answers: bool = True) -> str | None:
        """The signal ``text`` sets off (an answer or a pattern, as written), or None.
        ``answers=False``: the patterns alone, for a text that is no answer (a demand for the
        answer: "I don't have time, what's the answer?" does not answer "have")."""
        for answer in self.answers if answers else ():
            if answer.strip() and _whole(answer.strip()).search(text):
                return answer
        for pattern in self.patterns:
            if _compiled(pattern).search(text):
                return pattern
        return None


def first_signalled(signals: Sequence[Signals], text: str, *, answers: bool = True) -> int | None:
    """The index of the first misconception ``text`` signals, or None (``answers``: as in
    :meth:`Signals.matched_by`)."""
    for index, item in enumerate(signals):
        if item.matched_by(text, answers=answers) is not None:
            return index
    return None
