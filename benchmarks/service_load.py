"""Load on `pedrag serve`: turns per second, and the server's CPU per turn above an in-process turn.

For each database kind (``--databases``: SQLite, one worker; PostgreSQL — ``--db URL``, or a
throwaway server from Debian's ``postgresql`` package on 127.0.0.1 — at each ``--workers``
count), starts a real ``pedrag serve --workers N`` on a fresh database, then drives it from ``--clients`` concurrent HTTP clients, each running sessions of
``--turns-per-session`` turns until ``--turns`` turns are done. The offline backend answers
every model role in microseconds (``benchmarks/turn_overhead.py`` measures it), so the latency
a client sees is the service's own overhead: HTTP, authentication, rate-limit and store
round trips, the supervised turn, the commit. Model time is excluded by construction.

Baseline, measured in the same run: the same turns through ``Tutor.turn`` in this process on
the same kind of database, one at a time (no HTTP, no concurrency) — what a single embedded
tutor costs per turn, in CPU time (``time.process_time``).

The figure of issue 30 (goal: under 2 ms): the server's CPU per turn — user plus system CPU
of every process of the server (its process group, read from ``/proc``), over the measured
turns only, session creation included (one per ``--turns-per-session`` turns) — minus the
baseline's CPU per turn. Wall-clock latencies are printed too but are noise on a shared
machine; CPU is the figure. Split by thread: the workers' event loops and the turns' threads;
and the same figure with one client, one turn at a time (``--sequential`` turns in the same
rounds), where no turn competes with another for the cores and the GIL: the goal's figure
less that one is what concurrency adds.

With ``--compare TREE`` a server run from another source tree (``git archive COMMIT | tar -x
-C TREE``) is driven in the same alternated rounds, each round's server turns measured
against the same baseline turns: old and new meet the same load on a shared machine.

    python benchmarks/service_load.py [--databases sqlite postgresql] [--workers 1 4 16]
        [--turns 600] [--clients 32] [--compare TREE --compare-label old]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pedrag.runtime.policy.theory_set import TheorySet  # noqa: E402
from pedrag.runtime.store.session_store import SessionStore  # noqa: E402
from pedrag.runtime.turn.tutor import Tutor  # noqa: E402
from tests.service.postgres import running_postgres  # noqa: E402
from tests.service.servers import running_server  # noqa: E402

MESSAGES = (
    "How do I start?",
    "I think it is 54",
    "Can you give me a hint?",
    "Is it 56?",
    "I'm confused, what does that mean?",
)


GOAL_MS = 2.0
"""Issue 30: the service's CPU per turn above the in-process turn stays under this."""


def fresh_database(url: str) -> str:
    if url.startswith("sqlite"):
        folder = tempfile.mkdtemp(prefix="pedrag-bench-")
        return f"sqlite+pysqlite:///{folder}/sessions.db"
    name = "bench_" + uuid.uuid4().hex[:8]
    server = url.rsplit("/", 1)[0]
    admin = create_engine(server + "/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f"CREATE DATABASE {name}"))
    admin.dispose()
    return f"{server}/{name}"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


class InProcess:
    """The baseline: one Tutor in this process on its own database of the same kind, turns
    one at a time, no HTTP; CPU is this process's (``time.process_time``)."""

    def __init__(self, url: str, per_session: int, warm_sessions: int) -> None:
        self.store = SessionStore(fresh_database(url))
        self.tutor = Tutor(TheorySet.shipped(), None, None, self.store)
        self.per_session = per_session
        self.sessions = 0
        # Warmed as the servers' workers are: whole sessions, so that what a process builds
        # once (each help ceiling's compiled eligibility) is not in either side's figure.
        self.run(warm_sessions * per_session)

    def run(self, turns: int) -> tuple[list[float], float, float]:
        """``turns`` turns in sessions of ``per_session``: latencies, wall and CPU seconds."""
        latencies: list[float] = []
        started, cpu_started = time.perf_counter(), time.process_time()
        while len(latencies) < turns:
            self.sessions += 1
            session = self.tutor.start("socratic", "mult_7x8", seed=self.sessions)
            for index in range(min(self.per_session, turns - len(latencies))):
                begin = time.perf_counter()
                self.tutor.turn(session, MESSAGES[index % len(MESSAGES)])
                latencies.append(time.perf_counter() - begin)
        return latencies, time.perf_counter() - started, time.process_time() - cpu_started

    def close(self) -> None:
        self.store.close()


_TICK = os.sysconf("SC_CLK_TCK")


def _stat_fields(path: str) -> list[bytes] | None:
    """The fields of a ``/proc`` stat file after the command name: state, ppid, pgrp, ...,
    utime (index 11), stime (index 12); None if the process ended meanwhile."""
    try:
        with open(path, "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None


def group_cpu_seconds(group: int, *, loops: bool = False) -> float:
    """User plus system CPU of every live process in process group ``group`` (the server
    starts in a session of its own, so its workers share its group), from ``/proc``. With
    ``loops``, only the main threads of the worker processes, where uvicorn runs each
    worker's event loop (HTTP, middleware, routing, the hop to a turn's thread): the group's
    leader counts when it is the only process (one worker), not when it supervises workers."""
    total = 0
    members = []
    for entry in os.scandir("/proc"):
        fields = _stat_fields(f"/proc/{entry.name}/stat") if entry.name.isdigit() else None
        if fields is not None and int(fields[2]) == group:
            members.append((entry.name, fields))
    for pid, fields in members:
        if loops:
            if int(pid) == group and len(members) > 1:
                continue  # the supervisor of several workers
            fields = _stat_fields(f"/proc/{pid}/task/{pid}/stat") or [b"0"] * 13
        total += int(fields[11]) + int(fields[12])
    return total / _TICK


def supervisor_cpu_seconds(group: int) -> float:
    """User plus system CPU of the group's leader alone: with ``--workers`` above 1, uvicorn's
    supervisor (it starts, health-checks and replaces the workers); 0 if it has ended."""
    fields = _stat_fields(f"/proc/{group}/stat")
    return 0.0 if fields is None else (int(fields[11]) + int(fields[12])) / _TICK


@dataclass
class Served:
    """A server under test: where it answers, its key, its process group, what it measured."""

    label: str
    base: str
    key: str
    group: int
    latencies: list[float] = field(default_factory=list)
    wall: float = 0.0
    cpu: float = 0.0
    loop_cpu: float = 0.0
    supervisor_cpu: float = 0.0
    above_by_round: list[float] = field(default_factory=list)
    alone: list[float] = field(default_factory=list)
    alone_wall: float = 0.0
    alone_cpu: float = 0.0
    alone_loop_cpu: float = 0.0


def summary(latencies: list[float], elapsed: float) -> dict[str, float]:
    return {
        "turns": len(latencies),
        "turns_per_s": len(latencies) / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
    }


async def drive(base: str, key: str, turns: int, clients: int, per_session: int) -> list[float]:
    """``turns`` turns through the service from ``clients`` concurrent clients, in sessions
    of ``per_session`` turns; the turns' latencies."""
    auth = {"Authorization": f"Bearer {key}"}
    latencies: list[float] = []
    remaining = turns

    async def client_loop(client: httpx.AsyncClient) -> None:
        nonlocal remaining
        while remaining > 0:
            created = await client.post(
                "/v1/sessions",
                json={"theory": "socratic", "curriculum": "intro", "exercise": "mult_7x8"},
                headers=auth,
            )
            created.raise_for_status()
            session_id = created.json()["id"]
            for index in range(1, per_session + 1):
                if remaining <= 0:
                    return
                remaining -= 1
                begin = time.perf_counter()
                response = await client.post(
                    f"/v1/sessions/{session_id}/turns",
                    json={"message": MESSAGES[(index - 1) % len(MESSAGES)], "turn": index},
                    headers=auth,
                )
                latencies.append(time.perf_counter() - begin)
                response.raise_for_status()

    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
        await asyncio.gather(*(client_loop(client) for _ in range(clients)))
    return latencies


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--databases", nargs="+", choices=("sqlite", "postgresql"), default=["sqlite", "postgresql"]
    )
    parser.add_argument(
        "--workers", type=int, nargs="+", default=[1, 4, 16], help="PostgreSQL worker counts"
    )
    parser.add_argument("--turns", type=int, default=600, help="turns per configuration")
    parser.add_argument("--clients", type=int, default=32, help="concurrent HTTP clients")
    parser.add_argument("--turns-per-session", type=int, default=10)
    parser.add_argument(
        "--warm-sessions",
        type=int,
        default=4,
        help="whole sessions per worker (and in process) before measuring, three times over "
        "for the workers: what a process builds once is not a turn's cost (0: no warm-up, "
        "so each worker's first uses fall in the figure)",
    )
    parser.add_argument(
        "--sequential",
        type=int,
        default=200,
        help="turns by one client (in the same rounds): unqueued latency, and CPU per turn "
        "without concurrent turns",
    )
    parser.add_argument(
        "--rounds", type=int, default=10, help="alternations of baseline and server turns"
    )
    parser.add_argument("--db", help="a PostgreSQL URL (default: a throwaway local server)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--compare",
        metavar="TREE",
        help="another source tree of pedrag (e.g. `git archive` of an older commit): its "
        "server is driven in the same alternated rounds, so old and new meet the same load",
    )
    parser.add_argument("--compare-label", default="(compare)", help="its rows' label")
    args = parser.parse_args()

    # The servers driven in the same rounds: this tree's, and with --compare another tree's.
    trees = [("", ROOT)]
    if args.compare:
        trees.append((" " + args.compare_label, Path(args.compare).resolve()))

    def run(url: str, workers_list: list[int]) -> dict[str, Any]:
        results: dict[str, Any] = {}
        chunk = max(1, args.turns // args.rounds)
        alone_chunk = max(1, args.sequential // args.rounds)
        for workers in workers_list:
            in_process = InProcess(url, args.turns_per_session, args.warm_sessions)
            with contextlib.ExitStack() as stack:
                folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
                servers = []
                for index, (label, tree) in enumerate(trees):
                    db = fresh_database(url)
                    with SessionStore(db) as store:
                        store.tenants.create("bench")
                        key = store.tenants.issue_key("bench")
                    started: list[subprocess.Popen[bytes]] = []
                    base = stack.enter_context(
                        running_server(
                            db,
                            workers=workers,
                            log=folder / f"serve{index}.log",
                            env={"PYTHONPATH": str(tree)},
                            started=started,
                            cwd=tree,
                        )
                    )
                    servers.append(Served(label, base, key, started[0].pid))
                for server in servers:
                    # Warm every worker first: each drive opens fresh connections, which the
                    # kernel hands to any worker. A worker builds things once in its life (the
                    # theory's compiled eligibility per help ceiling, about 20 ms each on first
                    # use; connection pools; prepared statements), which a long-lived
                    # deployment pays once, not per turn: whole sessions of the measured length
                    # meet every ceiling the measured turns meet, in every worker.
                    warm_turns = args.warm_sessions * workers * args.turns_per_session
                    for _ in range(3):
                        asyncio.run(
                            drive(
                                server.base,
                                server.key,
                                warm_turns,
                                min(args.clients, 8),
                                args.turns_per_session,
                            )
                        )
                # Rounds alternate the baseline and the servers, so a change in the
                # machine's load during the run falls on all alike.
                local: list[float] = []
                local_s = local_cpu = 0.0
                for _ in range(args.rounds):
                    latencies, wall, cpu = in_process.run(chunk)
                    local += latencies
                    local_s += wall
                    local_cpu += cpu
                    for server in servers:
                        cpu_before = group_cpu_seconds(server.group)
                        loop_before = group_cpu_seconds(server.group, loops=True)
                        supervisor_before = supervisor_cpu_seconds(server.group)
                        begin = time.perf_counter()
                        server.latencies += asyncio.run(
                            drive(
                                server.base, server.key, chunk, args.clients, args.turns_per_session
                            )
                        )
                        server.wall += time.perf_counter() - begin
                        round_cpu = group_cpu_seconds(server.group) - cpu_before
                        server.cpu += round_cpu
                        server.loop_cpu += group_cpu_seconds(server.group, loops=True) - loop_before
                        server.supervisor_cpu += (
                            supervisor_cpu_seconds(server.group) - supervisor_before
                        )
                        server.above_by_round.append((round_cpu - cpu) * 1000 / chunk)
                        # One client, one turn at a time: latency without queueing, and CPU
                        # with no other turn's thread competing for the cores and the GIL.
                        cpu_before = group_cpu_seconds(server.group)
                        loop_before = group_cpu_seconds(server.group, loops=True)
                        begin = time.perf_counter()
                        server.alone += asyncio.run(
                            drive(server.base, server.key, alone_chunk, 1, args.turns_per_session)
                        )
                        server.alone_wall += time.perf_counter() - begin
                        server.alone_cpu += group_cpu_seconds(server.group) - cpu_before
                        server.alone_loop_cpu += (
                            group_cpu_seconds(server.group, loops=True) - loop_before
                        )
            in_process.close()
            base_row = summary(local, local_s)
            base_row["cpu_ms_per_turn"] = local_cpu * 1000 / len(local)
            base_row["alone_p50_ms"] = base_row["p50_ms"]
            results[f"in_process_{workers}"] = base_row
            for server in servers:
                row = summary(server.latencies, server.wall)
                row["cpu_ms_per_turn"] = server.cpu * 1000 / len(server.latencies)
                row["loop_cpu_ms_per_turn"] = server.loop_cpu * 1000 / len(server.latencies)
                # With one worker the group's leader is the worker itself: no supervisor.
                row["supervisor_cpu_ms_per_turn"] = (
                    server.supervisor_cpu * 1000 / len(server.latencies) if workers > 1 else None
                )
                row["overhead_cpu_ms"] = row["cpu_ms_per_turn"] - base_row["cpu_ms_per_turn"]
                # The same difference round by round (each round's server turns against the
                # baseline turns just before them): its median shrugs off a round that a
                # burst of other work on the machine fell on.
                row["overhead_cpu_ms_median"] = statistics.median(server.above_by_round)
                row["overhead_cpu_ms_rounds"] = server.above_by_round
                row["alone_p50_ms"] = statistics.median(server.alone) * 1000
                alone_turns = len(server.alone)
                row["alone_cpu_ms_per_turn"] = server.alone_cpu * 1000 / alone_turns
                row["alone_above_ms"] = row["alone_cpu_ms_per_turn"] - base_row["cpu_ms_per_turn"]
                row["alone_loop_cpu_ms_per_turn"] = server.alone_loop_cpu * 1000 / alone_turns
                # The turns' threads at one client (the group less the loops; one worker has
                # no supervisor, with several its share is in the threads' figure).
                row["alone_threads_cpu_ms_per_turn"] = (
                    row["alone_cpu_ms_per_turn"] - row["alone_loop_cpu_ms_per_turn"]
                )
                row["threads_cpu_ms_per_turn"] = (
                    row["cpu_ms_per_turn"]
                    - row["loop_cpu_ms_per_turn"]
                    - (row["supervisor_cpu_ms_per_turn"] or 0.0)
                )
                results[f"workers_{workers}{server.label}"] = row
        return results

    results: dict[str, Any] = {}
    for kind in args.databases:
        if kind == "sqlite":
            results["sqlite"] = run("sqlite", [1])
        elif args.db:
            results["postgresql"] = run(args.db, args.workers)
        else:
            with running_postgres() as url:
                results["postgresql"] = run(url, args.workers)
    if args.format == "json":
        print(json.dumps(results, indent=2))
        return 0
    print(
        f"{'configuration':<40}{'turns':>6}{'turns/s':>9}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'alone p50':>11}{'CPU ms/turn':>13}{'above base':>12}{'median':>8}{'goal':>8}"
        f"{'loops':>7}{'threads':>9}{'superv.':>9}"
        f"{'1-client above':>16}{'loop':>6}{'threads':>9}"
    )
    for kind, rows in results.items():
        for name, row in rows.items():
            above = row.get("overhead_cpu_ms")
            print(
                f"{kind + ' ' + name:<40}{row['turns']:>6}{row['turns_per_s']:>9.1f}"
                f"{row['p50_ms']:>9.1f}{row['p99_ms']:>9.1f}{row['alone_p50_ms']:>11.1f}"
                f"{row['cpu_ms_per_turn']:>13.2f}"
                + (
                    f"{above:>12.2f}{row['overhead_cpu_ms_median']:>8.2f}"
                    f"{'< ' + format(GOAL_MS, 'g'):>8}{row['loop_cpu_ms_per_turn']:>7.2f}"
                    f"{row['threads_cpu_ms_per_turn']:>9.2f}"
                    + (
                        f"{row['supervisor_cpu_ms_per_turn']:>9.2f}"
                        if row["supervisor_cpu_ms_per_turn"] is not None
                        else f"{'-':>9}"
                    )
                    + f"{row['alone_above_ms']:>16.2f}{row['alone_loop_cpu_ms_per_turn']:>6.2f}"
                    f"{row['alone_threads_cpu_ms_per_turn']:>9.2f}"
                    if above is not None
                    else ""
                )
            )
    print(
        f"\nCPU ms/turn: the server's user+system CPU (all its processes) over the measured "
        f"turns, session creation included; in_process: one Tutor in this process on the same "
        f"kind of database, one turn at a time, no HTTP, in {args.rounds} rounds alternating "
        f"with the server's. 'above base': the difference, the "
        f"figure whose goal is < {GOAL_MS:g} ms; 'median': the median of that difference round "
        f"by round (CPU is read in clock ticks of {1000 / _TICK:g} ms, over "
        f"{max(1, args.turns // args.rounds)} turns a round). "
        f"loops: the part of CPU ms/turn spent by the workers' event-loop threads (HTTP, "
        f"middleware, routing, the hop to the turn's thread); threads: the rest, the turns' "
        f"threads (the key-and-session read, the turn, its commit; compare in_process's CPU "
        f"ms/turn). superv.: the part spent by uvicorn's supervisor process (with --workers "
        f"above 1). turns/s, p50, p99: {args.clients} concurrent "
        f"clients (wall clock, includes queueing); alone: one client, one turn at a time "
        f"({args.sequential} turns, in the same rounds). '1-client above': the server's CPU "
        f"per turn at that one client minus in_process's (NOT the goal's figure, which is at "
        f"{args.clients} clients: what concurrency adds is the difference of the two), and its "
        f"parts: the loops' and the threads'. Sessions of {args.turns_per_session} turns, offline backend "
        "(model time excluded)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
