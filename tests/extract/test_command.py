"""`pedrag extract` on the command line: usage errors, a full run on the shipped corpus."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pedrag.cli import main
from tests.extract import scripted
from tests.fake_openai import FakeOpenAI, Reply

CORPUS = Path(__file__).parents[1] / "data" / "corpus"
MENO_FRAGMENT = {
    "metrics": {
        "false_confidence": {
            "type": "bool",
            "source": "inferred",
            "description": "The learner thinks they know but does not.",
        }
    },
    "actions": {
        "expose_contradiction": {
            "rung": "H3",
            "priority": 8,
            "description": "Ask questions that lead the learner to see their answer cannot be right.",
        }
    },
    "rules": [
        {"id": "shake_false_confidence", "when": "false_confidence", "then": "expose_contradiction"}
    ],
    "principles": [{"id": "elicit_not_tell", "text": "Elicit the learner's opinion; do not tell."}],
}


@pytest.fixture
def endpoint(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("PEDRAG_LLM_RETRIES", "0")
    monkeypatch.setenv("PEDRAG_MODEL", "gpt-4o-mini")
    # List prices are OpenAI's own API's; at another URL a price is the user's to configure.
    monkeypatch.setenv("PEDRAG_PRICE_EXTRACTOR", "0.00015,0.0006")
    return fake_openai


def test_without_an_endpoint_it_exits_2_and_says_why(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PEDRAG_LLM"):
        monkeypatch.delenv(name, raising=False)

    code = main(
        ["extract", str(CORPUS / "meno.txt"), "-o", str(tmp_path / "x.yaml"), "--theory-id", "x"]
    )

    assert code == 2
    assert "needs an OpenAI-compatible endpoint; set OPENAI_BASE_URL" in capsys.readouterr().err
    assert not (tmp_path / "x.yaml").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--theory-id", "Meno"], "must be lower_snake_case"),
        (["--theory-id", "m", "--overlap", "5000"], "--overlap must be"),
        (["--theory-id", "m", "--merge-threshold", "1.5"], "--merge-threshold"),
    ],
)
def test_bad_options_exit_2(
    endpoint: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    options: list[str],
    message: str,
) -> None:
    code = main(["extract", str(CORPUS / "meno.txt"), "-o", str(tmp_path / "x.yaml"), *options])

    assert code == 2 and message in capsys.readouterr().err
    assert not endpoint.requests


def test_missing_corpus_exits_2(
    endpoint: FakeOpenAI, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(
        [
            "extract",
            str(tmp_path / "absent.pdf"),
            "-o",
            str(tmp_path / "x.yaml"),
            "--theory-id",
            "x",
        ]
    )

    assert code == 2 and "no such file" in capsys.readouterr().err


def test_full_run_on_the_shipped_corpus(
    endpoint: FakeOpenAI, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    endpoint.always(MENO_FRAGMENT)
    output = tmp_path / "theories" / "meno.yaml"
    argv = [
        "extract",
        str(CORPUS / "meno.txt"),
        str(CORPUS / "meno.pdf"),
        "-o",
        str(output),
        "--theory-id",
        "meno",
        "--chunk-tokens",
        "600",
        "--overlap",
        "50",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--quiet",
    ]

    assert main(argv) == 0
    out = capsys.readouterr().out
    data = yaml.safe_load(output.read_text(encoding="utf-8"))
    documents = {Path(s["document"]).name for s in data["theory"]["sources"]}
    assert documents == {"meno.txt", "meno.pdf"}
    assert {s["page"] for s in data["theory"]["sources"] if s["document"].endswith(".pdf")} == {
        1,
        2,
    }
    assert len(data["rules"]) == 1 and len(data["rules"][0]["source"]) == len(
        data["theory"]["sources"]
    )
    assert "checks clean after 0 repair rounds" in out
    assert "cost: $" in out and "model calls" in out
    chunks = len(endpoint.requests_to("chat"))

    assert main(argv) == 0
    assert len(endpoint.requests_to("chat")) == chunks
    assert f"cache: {chunks} hits, 0 misses" in capsys.readouterr().out


def test_errors_left_after_repair_exit_1(
    endpoint: FakeOpenAI, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    scripted.install(endpoint)
    endpoint.always(
        lambda r: {} if scripted.schema_name(r) == "theory_repair" else scripted.answer(r)
    )
    corpus = scripted.write_corpus(tmp_path / "corpus")

    code = main(
        [
            "extract",
            *map(str, corpus),
            "-o",
            str(tmp_path / "x.yaml"),
            "--theory-id",
            "x",
            "--rounds",
            "1",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--quiet",
        ]
    )

    assert code == 1
    assert "1 errors remain after 1 repair rounds" in capsys.readouterr().out
    assert (tmp_path / "x.yaml").exists()


def test_endpoint_failure_exits_1(
    endpoint: FakeOpenAI, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    endpoint.always(Reply.error(503, "down"))

    code = main(
        [
            "extract",
            str(CORPUS / "meno.txt"),
            "-o",
            str(tmp_path / "x.yaml"),
            "--theory-id",
            "x",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--quiet",
        ]
    )

    assert code == 1
    assert "HTTP 503" in capsys.readouterr().err


def extract_args(tmp_path: Path, *corpus: Path | str, output: Path | None = None) -> list[str]:
    return [
        "extract",
        *map(str, corpus),
        "-o",
        str(output or tmp_path / "x.yaml"),
        "--theory-id",
        "x",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--quiet",
    ]


def test_a_corpus_without_text_exits_2_naming_the_file(
    endpoint: FakeOpenAI, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "empty.txt").write_text("  \n", encoding="utf-8")

    code = main(extract_args(tmp_path, tmp_path / "empty.txt"))

    captured = capsys.readouterr()
    assert code == 2
    assert "no text to extract from" in captured.err and "empty.txt" in captured.err
    assert "OCR" not in captured.err and "cost:" not in captured.out
    assert not endpoint.requests


def test_an_empty_file_beside_others_is_noted_and_skipped(
    endpoint: FakeOpenAI, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    endpoint.always(MENO_FRAGMENT)
    (tmp_path / "empty.md").write_text("", encoding="utf-8")

    code = main(extract_args(tmp_path, tmp_path / "empty.md", CORPUS / "meno.txt"))

    assert code == 0
    assert "empty.md: no text, skipped" in capsys.readouterr().err


def test_an_unreadable_pdf_exits_2_before_any_model_call(
    endpoint: FakeOpenAI, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\n garbage")

    code = main(extract_args(tmp_path, tmp_path / "broken.pdf"))

    captured = capsys.readouterr()
    assert code == 2 and "broken.pdf: not a readable PDF" in captured.err
    assert "EOF marker" not in captured.err and not endpoint.requests


@pytest.mark.parametrize("output", ["folder", "file/x.yaml"])
def test_an_output_path_that_cannot_be_written_exits_2_before_any_model_call(
    endpoint: FakeOpenAI, capsys: pytest.CaptureFixture[str], tmp_path: Path, output: str
) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("", encoding="utf-8")

    code = main(extract_args(tmp_path, CORPUS / "meno.txt", output=tmp_path / output))

    assert code == 2 and "pedrag extract: " in capsys.readouterr().err
    assert not endpoint.requests


def test_a_rejected_key_at_the_first_chunk_does_not_promise_a_resume(
    endpoint: FakeOpenAI, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    endpoint.always(Reply.error(401, "Incorrect API key provided"))

    code = main(extract_args(tmp_path, CORPUS / "meno.txt"))

    err = capsys.readouterr().err
    assert code == 1
    assert "HTTP 401" in err and "check OPENAI_API_KEY" in err
    assert "nothing was extracted yet" in err and "resume" not in err


def test_a_rerun_says_it_resumes(
    endpoint: FakeOpenAI, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    endpoint.script(MENO_FRAGMENT, Reply.error(503, "down"))
    endpoint.always(MENO_FRAGMENT)
    argv = [*extract_args(tmp_path, CORPUS / "meno.txt"), "--chunk-tokens", "600"]
    argv += ["--overlap", "50"]

    assert main(argv) == 1
    assert "the 1 chunks before it are cached" in capsys.readouterr().err

    assert main(argv) == 0
    assert "resuming: 1 of 2 chunks were answered by an earlier run" in capsys.readouterr().err


def test_progress_bars_are_drawn_only_on_a_terminal(
    endpoint: FakeOpenAI, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Off a terminal rich would print each bar's last frame (with its elapsed time) into the
    # log; `pedrag evaluate` draws its bar only on a terminal too.
    endpoint.always(MENO_FRAGMENT)
    argv = [arg for arg in extract_args(tmp_path, CORPUS / "meno.txt") if arg != "--quiet"]

    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "extracting" not in err and "━" not in err
