"""Where a service turn's CPU above the in-process turn goes: the parts `service_load.py` sums.

`benchmarks/service_load.py` gives one figure, the server's CPU per turn above an in-process
turn, and splits off the event loops. This script measures three parts of it, each alone, so
a change can be aimed at the part that is large:

- ``uvicorn``: the floor under any application: a raw ASGI app that reads the body and answers
  a small JSON document, served by ``uvicorn`` with the service's own HTTP protocol (httptools,
  ``TCP_NODELAY``), driven by the same HTTP client as ``service_load.py``; the server's CPU per
  request, from ``/proc``.
- ``app``: the service's application on its event loop, without sockets: turn requests (and a
  session's creation every ``--turns-per-session``) handed to the ASGI app directly, as
  uvicorn would, from concurrent tasks; the loop thread's CPU (``time.thread_time``) per turn
  and per creation. The turns themselves run in the hop's threads and are not counted.
- ``floor``: the HTTP layer's share of a turn, live: the service (``create_app`` on uvicorn,
  as ``pedrag serve`` runs it) against :func:`floor_app`, the same service with its turn
  requests answered by a minimal pure-ASGI function that does the same work (the key, its
  rate limit and the session in one statement, the turn in the hop's thread, the metrics, a
  request id, the JSON answer) and no framework: no Starlette, no FastAPI, no middleware,
  no error handling. Both on the same uvicorn and protocol, driven in alternated rounds by
  ``service_load.py``'s client (32 clients and 1, a session's creation every 10 turns through
  FastAPI in both); the server's CPU per turn and its event loop's. What the floor saves is
  the most a thinner HTTP path for the turns could save.
- ``thread``: a service turn's thread work in process, in parts (the key-and-session read, the
  session's rebuild, the turn; on this thread and in the hop's), against the in-process turn
  of ``service_load.py``, on SQLite or PostgreSQL, in alternated rounds (:func:`turn_thread`).
- ``read``: the statement a turn's thread runs before the turn (the key and the session,
  ``TenantDirectory.key_with_session``), and the key alone, in process, each after a write by
  another connection (SQLite then discards the reading connection's page cache, as it does
  between a live service's turns) and warm.

    python benchmarks/service_parts.py [--parts uvicorn app floor thread read] [--turns 400] [--clients 8]
        [--databases sqlite postgresql] [--rounds 10]

CPU figures on a shared machine move with its load: compare parts within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.service_load import (  # noqa: E402
    MESSAGES,
    InProcess,
    drive,
    fresh_database,
    group_cpu_seconds,
)
from pedrag.runtime.service.app import ServiceSettings, create_app  # noqa: E402
from pedrag.runtime.service.transport import HTTP_PROTOCOL  # noqa: E402
from pedrag.runtime.store.session_store import SessionStore  # noqa: E402
from tests.service.postgres import running_postgres  # noqa: E402
from tests.service.servers import free_port  # noqa: E402

SESSION = {"theory": "socratic", "curriculum": "intro", "exercise": "mult_7x8"}

# The floor's application: what every request costs before any framework or handler runs.
RAW_APP = """
import json


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    answer = json.dumps({"turn": 1, "reply": "a reply", "size": len(body)}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": answer})
"""


def uvicorn_floor(requests: int, clients: int) -> float:
    """CPU ms per request of uvicorn serving :data:`RAW_APP`."""
    with tempfile.TemporaryDirectory(prefix="pedrag-floor-") as folder:
        (Path(folder) / "raw_app.py").write_text(RAW_APP)
        port = free_port()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([folder, str(ROOT)])}
        command = [sys.executable, "-m", "uvicorn", "raw_app:app", "--port", str(port)]
        command += ["--http", HTTP_PROTOCOL, "--log-level", "warning", "--no-access-log"]
        server = subprocess.Popen(command, env=env, start_new_session=True)
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(base, timeout=1)
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise RuntimeError("the floor's server did not start") from None
                    time.sleep(0.2)
            asyncio.run(_post_many(base, requests // 4, clients))  # warm
            before = group_cpu_seconds(server.pid)
            asyncio.run(_post_many(base, requests, clients))
            return (group_cpu_seconds(server.pid) - before) * 1000 / requests
        finally:
            server.terminate()
            server.wait(timeout=30)


async def _post_many(base: str, requests: int, clients: int) -> None:
    """``requests`` turn-shaped POSTs from ``clients`` concurrent clients."""
    headers = {"Authorization": "Bearer pdg_" + "x" * 43}
    remaining = requests
    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:

        async def one() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                body = {"message": MESSAGES[remaining % len(MESSAGES)], "turn": 1}
                response = await client.post("/v1/sessions/0/turns", json=body, headers=headers)
                response.raise_for_status()

        await asyncio.gather(*(one() for _ in range(clients)))


class DirectAsgi:
    """The service's app driven by ASGI calls on this thread's event loop, no sockets."""

    def __init__(self, key: str, db: str) -> None:
        self.app = create_app(ServiceSettings(db=db), backend=None)
        self.headers = [
            (b"authorization", f"Bearer {key}".encode()),
            (b"content-type", b"application/json"),
            (b"host", b"127.0.0.1"),
        ]
        self.state: dict[str, Any] = {}

    async def call(self, path: str, body: dict[str, Any]) -> tuple[int, bytes]:
        raw = json.dumps(body).encode()
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [*self.headers, (b"content-length", str(len(raw)).encode())],
            "client": ("127.0.0.1", 1),
            "server": ("127.0.0.1", 80),
            "state": self.state,
        }
        received = False
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            nonlocal received
            if not received:
                received = True
                return {"type": "http.request", "body": raw, "more_body": False}
            await asyncio.Event().wait()  # no disconnect: the request is answered first
            raise AssertionError("unreachable")

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await self.app(scope, receive, send)
        return int(sent[0]["status"]), b"".join(item.get("body", b"") for item in sent[1:])

    async def create(self) -> str:
        status, body = await self.call("/v1/sessions", SESSION)
        if status != 201:
            raise RuntimeError(f"creating a session: {status} {body!r}")
        return str(json.loads(body)["id"])

    async def turns(self, session: str, count: int) -> None:
        for index in range(1, count + 1):
            message = {"message": MESSAGES[(index - 1) % len(MESSAGES)], "turn": index}
            status, body = await self.call(f"/v1/sessions/{session}/turns", message)
            if status != 200:
                raise RuntimeError(f"turn {index}: {status} {body!r}")


def app_on_loop(turns: int, clients: int, per_session: int) -> dict[str, float]:
    """Loop-thread CPU ms per turn request (creations apart) and per session creation."""
    with tempfile.TemporaryDirectory(prefix="pedrag-parts-") as folder:
        db = str(Path(folder) / "db.sqlite")
        with SessionStore(db) as store:
            store.tenants.create("bench")
            key = store.tenants.issue_key("bench")
        direct = DirectAsgi(key, db)
        return asyncio.run(_app_on_loop(direct, turns, clients, per_session))


async def _app_on_loop(
    direct: DirectAsgi, turns: int, clients: int, per_session: int
) -> dict[str, float]:
    messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    answers: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    await messages.put({"type": "lifespan.startup"})
    scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": direct.state}
    lifespan = asyncio.create_task(direct.app(scope, messages.get, answers.put))
    started = await answers.get()
    if started["type"] != "lifespan.startup.complete":
        raise RuntimeError(f"the app did not start: {started}")
    sessions = max(clients, turns // per_session)
    warm = await asyncio.gather(*(direct.create() for _ in range(clients)))
    await asyncio.gather(*(direct.turns(session, 2) for session in warm))
    # Two phases, each of concurrent tasks: the sessions' creations, then their turns.
    begin = time.thread_time()
    ids = await asyncio.gather(*(direct.create() for _ in range(sessions)))
    creation = time.thread_time() - begin
    begin = time.thread_time()
    for first in range(0, sessions, clients):
        batch = ids[first : first + clients]
        await asyncio.gather(*(direct.turns(session, per_session) for session in batch))
    turn = time.thread_time() - begin
    await messages.put({"type": "lifespan.shutdown"})
    await answers.get()
    await lifespan
    return {
        "turn_ms": turn * 1000 / (sessions * per_session),
        "creation_ms": creation * 1000 / sessions,
        "turns": sessions * per_session,
    }


def floor_app() -> Any:
    """The service with its plain turn requests answered by a pure-ASGI function that does a
    turn's work and nothing else (``floor``): the lower bound of any HTTP path for a turn on
    uvicorn. Everything else (lifespan, creations, readiness) is the service's own app. Its
    turn threads time their parts by their own CPU clock; ``GET /floor/parts`` answers the
    sums since the last such request (and starts them again)."""
    from types import SimpleNamespace

    from pydantic import TypeAdapter

    from pedrag.runtime.service import app as service
    from pedrag.runtime.service import metrics
    from pedrag.runtime.service.auth import KeyClaim
    from pedrag.runtime.service.schemas import TurnCreate, TurnOut

    inner = create_app()
    dump = TypeAdapter(TurnOut).dump_json
    parts: dict[str, float] = {}
    clock = time.thread_time

    def measured_turn(request: Any, claim: KeyClaim, session_id: str, turn: Any, text: str) -> Any:
        """``app._turn_in_thread``'s plain case (no toggle lands in a benchmark), in parts."""
        begin = clock()
        ctx, stored = claim.verify_with_session(request, session_id)
        read = clock()
        tutor, session = service._resume(ctx, session_id, stored)
        service._check_turn_index(session, turn)
        resumed = clock()
        result = tutor.turn(session, text)
        end = clock()
        for name, value in (("read", read - begin), ("resume", resumed - read)):
            parts[name] = parts.get(name, 0.0) + value
        parts["turn"] = parts.get("turn", 0.0) + end - resumed
        parts["turns"] = parts.get("turns", 0.0) + 1
        return result

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and path == "/floor/parts":
            answer = json.dumps(parts).encode()
            parts.clear()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": answer})
            return
        if scope["type"] != "http" or scope["method"] != "POST" or not path.endswith("/turns"):
            await inner(scope, receive, send)
            return
        started = time.perf_counter()
        request_id = service._new_request_id()
        token = service.REQUEST_ID.set(request_id)
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        turn = TurnCreate.model_validate_json(body)
        key = dict(scope["headers"])[b"authorization"][7:].decode()
        state = inner.state.service
        request = SimpleNamespace(app=SimpleNamespace(state=inner.state), state=SimpleNamespace())
        session_id = path[len("/v1/sessions/") : -len("/turns")]
        claim = KeyClaim(key, "learner")
        result = await state.hop.run(
            measured_turn, request, claim, session_id, turn.turn, turn.message
        )
        metrics.record_turn("json", time.perf_counter() - started, result.audit)
        answer = dump(service._turn_out(session_id, result))
        headers = [
            (b"content-length", str(len(answer)).encode()),
            (b"content-type", b"application/json"),
            (b"x-request-id", request_id.encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": answer})
        metrics.count_request(200)
        service.log.info("POST %s 200 %.1f ms", path, (time.perf_counter() - started) * 1000)
        service.REQUEST_ID.reset(token)

    return app


@contextlib.contextmanager
def _uvicorn(factory: str, db: str, log: Path) -> Iterator[tuple[str, int]]:
    """``factory`` on uvicorn as ``pedrag serve`` runs the service (one worker, its HTTP
    protocol, no access log, offline); yields its base URL and process group."""
    port = free_port()
    env = {**os.environ, "PEDRAG_LLM": "offline", "PEDRAG_DB": db, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "uvicorn", factory, "--factory", "--port", str(port)]
    command += ["--http", HTTP_PROTOCOL, "--log-level", "warning", "--no-access-log"]
    with open(log, "wb") as output:
        server = subprocess.Popen(
            command, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError(f"{factory} did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        yield base, server.pid
    finally:
        server.terminate()
        server.wait(timeout=30)


FLOOR_SERVERS = (
    ("service", "pedrag.runtime.service.app:create_app"),
    ("floor", "benchmarks.service_parts:floor_app"),
)


def http_floor(url: str, turns: int, clients: int, rounds: int) -> dict[str, dict[str, float]]:
    """Server CPU ms per turn (and its event loop's), at ``clients`` clients and at one, of
    the service and of :func:`floor_app`, driven in alternated rounds with
    ``service_load.py``'s in-process turn (``in_process``); at one client, the floor's turn
    threads' parts (``floor_parts``: the read, the session's rebuild, ``Tutor.turn``, by
    their threads' CPU clocks)."""
    chunk = max(1, turns // rounds)
    figures = {
        name: {"cpu": 0.0, "loop": 0.0, "alone_cpu": 0.0, "alone_loop": 0.0}
        for name, _ in FLOOR_SERVERS
    }
    floor_parts: dict[str, float] = {}
    in_process_cpu = 0.0
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pedrag-floor-")))
        in_process = InProcess(url, 10)
        stack.callback(in_process.close)
        servers = []
        for name, factory in FLOOR_SERVERS:
            db = fresh_database(url)
            with SessionStore(db) as store:
                store.tenants.create("bench")
                key = store.tenants.issue_key("bench")
            base, group = stack.enter_context(_uvicorn(factory, db, folder / f"{name}.log"))
            asyncio.run(drive(base, key, 40, 8, 2))  # warm
            servers.append((name, base, key, group))
        for _ in range(rounds):
            in_process_cpu += in_process.run(chunk)[2]
            for name, base, key, group in servers:
                for count, prefix in ((clients, ""), (1, "alone_")):
                    if name == "floor" and count == 1:
                        httpx.get(f"{base}/floor/parts")
                    cpu, loop = group_cpu_seconds(group), group_cpu_seconds(group, loops=True)
                    asyncio.run(drive(base, key, chunk, count, 10))
                    figures[name][prefix + "cpu"] += group_cpu_seconds(group) - cpu
                    figures[name][prefix + "loop"] += group_cpu_seconds(group, loops=True) - loop
                    if name == "floor" and count == 1:
                        for part, value in httpx.get(f"{base}/floor/parts").json().items():
                            floor_parts[part] = floor_parts.get(part, 0.0) + value
    measured = chunk * rounds
    results = {
        name: {part: value * 1000 / measured for part, value in values.items()}
        for name, values in figures.items()
    }
    results["in_process"] = {"cpu": in_process_cpu * 1000 / measured}
    count = floor_parts.pop("turns", 0.0) or 1.0
    results["floor_parts"] = {part: value * 1000 / count for part, value in floor_parts.items()}
    return results


def turn_thread(url: str, turns: int, rounds: int) -> dict[str, float]:
    """Thread CPU ms per turn of a service turn's thread work, in parts, against the
    in-process turn, in one process on one database of ``url``'s kind, in alternated rounds:

    - ``in_process``: ``service_load.py``'s baseline, a Tutor on the default tenant's store,
      its sessions kept in memory between turns;
    - ``tenant_tutor``: the service's own tutor (tenant-bound store, the tenant's budget), the
      sessions in memory too: what the service's tutor adds to a turn;
    - ``service_turn``: the service's turn function (``app._turn_in_thread``: the key and the
      session in one statement, the session rebuilt, the turn) on this thread, split into
      ``read`` (the statement), ``resume`` (the rebuild) and ``turn``;
    - ``hop_turn``: the same in the hop's thread, from an event loop, one at a time: what the
      thread switch adds (its thread's CPU, read in the thread)."""
    from types import SimpleNamespace

    from pedrag.runtime.policy.theory_set import TheorySet
    from pedrag.runtime.service import app as service
    from pedrag.runtime.service.auth import KeyClaim
    from pedrag.runtime.turn.tutor import Tutor

    clock = time.thread_time
    figures: dict[str, float] = {}

    def add(name: str, seconds: float) -> None:
        figures[name] = figures.get(name, 0.0) + seconds

    db = fresh_database(url)
    with SessionStore(db) as store:
        store.tenants.create("bench")
        key = store.tenants.issue_key("bench")
    state = service.load_service(ServiceSettings(db=db), backend=None)
    baseline = Tutor(TheorySet.shipped(), None, None, state.store)
    claim = KeyClaim(key, "learner")
    found = state.store.tenants.key(key)
    assert found is not None
    tenant_tutor = state.tutors.get(found.tenant, state.store.for_tenant("bench"), "intro")
    request = SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace(service=state)))
    request.state = SimpleNamespace()
    parts = {"read": 0.0, "resume": 0.0}
    real_verify, real_resume = KeyClaim.verify_with_session, service._resume

    def timed_verify(self: KeyClaim, *args: Any) -> Any:
        begin = clock()
        try:
            return real_verify(self, *args)
        finally:
            parts["read"] += clock() - begin

    def timed_resume(*args: Any) -> Any:
        begin = clock()
        try:
            return real_resume(*args)
        finally:
            parts["resume"] += clock() - begin

    KeyClaim.verify_with_session = timed_verify  # type: ignore[method-assign]
    service._resume = timed_resume
    chunk = max(10, turns // rounds)
    seeds = iter(range(10**6))

    def in_memory(tutor: Tutor, name: str) -> None:
        for _ in range(chunk // 10):
            session = tutor.start("socratic", "mult_7x8", next(seeds), meta={"curriculum": "intro"})
            for index in range(10):
                begin = clock()
                tutor.turn(session, MESSAGES[index % len(MESSAGES)])
                add(name, clock() - begin)

    def served(name: str, call: Any) -> None:
        for _ in range(chunk // 10):
            session = tenant_tutor.start(
                "socratic",
                "mult_7x8",
                next(seeds),
                session_id=f"s{next(seeds)}",
                meta={"curriculum": "intro"},
            )
            for index in range(10):
                message = MESSAGES[index % len(MESSAGES)]
                parts["read"] = parts["resume"] = 0.0
                add(name, call(session.id, message))
                add(name + ".read", parts["read"])
                add(name + ".resume", parts["resume"])

    def direct(session_id: str, message: str) -> float:
        begin = clock()
        service._turn_in_thread(request, claim, session_id, None, service._plain(message))
        return clock() - begin

    def in_thread(session_id: str, message: str) -> float:
        def measured() -> float:
            begin = clock()
            service._turn_in_thread(request, claim, session_id, None, service._plain(message))
            return clock() - begin

        async def hop() -> float:
            return await state.hop.run(measured)

        return loop.run_until_complete(hop())

    loop = asyncio.new_event_loop()
    try:
        in_memory(baseline, "warm")
        served("warm", direct)
        for _ in range(rounds):
            in_memory(baseline, "in_process")
            in_memory(tenant_tutor, "tenant_tutor")
            served("service_turn", direct)
            served("hop_turn", in_thread)
    finally:
        KeyClaim.verify_with_session = real_verify  # type: ignore[method-assign]
        service._resume = real_resume
        state.hop.close()
        loop.close()
        state.store.close()
    measured = (chunk // 10) * 10 * rounds
    return {
        name: value * 1000 / measured
        for name, value in figures.items()
        if not name.startswith("warm")
    }


def read_statement(rounds: int) -> dict[str, float]:
    """CPU ms of the key-and-session statement and of the key alone, in process."""
    from sqlalchemy import text

    from pedrag.runtime.policy.theory_set import TheorySet
    from pedrag.runtime.turn.tutor import Tutor

    with tempfile.TemporaryDirectory(prefix="pedrag-parts-") as folder:
        with SessionStore(str(Path(folder) / "db.sqlite")) as store:
            store.tenants.create("bench")
            key = store.tenants.issue_key("bench")
            theories = TheorySet.shipped()
            tutor = Tutor(theories, None, theories.curricula["intro"], store.for_tenant("bench"))
            ids = []
            for seed in range(20):
                session = tutor.start(
                    "socratic", "mult_7x8", seed, session_id=f"s{seed}", meta={"curriculum": None}
                )
                for index in range(8):
                    tutor.turn(session, MESSAGES[index % len(MESSAGES)])
                ids.append(session.id)
            directory = store.tenants
            reads = {
                "key_and_session": lambda session: directory.key_with_session(key, session),
                "key": lambda session: directory.key(key),
            }
            figures: dict[str, float] = {}
            for name, read in reads.items():
                after_write = warm = 0.0
                for index in range(rounds):
                    with store._transaction(write=True) as connection:
                        connection.execute(
                            text("UPDATE pedrag_tenants SET name = name WHERE id = 'bench'")
                        )
                    begin = time.thread_time()
                    read(ids[index % len(ids)])
                    after_write += time.thread_time() - begin
                    begin = time.thread_time()
                    read(ids[index % len(ids)])
                    warm += time.thread_time() - begin
                figures[f"{name}_after_write_ms"] = after_write * 1000 / rounds
                figures[f"{name}_warm_ms"] = warm * 1000 / rounds
            return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", choices=("uvicorn", "app", "floor", "thread", "read"))
    parser.add_argument(
        "--databases", nargs="+", choices=("sqlite", "postgresql"), default=["sqlite"]
    )
    parser.add_argument("--rounds", type=int, default=10, help="alternations (floor)")
    parser.add_argument("--turns", type=int, default=400, help="turns (requests) per part")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients")
    parser.add_argument("--turns-per-session", type=int, default=10)
    args = parser.parse_args()
    parts = args.parts or ["uvicorn", "app", "floor", "read"]
    if "uvicorn" in parts:
        floor = uvicorn_floor(args.turns, args.clients)
        print(f"uvicorn floor: {floor:.3f} ms of server CPU per request (raw ASGI app)")
    if "app" in parts:
        app = app_on_loop(args.turns, args.clients, args.turns_per_session)
        print(
            f"app on the loop: {app['turn_ms']:.3f} ms per turn request, "
            f"{app['creation_ms']:.3f} ms per session creation ({app['turns']:.0f} turns, "
            "loop thread CPU, no sockets)"
        )
    if "floor" in parts:
        for kind in args.databases:
            with contextlib.ExitStack() as stack:
                url = "sqlite" if kind == "sqlite" else stack.enter_context(running_postgres())
                got = http_floor(url, args.turns, args.clients, args.rounds)
            thread_parts = got.pop("floor_parts")
            base_cpu = got.pop("in_process")["cpu"]
            print(f"{kind} in-process turn: {base_cpu:.3f} ms of CPU")
            print(
                f"{kind} floor's turn thread at one client: "
                + ", ".join(f"{part} {value:.3f}" for part, value in thread_parts.items())
                + " ms per turn (thread CPU clocks)"
            )
            for name, values in got.items():
                print(
                    f"{kind} {name}: {values['cpu']:.3f} ms of server CPU per turn "
                    f"(loop {values['loop']:.3f}) at {args.clients} clients; "
                    f"{values['alone_cpu']:.3f} (loop {values['alone_loop']:.3f}) at one"
                )
            saved = {p: got["service"][p] - got["floor"][p] for p in got["service"]}
            print(
                f"{kind} floor saves: {saved['cpu']:.3f} ms per turn (loop {saved['loop']:.3f}) "
                f"at {args.clients} clients, {saved['alone_cpu']:.3f} "
                f"(loop {saved['alone_loop']:.3f}) at one"
            )
    if "thread" in parts:
        for kind in args.databases:
            with contextlib.ExitStack() as stack:
                url = "sqlite" if kind == "sqlite" else stack.enter_context(running_postgres())
                for name, value in turn_thread(url, args.turns, args.rounds).items():
                    print(f"{kind} thread {name}: {value:.3f} ms of thread CPU per turn")
    if "read" in parts:
        for name, value in read_statement(args.turns).items():
            print(f"read {name}: {value:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
