"""Load on `pedrag serve`: turns per second and per-turn server overhead at 1, 4, 16 workers.

Starts one PostgreSQL (``--db URL``, or a throwaway server from Debian's ``postgresql`` package
on 127.0.0.1) and, for each worker count, a real ``pedrag serve --workers N`` on a fresh
database, then drives it from ``--clients`` concurrent HTTP clients, each running sessions of
``--turns-per-session`` turns until ``--turns`` turns are done. The offline backend answers
every model role in microseconds (``benchmarks/turn_overhead.py`` measures it), so the latency
a client sees is the service's own overhead: HTTP, authentication, rate-limit and store
round trips, the supervised turn, the commit. Model time is excluded by construction.

Baseline, measured in the same run: the same turns through ``Tutor.turn`` in this process on
the same PostgreSQL, one at a time (no HTTP, no concurrency) — what a single embedded tutor
costs per turn.

    python benchmarks/service_load.py [--workers 1 4 16] [--turns 600] [--clients 32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
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


def fresh_database(url: str) -> str:
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


def baseline(url: str, turns: int, per_session: int) -> dict[str, float]:
    db = fresh_database(url)
    with SessionStore(db) as store:
        tutor = Tutor(TheorySet.shipped(), None, None, store)
        latencies = []
        started = time.perf_counter()
        done = 0
        while done < turns:
            session = tutor.start("socratic", "mult_7x8", seed=done)
            for index in range(per_session):
                if done >= turns:
                    break
                begin = time.perf_counter()
                tutor.turn(session, MESSAGES[index % len(MESSAGES)])
                latencies.append(time.perf_counter() - begin)
                done += 1
        elapsed = time.perf_counter() - started
    return summary(latencies, elapsed)


def summary(latencies: list[float], elapsed: float) -> dict[str, float]:
    return {
        "turns": len(latencies),
        "turns_per_s": len(latencies) / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
    }


async def drive(
    base: str, key: str, turns: int, clients: int, per_session: int
) -> dict[str, float]:
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
        started = time.perf_counter()
        await asyncio.gather(*(client_loop(client) for _ in range(clients)))
        elapsed = time.perf_counter() - started
    return summary(latencies, elapsed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--turns", type=int, default=600, help="turns per configuration")
    parser.add_argument("--clients", type=int, default=32, help="concurrent HTTP clients")
    parser.add_argument("--turns-per-session", type=int, default=10)
    parser.add_argument(
        "--sequential", type=int, default=150, help="turns by one client, for unqueued latency"
    )
    parser.add_argument("--db", help="a PostgreSQL URL (default: a throwaway local server)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    args = parser.parse_args()

    def run(url: str) -> dict[str, Any]:
        results: dict[str, Any] = {
            "baseline_in_process": baseline(url, min(args.turns, 300), args.turns_per_session)
        }
        base_row = results["baseline_in_process"]
        base_row["alone_p50_ms"], base_row["alone_p99_ms"] = base_row["p50_ms"], base_row["p99_ms"]
        for workers in args.workers:
            db = fresh_database(url)
            with SessionStore(db) as store:
                store.tenants.create("bench")
                key = store.tenants.issue_key("bench")
            with tempfile.TemporaryDirectory() as folder:
                with running_server(db, workers=workers, log=Path(folder) / "serve.log") as base:
                    # Warm every worker (theory compile caches, connection pools) first.
                    asyncio.run(drive(base, key, 4 * workers, min(args.clients, 4 * workers), 2))
                    row = asyncio.run(
                        drive(base, key, args.turns, args.clients, args.turns_per_session)
                    )
                    # Per-turn overhead without queueing: one client, one turn at a time.
                    alone = asyncio.run(
                        drive(base, key, args.sequential, 1, args.turns_per_session)
                    )
                    row["alone_p50_ms"], row["alone_p99_ms"] = alone["p50_ms"], alone["p99_ms"]
                    results[f"workers_{workers}"] = row
        return results

    if args.db:
        results = run(args.db)
    else:
        with running_postgres() as url:
            results = run(url)
    if args.format == "json":
        print(json.dumps(results, indent=2))
        return 0
    base = results["baseline_in_process"]
    print(
        f"{'configuration':<22}{'turns':>6}{'turns/s':>9}{'vs base':>9}"
        f"{'p50 ms':>9}{'p99 ms':>9}{'alone p50':>11}{'alone p99':>11}"
    )
    for name, row in results.items():
        ratio = row["turns_per_s"] / base["turns_per_s"]
        print(
            f"{name:<22}{row['turns']:>6}{row['turns_per_s']:>9.1f}{ratio:>8.2f}x"
            f"{row['p50_ms']:>9.1f}{row['p99_ms']:>9.1f}"
            f"{row['alone_p50_ms']:>11.1f}{row['alone_p99_ms']:>11.1f}"
        )
    print(
        f"\nturns/s, p50, p99: {args.clients} concurrent clients (latency includes queueing); "
        f"alone: one client, one turn at a time ({args.sequential} turns). Sessions of "
        f"{args.turns_per_session} turns, one PostgreSQL, offline backend (model time "
        "excluded). 'vs base': throughput relative to one in-process Tutor on the same "
        "database, one turn at a time, no HTTP."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
