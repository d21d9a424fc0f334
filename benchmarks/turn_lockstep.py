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
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

STORES = ("normal", "full", "memory")
WARM_UP = 50  # turn_overhead.Run leaves out the first 50 turns


def worker() -> int:
    """One tree's loop (its ``turn_overhead.Run`` on each store): a turn index per input line,
    ``ok`` once all stores ran it; ``-1`` prints the results."""
    sys.path.insert(0, str(Path.cwd() / "benchmarks"))
    import turn_overhead  # type: ignore[import-not-found]

    from pedrag.runtime.llm.personas import PERSONAS
    from pedrag.runtime.policy.theory_set import TheorySet

    theories = TheorySet.shipped()
    runs = [turn_overhead.Run(kind, theories) for kind in STORES]
    messages = [m for p in PERSONAS.values() for m in p.messages(topic="arithmetic")]
    for line in sys.stdin:
        index = int(line)
        if index < 0:
            break
        for run in runs:
            run.turn(index, messages[index % len(messages)])
        print("ok", flush=True)
    print(json.dumps([run.result() for run in runs]), flush=True)
    return 0


def lockstep(trees: list[Path], turns: int) -> dict[str, list[dict[str, Any]]]:
    """Every tree's results, by tree folder name (each tree's own code, its own process)."""
    processes = [
        subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker"],
            cwd=tree,
            env={**os.environ, "PYTHONPATH": str(tree)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for tree in trees
    ]
    try:
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
        for process in processes:
            if process.poll() is None:
                process.wait(timeout=60)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "trees", nargs="*", type=Path, help="tree folders; the first is the baseline"
    )
    parser.add_argument("--turns", type=int, default=1500)
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker()
    trees = [tree.resolve() for tree in args.trees]
    if len(trees) < 2 or len({tree.name for tree in trees}) != len(trees):
        parser.error("give two or more tree folders, with different names")
    results = lockstep(trees, args.turns)
    if args.format == "json":
        print(json.dumps(results, indent=2))
        return 0
    base = results[trees[0].name]
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
