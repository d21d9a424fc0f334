"""Reading the corpus: PDF pages keep their numbers, text files read as one page."""

from __future__ import annotations

from pathlib import Path

import pytest

from pedrag.extract.reader import ReadError, read_corpus, read_document

CORPUS = Path(__file__).parents[1] / "data" / "corpus"


def words(text: str) -> list[str]:
    return text.split()


def test_text_file_reads_as_one_page() -> None:
    [page] = read_document(CORPUS / "meno.txt")

    assert page.number == 1
    assert page.document.endswith("meno.txt")
    assert "Tell me, boy, do you know that a figure like this is a square?" in page.text


def test_pdf_pages_keep_their_numbers() -> None:
    pages = read_document(CORPUS / "meno.pdf")

    assert [page.number for page in pages] == [1, 2]
    assert "Clearly, Socrates, it will be double." in pages[0].text
    assert pages[1].text.lstrip().startswith("SOCRATES: Do you observe, Meno")


def test_pdf_and_text_hold_the_same_words() -> None:
    pdf = " ".join(page.text for page in read_document(CORPUS / "meno.pdf"))
    text = read_document(CORPUS / "meno.txt")[0].text

    assert words(pdf) == words(text)


def test_form_feeds_split_a_text_file_into_pages(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# one\nfirst\f# two\nsecond\f\f", encoding="utf-8")

    assert [(p.number, p.text.split()[-1]) for p in read_document(path)] == [
        (1, "first"),
        (2, "second"),
    ]


def test_latin1_text_is_read(tmp_path: Path) -> None:
    path = tmp_path / "old.txt"
    path.write_bytes("Socrat\xe9s".encode("latin-1"))

    assert read_document(path)[0].text == "Socratés"


def test_folders_are_searched_for_corpus_files() -> None:
    documents = {Path(page.document).name for page in read_corpus([CORPUS])}

    assert documents == {"meno.txt", "meno.pdf"}


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("slides.pptx", b"x", "unsupported file type `.pptx`"),
        ("broken.pdf", b"%PDF-1.4 this is not a pdf", "not a readable PDF"),
    ],
)
def test_unreadable_files_raise_read_error(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)

    with pytest.raises(ReadError, match=message):
        read_document(path)


def test_missing_path_raises_read_error(tmp_path: Path) -> None:
    with pytest.raises(ReadError, match="no such file"):
        read_corpus([tmp_path / "absent.txt"])
