"""The benchmarks that time a pedrag process keep compiled modules between their children, as
an installed pedrag does, through one helper (`benchmarks/compiled_modules.py`), with
`--compile-each-run` for the old behaviour: the inherited `PYTHONDONTWRITEBYTECODE`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from compiled_modules import child_environment, kept_for_the_run  # noqa: E402

# Benchmarks that start Python children but time no process start, and why. (service_load.py
# starts `pedrag serve` through tests/service/servers.py and warms its workers before timing.)
UNTIMED_STARTS = {
    "reveal_cpu.py": "each child times `Detector.check` calls after its imports",
    "turn_lockstep.py": "each tree's child times turns after its imports and 50 warm-up turns",
    "service_parts.py": "the uvicorn child's CPU is read after its start and warm-up requests",
}


def _import_in_child(folder: Path, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-c", "import probe_module"], cwd=folder, env=env, check=True)


def test_children_keep_compiled_modules_in_the_runs_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    (tmp_path / "probe_module.py").write_text("VALUE = 1\n", "utf-8")
    with kept_for_the_run() as folder:
        assert folder is not None
        env = child_environment(EXTRA="yes")
        assert "PYTHONDONTWRITEBYTECODE" not in env and env["EXTRA"] == "yes"
        _import_in_child(tmp_path, env)
        assert list(Path(folder).rglob("probe_module*.pyc"))
    assert not Path(folder).exists()
    assert not list(tmp_path.rglob("*.pyc"))  # the source tree is not touched
    assert child_environment()["PYTHONDONTWRITEBYTECODE"] == "1"  # the run is over


def test_compile_each_run_keeps_the_inherited_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    (tmp_path / "probe_module.py").write_text("VALUE = 1\n", "utf-8")
    with kept_for_the_run(compile_each_run=True) as folder:
        assert folder is None
        env = child_environment()
        assert env["PYTHONDONTWRITEBYTECODE"] == "1" and "PYTHONPYCACHEPREFIX" not in env
        _import_in_child(tmp_path, env)
    assert not list(tmp_path.rglob("*.pyc"))


def test_every_benchmark_that_times_a_python_child_uses_the_helper() -> None:
    starting = {
        path.name
        for path in BENCHMARKS.glob("*.py")
        if "sys.executable" in (text := path.read_text("utf-8")) and "subprocess" in text
    }
    assert {"check_scaling.py", "conflict_heavy.py", "recheck.py"} <= starting
    assert set(UNTIMED_STARTS) <= starting  # an exemption names a benchmark that starts one
    missing = [
        name
        for name in sorted(starting - set(UNTIMED_STARTS))
        if not all(
            part in (BENCHMARKS / name).read_text("utf-8")
            for part in ("child_environment(", "add_flag(parser)")
        )
    ]
    assert missing == []
