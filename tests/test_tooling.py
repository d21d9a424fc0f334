"""The project's own lint and type gates run inside the test command, so CI cannot skip them."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STAGES = {
    "kernel": "kernel",
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


def test_mypy_type_checks_the_package_plainly(tmp_path: Path) -> None:
    """Plain `mypy` from the checkout: pyproject names the files, the pedrag/ symlinks give
    every stage its one import name, so no helper tree is needed."""
    result = subprocess.run(
        [_tool("mypy"), "--cache-dir", str(tmp_path / "cache")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr
    assert "Success" in result.stdout


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def test_import_linter_contracts_hold_plainly() -> None:
    """pyproject's [tool.importlinter], the one statement of the layer rule: stages import only
    downwards, the evaluator imports nothing of the tutor it judges (issue 28), the policy core
    reaches nothing that carries student text, and each runtime package keeps its boundary."""
    result = subprocess.run(
        [_tool("lint-imports"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr
    assert f"{len(_contracts())} kept, 0 broken" in result.stdout


def test_every_runtime_package_has_a_boundary_contract() -> None:
    """A new runtime package gets its own contract: each but the service is the source of a
    `forbidden` one, and every one of them is forbidden to import the service (the top)."""
    packages = sorted(
        f"pedrag.runtime.{path.name}"
        for path in (ROOT / "runtime").iterdir()
        if (path / "__init__.py").is_file()
    )
    forbidden = [c for c in _contracts() if c["type"] == "forbidden"]
    sources = {str(module) for c in forbidden for module in c["source_modules"]}  # type: ignore[attr-defined]
    below_service = {
        str(module)
        for c in forbidden
        if "pedrag.runtime.service" in c["forbidden_modules"]  # type: ignore[operator]
        for module in c["source_modules"]  # type: ignore[attr-defined]
    }
    others = [p for p in packages if p != "pedrag.runtime.service"]
    assert "pedrag.runtime.service" in packages and len(others) >= 7
    assert [p for p in others if p not in sources] == []
    assert [p for p in others if p not in below_service] == []


def test_every_stage_folder_is_linked_into_the_package() -> None:
    for name in STAGES:
        link = ROOT / "pedrag" / name
        assert link.is_symlink(), f"pedrag/{name} must be a symlink to ../{name}"
        assert link.resolve() == (ROOT / name).resolve()


def test_every_module_has_exactly_one_import_name() -> None:
    """Each module imports as pedrag.<stage>.<module>; the bare folder name is refused even
    with the checkout root on sys.path (as pytest puts it), so no class exists twice."""
    stages = [s for s in STAGES if s != "theories"]
    modules = [path for stage in stages for path in (ROOT / stage).rglob("*.py")]
    script = """
import importlib, pkgutil, sys
sys.path.insert(0, ".")
stages = sys.argv[1].split(",")
reachable = []
for stage in stages:
    package = importlib.import_module("pedrag." + stage)
    walked = pkgutil.walk_packages(package.__path__, "pedrag." + stage + ".")
    names = [stage] + [m.name.removeprefix("pedrag.") for m in walked]
    for name in names:
        for candidate in ("pedrag." + name, name):
            try:
                importlib.import_module(candidate)
            except ImportError:
                continue
            reachable.append(candidate)
bad = [n for n in reachable if not n.startswith("pedrag.")]
print(len(reachable), bad)
sys.exit(1 if bad or len(reachable) != int(sys.argv[2]) else 0)
"""
    result = subprocess.run(
        [sys.executable, "-c", script, ",".join(stages), str(len(modules))],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
