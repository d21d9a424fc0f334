"""A non-editable install ships the grammar and the theories, and its CLI runs from anywhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_ships_grammar_and_theories_and_checks_them_from_outside_the_tree(
    tmp_path: Path,
) -> None:
    # Build from a copy: setuptools writes build/ and *.egg-info next to the sources.
    source = tmp_path / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git",
            ".venv",
            "build",
            "*.egg-info",
            "__pycache__",
            ".pedrag",
            ".hypothesis",
            "*_cache",
        ),
    )
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(source),
        ],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    wheel = next((tmp_path / "dist").glob("pedrag-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "pedrag/grammar/condition.lark" in names
    assert "pedrag/theories/socratic.yaml" in names
    # The shipped theories' modeline resolves inside the installed package too.
    assert "pedrag/dsl/schemas/theory.schema.json" in names
    assert "pedrag/dsl/schemas/curriculum.schema.json" in names
    assert "pedrag/dsl/parser.py" in names and "pedrag/compiler/driver.py" in names
    assert not any(name.startswith(("dsl/", "compiler/", "runtime/")) for name in names), (
        "no top-level stage packages"
    )

    target = tmp_path / "site"
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, installed.stderr
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    script = (
        "import importlib.resources as r, pedrag, pedrag.dsl.parser as p;"
        f"assert str(pedrag.__file__).startswith({str(target)!r}), pedrag.__file__;"
        "folder = r.files('pedrag.theories');"
        "from pedrag.compiler.driver import check_paths;"
        "import sys; res = check_paths([str(folder)], semantic=False);"
        "print(len(res.files), res.errors); p.parse_condition('x > 1')"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=workdir, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    files, errors = map(int, result.stdout.split())
    assert files >= 2 and errors == 0


def test_every_package_folder_is_listed_for_the_wheel() -> None:
    """setuptools gets an explicit package list (the stage folders are reached through
    symlinks); a package folder missing from it is silently left out of the wheel."""
    import tomllib

    root = Path(__file__).resolve().parent.parent
    listed = set(
        tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = set()
    for init in (root / "pedrag").glob("**/__init__.py"):
        if "__pycache__" not in init.parts:
            found.add(".".join(init.parent.relative_to(root).parts))
    for stage in (
        "compiler",
        "dsl",
        "evaluate",
        "extract",
        "grammar",
        "kernel",
        "runtime",
        "theories",
    ):
        for init in (root / stage).glob("**/__init__.py"):
            if "__pycache__" not in init.parts:
                found.add(".".join(("pedrag", *init.parent.relative_to(root).parts)))
    assert found == listed, (sorted(found - listed), sorted(listed - found))
