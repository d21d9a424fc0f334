"""`pedrag index --endpoint` against a real llama.cpp server in embedding mode (llama-cpp-python
with Gemma 3 270M, the optional extra `local`): a chat model has no pooling, so the server
answers one vector per token; pedrag says so plainly, exits 1 and keeps the BM25 index."""

from __future__ import annotations

from pathlib import Path

import pytest

from pedrag.cli import main
from tests import local_llama
from tests.course_folder import write_course
from tests.runtime.test_course_vectors import QUESTION

pytestmark = pytest.mark.skipif(
    local_llama.missing_reason() is not None, reason=str(local_llama.missing_reason())
)


def test_a_real_server_answering_per_token_vectors_is_reported_and_bm25_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_course(tmp_path / "bio")
    db = str(tmp_path / "db.sqlite")
    with local_llama.local_server(n_ctx=512, embedding=True) as base_url:
        argv = ["index", str(folder), "--course", "bio", "--db", db, "--endpoint", base_url]
        status = main([*argv, "--embedding-model", local_llama.MODEL_ALIAS])
    out, err = capsys.readouterr()

    assert status == 1
    assert "3 files, 3 (re)indexed" in out
    assert "other than one list of numbers per text (one vector per token?" in err
    assert "full-text (BM25) index of course bio is complete and kept" in err
    assert main(["index", "--course", "bio", "--db", db, "--search", QUESTION]) == 0
    assert capsys.readouterr().out.startswith("[slides 4, p. 2]")
