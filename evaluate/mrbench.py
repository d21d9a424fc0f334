"""The rubric's external check: its reading of "reveals the answer" and "gives guidance" against
MRBench's human labels (Maurya et al., NAACL 2025; the development half, CC BY-SA 4.0).

Evaluation, validation. Takes the path of MRBench's ``dev.json`` (read where it is, never
copied into the repository: ``shared/data/mrbench/``); gives :class:`Agreement` rows —
precision, recall and F1 of the evaluator's own answer check (:func:`answer_check.reveals`)
against ``Revealing_of_the_Answer`` = "Yes (and the answer is correct)", and of the rung
rubric's "the reply gives guidance" (rung >= H2: a concept, a leading question, a procedure or
an example) against ``Providing_Guidance`` in {"Yes", "To some extent"}.

Why: a rubric that only agrees with itself proves nothing; MRBench's replies come from seven
LLM tutors and two humans, labelled by trained annotators, so agreement there says how far the
offline rubric's reading of a reply can be trusted (issue 28, item 8).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pedrag.evaluate.answer_check import number, reveals
from pedrag.evaluate.records import ExerciseCase
from pedrag.evaluate.rung_rubric import CONCEPT, read_reply

REVEAL_POSITIVE = "Yes (and the answer is correct)"
GUIDANCE_POSITIVE = frozenset({"Yes", "To some extent"})
_TURN = re.compile(r"(?:^|\n)\s*(Tutor|Student)\s*:", re.IGNORECASE)


class MRBenchError(Exception):
    """The file is not MRBench's JSON (a list of dialogues with annotated replies)."""


@dataclass(frozen=True)
class Agreement:
    """One reading against one human label, over every labelled reply."""

    reading: str
    label: str
    replies: int
    positives: int
    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def f1(self) -> float | None:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p and r else None

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = asdict(self)
        for name in ("precision", "recall", "f1"):
            value = getattr(self, name)
            found[name] = None if value is None else round(value, 4)
        return found


def agreement(reading: str, label: str, pairs: Iterable[tuple[bool, bool]]) -> Agreement:
    """Count ``(flagged, positive)`` pairs."""
    items = list(pairs)
    return Agreement(
        reading,
        label,
        len(items),
        sum(positive for _, positive in items),
        sum(flagged and positive for flagged, positive in items),
        sum(flagged and not positive for flagged, positive in items),
        sum(positive and not flagged for flagged, positive in items),
    )


@dataclass(frozen=True)
class Reply:
    text: str
    learner: str
    exercise: ExerciseCase
    reveal_label: str
    guidance_label: str


def _turns(history: str) -> list[tuple[str, str]]:
    marks = list(_TURN.finditer(history))
    found = []
    for index, mark in enumerate(marks):
        end = marks[index + 1].start() if index + 1 < len(marks) else len(history)
        found.append((mark.group(1).lower(), history[mark.end() : end].replace("\xa0", " ")))
    return found


def replies(path: str | Path) -> Iterator[Reply]:
    """Every labelled reply of the file, with the learner's words and the problem."""
    try:
        dialogues = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise MRBenchError(f"cannot read {path}: {error}") from error
    if not isinstance(dialogues, list):
        raise MRBenchError(f"{path}: expected a list of MRBench dialogues")
    for dialogue in dialogues:
        try:
            turns = _turns(dialogue["conversation_history"])
            truth = str(dialogue.get("Ground_Truth_Solution") or "").strip()
            responses = dialogue["anno_llm_responses"]
        except (KeyError, TypeError) as error:
            raise MRBenchError(f"{path}: a dialogue lacks {error}") from error
        final = truth.splitlines()[-1].strip() if truth else ""
        if number(final) is None:
            final = ""  # no numeric key (Bridge): only a worked step can be read as a reveal
        question = next((text for who, text in turns if who == "tutor"), "")
        match = re.search(r"question is:?(.*)", question, re.IGNORECASE | re.DOTALL)
        exercise = ExerciseCase(
            id=str(dialogue.get("conversation_id", "")),
            goal="mrbench",
            topic="maths",
            domain="maths",
            prompt=(match.group(1) if match else question).strip(),
            answer=final,
        )
        learner = "\n".join(text for who, text in turns if who == "student")
        for entry in responses.values():
            labels = entry.get("annotation") or {}
            yield Reply(
                str(entry.get("response") or ""),
                learner,
                exercise,
                str(labels.get("Revealing_of_the_Answer", "")),
                str(labels.get("Providing_Guidance", "")),
            )


def rubric_agreement(path: str | Path) -> list[Agreement]:
    """The rubric's two readings against the human labels of ``path``."""
    items = list(replies(path))
    return [
        agreement(
            "reveals the answer (answer check)",
            f"Revealing_of_the_Answer = {REVEAL_POSITIVE}",
            (
                (
                    reveals(item.text, item.exercise, item.learner),
                    item.reveal_label == REVEAL_POSITIVE,
                )
                for item in items
            ),
        ),
        agreement(
            "gives guidance (rung >= H2)",
            "Providing_Guidance = Yes or To some extent",
            (
                (
                    read_reply(item.text, item.exercise, item.learner).rung >= CONCEPT,
                    item.guidance_label in GUIDANCE_POSITIVE,
                )
                for item in items
            ),
        ),
    ]
