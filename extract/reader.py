"""Extraction stage 1, reading: corpus files -> pages of text with page numbers.

Takes paths to PDF, plain-text, Markdown and HTML files; gives one `Page` per PDF page
(numbered from 1, as a reader cites them) and one per form-feed-separated page of a text file
(a text file without form feeds is a single page, numbered 1). HTML becomes text with its
headings written as Markdown headings (`# Title`) and its blocks as paragraphs, so course
materials chunk by heading whatever they were written in (`pedrag.extract.materials`). Page numbers are what provenance
points at, so they are kept from here on. Text files are UTF-8 (with or without BOM), UTF-16
or UTF-32 with a BOM, else Windows-1252 / Latin-1; a file that looks binary is refused.
"""

from __future__ import annotations

import codecs
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from pedrag.kernel.errors import PedragError

TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".text")
HTML_SUFFIXES = (".html", ".htm")
PDF_SUFFIXES = (".pdf",)
SUFFIXES = TEXT_SUFFIXES + HTML_SUFFIXES + PDF_SUFFIXES


class ReadError(PedragError):
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
    elif suffix in HTML_SUFFIXES:
        pages = [
            Page(page.document, page.number, html_to_text(page.text)) for page in _read_text(path)
        ]
    else:
        known = ", ".join(SUFFIXES)
        raise ReadError(f"{path}: unsupported file type `{suffix or '(none)'}` (read: {known})")
    return [page for page in pages if page.text.strip()]


def read_corpus(paths: list[str | Path]) -> list[Page]:
    """Every page of every file, files in the given order; folders are searched for corpus
    files (sorted by name)."""
    pages: list[Page] = []
    for path in corpus_files(paths):
        pages.extend(read_document(path))
    return pages


def corpus_files(paths: list[str | Path]) -> list[Path]:
    """The files to read, in order: files as given, folders searched for corpus files
    (sorted by name). A folder holding none is an error, not silently nothing."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            inside = sorted(
                p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES
            )
            if not inside:
                known = ", ".join(SUFFIXES)
                raise ReadError(f"{raw}: folder holds no corpus files ({known})")
            found.extend(inside)
        elif path.exists():
            found.append(path)
        else:
            raise ReadError(f"no such file or directory: {raw}")
    unique: list[Path] = []
    for path in found:
        if path not in unique:
            unique.append(path)
    return unique


class _HTMLText(HTMLParser):
    """HTML -> text: headings as Markdown headings, block elements as paragraphs, scripts and
    styles dropped, entities decoded (the standard library's tolerant parser)."""

    BLOCKS = frozenset(
        "p div li ul ol tr table section article header footer blockquote pre br hr dt dd "
        "figcaption".split()
    )
    HEADINGS = {"title": 1, **{f"h{level}": level for level in range(1, 7)}}
    SKIPPED = frozenset({"script", "style", "noscript", "template"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIPPED:
            self.skipping += 1
        elif tag in self.HEADINGS:
            self.parts.append("\n\n" + "#" * self.HEADINGS[tag] + " ")
        elif tag in self.BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIPPED:
            self.skipping = max(0, self.skipping - 1)
        elif tag in self.HEADINGS or tag in self.BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(re.sub(r"\s+", " ", data))


def html_to_text(markup: str) -> str:
    parser = _HTMLText()
    parser.feed(markup)
    parser.close()
    blocks = ("".join(parser.parts)).split("\n\n")
    return "\n\n".join(" ".join(block.split()) for block in blocks if block.strip())


def _read_text(path: Path) -> list[Page]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ReadError(f"{path}: cannot read: {exc.strerror or exc}") from None
    text = _decode(path, raw).replace("\r\n", "\n")
    return [Page(str(path), number, part) for number, part in enumerate(text.split("\f"), 1)]


# Longest BOM first: the UTF-32-LE BOM starts with the UTF-16-LE one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _decode(path: Path, raw: bytes) -> str:
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            try:
                return raw.decode(encoding)
            except UnicodeDecodeError as exc:
                raise ReadError(f"{path}: not valid {encoding.upper()} ({exc.reason})") from None
    if b"\x00" in raw:
        # Latin-1 would "decode" it and send the model noise (UTF-16 without a BOM, or binary).
        raise ReadError(
            f"{path}: looks binary (it holds NUL bytes); save it as UTF-8 text, or give the PDF"
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    # Old public-domain e-texts are often Windows-1252 or Latin-1; every Latin-1 byte
    # decodes, so nothing is lost.
    try:
        return raw.decode("cp1252")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _read_pdf(path: Path) -> list[Page]:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        with _quiet_pypdf():
            reader = PdfReader(str(path))
            if reader.is_encrypted:
                _decrypt(path, reader)
            return [
                Page(str(path), number, page.extract_text() or "")
                for number, page in enumerate(reader.pages, 1)
            ]
    except ReadError:
        raise
    except OSError as exc:
        raise ReadError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (PyPdfError, ValueError, KeyError) as exc:  # pypdf raises these on damaged files
        raise ReadError(f"{path}: not a readable PDF ({exc})") from None


def _decrypt(path: Path, reader: object) -> None:
    """Open a PDF encrypted with an empty user password (print/copy restrictions only), as
    viewers do; one that needs a password cannot be read."""
    from pypdf.errors import PyPdfError

    try:
        opened = reader.decrypt("")  # type: ignore[attr-defined]
    except (PyPdfError, NotImplementedError) as exc:  # e.g. AES without `cryptography`
        raise ReadError(f"{path}: encrypted PDF that cannot be opened here ({exc})") from None
    if not opened:
        raise ReadError(
            f"{path}: the PDF is password-protected; save a decrypted copy "
            "(e.g. `qpdf --decrypt --password=... in.pdf out.pdf`) and extract from that"
        )


@contextmanager
def _quiet_pypdf() -> Iterator[None]:
    """pypdf logs what it repairs in damaged files ("EOF marker not found") to the root
    handler, i.e. the user's terminal; a file it cannot read becomes one `ReadError`."""
    logger = logging.getLogger("pypdf")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)
