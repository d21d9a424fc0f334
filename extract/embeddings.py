"""Extraction support, embeddings: texts -> unit vectors for near-duplicate detection.

Takes action descriptions; gives one L2-normalised vector each. `EndpointEmbedder` asks the
endpoint's `/v1/embeddings`; `LexicalEmbedder` needs no model: hashed character 3-gram term
frequencies (words padded with spaces), so texts that share wording are close. It is the
fallback when no embedding endpoint is configured or the endpoint has none.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from typing import Protocol

from pedrag.runtime.llm.interface import EmbeddingBackend

LEXICAL_DIMENSION = 1024


class Embedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class LexicalEmbedder:
    name = "lexical"

    def __init__(self, dimension: int = LEXICAL_DIMENSION) -> None:
        self.dimension = dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimension
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            padded = f" {word} "
            for start in range(len(padded) - 2):
                digest = hashlib.blake2b(padded[start : start + 3].encode(), digest_size=4)
                vector[int.from_bytes(digest.digest(), "big") % self.dimension] += 1.0
        return _normalised(vector)


class EndpointEmbedder:
    name = "endpoint"

    def __init__(self, backend: EmbeddingBackend) -> None:
        self.backend = backend

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [_normalised(vector) for vector in self.backend.embed(list(texts))]


def cosine(left: Sequence[float], right: Sequence[float]) -> float:
    """Cosine similarity of two vectors (0 when either is zero or their sizes differ)."""
    if len(left) != len(right):
        return 0.0
    dot = sum(a * b for a, b in zip(left, right, strict=True))
    norms = math.sqrt(sum(a * a for a in left)) * math.sqrt(sum(b * b for b in right))
    return dot / norms if norms else 0.0


def _normalised(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(value * value for value in vector))
    return [value / norm for value in vector] if norm else [0.0 for _ in vector]
