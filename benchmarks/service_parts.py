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
- ``read``: the statement a turn's thread runs before the turn (the key and the session,
  ``TenantDirectory.key_with_session``), and the key alone, in process, each after a write by
  another connection (SQLite then discards the reading connection's page cache, as it does
  between a live service's turns) and warm.

    python benchmarks/service_parts.py [--parts uvicorn app read] [--turns 400] [--clients 8]

CPU figures on a shared machine move with its load: compare parts within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.service_load import MESSAGES, group_cpu_seconds  # noqa: E402
from pedrag.runtime.service.app import ServiceSettings, create_app  # noqa: E402
from pedrag.runtime.service.transport import HTTP_PROTOCOL  # noqa: E402
from pedrag.runtime.store.session_store import SessionStore  # noqa: E402
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
    parser.add_argument("--parts", nargs="+", choices=("uvicorn", "app", "read"))
    parser.add_argument("--turns", type=int, default=400, help="turns (requests) per part")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients")
    parser.add_argument("--turns-per-session", type=int, default=10)
    args = parser.parse_args()
    parts = args.parts or ["uvicorn", "app", "read"]
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
    if "read" in parts:
        for name, value in read_statement(args.turns).items():
            print(f"read {name}: {value:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
