"""Course materials are cut into passages that keep their file, page and heading."""

from __future__ import annotations

from pathlib import Path

from pedrag.extract.materials import MAX_WORDS, chunk_pages, document_names, read_chunks
from pedrag.extract.reader import read_document
from tests.course_folder import write_course, write_pdf


def test_markdown_passages_sit_under_their_heading_and_have_no_page(tmp_path: Path) -> None:
    folder = write_course(tmp_path / "bio")
    chunks = read_chunks(folder / "notes.md")

    assert [(c.page, c.heading) for c in chunks] == [(None, "Photosynthesis"), (None, "Stomata")]
    assert chunks[1].text.startswith("Stomata are small pores")


def test_pdf_passages_keep_their_page_numbers(tmp_path: Path) -> None:
    folder = write_course(tmp_path / "bio")
    chunks = read_chunks(folder / "slides-4.pdf")

    assert [c.page for c in chunks] == [1, 2, 3]
    assert "green pigment" in chunks[1].text and "green pigment" not in chunks[0].text


def test_html_headings_become_headings_and_scripts_and_styles_are_dropped(tmp_path: Path) -> None:
    folder = write_course(tmp_path / "bio")
    [page] = read_document(folder / "handout.html")
    [chunk] = read_chunks(folder / "handout.html")

    assert "color: red" not in page.text
    assert chunk.heading == "Respiration"
    assert "in the mitochondria and uses oxygen" in chunk.text


def test_long_paragraphs_are_cut_at_sentences_and_never_cross_a_heading() -> None:
    sentence = "Plants need light and water to grow well in spring. "
    text = "# One\n\n" + sentence * 40 + "\n\n# Two\n\nShort."
    chunks = chunk_pages([(None, text)])

    assert all(len(c.text.split()) <= MAX_WORDS for c in chunks)
    assert {c.heading for c in chunks[:-1]} == {"One"}
    assert chunks[-1].heading == "Two" and chunks[-1].text == "Short."
    assert all(c.text.endswith(".") for c in chunks)


def test_a_long_pdf_sentence_still_fits_in_chunks(tmp_path: Path) -> None:
    pdf = write_pdf(tmp_path / "long.pdf", [" ".join(["word"] * (MAX_WORDS * 2 + 5))])
    chunks = read_chunks(pdf)

    assert [len(c.text.split()) for c in chunks] == [MAX_WORDS, MAX_WORDS, 5]


def test_documents_are_named_relative_to_the_folder_given(tmp_path: Path) -> None:
    folder = write_course(tmp_path / "bio")
    (folder / "week2").mkdir()
    (folder / "week2" / "cells.txt").write_text("Cells.", encoding="utf-8")

    names = [name for _, name in document_names([folder, folder / "notes.md"])]

    assert names == ["handout.html", "notes.md", "slides-4.pdf", "week2/cells.txt"]
