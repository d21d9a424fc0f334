"""Chunking: bounded token windows with overlap, per document, with the pages they span."""

from __future__ import annotations

from pathlib import Path

import pytest

from pedrag.extract.chunker import ApproximateTokenizer, chunk_pages, default_tokenizer
from pedrag.extract.reader import Page, read_document

CORPUS = Path(__file__).parents[1] / "data" / "corpus"
TOKENS = ApproximateTokenizer()


def test_default_tokenizer_never_raises_offline() -> None:
    tokenizer = default_tokenizer()

    assert tokenizer.name in ("approximate", "tiktoken:cl100k_base")
    assert len(tokenizer.token_starts("Tell me, boy, do you know?")) >= 6


def test_approximate_tokenizer_is_deterministic_and_splits_long_words() -> None:
    text = "Do you observe, Meno, that I am not teaching the boy anything?"
    assert TOKENS.token_starts(text) == TOKENS.token_starts(text)
    assert len(TOKENS.token_starts("incomprehensibilities")) > 1
    assert TOKENS.token_starts("a b")[0] == 0


def test_chunks_are_bounded_and_neighbours_overlap() -> None:
    pages = read_document(CORPUS / "meno.txt")

    chunks = chunk_pages(pages, chunk_tokens=200, overlap=30, tokenizer=TOKENS)

    assert len(chunks) >= 4
    assert all(chunk.tokens <= 200 for chunk in chunks)
    assert [chunk.index for chunk in chunks] == list(range(1, len(chunks) + 1))
    for before, after in zip(chunks, chunks[1:], strict=False):
        shared = " ".join(after.text.split()[:8])
        assert shared in " ".join(before.text.split()), "no overlap between neighbours"


def test_without_overlap_the_chunks_rebuild_the_text() -> None:
    pages = read_document(CORPUS / "meno.txt")

    chunks = chunk_pages(pages, chunk_tokens=150, overlap=0, tokenizer=TOKENS)

    # A boundary may fall inside a word, as with real BPE tokens; no character is lost.
    assert "".join("".join(c.text.split()) for c in chunks) == "".join(pages[0].text.split())


def test_chunks_record_the_pages_they_span() -> None:
    pages = read_document(CORPUS / "meno.pdf")

    whole = chunk_pages(pages, chunk_tokens=100_000, overlap=0, tokenizer=TOKENS)
    small = chunk_pages(pages, chunk_tokens=300, overlap=0, tokenizer=TOKENS)

    assert [(c.pages, c.page_label) for c in whole] == [((1, 2), "pp. 1-2")]
    assert small[0].pages == (1,) and small[-1].pages == (2,)
    assert any(c.pages == (1, 2) for c in small)


def test_chunks_never_cross_documents() -> None:
    pages = [Page("a.txt", 1, "alpha " * 50), Page("b.txt", 1, "beta " * 50)]

    chunks = chunk_pages(pages, chunk_tokens=1000, overlap=0, tokenizer=TOKENS)

    assert [(c.document, c.index) for c in chunks] == [("a.txt", 1), ("b.txt", 1)]


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (100, 100), (100, -1)])
def test_bad_sizes_are_refused(size: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        chunk_pages([Page("a.txt", 1, "x")], size, overlap, TOKENS)
