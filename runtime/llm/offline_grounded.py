"""The offline actor's grounded answer: the best passage quoted and cited, or "not covered".

Runtime, LLM backends (offline). Takes the actor's system prompt — carrying the turn's course
passages (:func:`pedrag.runtime.course.grounding.passages_block`) and the action's template line —
and the learner's message; gives the reply the offline backend sends on a grounded turn, or
``None`` when the turn is not grounded (the backend then uses the template alone).

On a concept question the reply quotes the sentence of the best passage that covers most of
the question, with its citation, then the action's own line so the turn still teaches; with no
supporting passage it says the materials do not cover it rather than inventing an answer. When
the action (not a question) asked for grounding, the template comes first and the pointer to
the passage after it. Kept apart from ``offline.py`` so the template wording there can change
on its own.
"""

from __future__ import annotations

import re

from pedrag.runtime.course.grounding import read_passages_block
from pedrag.runtime.course.passages import content_terms, coverage, stems

_SENTENCE = re.compile(r"[^.!?]+[.!?]*")
NOT_COVERED = "I couldn't find that in the course materials, so I won't guess at an answer."
# The materials answer it, but only with the exercise's hidden answer: not a "not covered".
WITHHELD = "That's part of what this exercise asks you to work out, so I'll let you find it."


def best_sentence(question: str, passage: str) -> str:
    """The passage's sentence covering most of the question's content words (the first on
    ties); the whole passage if it has no sentence ends."""
    terms = stems(content_terms(question))
    sentences = [s.strip() for s in _SENTENCE.findall(passage) if s.strip()]
    if not sentences:
        return passage.strip()
    return max(sentences, key=lambda sentence: coverage(terms, sentence))


def grounded_reply(system: str, question: str, template_line: str) -> str | None:
    block = read_passages_block(system)
    if block is None:
        return None
    kind, passages, withheld = block
    if not passages and kind == "question":
        return f"{WITHHELD if withheld else NOT_COVERED} {template_line}"
    if not passages:
        return None
    best = passages[0]
    quote = best_sentence(question, best["text"]).replace('"', "'")
    if kind == "question":
        return f'The course materials say: "{quote}" {best["cite"]}. {template_line}'
    return f'{template_line} See {best["cite"]}: "{quote}"'
