"""Generated docs and schemas match the code that generates them (no drift)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pedrag.dsl.schema import curriculum_schema, theory_schema

ROOT = Path(__file__).resolve().parent.parent


def test_the_checks_reference_in_theory_format_md_is_current() -> None:
    result = subprocess.run(
        [sys.executable, "docs/gen_checks.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_the_cli_reference_is_current() -> None:
    result = subprocess.run(
        [sys.executable, "docs/gen_cli.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_shipped_json_schemas_match_the_models() -> None:
    assert json.loads((ROOT / "dsl/schemas/theory.schema.json").read_text()) == theory_schema()
    assert (
        json.loads((ROOT / "dsl/schemas/curriculum.schema.json").read_text()) == curriculum_schema()
    )


def test_every_check_in_the_catalog_has_a_failing_fixture() -> None:
    from pedrag.compiler.checks import catalog

    missing = [
        name for name in catalog() if not (ROOT / "tests/data/checks" / f"{name}.yaml").is_file()
    ]
    assert missing == []


def test_shipped_theory_files_point_editors_at_the_schema() -> None:
    for path in sorted((ROOT / "theories").glob("*.yaml")):
        first = path.read_text("utf-8").splitlines()[0]
        assert first.startswith("# yaml-language-server: $schema=../dsl/schemas/"), path.name
        target = first.split("$schema=", 1)[1].strip()
        assert (path.parent / target).is_file(), target


def test_the_readme_example_prints_what_the_readme_shows(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    start = readme.index("# theories/tiny.yaml\n")
    theory = readme[start : readme.index("```", start)]
    shown_start = readme.index("$ pedrag check theories/tiny.yaml\n") + len(
        "$ pedrag check theories/tiny.yaml\n"
    )
    shown = readme[shown_start : readme.index("```", shown_start)].rstrip()
    (tmp_path / "theories").mkdir()
    (tmp_path / "theories" / "tiny.yaml").write_text(theory, "utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "pedrag.cli", "check", "theories/tiny.yaml", "--color", "never"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert result.stdout.rstrip() == shown


def test_the_readme_python_api_runs(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    start = readme.index("```python\n", readme.index("## Python API")) + len("```python\n")
    code = readme[start : readme.index("```", start)]
    (tmp_path / "theories").symlink_to(ROOT / "theories")
    compiled = subprocess.run(
        [
            sys.executable,
            "-m",
            "pedrag.cli",
            "compile",
            "theories/socratic.yaml",
            "-o",
            "socratic.json",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert compiled.returncode == 0, compiled.stderr
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={
            **__import__("os").environ,
            "PEDRAG_DB": str(tmp_path / "s.db"),
            "OPENAI_BASE_URL": "",
        },
    )
    assert result.returncode == 0, result.stderr[-2000:]
    ceiling = result.stdout.split()[-1]  # printed as a rung, as everywhere else: `H2`
    assert ceiling.startswith("H") and int(ceiling[1:]) <= 4  # no solution for a demand
