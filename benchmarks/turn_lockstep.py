"""Two or more trees' turn loops in lockstep: the same turns, each turn run in every tree's
process in turn, so a busy machine slows them alike and their ratio is honest.

Benchmark, beside ``turn_overhead.py`` (whose ``Run`` each tree's process uses: its own copy,
from its own tree). Takes the trees (folders holding a checkout of pedrag, the first is the
baseline) and a number of turns; gives each tree's median and p99 CPU per turn on the SQLite
store at ``NORMAL`` and ``FULL`` and in memory, and each median's ratio to the baseline's.

Why: on a shared 2-core machine the load moves by a factor of two within minutes, so two
trees measured one after the other (even alternated run by run) differ by more than a change
worth measuring. In lockstep each turn index runs in every tree before the next one starts
(the order flips every turn), so both see the same load. Absolute figures are higher than a
tree's alone (the processes evict each other's caches); compare the ratios.

    python benchmarks/turn_lockstep.py OLD_TREE NEW_TREE [--turns 1500] [--format json]
    python benchmarks/turn_lockstep.py OLD_TREE NEW_TREE --stages [--store normal|full|memory]

Each tree's SQLite stores live in ``.turn-bench-*`` folders its process makes in the tree
(``turn_overhead.Run``: on the tree's disk, where fsync costs what it costs); they are removed
when the run ends however it ends (a tree's loop failing, Ctrl-C): each process removes its
own, and this script removes those a process it started named and left (one killed).

``--stages`` runs one store per tree with ``turn_overhead.py``'s stage timers instead: each
stage's CPU per turn (and the detector's, the grader's and ``save_turn``'s inside them) in
every tree, with the ratio to the baseline's, the same turns under the same load (the stage
table of two trees measured one after the other moves with the load by more than a change
worth measuring).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

STORES = ("normal", "full", "memory")
WARM_UP = 50  # turn_overhead.Run leaves out the first 50 turns


def worker(stages_store: str | None = None) -> int:
    """One tree's loop (its ``turn_overhead.Run`` on each store, or on ``stages_store`` alone
    with the stage timers): a turn index per input line, ``ok`` once all stores ran it; ``-1``
    prints the results."""
    sys.path.insert(0, str(Path.cwd() / "benchmarks"))
    import turn_overhead  # type: ignore[import-not-found]

    from pedrag.runtime.llm.personas import PERSONAS
    from pedrag.runtime.policy.theory_set import TheorySet

    theories = TheorySet.shipped()
    timer = _stage_timer_class()() if stages_store else None
    kinds = (stages_store,) if stages_store else STORES
    runs: list[Any] = []
    try:
        # Ctrl-C is held while the stores are made: a run makes its folder, then its store,
        # and one arriving in between left the folder behind, its run not yet recorded for
        # removal (seen under load). A held Ctrl-C ends the loop once every run is recorded.
        held = _hold_ctrl_c()
        try:
            for kind in kinds:
                runs.append(turn_overhead.Run(kind, theories))
            # The folders this process made, for the parent to remove should it die first.
            made = [f for run in runs if (f := getattr(run, "folder", None))]
            print(json.dumps(made), flush=True)
        finally:
            _release(held)
        if timer is not None:
            timer.time_store(runs[0])
        messages = [m for p in PERSONAS.values() for m in p.messages(topic="arithmetic")]
        backend = 0.0
        for line in sys.stdin:
            index = int(line)
            if index < 0:
                break
            if timer is not None and index == WARM_UP:
                timer.spent.clear()
                backend = 0.0
            for run in runs:
                run.turn(index, messages[index % len(messages)])
                backend += run.backend.seconds
            print("ok", flush=True)
        results = [run.result() for run in runs]
    finally:
        for run in runs:  # a failure, Ctrl-C or the parent gone: `result` never ran
            _remove_store_folder(run)
    if timer is not None:
        turns = results[0]["turns"]
        timer.close()
        stages = {"offline backend (excluded)": round(backend * 1000 / turns, 3)}
        print(json.dumps([{**stages, **timer.per_turn(turns)}]), flush=True)
        return 0
    print(json.dumps(results), flush=True)
    return 0


def _hold_ctrl_c() -> set[signal.Signals] | None:
    """SIGINT blocked (where the platform can), the signal mask before returned."""
    if not hasattr(signal, "pthread_sigmask"):
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def _release(held: set[signal.Signals] | None) -> None:
    """The mask as it was: a Ctrl-C that came meanwhile is raised now."""
    if held is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _remove_store_folder(run: Any) -> None:
    """Close a run's store and remove its folder (a tree's own `turn_overhead.Run`, perhaps
    older than this script: only `folder` and `store` are relied on)."""
    folder = getattr(run, "folder", None)
    if folder is None or not Path(folder).exists():
        return
    try:
        run.store.close()
    except Exception:  # already closed, or half made: the folder goes all the same
        pass
    shutil.rmtree(folder, ignore_errors=True)


def _stage_timer_class() -> Any:
    """``StageTimer`` of this script's own ``turn_overhead.py`` (a baseline tree may predate
    it), wrapping the stages of the tree the worker runs (its ``pedrag`` is first on the
    path)."""
    spec = importlib.util.spec_from_file_location(
        "lockstep_turn_overhead", Path(__file__).resolve().parent / "turn_overhead.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.StageTimer


def lockstep(
    trees: list[Path], turns: int, stages_store: str | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Every tree's results, by tree folder name (each tree's own code, its own process)."""
    extra = ["--stages", "--store", stages_store] if stages_store else []
    processes = [
        subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", *extra],
            cwd=tree,
            env={**os.environ, "PYTHONPATH": str(tree)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for tree in trees
    ]
    folders: list[str] = []
    try:
        for tree, process in zip(trees, processes, strict=True):
            assert process.stdout is not None
            made = process.stdout.readline()
            if not made:
                raise RuntimeError(f"{tree.name}'s loop did not start")
            folders += json.loads(made)
        for index in range(turns + WARM_UP):
            for process in processes if index % 2 == 0 else processes[::-1]:
                assert process.stdin is not None and process.stdout is not None
                process.stdin.write(f"{index}\n")
                process.stdin.flush()
                if process.stdout.readline().strip() != "ok":
                    raise RuntimeError(f"a tree's loop stopped at turn {index}")
        results: dict[str, list[dict[str, Any]]] = {}
        for tree, process in zip(trees, processes, strict=True):
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write("-1\n")
            process.stdin.flush()
            results[tree.name] = json.loads(process.stdout.readline())
        return results
    finally:
        _stop(processes)
        for folder in folders:  # a process killed before it could remove its own
            shutil.rmtree(folder, ignore_errors=True)


def _stop(processes: list[subprocess.Popen[str]]) -> None:
    """End every tree's process: its input closed (a loop waiting for a turn then ends and
    removes its folders), killed if they have not all ended within a minute. One minute for
    all of them, not each: waited for in turn, two stuck loops kept a Ctrl-C'd run alive for
    two minutes."""
    for process in processes:
        try:
            if process.stdin is not None:
                process.stdin.close()
        except OSError:  # gone already: nothing to tell it
            pass
    deadline = time.monotonic() + 60
    for process in processes:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "trees", nargs="*", type=Path, help="tree folders; the first is the baseline"
    )
    parser.add_argument("--turns", type=int, default=1500)
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--stages", action="store_true", help="CPU per pipeline stage, one store per tree"
    )
    parser.add_argument("--store", choices=STORES, default="normal", help="the store of --stages")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.store if args.stages else None)
    trees = [tree.resolve() for tree in args.trees]
    if len(trees) < 2 or len({tree.name for tree in trees}) != len(trees):
        parser.error("give two or more tree folders, with different names")
    results = lockstep(trees, args.turns, args.store if args.stages else None)
    if args.format == "json":
        print(json.dumps(results, indent=2))
        return 0
    base = results[trees[0].name]
    if args.stages:
        print(f"CPU per turn by stage, {args.turns} turns in lockstep, store {args.store}:")
        names = [tree.name for tree in trees]
        print(f"  {'':44}" + "".join(f"{name:>12}" for name in names) + "  ratio")
        for label, old in base[0].items():
            figures = [results[name][0].get(label, 0.0) for name in names]
            ratio = f"{figures[-1] / old:.3f}x" if old else "-"
            print(f"  {label:44}" + "".join(f"{ms:9.3f} ms" for ms in figures) + f"  {ratio}")
        return 0
    print(f"CPU per turn, {args.turns} turns in lockstep (offline backend subtracted):")
    for position, store in enumerate(STORES):
        print(f"  {store}:")
        for name, rows in results.items():
            row = rows[position]
            ratio = row["median_ms"] / base[position]["median_ms"]
            print(
                f"    {name:>12}: median {row['median_ms']:.3f} ms, p99 {row['p99_ms']:.3f} ms,"
                f" {ratio:.3f}x the baseline; goal median < 2 ms: "
                + ("met" if row["median_ms"] < 2.0 else "NOT met")
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
