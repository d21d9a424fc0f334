"""Text crossing into the runtime: the student's message and the model's reply, as the
detector reads them and as the learner wrote them.

Runtime, the turn's boundary. Two readings of one text:

- :func:`detection_view` — for the answer detector: the text as a reader sees it, with a map
  back to the original offsets; the rules live in one place,
  :mod:`pedrag.runtime.detect.canonical`.
- :func:`as_written` — a normalised reading of the learner's answer, as the learner wrote it.

Why: a detector that reads code points rather than what a reader sees is beaten by one inserted
zero-width space. What may be stored or printed (control characters, ANSI escapes, credentials
taken out) is :mod:`pedrag.runtime.store.safe_text`, below the turn, so the store needs nothing
of it.
"""

from __future__ import annotations

import re

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
