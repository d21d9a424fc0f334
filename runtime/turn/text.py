"""Text crossing into the runtime: the student's message and the model's reply, made safe to
store, print and check.

Runtime, the turn's boundary. Two readings of one text:

- :func:`clean_text` — for storing and printing: control characters (except tab, newline and
  carriage return), ANSI escape sequences and unpaired surrogates replaced by U+FFFD;
  :func:`safe_text` also removes credentials from URLs (:func:`redact_credentials`).
- :func:`detection_view` — for the answer detector: the text as a reader sees it, with a map
  back to the original offsets; the rules live in one place,
  :mod:`pedrag.runtime.detect.canonical`.

Why: the text a turn handles ends up in the audit record, in the transcript the student sees and
in the trace an instructor reads with ``pedrag audit``. A NUL cannot be stored (PostgreSQL's
JSONB refuses it, so the store refuses it everywhere) and would fail the whole turn; an unpaired
surrogate cannot be written as UTF-8 and would crash the terminal output; an ANSI escape
sequence could rewrite what the instructor's terminal shows of the audit trail. Replacing them,
rather than dropping them, keeps a visible mark that something was there. And a detector that
reads code points rather than what a reader sees is beaten by one inserted zero-width space.
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


# --- the detector's view ----------------------------------------------------------------------


def detection_view(text: str) -> tuple[str, list[int]]:
    """``text`` as a reader sees it, with, for each character of the view, the index in
    ``text`` it came from (and ``len(text)`` at the end): the detector's canonical view
    (:func:`pedrag.runtime.detect.canonical.canonical_view`, where the rules live)."""
    from pedrag.runtime.detect.canonical import canonical_view

    view = canonical_view(text)
    return view.text, list(view.origin)


_WORD_TOKEN = re.compile(r"\w+")


def as_written(candidate: str, message: str) -> str:
    """``candidate`` (a normalised reading of the learner's answer, e.g. lower-cased with its
    operators dropped) as the learner wrote it in ``message``: the shortest stretch of the
    message holding its words in order, case and symbols kept ("6CO2 + 6H2O -> C6H12O6 +
    6O2", not "6co2 6h2o - c6h12o6 6o2"). ``candidate`` itself when the message does not hold
    them (issue 27: the learner's own text echoed exactly as written)."""
    words = [word.lower() for word in _WORD_TOKEN.findall(candidate)]
    if not words:
        return candidate
    tokens = list(_WORD_TOKEN.finditer(message))
    best: tuple[int, int] | None = None
    for start in range(len(tokens)):
        if tokens[start].group(0).lower() != words[0]:
            continue
        position, index = start, 0
        while position < len(tokens) and index < len(words):
            if tokens[position].group(0).lower() == words[index]:
                index += 1
            position += 1
        if index == len(words):
            span = (tokens[start].start(), tokens[position - 1].end())
            if best is None or span[1] - span[0] < best[1] - best[0]:
                best = span
    return message[best[0] : best[1]] if best is not None else candidate
