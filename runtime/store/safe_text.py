"""What may be stored or printed: text from outside (the student's message, the model's reply, an
HTTP error body) with what would break a store, a terminal or a secret taken out.

Runtime, the lowest layer of the text a turn handles (the store applies it to every document it
writes; the tutor to the message and the reply). Takes any text; gives it with control characters
(except tab, newline and carriage return), ANSI escape sequences and unpaired surrogates each
replaced by U+FFFD (:func:`clean_text`), and, in :func:`safe_text`, credentials removed from URLs
(:func:`redact_credentials`).

Why: the text a turn handles ends up in the audit record, in the transcript the student sees and
in the trace an instructor reads with ``pedrag audit``. A NUL cannot be stored (PostgreSQL's
JSONB refuses it, so the store refuses it everywhere) and would fail the whole turn; an unpaired
surrogate cannot be written as UTF-8 and would crash the terminal output; an ANSI escape
sequence could rewrite what the instructor's terminal shows of the audit trail. Replacing them,
rather than dropping them, keeps a visible mark that something was there. It lives with the
store, which every other runtime package may import, so the store needs nothing of the turn.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
_UNSAFE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with ANSI escape sequences, control characters (but ``\\t``, ``\\n``,
    ``\\r``) and unpaired surrogates each replaced by one U+FFFD."""
    if text.isascii() and text.isprintable():
        return text
    return _UNSAFE.sub(REPLACEMENT, _ANSI.sub(REPLACEMENT, text))


_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@:]*(?::[^\s/@]*)?@")


def redact_credentials(text: str) -> str:
    """``text`` with the user and password of every URL in it removed
    (``https://user:secret@host/v1`` -> ``https://***@host/v1``)."""
    return _URL_CREDENTIALS.sub(r"\1***@", text) if "@" in text else text


def safe_text(text: str) -> str:
    """What may be stored or printed: :func:`clean_text` of :func:`redact_credentials`."""
    return clean_text(redact_credentials(text))
