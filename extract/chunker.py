"""Extraction stage 2, chunking: pages -> overlapping token windows.

Takes the pages of the corpus; gives `Chunk`s of at most `chunk_tokens` tokens with
`overlap` tokens shared between neighbours (seed 1, Layer 1: 4,000 tokens, 200 overlap).
Chunks never cross documents, and each remembers which pages it spans, for provenance.

Tokens are counted with tiktoken's `cl100k_base` when its vocabulary is available. tiktoken
downloads that vocabulary on first use; on a machine without internet access (and no copy in
`TIKTOKEN_CACHE_DIR`) we fall back to `ApproximateTokenizer`, a deterministic regex
word-piece splitter (GPT-2-style pre-tokenisation, long words cut in pieces); its counts are an
approximation of cl100k, not measured against it. Chunk sizes are
then approximate; nothing else changes. `PEDRAG_TOKENIZER=approximate` forces the fallback.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from pedrag.extract.reader import Page

# tiktoken fetches with `requests` and no timeout; a firewall that drops packets must not
# hang extraction.
_TIKTOKEN_TIMEOUT_S = 10.0


class Tokenizer(Protocol):
    name: str

    def token_starts(self, text: str) -> list[int]:
        """The character offset where each token of `text` starts, in order."""
        ...


class TiktokenTokenizer:
    def __init__(self, encoding: object) -> None:
        self._encoding = encoding
        self.name = f"tiktoken:{getattr(encoding, 'name', 'cl100k_base')}"

    def token_starts(self, text: str) -> list[int]:
        tokens = self._encoding.encode(text, disallowed_special=())  # type: ignore[attr-defined]
        _, offsets = self._encoding.decode_with_offsets(tokens)  # type: ignore[attr-defined]
        return list(offsets)


# GPT-2 style pre-tokenisation (contractions, letter runs, digit runs, punctuation runs,
# whitespace), then long letter runs cut into 5-character pieces as BPE would split them.
_PIECE = re.compile(r"'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+|\s+(?!\S)|\s+")
_LONG_WORD = 6


class ApproximateTokenizer:
    """Deterministic, offline approximation of a BPE tokenizer (see the module docstring)."""

    name = "approximate"

    def token_starts(self, text: str) -> list[int]:
        starts: list[int] = []
        for match in _PIECE.finditer(text):
            start, end = match.span()
            starts.append(start)
            piece_start = start + 1 if text[start] == " " else start
            if match.group().strip().isalpha() and end - piece_start > _LONG_WORD:
                starts.extend(range(piece_start + 5, end, 5))
        return starts


@lru_cache(maxsize=1)
def default_tokenizer() -> Tokenizer:
    """cl100k_base when tiktoken can load it (from its cache or the network), else the
    approximation. Never raises."""
    if os.environ.get("PEDRAG_TOKENIZER", "").strip().lower() == "approximate":
        return ApproximateTokenizer()
    loaded: list[object] = []

    def load() -> None:
        try:
            import tiktoken

            loaded.append(tiktoken.get_encoding("cl100k_base"))
        except Exception:  # offline, blocked, corrupt cache: all mean "use the fallback"
            pass

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(_TIKTOKEN_TIMEOUT_S)
    return TiktokenTokenizer(loaded[0]) if loaded else ApproximateTokenizer()


@dataclass(frozen=True)
class Chunk:
    document: str
    index: int  # 1-based within its document
    pages: tuple[int, ...]
    text: str
    tokens: int

    @property
    def page_label(self) -> str:
        first, last = self.pages[0], self.pages[-1]
        return f"p. {first}" if first == last else f"pp. {first}-{last}"


def chunk_pages(
    pages: Sequence[Page],
    chunk_tokens: int = 4000,
    overlap: int = 200,
    tokenizer: Tokenizer | None = None,
) -> list[Chunk]:
    """Split each document's pages into windows of `chunk_tokens` tokens, `overlap` shared."""
    if chunk_tokens <= 0:
        raise ValueError("chunk size must be a positive number of tokens")
    if not 0 <= overlap < chunk_tokens:
        raise ValueError("overlap must be at least 0 and smaller than the chunk size")
    tokenizer = tokenizer or default_tokenizer()
    chunks: list[Chunk] = []
    for document in dict.fromkeys(page.document for page in pages):
        own = [page for page in pages if page.document == document]
        chunks.extend(_chunk_document(document, own, chunk_tokens, overlap, tokenizer))
    return chunks


def _chunk_document(
    document: str, pages: list[Page], size: int, overlap: int, tokenizer: Tokenizer
) -> list[Chunk]:
    text_parts: list[str] = []
    page_starts: list[tuple[int, int]] = []  # (character offset, page number)
    offset = 0
    for page in pages:
        page_starts.append((offset, page.number))
        text_parts.append(page.text.rstrip() + "\n\n")
        offset += len(text_parts[-1])
    text = "".join(text_parts)
    starts = tokenizer.token_starts(text)
    chunks: list[Chunk] = []
    first = 0
    while first < len(starts):
        last = min(first + size, len(starts))
        begin = starts[first]
        end = starts[last] if last < len(starts) else len(text)
        body = text[begin:end].strip()
        if body:
            covered = tuple(
                number
                for index, (page_start, number) in enumerate(page_starts)
                if page_start < end
                and (page_starts[index + 1][0] if index + 1 < len(page_starts) else len(text))
                > begin
            )
            chunks.append(Chunk(document, len(chunks) + 1, covered, body, last - first))
        if last >= len(starts):
            break
        first = last - overlap
    return chunks
