"""Extraction stage 1, reading: corpus files -> pages of text with page numbers.

Takes paths to PDF, plain-text and Markdown files; gives one `Page` per PDF page (numbered
from 1, as a reader cites them) and one per form-feed-separated page of a text file (a text
file without form feeds is a single page, numbered 1). Page numbers are what provenance
points at, so they are kept from here on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".text")
PDF_SUFFIXES = (".pdf",)
SUFFIXES = TEXT_SUFFIXES + PDF_SUFFIXES


class ReadError(Exception):
    """A corpus file cannot be read; the message names the file and says why."""


@dataclass(frozen=True)
class Page:
    document: str  # the file name as given on the command line
    number: int  # 1-based
    text: str


def read_document(path: str | Path) -> list[Page]:
    """The pages of one corpus file, in order (empty pages dropped)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in PDF_SUFFIXES:
        pages = _read_pdf(path)
    elif suffix in TEXT_SUFFIXES:
        pages = _read_text(path)
    else:
        known = ", ".join(SUFFIXES)
        raise ReadError(f"{path}: unsupported file type `{suffix or '(none)'}` (read: {known})")
    return [page for page in pages if page.text.strip()]


def read_corpus(paths: list[str | Path]) -> list[Page]:
    """Every page of every file, files in the given order; folders are searched for corpus
    files (sorted by name)."""
    pages: list[Page] = []
    for path in _expand(paths):
        pages.extend(read_document(path))
    return pages


def _expand(paths: list[str | Path]) -> list[Path]:
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*") if p.suffix.lower() in SUFFIXES))
        elif path.exists():
            found.append(path)
        else:
            raise ReadError(f"no such file or directory: {raw}")
    unique: list[Path] = []
    for path in found:
        if path not in unique:
            unique.append(path)
    return unique


def _read_text(path: Path) -> list[Page]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ReadError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        # Old public-domain e-texts are often Latin-1; every byte decodes, nothing is lost.
        text = raw.decode("latin-1")
    text = text.replace("\r\n", "\n")
    return [Page(str(path), number, part) for number, part in enumerate(text.split("\f"), 1)]


def _read_pdf(path: Path) -> list[Page]:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(str(path))
        return [
            Page(str(path), number, page.extract_text() or "")
            for number, page in enumerate(reader.pages, 1)
        ]
    except OSError as exc:
        raise ReadError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (PyPdfError, ValueError, KeyError) as exc:  # pypdf raises these on damaged files
        raise ReadError(f"{path}: not a readable PDF ({exc})") from None
