"""The project's own lint and type gates run inside the test command, so CI cannot skip them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STAGES = {
    "grammar": "grammar",
    "dsl": "dsl",
    "compiler": "compiler",
    "runtime": "runtime",
    "extract": "extract",
    "evaluate": "evaluate",
    "theories": "theories",
}


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(f"{name} is not installed; install the test extras: pip install '.[test]'")
    return found


def test_ruff_finds_nothing() -> None:
    result = subprocess.run([_tool("ruff"), "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _namespace_tree(tmp_path: Path) -> Path:
    """The `pedrag.*` namespace as a folder tree (symlinks), the shape mypy understands."""
    top = tmp_path / "pedrag"
    top.mkdir()
    for entry in (ROOT / "pedrag").iterdir():
        (top / entry.name).symlink_to(entry)
    for name, folder in STAGES.items():
        if (ROOT / folder).is_dir():
            (top / name).symlink_to(ROOT / folder)
    return top


def test_mypy_type_checks_the_package(tmp_path: Path) -> None:
    top = _namespace_tree(tmp_path)
    result = subprocess.run(
        [
            _tool("mypy"),
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "-p",
            "pedrag",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr
    assert top.exists()


def test_import_linter_contracts_hold(tmp_path: Path) -> None:
    """pyproject's [tool.importlinter]: layers only import downwards, and the policy core
    reaches nothing that carries student text (beside tests/test_architecture.py's own scan)."""
    _namespace_tree(tmp_path)
    result = subprocess.run(
        [_tool("lint-imports"), str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr
    assert "2 kept, 0 broken" in result.stdout
