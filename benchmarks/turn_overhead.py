"""Runtime overhead per tutoring turn, excluding model calls.

Runs offline sessions on the socratic theory (the offline backend answers every role in
microseconds; its time is measured and subtracted, so what remains is the supervisor itself:
classification framing, state writes, policy core, rule engine, prompt building, detector,
judge parsing, monitors, audit record) and prints median and p99 per turn and their share of a
typical 1 s model call.

Persistence is on, as it is by default: the SQLite store on a file on local disk (in the
working directory's filesystem, not /tmp, which may be memory), WAL mode, one transaction per
turn, at the default `synchronous=NORMAL` and at `FULL` (one fsync per commit), with the
in-memory store as the baseline of the same turn loop without persistence. Commits per turn
are counted, not assumed.

    python benchmarks/turn_overhead.py [--turns 2000] [--store normal|full|memory] [--format json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from pedrag.runtime.llm.interface import LLMRequest, LLMResponse
from pedrag.runtime.llm.offline import OfflineBackend
from pedrag.runtime.llm.personas import PERSONAS
from pedrag.runtime.policy.theory_set import TheorySet
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor

CURRICULUM = (
    Path(__file__).resolve().parent.parent / "tests" / "data" / "runtime" / "curriculum.yaml"
)
MODEL_CALL_S = 1.0


class TimedOffline(OfflineBackend):
    def __init__(self) -> None:
        super().__init__()
        self.seconds = 0.0

    def complete(self, request: LLMRequest) -> LLMResponse:
        started = time.perf_counter()
        try:
            return super().complete(request)
        finally:
            self.seconds += time.perf_counter() - started


class Run:
    """One tutor on one store, and what its turns cost."""

    def __init__(self, store_kind: str, theories: TheorySet) -> None:
        self.kind = store_kind
        self.backend = TimedOffline()
        self.commits = 0
        self.measured_commits = 0
        self.folder: str | None = None
        self.samples: list[float] = []
        if store_kind != "memory":
            from sqlalchemy import event

            from pedrag.runtime.store.session_store import SessionStore

            # On the working directory's disk: /tmp may be memory, where fsync costs nothing.
            self.folder = tempfile.mkdtemp(prefix=".turn-bench-", dir=Path.cwd())
            self.store: Any = SessionStore(
                str(Path(self.folder) / "bench.db"), synchronous=store_kind.upper()
            )
            event.listen(self.store._engine, "commit", self._count)
        else:
            self.store = MemoryStore()
        self.tutor = Tutor(theories, None, CURRICULUM, self.store)
        self.tutor.offline = self.backend
        self.tutor.backend = self.backend
        self.session = self.tutor.start(theory="socratic", exercise="mult_7x8", seed=1)

    def _count(self, _connection: Any) -> None:
        self.commits += 1

    def turn(self, index: int, message: str) -> None:
        if index % 20 == 0:  # fresh sessions keep the socratic theory (no switch) in play
            self.session = self.tutor.start(theory="socratic", exercise="mult_7x8", seed=index)
        self.backend.seconds = 0.0
        before = self.commits
        started = time.perf_counter()
        self.tutor.turn(self.session, message)
        elapsed = time.perf_counter() - started - self.backend.seconds
        if index >= 50:  # warm-up
            self.samples.append(elapsed * 1000)
            self.measured_commits += self.commits - before

    def result(self) -> dict[str, Any]:
        if self.folder is not None:
            self.store.close()
            shutil.rmtree(self.folder, ignore_errors=True)
        samples = sorted(self.samples)
        median = statistics.median(samples)
        p99 = samples[int(len(samples) * 0.99) - 1]
        return {
            "turns": len(samples),
            "median_ms": round(median, 3),
            "p99_ms": round(p99, 3),
            "median_share_of_1s_call": round(median / (MODEL_CALL_S * 1000), 5),
            "p99_share_of_1s_call": round(p99 / (MODEL_CALL_S * 1000), 5),
            "goal_median_ms": 2.0,
            "store": self.kind,
            "commits_per_turn": round(self.measured_commits / len(samples), 3),
        }


def measure(turns: int, store_kinds: list[str]) -> list[dict[str, Any]]:
    """The same turns on every store, interleaved turn by turn, so a busy machine slows them
    all alike and the ratios stay honest."""
    theories = TheorySet.shipped()
    runs = [Run(kind, theories) for kind in store_kinds]
    messages = [m for p in PERSONAS.values() for m in p.messages(topic="arithmetic")]
    for index in range(turns + 50):
        for run in runs:
            run.turn(index, messages[index % len(messages)])
    return [run.result() for run in runs]


STORES = {
    "normal": "SQLite file, WAL, synchronous=NORMAL (default)",
    "full": "SQLite file, WAL, synchronous=FULL",
    "memory": "in-memory store (no persistence; baseline)",
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument(
        "--store",
        choices=[*STORES, "all"],
        default="all",
        help="which store to measure (default: all three in one run)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    args = parser.parse_args()
    kinds = list(STORES) if args.store == "all" else [args.store]
    results = measure(args.turns, kinds)
    if args.format == "json":
        print(json.dumps(results, indent=2))
        return 0
    memory = next((r for r in results if r["store"] == "memory"), None)
    print(f"runtime overhead per turn ({args.turns} turns, socratic, offline backend subtracted):")
    for result in results:
        versus = (
            f", {result['median_ms'] / memory['median_ms']:.2f}x in-memory"
            if memory is not None and result is not memory
            else ""
        )
        goal = "met" if result["median_ms"] < result["goal_median_ms"] else "NOT met"
        print(
            f"  {STORES[result['store']]}:\n"
            f"    median {result['median_ms']:.3f} ms, p99 {result['p99_ms']:.3f} ms "
            f"({result['median_share_of_1s_call']:.3%} of a 1 s model call{versus}); "
            f"{result['commits_per_turn']:g} commits per turn; goal median < 2 ms: {goal}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
