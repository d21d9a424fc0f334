"""The course index: passages in the session database, searched by BM25, scoped by tenant and
course, replaced per changed document."""

from __future__ import annotations

from pathlib import Path

import pytest

from pedrag.extract.materials import index_materials
from pedrag.runtime.course.index import (
    ChunkInput,
    CourseIndex,
    CourseIndexError,
    content_terms,
    document_label,
)
from pedrag.runtime.store.session_store import SessionStore
from tests.course_folder import write_course


@pytest.fixture()
def store(tmp_path: Path) -> SessionStore:
    with SessionStore(str(tmp_path / "db.sqlite")) as opened:
        yield opened


def test_a_concept_question_finds_the_passage_that_answers_it(
    store: SessionStore, tmp_path: Path
) -> None:
    index = CourseIndex(store)
    index_materials(index, "bio", [write_course(tmp_path / "bio")])

    [best, *_] = index.search("bio", "Is chlorophyll the thing that catches the light?")

    assert best.citation == "[slides 4, p. 2]"
    assert "green pigment" in best.text and best.supports


def test_a_question_the_materials_do_not_cover_has_no_supporting_passage(
    store: SessionStore, tmp_path: Path
) -> None:
    index = CourseIndex(store)
    index_materials(index, "bio", [write_course(tmp_path / "bio")])

    assert not any(p.supports for p in index.search("bio", "What is a black hole made of?"))
    assert index.search("bio", "what is it?") == []  # nothing but function words


def test_reindexing_skips_unchanged_files_and_replaces_only_a_changed_ones_passages(
    store: SessionStore, tmp_path: Path
) -> None:
    index = CourseIndex(store)
    folder = write_course(tmp_path / "bio")
    first, _ = index_materials(index, "bio", [folder])
    slides_ids = {p.id for p in index.search("bio", "chlorophyll pigment", limit=10)}

    (folder / "notes.md").write_text("# Osmosis\n\nOsmosis moves water across a membrane.\n")
    second, _ = index_materials(index, "bio", [folder])

    assert {r.outcome for r in first} == {"added"}
    assert {r.document: r.outcome for r in second} == {
        "handout.html": "unchanged",
        "notes.md": "replaced",
        "slides-4.pdf": "unchanged",
    }
    assert {p.id for p in index.search("bio", "chlorophyll pigment", limit=10)} == slides_ids
    assert not any("Stomata" in p.text for p in index.search("bio", "stomata pores", limit=10))
    assert index.search("bio", "osmosis water membrane")[0].citation == "[notes, Osmosis]"


def test_prune_removes_documents_no_longer_given(store: SessionStore, tmp_path: Path) -> None:
    index = CourseIndex(store)
    folder = write_course(tmp_path / "bio")
    index_materials(index, "bio", [folder])
    (folder / "handout.html").unlink()

    _, removed = index_materials(index, "bio", [folder], prune=True)

    assert removed == ["handout.html"]
    assert [d["document"] for d in index.documents("bio")] == ["notes.md", "slides-4.pdf"]
    assert index.search("bio", "mitochondria respiration") == []


def test_courses_and_tenants_do_not_see_each_others_materials(
    store: SessionStore, tmp_path: Path
) -> None:
    index_materials(CourseIndex(store), "bio", [write_course(tmp_path / "bio")])

    assert CourseIndex(store).search("chem", "chlorophyll") == []
    assert CourseIndex(store.for_tenant("other")).search("bio", "chlorophyll") == []
    assert not CourseIndex(store.for_tenant("other")).has_course("bio")
    assert CourseIndex(store).has_course("bio")


def test_fts_syntax_in_a_question_is_searched_as_words(store: SessionStore) -> None:
    index = CourseIndex(store)
    index.index_document("bio", "a.md", "h1", [ChunkInput(None, "", "NEAR AND NOT OR light")])

    assert index.search("bio", 'light" OR NEAR(x) AND NOT "*')[0].document == "a.md"


def test_course_ids_and_labels() -> None:
    with pytest.raises(CourseIndexError, match="course id"):
        from pedrag.runtime.course.index import require_course_id

        require_course_id("Bio 101")
    assert document_label("week2/slides_4.pdf") == "slides 4"
    assert content_terms("What is the Calvin cycle?") == ["calvin", "cycle"]


def test_an_unchanged_file_is_not_read_again(
    store: SessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pedrag.extract.materials as materials

    index = CourseIndex(store)
    folder = write_course(tmp_path / "bio")
    index_materials(index, "bio", [folder])
    read: list[str] = []
    original = materials.read_chunks
    monkeypatch.setattr(
        materials, "read_chunks", lambda path: read.append(path.name) or original(path)
    )
    (folder / "notes.md").write_text("# Osmosis\n\nOsmosis moves water.\n")

    results, _ = index_materials(index, "bio", [folder])

    assert read == ["notes.md"]
    assert {r.document: r.chunks for r in results} == {
        "handout.html": 1,
        "notes.md": 1,
        "slides-4.pdf": 3,
    }
