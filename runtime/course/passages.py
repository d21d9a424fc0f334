"""Course passages as plain values: what a passage is, how it is cited, and the word-level
support measure retrieval and the judge share.

Runtime stage, no database: the tutor, the generator and the judge read passages without
loading SQLAlchemy; `pedrag.runtime.course.index` stores and searches them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pedrag.kernel.sources import COURSE_ID_PATTERN
from pedrag.runtime.store.errors import StoreError

SUPPORT_COVERAGE = 0.5
"""The share of the question's content words a passage must contain to support an answer."""
CANDIDATES = 20  # BM25 candidates re-scored for coverage; the top few are what a turn shows
RRF_K = 60
"""Reciprocal rank fusion's constant (Cormack, Clarke and Büttcher, SIGIR 2009): a passage
ranked r-th (from 1) by a ranking scores 1 / (RRF_K + r); its fused score is the sum over
the rankings. 60 is the paper's value; it keeps one ranking's top spot from outweighing two
rankings agreeing a little lower."""
COURSE_ID = re.compile(COURSE_ID_PATTERN)

# Function words and question scaffolding: they say nothing about what a passage must hold.
STOPWORDS = frozenset(
    """a about above after again all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers him his how i if in into is it its itself just me more
    most my no nor not now of off on once only or other our out over own same she should so some
    such than that the their them then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours
    thing things something stuff mean means meaning explain tell please does did really kind
    called call actually exactly""".split()
)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


class CourseIndexError(StoreError):
    """Bad input to the course index (a course id, an empty document); the message says why."""


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import snowballstemmer

    return snowballstemmer.stemmer("english")


def content_terms(question: str) -> list[str]:
    """The question's content words, lowercased, in order, without repeats or stopwords."""
    words = [word.lower() for word in _WORD.findall(question)]
    return list(dict.fromkeys(w for w in words if w not in STOPWORDS and len(w) > 1))


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    # Cached per word: course text repeats its vocabulary, and the pure-Python Snowball
    # stemmer costs tens of microseconds a word (benchmarks/retrieval.py).
    return str(_stemmer().stemWord(word))


def stems(words: Iterable[str]) -> set[str]:
    return {_stem(word.lower()) for word in words}


def coverage(question_stems: set[str], passage_text: str) -> float:
    """The share of the question's stems that occur in the passage (0 with none to cover)."""
    if not question_stems:
        return 0.0
    found = question_stems & stems(_WORD.findall(passage_text))
    return len(found) / len(question_stems)


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[int]], k: int = RRF_K
) -> list[tuple[int, float]]:
    """Fuse rankings of passage ids (best first) into one: ``(id, score)``, best first; ties
    keep the order in which the rankings first list the ids (the first ranking first)."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(dict.fromkeys(ranking), start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    order = {item: position for position, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda pair: (-pair[1], order[pair[0]]))


@dataclass(frozen=True)
class ChunkInput:
    """One chunk to index: where it sits in its document, and its text."""

    page: int | None
    heading: str
    text: str


@dataclass(frozen=True)
class Passage:
    """One indexed chunk as retrieval gives it: position, text, rank score and coverage."""

    id: int
    course: str
    document: str
    label: str
    page: int | None
    heading: str
    text: str
    # Higher is better: BM25 negated on SQLite, ts_rank_cd on PostgreSQL, or, when vectors
    # were searched too, the reciprocal rank fusion score of both rankings.
    score: float = 0.0
    coverage: float = 0.0
    found_by: str = "bm25"  # "bm25", "vector" or "both" (fused search)

    @property
    def citation(self) -> str:
        """How a reply cites it: ``[slides 4, p. 2]``, ``[notes, Light reactions]``, ``[notes]``."""
        if self.page is not None:
            return f"[{self.label}, p. {self.page}]"
        if self.heading:
            return f"[{self.label}, {self.heading}]"
        return f"[{self.label}]"

    @property
    def supports(self) -> bool:
        return self.coverage >= SUPPORT_COVERAGE

    def to_dict(self, with_text: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "citation": self.citation,
            "document": self.document,
            "page": self.page,
            "heading": self.heading,
            "score": round(self.score, 4),
            "coverage": round(self.coverage, 3),
            "found_by": self.found_by,
        }
        if with_text:
            data["text"] = self.text
        return data


def document_label(document: str) -> str:
    """The name a citation gives a document: its file name without suffix, ``_``/``-`` as
    spaces (``slides-4.pdf`` -> ``slides 4``)."""
    name = document.replace("\\", "/").rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0] if "." in name else name
    return " ".join(re.sub(r"[_-]+", " ", stem).split()) or name


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def require_course_id(course: object) -> str:
    if not isinstance(course, str) or not COURSE_ID.match(course):
        raise CourseIndexError(
            f"course id {course!r}: use 1-128 lowercase letters, digits, '_', '-' or '.', "
            "starting with a letter or digit (e.g. biology_101)"
        )
    return course
