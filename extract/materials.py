"""Course materials: files -> positioned chunks -> the course index (``pedrag index``).

Extraction-side reading for grounding (DESIGN, "Grounding"). Takes a course's files or
folders (PDF, Markdown, text, HTML, read by :mod:`pedrag.extract.reader`); gives chunks of a
few sentences, each with its position — the document, the page (PDF pages, or form-feed pages
of a text file) and the heading it sits under — and stores them in the course index
(:class:`pedrag.runtime.course.index.CourseIndex`), one document per transaction.

Why chunks this size: a passage is shown to the actor and quoted to the learner, so it should
be a paragraph a reader would cite, not the 4,000-token windows theory extraction uses; a
chunk never crosses a heading or a page, so its citation is exact.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pedrag.extract.reader import PDF_SUFFIXES, ReadError, corpus_files, read_document
from pedrag.runtime.course.index import ChunkInput, CourseIndex, content_hash

MAX_WORDS = 120  # a chunk: one to a few paragraphs
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")


@dataclass(frozen=True)
class IndexedFile:
    """What indexing did to one file: its document name, outcome and chunk count."""

    path: Path
    document: str
    outcome: str  # added | replaced | unchanged
    chunks: int


def document_names(paths: Sequence[str | Path]) -> list[tuple[Path, str]]:
    """Each file to index with its document name: relative to the folder it was found in
    (``notes/cells.md``), or its file name when given directly — so the name, and with it
    re-indexing, does not depend on the working directory."""
    named: list[tuple[Path, str]] = []
    for raw in paths:
        root = Path(raw)
        for path in corpus_files([root]):
            name = path.relative_to(root).as_posix() if root.is_dir() else path.name
            if all(name != taken for _, taken in named):
                named.append((path, name))
    return named


def _blocks(text: str) -> Iterator[tuple[str | None, str]]:
    """(heading or None, paragraph) in order: a heading line changes the heading, a blank
    line ends a paragraph."""
    lines = text.split("\n")
    paragraph: list[str] = []
    for index, line in enumerate(lines):
        heading = _HEADING.match(line)
        underline = (
            _SETEXT.match(lines[index + 1]) if index + 1 < len(lines) and line.strip() else None
        )
        if heading or (underline and len(paragraph) == 0):
            if paragraph:
                yield None, " ".join(paragraph)
                paragraph = []
            yield (heading.group(2) if heading else line.strip()), ""
            continue
        if _SETEXT.match(line) and index > 0 and not paragraph:
            continue  # the underline of a setext heading just yielded
        if line.strip():
            paragraph.append(line.strip())
        elif paragraph:
            yield None, " ".join(paragraph)
            paragraph = []
    if paragraph:
        yield None, " ".join(paragraph)


def _pieces(paragraph: str) -> Iterator[str]:
    """A paragraph, cut at sentence ends into pieces of at most MAX_WORDS words."""
    piece: list[str] = []
    for sentence in _SENTENCE.split(paragraph):
        words = sentence.split()
        while len(words) > MAX_WORDS:  # one sentence longer than a chunk
            if piece:
                yield " ".join(piece)
                piece = []
            yield " ".join(words[:MAX_WORDS])
            words = words[MAX_WORDS:]
        if piece and len(piece) + len(words) > MAX_WORDS:
            yield " ".join(piece)
            piece = []
        piece.extend(words)
    if piece:
        yield " ".join(piece)


def chunk_pages(pages: Sequence[tuple[int | None, str]]) -> list[ChunkInput]:
    """Chunks of one document's pages ``(page number or None, text)``: paragraphs gathered up
    to MAX_WORDS words, never across a heading or a page; a heading carries over pages."""
    chunks: list[ChunkInput] = []
    heading = ""
    for page, text in pages:
        words: list[str] = []
        for new_heading, paragraph in _blocks(text):
            pieces = [] if new_heading is not None else list(_pieces(paragraph))
            for piece_words in (piece.split() for piece in pieces):
                if words and len(words) + len(piece_words) > MAX_WORDS:
                    chunks.append(ChunkInput(page, heading, " ".join(words)))
                    words = []
                words.extend(piece_words)
            if new_heading is not None:
                if words:
                    chunks.append(ChunkInput(page, heading, " ".join(words)))
                    words = []
                heading = " ".join(new_heading.split())
        if words:
            chunks.append(ChunkInput(page, heading, " ".join(words)))
    return chunks


def read_chunks(path: Path) -> list[ChunkInput]:
    """One file's chunks. PDF pages (and form-feed pages of a text file with more than one)
    are cited by number; a single-page text file by its headings."""
    pages = read_document(path)
    paged = path.suffix.lower() in PDF_SUFFIXES or len(pages) > 1
    return chunk_pages([(page.number if paged else None, page.text) for page in pages])


def index_materials(
    index: CourseIndex, course: str, paths: Sequence[str | Path], *, prune: bool = False
) -> tuple[list[IndexedFile], list[str]]:
    """Index every file under ``paths`` for ``course``; with ``prune``, remove the course's
    documents not among them. Gives what happened per file and the documents removed.
    Raises ``ReadError`` for a file that cannot be read (earlier files stay indexed)."""
    results: list[IndexedFile] = []
    named = document_names(paths)
    known = {item["document"]: item for item in index.documents(course)}
    for path, document in named:
        try:
            data = path.read_bytes()
        except OSError as error:
            raise ReadError(f"{path}: cannot read: {error.strerror or error}") from None
        digest = content_hash(data)
        before = known.get(document)
        if before is not None and before["content_hash"] == digest:
            # Unchanged: not even read again (a large PDF takes seconds to parse).
            results.append(IndexedFile(path, document, "unchanged", before["chunks"]))
            continue
        chunks = read_chunks(path)
        outcome = index.index_document(course, document, digest, chunks)
        results.append(IndexedFile(path, document, outcome, len(chunks)))
    removed: list[str] = []
    if prune:
        keep = {document for _, document in named}
        for stored in index.documents(course):
            if stored["document"] not in keep and index.remove_document(course, stored["document"]):
                removed.append(stored["document"])
    return results, removed
