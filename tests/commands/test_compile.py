"""`pedrag compile`: deterministic bytes, diagnostics and exit 1 on errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from pedrag.cli import main
from pedrag.runtime.policy.compiled import CompiledPolicy

ROOT = Path(__file__).resolve().parents[2]
SOCRATIC = str(ROOT / "theories" / "socratic.yaml")


def test_compile_writes_the_same_bytes_twice(tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["compile", SOCRATIC, "-o", str(first), "--no-semantic"]) == 0
    assert main(["compile", SOCRATIC, "-o", str(second)]) == 0
    assert first.read_bytes() == second.read_bytes()
    policy = CompiledPolicy.load(first)
    assert policy.theory_id == "socratic"


def test_compile_to_stdout(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    assert main(["compile", SOCRATIC, "-o", str(out), "--no-semantic"]) == 0
    capsys.readouterr()
    assert main(["compile", SOCRATIC, "--no-semantic"]) == 0
    assert capsys.readouterr().out == out.read_text()


def test_compile_refuses_a_file_with_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "pedrag: 1\ntheory: {id: bad, name: Bad}\n"
        "metrics:\n  affect: {type: enum, values: [calm, frustrated], source: inferred}\n"
        "actions:\n  a: {rung: H0, priority: 5, description: a}\n"
        "rules:\n  - {id: r, when: affect == frustated, then: a}\n"
    )
    out = tmp_path / "p.json"
    assert main(["compile", str(bad), "-o", str(out), "--no-semantic"]) == 1
    assert not out.exists()
    err = capsys.readouterr().err
    assert "error[unknown-name]" in err and "frustated" in err and "bad.yaml:8" in err


def test_compile_usage_errors_exit_2(tmp_path: Path) -> None:
    assert main(["compile", str(tmp_path / "missing.yaml")]) == 2
    assert main(["compile", str(tmp_path)]) == 2


def test_compile_creates_missing_output_folders(tmp_path: Path) -> None:
    out = tmp_path / "build" / "policies" / "socratic.json"
    assert main(["compile", SOCRATIC, "-o", str(out), "--no-semantic"]) == 0
    assert CompiledPolicy.load(out).theory_id == "socratic"
    assert [p.name for p in out.parent.iterdir()] == ["socratic.json"]  # no temporary left


@pytest.mark.parametrize("where", ["folder", "under_a_file"])
def test_compile_to_an_unwritable_path_exits_2_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    (tmp_path / "plain").write_text("not a folder")
    target = tmp_path if where == "folder" else tmp_path / "plain" / "policy.json"
    assert main(["compile", SOCRATIC, "-o", str(target), "--no-semantic"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pedrag compile: ") and "Traceback" not in err
    assert (tmp_path / "plain").read_text() == "not a folder"
