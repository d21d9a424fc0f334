"""Course passage vectors on SQLite (sqlite-vec): embedded through the scripted server's
`/v1/embeddings`, stored per chunk and model, replaced with a changed file, fused with BM25 by
reciprocal rank fusion; an endpoint that fails leaves the BM25 index whole."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from pedrag.cli import main
from pedrag.extract.materials import index_materials
from pedrag.runtime.course.index import CourseIndex, CourseIndexError
from pedrag.runtime.course.passages import reciprocal_rank_fusion
from pedrag.runtime.course.vectors import EndpointEmbeddings
from pedrag.runtime.llm.interface import LLMError
from pedrag.runtime.llm.openai_backend import OpenAIBackend, OpenAISettings
from pedrag.runtime.store.session_store import SessionStore
from pedrag.runtime.store.sqlite_driver import vectors_unavailable
from tests.course_folder import write_course
from tests.fake_openai import FakeOpenAI, Reply

MODEL = "trigram-embed"
# Misspelt: BM25 matches whole (stemmed) words and finds nothing; the fake's character
# trigrams still put the handout's "mitochondria" nearest.
MISSPELT = "What are mitocondria?"
QUESTION = "Is chlorophyll the thing that catches the light?"


@pytest.fixture()
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(embedding_dimension=256, embedding_scheme="trigrams") as server:
        server.serve_models(MODEL)
        yield server


def embeddings(fake: FakeOpenAI, model: str = MODEL) -> EndpointEmbeddings:
    settings = OpenAISettings(
        base_url=fake.base_url, api_key="t", embedding_model=model, retries=0, backoff_s=0
    )
    return EndpointEmbeddings(OpenAIBackend(settings, sleep=lambda seconds: None))


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore(str(tmp_path / "db.sqlite")) as opened:
        yield opened


OSMOSIS = "# Osmosis\n\nOsmosis moves water across a membrane.\n"
OSMOSIS_PASSAGE = "Osmosis\nOsmosis moves water across a membrane."  # heading, then text


def indexed(
    fake: FakeOpenAI, store: SessionStore, folder: Path, course: str = "bio", embed: bool = True
) -> tuple[EndpointEmbeddings, CourseIndex]:
    """The course folder written and indexed; with ``embed``, its passages embedded."""
    embedder = embeddings(fake)
    index = CourseIndex(store, embedder)
    index_materials(index, course, [write_course(folder)])
    if embed:
        index.embed_missing(course, embedder)
    return embedder, index


def counts(store: SessionStore, dimension: int = 256) -> tuple[int, int]:
    with store._engine.connect() as connection:
        rows = connection.execute(text("SELECT count(*) FROM pedrag_course_vectors")).scalar()
        vec0 = connection.execute(text(f"SELECT count(*) FROM pedrag_course_vec_{dimension}"))
        return int(rows or 0), int(vec0.scalar() or 0)


def vector_rows(store: SessionStore) -> int:
    with store._engine.connect() as connection:
        return int(
            connection.execute(text("SELECT count(*) FROM pedrag_course_vectors")).scalar() or 0
        )


def embedded_texts(fake: FakeOpenAI) -> list[str]:
    return [
        text
        for request in fake.requests_to("embeddings")
        if request.role != "health"
        for text in request["input"]
    ]


def test_reciprocal_rank_fusion_sums_one_over_k_plus_rank() -> None:
    fused = reciprocal_rank_fusion([[1, 2, 3], [3, 1]], k=60)
    assert [item for item, _ in fused] == [1, 3, 2]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[1][1] == pytest.approx(1 / 63 + 1 / 61)
    assert fused[2][1] == pytest.approx(1 / 62)
    assert [item for item, _ in reciprocal_rank_fusion([[7], [8]])] == [7, 8]  # tie: first first


def test_this_machine_stores_vectors_with_sqlite_vec() -> None:
    # The test extra installs sqlite-vec and a driver that loads it; the suite relies on it.
    assert vectors_unavailable() is None


def test_fused_search_returns_a_passage_only_the_vectors_found(
    fake: FakeOpenAI, store: SessionStore, tmp_path: Path
) -> None:
    embedder, index = indexed(fake, store, tmp_path / "bio", embed=False)
    report = index.embed_missing("bio", embedder)

    assert (report.embedded, report.missing) == (6, 0)
    assert counts(store) == (6, 6)
    assert CourseIndex(store).search("bio", MISSPELT) == []  # BM25 alone: nothing
    [best, *_] = index.search("bio", MISSPELT)
    assert best.citation == "[handout, Respiration]" and best.found_by == "vector"
    # The support rule is the same for every passage: the word is misspelt, so it is weak.
    assert not best.supports
    assert fake.requests_to("embeddings")[-1]["input"] == [MISSPELT]

    [top, *_] = index.search("bio", QUESTION)
    assert top.citation == "[slides 4, p. 2]" and top.found_by == "both" and top.supports
    # Another tenant's course of the same name, embedded too, ranks only its own passages.
    other = CourseIndex(store.for_tenant("other"), embedder)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.md").write_text(OSMOSIS)
    index_materials(other, "bio", [tmp_path / "other"])
    assert other.embed_missing("bio", embedder).embedded == 1
    assert [p.citation for p in other.search("bio", MISSPELT)] == ["[notes, Osmosis]"]
    [vector] = embedder.embed([MISSPELT])
    with store._engine.connect() as connection:
        nearest = other._vectors.nearest(connection, "bio", MODEL, vector, 20)
    assert nearest == [other.search("bio", "osmosis")[0].id]  # the KNN itself is scoped


def test_reindexing_embeds_only_the_changed_files_new_passages(
    fake: FakeOpenAI, store: SessionStore, tmp_path: Path
) -> None:
    folder = tmp_path / "bio"
    embedder, index = indexed(fake, store, folder)
    before = len(embedded_texts(fake))

    index_materials(index, "bio", [folder])  # nothing changed
    assert index.embed_missing("bio", embedder).embedded == 0
    assert len(embedded_texts(fake)) == before

    (folder / "notes.md").write_text(OSMOSIS)
    index_materials(index, "bio", [folder])
    assert index.embed_missing("bio", embedder).embedded == 1
    assert embedded_texts(fake)[before:] == [OSMOSIS_PASSAGE]
    assert counts(store) == (5, 5)  # the old notes' two vectors went with their passages
    assert index.search("bio", "osmosis membrane")[0].found_by == "both"

    index.remove_document("bio", "handout.html")
    assert counts(store) == (4, 4)


def test_an_endpoint_that_fails_keeps_the_bm25_index_and_a_rerun_embeds_the_rest(
    fake: FakeOpenAI, store: SessionStore, tmp_path: Path
) -> None:
    folder = tmp_path / "bio"
    embedder, index = indexed(fake, store, folder, embed=False)
    fake.script(Reply.error(500, "model crashed"), endpoint="embeddings")

    with pytest.raises(LLMError, match="HTTP 500"):
        index.embed_missing("bio", embedder)
    [best, *_] = index.search("bio", QUESTION)
    assert best.citation == "[slides 4, p. 2]" and best.found_by == "bm25"  # BM25 alone
    fake.script(Reply.malformed(), endpoint="embeddings")
    with pytest.raises(LLMError, match="not an OpenAI API response"):
        index.embed_missing("bio", embedder)
    # One vector per token for each of the six passages, as a server without pooling answers.
    items = [{"object": "embedding", "index": n, "embedding": [[0.1, 0.2]]} for n in range(6)]
    per_token = json.dumps({"object": "list", "model": "m", "data": items}).encode()
    fake.script(Reply.malformed(per_token), endpoint="embeddings")
    with pytest.raises(LLMError, match="other than one list of numbers per text"):
        index.embed_missing("bio", embedder)
    assert vector_rows(store) == 0

    assert index.embed_missing("bio", embedder).embedded == 6  # the rerun embeds them all

    (folder / "notes.md").write_text(OSMOSIS)
    index_materials(index, "bio", [folder])
    fake.script(Reply.embedding([[0.0, 1.0]]), endpoint="embeddings")  # another model's size
    with pytest.raises(CourseIndexError, match="2 numbers where this course's vectors have 256"):
        index.embed_missing("bio", embedder)
    assert index.search("bio", "osmosis membrane")[0].citation == "[notes, Osmosis]"
    assert index.embed_missing("bio", embedder).embedded == 1
    assert counts(store) == (5, 5)


def test_a_question_the_endpoint_cannot_embed_is_searched_with_bm25(
    fake: FakeOpenAI, store: SessionStore, tmp_path: Path
) -> None:
    embedder, index = indexed(fake, store, tmp_path / "bio")
    fake.script(Reply.error(503, "overloaded"), endpoint="embeddings")

    assert index.search("bio", QUESTION) == CourseIndex(store).search("bio", QUESTION)
    assert len(embedder.backend.failures) == 1
    # Another model's vectors are not this course's: BM25 alone, no embedding request.
    sent = len(fake.requests_to("embeddings"))
    other = CourseIndex(store, embeddings(fake, "other-model"))
    assert other.search("bio", QUESTION) == CourseIndex(store).search("bio", QUESTION)
    assert len(fake.requests_to("embeddings")) == sent


def test_the_tutors_grounded_turn_searches_with_fused_retrieval(
    fake: FakeOpenAI, store: SessionStore, tmp_path: Path
) -> None:
    from pedrag.runtime.turn.tutor import Tutor
    from tests.runtime.test_grounding import CHLOROPHYLL, CURRICULUM
    from tests.runtime.test_tutor_failures import scripted
    from tests.runtime.tutor_fixtures import shipped

    _, index = indexed(fake, store, tmp_path / "bio", course="bio_101")
    curriculum = tmp_path / "biology.yaml"
    curriculum.write_text(CURRICULUM.format(course="bio_101"), "utf-8")
    verdict = {"verdict": "allow", "rule_id": "within-contract", "reason": "Supported and cited."}
    fake.always(
        scripted(
            {
                "actor": lambda request: Reply.text(f'"{CHLOROPHYLL}" [slides 4, p. 2] Why green?'),
                "judge": lambda request: Reply.json(verdict),
            }
        )
    )
    settings = OpenAISettings(
        base_url=fake.base_url, api_key="t", embedding_model=MODEL, retries=0, backoff_s=0
    )
    tutor = Tutor(shipped(), OpenAIBackend(settings, sleep=lambda s: None), curriculum, store)
    session = tutor.start("socratic", exercise="gas_in", seed=3)
    result = tutor.turn(session, QUESTION)

    asked = [r for r in fake.requests_to("embeddings") if r.role == "actor"]
    assert [r["input"] for r in asked] == [[QUESTION]] and asked[0].model == MODEL
    shown = result.audit["grounding"]["shown"]
    assert shown[0]["citation"] == "[slides 4, p. 2]" and shown[0]["found_by"] == "both"
    assert all(p.supports for p in index.search("bio_101", QUESTION, limit=len(shown)))
    assert result.audit["grounding"]["cited"] == ["[slides 4, p. 2]"]
    assert not result.fallback and "carbon dioxide" not in result.tutor.lower()


# -- pedrag index --endpoint ---------------------------------------------------------------


def test_pedrag_index_embeds_with_an_endpoint_and_not_again_when_nothing_changed(
    fake: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_course(tmp_path / "bio")
    argv = ["index", str(folder), "--course", "bio", "--db", str(tmp_path / "db.sqlite")]
    endpoint = ["--endpoint", fake.base_url, "--embedding-model", MODEL]

    assert main([*argv, *endpoint]) == 0
    first = capsys.readouterr().out
    assert main([*argv, *endpoint, "--format", "json"]) == 0
    second = capsys.readouterr().out
    search = [*argv[2:], *endpoint, "--search", MISSPELT]
    assert main(["index", *search]) == 0
    found = capsys.readouterr().out

    assert f"vectors: 6 passages embedded with {MODEL} at {fake.base_url}, 0 without" in first
    assert '"vectors": {\n    "model": "trigram-embed",\n    "embedded": 0' in second
    assert len(embedded_texts(fake)) == 6 + 1  # the passages once, then the --search question
    assert found.splitlines()[0].startswith("[handout, Respiration]")
    assert "(weak)  found by vector" in found.splitlines()[0]
    assert main([*argv, "--list"]) == 0
    listed = capsys.readouterr().out
    assert f"vectors: 6 of 6 passages embedded with {MODEL} (" in listed
    assert main([*argv, "--list", "--format", "json"]) == 0
    (count,) = json.loads(capsys.readouterr().out)["vector_counts"]
    assert count["model"] == MODEL and count["passages"] == 6 and count["dimension"] > 0


def test_pedrag_index_with_a_failing_endpoint_keeps_bm25_and_exits_1(
    fake: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_course(tmp_path / "bio")
    db = str(tmp_path / "db.sqlite")
    fake.script(Reply.error(500, "out of memory"), endpoint="embeddings")  # the health check
    argv = ["index", str(folder), "--course", "bio", "--db", db, "--endpoint", fake.base_url]

    assert main([*argv, "--embedding-model", MODEL]) == 1
    out, err = capsys.readouterr()
    assert "3 files, 3 (re)indexed" in out
    assert "failed an embedding request (HTTP 500): out of memory" in err
    assert "full-text (BM25) index of course bio is complete and kept" in err
    assert main(["index", "--course", "bio", "--db", db, "--search", QUESTION]) == 0
    assert capsys.readouterr().out.startswith("[slides 4, p. 2]")

    assert main([*argv, "--embedding-model", "unknown-model"]) == 1
    assert "does not serve the embedding model 'unknown-model'" in capsys.readouterr().err
    assert main([*argv, "--embedding-model", MODEL]) == 0  # the rerun embeds them
    assert "vectors: 6 passages embedded" in capsys.readouterr().out


def test_pedrag_index_endpoint_usage_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    argv = ["index", "--course", "bio", "--db", str(tmp_path / "db.sqlite"), "--list"]

    assert main([*argv, "--offline", "--endpoint", "http://127.0.0.1:9/v1"]) == 2
    assert "--offline contradicts --endpoint" in capsys.readouterr().err
    assert main([*argv, "--embedding-model", "m"]) == 2
    assert "--embedding-model needs an endpoint" in capsys.readouterr().err


# -- without sqlite-vec --------------------------------------------------------------------

_WITHOUT_SQLITE_VEC = """
import sys
sys.modules["sqlite_vec"] = None  # as if not installed
from pedrag.runtime.course.index import CourseIndex, CourseIndexError
from pedrag.runtime.store.sqlite_driver import sqlite_dbapi, vectors_unavailable
from pedrag.runtime.store.session_store import SessionStore

class Words:
    model = sys.argv[2]
    def embed(self, texts):
        return [[1.0, 0.0] for _ in texts]

print(sqlite_dbapi().__name__)
print(vectors_unavailable())
with SessionStore(sys.argv[1]) as store:
    index = CourseIndex(store, Words())
    print(index.search("bio", "Is chlorophyll the thing that catches the light?")[0].found_by)
    for action in (lambda: index.embed_missing("bio", Words()),
                   lambda: index.remove_document("bio", "notes.md")):
        try:
            action()
            print("no error")
        except CourseIndexError as error:
            print(error)
"""


def test_without_sqlite_vec_search_is_bm25_and_vectors_say_what_to_install(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    db = tmp_path / "db.sqlite"
    with SessionStore(str(db)) as store:
        indexed(fake, store, tmp_path / "bio")
    run = subprocess.run(
        [sys.executable, "-c", _WITHOUT_SQLITE_VEC, str(db), MODEL],
        capture_output=True,
        text=True,
        check=True,
    )
    module, problem, found_by, embed_error, remove_error = run.stdout.splitlines()

    assert module == "sqlite3"
    assert (
        problem
        == "sqlite-vec is not installed (pip install 'pedrag[vectors]' adds it and a driver)"
    )
    assert found_by == "bm25"  # the course has vectors; without the extension, BM25 alone
    assert embed_error == f"passage vectors are unavailable: {problem}"
    assert (
        "cannot be loaded here" in remove_error and "'notes.md' cannot be changed" in remove_error
    )


def test_the_driver_is_the_standard_sqlite3_when_it_loads_extensions_else_pysqlite3() -> None:
    import sqlite3

    probe = (
        "import sys; sys.modules['pysqlite3'] = None\n"
        "from pedrag.runtime.store.sqlite_driver import sqlite_dbapi, vectors_unavailable\n"
        "print(sqlite_dbapi().__name__); print(vectors_unavailable())"
    )
    without = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    from pedrag.runtime.store.sqlite_driver import sqlite_dbapi

    if hasattr(sqlite3.Connection, "enable_load_extension"):
        assert sqlite_dbapi() is sqlite3 and without == ["sqlite3", "None"]
    else:
        assert sqlite_dbapi().__name__ == "pysqlite3.dbapi2"
        assert without[0] == "sqlite3"
        assert "cannot load extensions and pysqlite3 is not installed" in without[1]


def test_pedrag_why_retrieves_as_the_tutor_would_with_the_configured_endpoint(
    fake: FakeOpenAI,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = str(tmp_path / "db.sqlite")
    folder = write_course(tmp_path / "bio")
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    monkeypatch.setenv("PEDRAG_EMBEDDING_MODEL", MODEL)
    assert main(["index", str(folder), "--course", "bio", "--db", db]) == 0
    socratic = str(Path(__file__).resolve().parents[2] / "theories" / "socratic.yaml")
    why = ["why", socratic, "--state", "intent=question", "--course", "bio", "--db", db]
    capsys.readouterr()

    assert main([*why, "--question", QUESTION]) == 0
    fused = capsys.readouterr().out
    monkeypatch.setenv("PEDRAG_LLM", "offline")
    assert main([*why, "--question", QUESTION]) == 0
    offline = capsys.readouterr().out

    assert f"searched: BM25 fused with the {MODEL} vectors" in fused
    assert "shown [slides 4, p. 2]  covers 67%, found by both: Chlorophyll is" in fused
    assert "searched:" not in offline and "shown [slides 4, p. 2]  covers 67%: Chl" in offline
