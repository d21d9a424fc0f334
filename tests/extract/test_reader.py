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


def _meno_pdf(path: Path, user_password: str) -> Path:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in PdfReader(CORPUS / "meno.pdf").pages:
        writer.add_page(page)
    writer.encrypt(user_password, "owner", algorithm="RC4-128")
    writer.write(path)
    return path


def test_a_password_protected_pdf_says_so(tmp_path: Path) -> None:
    path = _meno_pdf(tmp_path / "locked.pdf", user_password="secret")

    with pytest.raises(ReadError, match="password-protected; save a decrypted copy"):
        read_document(path)


def test_a_pdf_encrypted_without_a_user_password_is_read(tmp_path: Path) -> None:
    path = _meno_pdf(tmp_path / "restricted.pdf", user_password="")

    assert [page.number for page in read_document(path)] == [1, 2]


def test_a_damaged_pdf_logs_nothing_beside_the_read_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.4\n garbage")

    with pytest.raises(ReadError, match="not a readable PDF"):
        read_document(path)
    assert [r.getMessage() for r in caplog.records if r.name.startswith("pypdf")] == []


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32", "utf-8-sig"])
def test_text_with_a_byte_order_mark_is_decoded(tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes("SOCRATES: Tell me, Menō.".encode(encoding))

    assert read_document(path)[0].text == "SOCRATES: Tell me, Menō."


def test_windows_1252_quotes_are_read_as_quotes(tmp_path: Path) -> None:
    path = tmp_path / "old.txt"
    path.write_bytes("\u201cKnow thyself\u201d".encode("cp1252"))

    assert read_document(path)[0].text == "\u201cKnow thyself\u201d"


def test_a_binary_file_named_txt_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes("no BOM".encode("utf-16-le"))

    with pytest.raises(ReadError, match="looks binary"):
        read_document(path)


def test_a_folder_without_corpus_files_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "slides.pptx").write_bytes(b"x")

    with pytest.raises(ReadError, match="folder holds no corpus files"):
        read_corpus([tmp_path])
