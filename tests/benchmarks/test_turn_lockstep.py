"""`benchmarks/turn_lockstep.py` leaves no `.turn-bench-*` store folder in the trees it
measures, however the run ends: a tree's loop failing, a tree's process killed, Ctrl-C.

Each tree here is a stand-in whose `benchmarks/turn_overhead.py` makes its store folders as
the real `Run` does (in the working folder) and misbehaves as `behaviour.txt` says."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "turn_lockstep.py"

FAKE_RUN = """
import os, shutil, signal, tempfile, time
from pathlib import Path

BEHAVIOUR = (Path(__file__).parent / "behaviour.txt").read_text().split()


class _Backend:
    seconds = 0.0


class _Store:
    def close(self):
        pass


class Run:
    def __init__(self, kind, theories):
        self.backend, self.store = _Backend(), _Store()
        self.folder = None
        if kind != "memory":
            self.folder = tempfile.mkdtemp(prefix=".turn-bench-", dir=Path.cwd())
            if "stall" in BEHAVIOUR:  # the real Run makes its store after its folder
                time.sleep(float(BEHAVIOUR[BEHAVIOUR.index("stall") + 1]))

    def turn(self, index, message):
        what, at = BEHAVIOUR[0], int(BEHAVIOUR[1])
        if index == at and what == "fail":
            raise RuntimeError("this tree's turn failed")
        if index == at and what == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if what == "slow":
            time.sleep(0.01)

    def result(self):
        shutil.rmtree(self.folder, ignore_errors=True) if self.folder else None
        return {"turns": 1, "median_ms": 1.0, "p99_ms": 1.0}
"""


def _tree(parent: Path, name: str, behaviour: str) -> Path:
    tree = parent / name
    (tree / "benchmarks").mkdir(parents=True)
    (tree / "benchmarks" / "turn_overhead.py").write_text(FAKE_RUN, "utf-8")
    (tree / "benchmarks" / "behaviour.txt").write_text(behaviour, "utf-8")
    (tree / "pedrag").symlink_to(ROOT / "pedrag")  # this checkout's pedrag, from the tree
    return tree


def _left(*trees: Path) -> list[Path]:
    return [folder for tree in trees for folder in tree.glob(".turn-bench-*")]


def _lockstep() -> ModuleType:
    spec = importlib.util.spec_from_file_location("turn_lockstep", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_finished_run_leaves_no_store_folder(tmp_path: Path) -> None:
    trees = [_tree(tmp_path, "old", "none 0"), _tree(tmp_path, "new", "none 0")]
    results = _lockstep().lockstep(trees, 3)
    assert set(results) == {"old", "new"} and len(results["old"]) == 3
    assert _left(*trees) == []


@pytest.mark.parametrize("behaviour", ["fail 3", "kill 3"])
def test_a_tree_whose_loop_stops_leaves_no_store_folder_in_either_tree(
    tmp_path: Path, behaviour: str
) -> None:
    trees = [_tree(tmp_path, "old", "none 0"), _tree(tmp_path, "new", behaviour)]
    with pytest.raises(RuntimeError, match="stopped at turn 3"):
        _lockstep().lockstep(trees, 100)
    assert _left(*trees) == []


def _as_a_terminal_job() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


# "stall": Ctrl-C while a tree's run is still making its store, its folder made: the folder
# was left behind (its run not yet recorded for removal), seen in a full-suite run under load.
@pytest.mark.parametrize("behaviour", ["slow 0", "slow 0 stall 2"])
def test_ctrl_c_leaves_no_store_folder(tmp_path: Path, behaviour: str) -> None:
    trees = [_tree(tmp_path, "old", behaviour), _tree(tmp_path, "new", behaviour)]
    run = subprocess.Popen(
        [sys.executable, str(SCRIPT), *map(str, trees), "--turns", "100000"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        # and, as a terminal's job, with Ctrl-C's default action and SIGINT not blocked: a
        # process that runs the whole suite may hand its children another disposition or mask
        preexec_fn=_as_a_terminal_job,
    )
    try:
        for _ in range(6000):  # until both trees' loops have made their stores
            if len(_left(*trees)) == 4 or run.poll() is not None:
                break
            time.sleep(0.01)
        assert len(_left(*trees)) == 4 and run.poll() is None
        os.killpg(run.pid, signal.SIGINT)  # what Ctrl-C sends: every process of the job
        assert run.wait(timeout=120) != 0
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    assert _left(*trees) == []
