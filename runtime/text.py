"""Text crossing into the runtime: the student's message and the model's reply, made safe to
store, print and check.

Runtime, the turn's boundary. Takes any ``str``; gives the same text with control characters
(except tab, newline and carriage return) and unpaired surrogates replaced by U+FFFD.

Why: the text a turn handles ends up in the audit record, in the transcript the student sees and
in the trace an instructor reads with ``pedrag audit``. A NUL cannot be stored (PostgreSQL's
JSONB refuses it, so the store refuses it everywhere) and would fail the whole turn; an unpaired
surrogate (from a bad decoder, or a JSON ``"\\ud800"`` escape in a model's reply) cannot be
written as UTF-8 and would crash the terminal output; an ANSI escape sequence from a student
could rewrite what the instructor's terminal shows of the audit trail. Replacing them, rather
than dropping them, keeps a visible mark that something was there.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"

_UNSAFE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with control characters (but ``\\t``, ``\\n``, ``\\r``) and unpaired
    surrogates replaced by U+FFFD."""
    return _UNSAFE.sub(REPLACEMENT, text)
