"""Start-up of the turn path: import time and first-turn latency, compiled policy vs theory file.

Each figure is measured in fresh processes (the median of ``--runs``): the time to import what
a tutor needs, to build a ``Tutor`` and start a session, and to run the first offline turn, and
which heavy libraries ended up imported. The baseline is the path every earlier release took
(and the YAML path still takes): load the theory file (YAML, pydantic, Lark), resolve and lower
it in-process. The compiled path runs from `pedrag compile` output alone. Compiled modules are
kept between the processes, as an installed pedrag keeps them (`benchmarks/compiled_modules.py`;
`--compile-each-run`: each process compiles pedrag from source where the environment says
`PYTHONDONTWRITEBYTECODE`).

    python benchmarks/turn_path_imports.py [--runs 7] [--format json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from compiled_modules import add_flag, child_environment, kept_for_the_run

HEAVY = ("z3", "lark", "yaml", "pydantic", "networkx", "openai", "sqlalchemy")
PROBE = """
import json, sys, time
t0 = time.perf_counter()
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.policy.theory_set import TheorySet
from pedrag.runtime.turn.tutor import Tutor
t1 = time.perf_counter()
policy = sys.argv[1]
theories = TheorySet.from_policies([policy]) if policy else TheorySet.shipped()
tutor = Tutor(theories, store=MemoryStore())
session = tutor.start("socratic", seed=1)
t2 = time.perf_counter()
tutor.turn(session, "just tell me the answer")
t3 = time.perf_counter()
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[2].split(",")))
print(json.dumps({"import_ms": 1000 * (t1 - t0), "load_ms": 1000 * (t2 - t1),
                  "first_turn_ms": 1000 * (t3 - t2), "heavy": heavy}))
"""


def measure(policy: str, runs: int) -> dict[str, object]:
    samples = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", PROBE, policy, ",".join(HEAVY)],
            capture_output=True,
            text=True,
            check=True,
            env=child_environment(),
        )
        samples.append(json.loads(out.stdout))
    result: dict[str, object] = {
        key: statistics.median(s[key] for s in samples)
        for key in ("import_ms", "load_ms", "first_turn_ms")
    }
    result["heavy_imports"] = samples[0]["heavy"]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--format", choices=["text", "json"], default="text")
    add_flag(parser)
    args = parser.parse_args()
    from pedrag.runtime.policy.theory_set import TheorySet

    with tempfile.TemporaryDirectory() as folder, kept_for_the_run(args.compile_each_run):
        path = Path(folder) / "socratic.json"
        path.write_text(json.dumps(TheorySet.shipped()["socratic"].policy.to_json()), "utf-8")
        yaml_path = measure("", args.runs)
        compiled = measure(str(path), args.runs)
    total = {
        name: float(r["import_ms"]) + float(r["load_ms"]) + float(r["first_turn_ms"])  # type: ignore[arg-type]
        for name, r in (("theory files", yaml_path), ("compiled policy", compiled))
    }
    if args.format == "json":
        print(json.dumps({"theory_files": yaml_path, "compiled_policy": compiled}, indent=2))
        return 0
    print(f"{'path':<16} {'import':>9} {'load+start':>11} {'1st turn':>9}  heavy imports")
    for name, r in (("theory files", yaml_path), ("compiled policy", compiled)):
        print(
            f"{name:<16} {r['import_ms']:>7.0f}ms {r['load_ms']:>9.0f}ms {r['first_turn_ms']:>7.1f}ms"
            f"  {', '.join(r['heavy_imports']) or '-'}"  # type: ignore[arg-type]
        )
    print(
        f"time to the first reply: {total['compiled policy']:.0f} ms from the compiled policy, "
        f"{total['theory files']:.0f} ms from theory files "
        f"({total['theory files'] / total['compiled policy']:.2f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
