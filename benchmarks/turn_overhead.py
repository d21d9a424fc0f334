"""Runtime overhead per tutoring turn, excluding model calls.

Runs offline sessions on the socratic theory (the offline backend answers every role in
microseconds; its time is measured and subtracted, so what remains is the supervisor itself:
classification framing, state writes, policy core, rule engine, prompt building, detector,
judge parsing, monitors, audit record) and prints median and p99 per turn and their share of a
typical 1 s model call. Persistence is excluded by default (in-memory store); ``--sqlite``
includes a real SQLite commit per turn.

    python benchmarks/turn_overhead.py [--turns 2000] [--sqlite] [--format json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from pedrag.runtime.llm import LLMRequest, LLMResponse
from pedrag.runtime.memory_store import MemoryStore
from pedrag.runtime.offline import OfflineBackend
from pedrag.runtime.personas import PERSONAS
from pedrag.runtime.theory_set import TheorySet
from pedrag.runtime.tutor import Tutor

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


def measure(turns: int, sqlite: bool) -> dict[str, float]:
    theories = TheorySet.shipped()
    backend = TimedOffline()
    if sqlite:
        from pedrag.runtime.store import SessionStore

        store = SessionStore(str(Path(tempfile.mkdtemp()) / "bench.db"))
    else:
        store = MemoryStore()
    tutor = Tutor(theories, None, CURRICULUM, store)
    tutor.offline = backend
    tutor.backend = backend
    messages = [m for p in PERSONAS.values() for m in p.messages(topic="arithmetic")]
    samples: list[float] = []
    session = tutor.start(theory="socratic", exercise="mult_7x8", seed=1)
    for index in range(turns + 50):
        if index % 20 == 0:  # fresh sessions keep the socratic theory (no switch) in play
            session = tutor.start(theory="socratic", exercise="mult_7x8", seed=index)
        backend.seconds = 0.0
        started = time.perf_counter()
        tutor.turn(session, messages[index % len(messages)])
        elapsed = time.perf_counter() - started - backend.seconds
        if index >= 50:  # warm-up
            samples.append(elapsed * 1000)
    samples.sort()
    median = statistics.median(samples)
    p99 = samples[int(len(samples) * 0.99) - 1]
    return {
        "turns": len(samples),
        "median_ms": round(median, 3),
        "p99_ms": round(p99, 3),
        "median_share_of_1s_call": round(median / (MODEL_CALL_S * 1000), 5),
        "p99_share_of_1s_call": round(p99 / (MODEL_CALL_S * 1000), 5),
        "goal_median_ms": 2.0,
        "persistence": "sqlite" if sqlite else "memory",
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument(
        "--sqlite", action="store_true", help="commit each turn to a real SQLite file"
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    args = parser.parse_args()
    result = measure(args.turns, args.sqlite)
    if args.format == "json":
        print(json.dumps(result, indent=2))
    else:
        print(
            f"runtime overhead per turn ({result['turns']} turns, socratic, offline, {result['persistence']} store):\n"
            f"  median {result['median_ms']:.3f} ms ({result['median_share_of_1s_call']:.3%} of a 1 s model call)\n"
            f"  p99    {result['p99_ms']:.3f} ms ({result['p99_share_of_1s_call']:.3%} of a 1 s model call)\n"
            f"  goal   median < {result['goal_median_ms']} ms: {'met' if result['median_ms'] < 2 else 'NOT met'}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
