"""Runtime overhead per tutoring turn, excluding model calls.

Runs offline sessions on the socratic theory (the offline backend answers every role in
microseconds; its time is measured and subtracted, so what remains is the supervisor itself:
classification framing, state writes, policy core, rule engine, prompt building, detector,
judge parsing, monitors, audit record) and prints median and p99 per turn and their share of a
typical 1 s model call.

Persistence is on, as it is by default: the SQLite store on a file on local disk (in the
working directory's filesystem, not /tmp, which may be memory), WAL mode, one transaction per
turn, at the default `synchronous=NORMAL` and at `FULL` (one fsync per commit), with the
in-memory store as the baseline of the same turn loop without persistence. Commits and SQL
statements per turn are counted (SQLite's own trace of what it ran), not assumed: on one cycle
of the scripted messages during the warm-up, never on a timed turn (SQLite hands the trace each
statement with its values written in, the turn's state and audit text among them: about 50 us
of a turn's CPU that is the benchmark's, not pedrag's).

Times are CPU time of the process (``time.process_time``): wall clock on a shared machine is
mostly other people's work. ``--profile`` runs warm turns on the SQLite store under cProfile
and prints, per turn, the calls into pedrag's own code, the history preparations (a
``policy.prepare`` of the metric history) and the CPU time, with the heaviest functions.

    python benchmarks/turn_overhead.py [--turns 2000] [--store normal|full|memory] [--format json]
    python benchmarks/turn_overhead.py --profile [--turns 200]
    python benchmarks/turn_overhead.py --stages [--turns 1000] [--store normal|full|memory]

``--stages`` times each stage of the turn pipeline (``pedrag.runtime.turn.pipeline``) without
the profiler, with the detector's checks, the grader and the store's ``save_turn`` inside them
timed apart: CPU per turn, the offline backend's share shown on its own.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
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
WARM_UP = 50  # turns left out of the timings
MESSAGE_CYCLE = 36  # the personas' scripted messages on arithmetic
COUNT_FROM = WARM_UP - MESSAGE_CYCLE  # statements are counted on the warm-up's last cycle


class TimedOffline(OfflineBackend):
    def __init__(self) -> None:
        super().__init__()
        self.seconds = 0.0

    def complete(self, request: LLMRequest) -> LLMResponse:
        started = time.process_time()
        try:
            return super().complete(request)
        finally:
            self.seconds += time.process_time() - started


class Run:
    """One tutor on one store, and what its turns cost."""

    def __init__(self, store_kind: str, theories: TheorySet) -> None:
        self.kind = store_kind
        self.backend = TimedOffline()
        self.commits = 0
        self.statements = 0
        self.measured_commits = 0
        self.measured_statements = 0
        self.counted_turns = 0
        self.folder: str | None = None
        self.samples: list[float] = []
        self._traced: list[Any] = []  # the DB-API connections the store checked out
        self._tracing = False
        if store_kind != "memory":
            from sqlalchemy import event

            from pedrag.runtime.store.session_store import SessionStore

            # On the working directory's disk: /tmp may be memory, where fsync costs nothing.
            self.folder = tempfile.mkdtemp(prefix=".turn-bench-", dir=Path.cwd())
            self.store: Any = SessionStore(
                str(Path(self.folder) / "bench.db"), synchronous=store_kind.upper()
            )
            # Every statement SQLite runs, whether through SQLAlchemy or on the driver directly.
            event.listen(self.store._engine, "checkout", self._trace)
        else:
            self.store = MemoryStore()
        self.tutor = Tutor(theories, None, CURRICULUM, self.store)
        self.tutor.offline = self.backend
        self.tutor.backend = self.backend
        self.session = self.tutor.start(theory="socratic", exercise="mult_7x8", seed=1)

    def _trace(self, dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        if not any(known is dbapi_connection for known in self._traced):
            self._traced.append(dbapi_connection)
        dbapi_connection.set_trace_callback(self._count if self._tracing else None)

    def _set_tracing(self, on: bool) -> None:
        """Statements are counted only on untimed turns: the trace's cost is the benchmark's."""
        if on != self._tracing:
            self._tracing = on
            for connection in self._traced:
                connection.set_trace_callback(self._count if on else None)

    def _count(self, statement: str) -> None:
        self.statements += 1
        if statement.lstrip().upper().startswith("COMMIT"):
            self.commits += 1

    def turn(self, index: int, message: str) -> None:
        if index % 20 == 0:  # fresh sessions keep the socratic theory (no switch) in play
            self.session = self.tutor.start(theory="socratic", exercise="mult_7x8", seed=index)
        self.backend.seconds = 0.0
        # Counted: one cycle of the scripted messages at the end of the warm-up (after the
        # first connection's set-up statements), untimed.
        counted = COUNT_FROM <= index < WARM_UP
        self._set_tracing(counted)
        before, ran = self.commits, self.statements
        started = time.process_time()
        self.tutor.turn(self.session, message)
        elapsed = time.process_time() - started - self.backend.seconds
        if counted:
            self.counted_turns += 1
            self.measured_commits += self.commits - before
            self.measured_statements += self.statements - ran
        if index >= WARM_UP:
            self.samples.append(elapsed * 1000)

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
            "commits_per_turn": round(self.measured_commits / max(1, self.counted_turns), 3),
            "statements_per_turn": round(self.measured_statements / max(1, self.counted_turns), 3),
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


ROOT = Path(__file__).resolve().parent.parent


def _ours(filename: str) -> bool:
    """A function of pedrag's own code (not the standard library's, not a dependency's)."""
    path = Path(filename)
    return (
        path.is_absolute()
        and ROOT in path.parents
        and "site-packages" not in path.parts
        and "benchmarks" not in path.parts
    )


def profile(turns: int, top: int = 15) -> dict[str, Any]:
    """Warm turns on the SQLite store (synchronous=NORMAL) under cProfile: per turn, the calls
    into pedrag's code, the history preparations and the CPU time (offline backend included:
    it is pedrag code too, so the call counts are of the whole turn)."""
    run = Run("normal", TheorySet.shipped())
    messages = [m for p in PERSONAS.values() for m in p.messages(topic="arithmetic")]
    for index in range(50):  # warm-up: caches, the compiled policy, the database
        run.turn(index, messages[index % len(messages)])
    run._set_tracing(False)
    profiler = cProfile.Profile(time.process_time)
    cpu = 0.0
    for index in range(50, 50 + turns):
        if index % 20 == 0:
            run.session = run.tutor.start(theory="socratic", exercise="mult_7x8", seed=index)
        message = messages[index % len(messages)]
        started = time.process_time()
        profiler.enable()
        run.tutor.turn(run.session, message)
        profiler.disable()
        cpu += time.process_time() - started
    run.samples = [0.0]
    run.result()  # closes the store
    stats = pstats.Stats(profiler)
    table: dict[tuple[str, int, str], tuple[int, int, float, float, Any]]
    table = stats.stats  # type: ignore[attr-defined]
    ours = {key: value for key, value in table.items() if _ours(key[0])}
    calls = sum(value[1] for value in ours.values())
    modules = {key[0] for key in ours}
    # A preparation is a run of the policy's generated history code (`policy.prepare` given
    # an already prepared turn returns it without one).
    prepares = sum(
        v[1] for k, v in table.items() if k[0] == "<pedrag history>" and k[2] == "prepare"
    )
    snapshots = sum(v[1] for k, v in ours.items() if k[2] == "snapshot_history")
    heaviest = sorted(ours.items(), key=lambda item: -item[1][2])[:top]
    return {
        "turns": turns,
        "pedrag_calls_per_turn": round(calls / turns, 1),
        "pedrag_modules": len(modules),
        "history_preparations_per_turn": round(prepares / turns, 2),
        "snapshot_history_per_turn": round(snapshots / turns, 2),
        "cpu_ms_per_turn_profiled": round(cpu * 1000 / turns, 3),
        "heaviest_own_time": [
            {
                "function": f"{Path(k[0]).relative_to(ROOT)}:{k[1]}:{k[2]}",
                "calls_per_turn": round(v[1] / turns, 2),
                "own_ms_per_turn": round(v[2] * 1000 / turns, 4),
                "cumulative_ms_per_turn": round(v[3] * 1000 / turns, 4),
            }
            for k, v in heaviest
        ],
    }


# The pipeline's stages as `run_turn` calls them, and the parts timed apart inside them.
_STAGES = (
    "open_turn",
    "read",
    "write_trusted",
    "decide_contract",
    "choose_action",
    "supervise",
    "progress_lines",
    "commit",
)


class StageTimer:
    """The pipeline's stages wrapped to add their CPU time to ``spent`` (and the detector's
    checks, the grader and, once :meth:`time_store` is called, the store's ``save_turn``
    inside them, timed apart), until :meth:`close` puts the functions back. Used by
    ``--stages`` and by ``turn_lockstep.py --stages``."""

    def __init__(self) -> None:
        from pedrag.runtime.turn import pipeline, supervision, trusted_writes

        self.spent: dict[str, float] = {}
        self._originals = [(pipeline, name, getattr(pipeline, name)) for name in _STAGES]
        self._originals += [
            (pipeline, "check", pipeline.check),
            (supervision, "check", supervision.check),
            (trusted_writes, "assess", trusted_writes.assess),
        ]
        for module, name, function in self._originals[: len(_STAGES)]:
            setattr(module, name, self._timed(function, name))
        detector_check = self._timed(supervision.check, "  detector (in supervise, progress_lines)")
        pipeline.check = supervision.check = detector_check
        trusted_writes.assess = self._timed(trusted_writes.assess, "  grader (in write_trusted)")

    def _timed(self, function: Any, label: str) -> Any:
        spent = self.spent

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.process_time() - started

        return wrapper

    def time_store(self, run: Run) -> None:
        if hasattr(run.store, "save_turn"):
            run.store.save_turn = self._timed(run.store.save_turn, "  save_turn (in commit)")

    def per_turn(self, turns: int) -> dict[str, float]:
        """ms per turn by label, stages in pipeline order, then the parts timed apart."""
        per_turn = {
            label: round(seconds * 1000 / turns, 3) for label, seconds in self.spent.items()
        }
        order = [*_STAGES, *sorted(label for label in per_turn if label.startswith("  "))]
        return {label: per_turn[label] for label in order if label in per_turn}

    def close(self) -> None:
        for module, name, function in self._originals:
            setattr(module, name, function)


def stages(turns: int, store_kind: str = "normal") -> dict[str, Any]:
    """CPU per turn of each pipeline stage (and of the detector, the grader and the store's
    write inside them), measured by wrapping the functions the pipeline calls."""
    timer = StageTimer()
    try:
        run = Run(store_kind, TheorySet.shipped())
        timer.time_store(run)
        messages = [m for p in PERSONAS.values() for m in p.messages(topic="arithmetic")]
        backend = 0.0
        for index in range(turns + 50):
            if index == 50:
                timer.spent.clear()
                backend = 0.0
            run.turn(index, messages[index % len(messages)])
            backend += run.backend.seconds
        run.result()
    finally:
        timer.close()
    return {
        "turns": turns,
        "store": store_kind,
        "offline_backend_ms": round(backend * 1000 / turns, 3),
        "stages_ms": timer.per_turn(turns),
    }


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
    parser.add_argument(
        "--profile", action="store_true", help="profile warm SQLite turns instead (cProfile)"
    )
    parser.add_argument(
        "--stages", action="store_true", help="CPU per pipeline stage instead (no profiler)"
    )
    args = parser.parse_args()
    if args.stages:
        kind = "normal" if args.store == "all" else args.store
        timing = stages(args.turns, kind)
        if args.format == "json":
            print(json.dumps(timing, indent=2))
            return 0
        print(
            f"CPU per turn by stage ({timing['turns']} warm turns, {STORES[kind]}; the "
            f"offline backend's {timing['offline_backend_ms']:.3f} ms is inside read and "
            "supervise):"
        )
        for label, ms in timing["stages_ms"].items():
            print(f"  {ms:7.3f} ms  {label}")
        return 0
    if args.profile:
        figures = profile(min(args.turns, 500))
        if args.format == "json":
            print(json.dumps(figures, indent=2))
            return 0
        print(
            f"profile of {figures['turns']} warm turns (SQLite, NORMAL, under cProfile):\n"
            f"  pedrag-level calls per turn: {figures['pedrag_calls_per_turn']:g} "
            f"across {figures['pedrag_modules']} modules\n"
            f"  history preparations per turn: {figures['history_preparations_per_turn']:g} "
            f"(snapshot_history: {figures['snapshot_history_per_turn']:g})\n"
            f"  CPU per turn under the profiler: {figures['cpu_ms_per_turn_profiled']:.3f} ms\n"
            "  heaviest (own time per turn):"
        )
        for item in figures["heaviest_own_time"]:
            print(
                f"    {item['own_ms_per_turn']:.4f} ms own, {item['cumulative_ms_per_turn']:.4f} "
                f"ms cumulative, {item['calls_per_turn']:g} calls  {item['function']}"
            )
        return 0
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
            f"{result['commits_per_turn']:g} commits and {result['statements_per_turn']:g} SQL "
            f"statements per turn; goal median < 2 ms: {goal}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
