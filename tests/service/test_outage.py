"""The service survives its database (issue 25): PostgreSQL stopped for 4 s under load, a worker
killed while it is down (so uvicorn starts a new one against a dead database), the server
started again: the service comes back by itself and no turn it answered 200 for is lost."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pedrag.runtime.store.session_store import SessionStore
from tests.service.postgres import SKIP_REASON, PostgresServer, postgres_bin, postgres_server
from tests.service.servers import running_server

pytestmark = pytest.mark.skipif(postgres_bin() is None, reason=SKIP_REASON)

CLIENTS = 4


def _workers(pid: int) -> list[int]:
    """The uvicorn workers of a `pedrag serve` process: its spawned children (not the
    multiprocessing resource tracker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(fields[1]) == pid and b"spawn_main" in command:
                found.append(int(entry.name))
    return found


@pytest.fixture(scope="module")
def pg() -> Iterator[PostgresServer]:
    with postgres_server() as server:
        yield server


def test_a_postgres_restart_under_load_loses_nothing_and_the_service_comes_back(
    pg: PostgresServer, tmp_path: Path
) -> None:
    with SessionStore(pg.url) as store:
        store.tenants.create("school")
        key = store.tenants.issue_key("school", role="instructor")
    auth = {"Authorization": f"Bearer {key}"}
    started: list[subprocess.Popen[bytes]] = []
    stop = threading.Event()
    committed: dict[str, int] = {}
    refused: list[tuple[int, str]] = []
    problems: list[str] = []

    def learner(base: str) -> None:
        with httpx.Client(base_url=base, headers=auth, timeout=60) as client:
            session_id = client.post("/v1/sessions", json={"theory": "socratic"}).json()["id"]
            committed[session_id] = 0
            while not stop.is_set():
                index = committed[session_id] + 1
                try:
                    answer = client.post(
                        f"/v1/sessions/{session_id}/turns",
                        json={"message": f"turn {index}: is it {index}?", "turn": index},
                    )
                except httpx.HTTPError as error:  # a worker killed under the request
                    refused.append((0, type(error).__name__))
                    time.sleep(0.2)
                    continue
                if answer.status_code == 200:
                    committed[session_id] = index
                elif answer.status_code == 409 and answer.json().get("committed_turns") == index:
                    committed[session_id] = index  # committed, but the answer was lost
                elif answer.status_code == 503:
                    refused.append((503, answer.text))
                    time.sleep(0.2)
                else:
                    problems.append(f"{answer.status_code} {answer.text}")
                    return

    env = {"PEDRAG_DB_RETRY_SECONDS": "2", "PEDRAG_SERVE_START_RETRY_SECONDS": "90"}
    with running_server(
        pg.url, workers=2, log=tmp_path / "serve.log", env=env, started=started
    ) as base:
        threads = [threading.Thread(target=learner, args=(base,)) for _ in range(CLIENTS)]
        for thread in threads:
            thread.start()
        time.sleep(3)
        before = dict(committed)
        pg.stop()
        workers = _workers(started[0].pid)
        assert len(workers) == 2, workers
        os.kill(workers[0], signal.SIGKILL)  # uvicorn starts a new one: the database is down
        time.sleep(4)
        down = httpx.get(f"{base}/readyz", timeout=30)
        deadline = (
            time.monotonic() + 300
        )  # a new worker loads the theories first: slow on a loaded host
        while "database unavailable at start-up" not in (tmp_path / "serve.log").read_text():
            assert time.monotonic() < deadline, "the new worker never tried the database"
            time.sleep(0.2)  # the outage lasts until the new worker has met it
        pg.start()
        pg.wait_ready()
        deadline = time.monotonic() + 120
        while httpx.get(f"{base}/readyz", timeout=30).status_code != 200:
            assert time.monotonic() < deadline, (tmp_path / "serve.log").read_text()[-3000:]
            time.sleep(0.5)
        after_restart = dict(committed)
        time.sleep(4)
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
        assert started[0].poll() is None  # the service itself never stopped
        alive = [pid for pid in _workers(started[0].pid) if pid != workers[0]]
        with httpx.Client(base_url=base, headers=auth, timeout=60) as client:
            for session_id, turns in committed.items():
                records = client.get(f"/v1/sessions/{session_id}/audit").json()["records"]
                assert [record["turn"] for record in records] == list(range(1, turns + 1))
    assert problems == []
    assert down.status_code == 503 and down.json()["detail"] == "database unavailable"
    assert all(before[s] > 0 for s in before)  # turns committed before the outage
    assert all(committed[s] > after_restart[s] for s in committed), (after_restart, committed)
    assert len(alive) >= 2  # the killed worker was replaced though the database was down
    for _, body in refused:  # what a client saw of the outage: no URL, no driver text
        assert "postgresql" not in body and "127.0.0.1" not in body and str(pg.port) not in body


def test_a_pooled_connection_is_pinged_only_after_sitting_idle_and_replaced_if_dead(
    pg: PostgresServer,
) -> None:
    """No round trip before every transaction (`pool_pre_ping` paid one): a connection used
    again at once is not pinged; one idle past the threshold is, and a server restart in
    between costs a reconnect, not a failed read."""
    from pedrag.runtime.store.connection import PING_AFTER_IDLE_SECONDS

    with SessionStore(pg.url) as store:
        dialect = store._engine.dialect
        real_ping = dialect.do_ping
        pings: list[bool] = []

        def counted(dbapi_connection: object) -> bool:  # the real ping, counted
            pings.append(True)
            return bool(real_ping(dbapi_connection))

        dialect.do_ping = counted  # type: ignore[method-assign]
        store.list_sessions()
        store.list_sessions()
        assert pings == []
        pg.stop()
        pg.start()
        pg.wait_ready()
        time.sleep(PING_AFTER_IDLE_SECONDS + 0.2)
        assert store.list_sessions() == []  # the dead connection was pinged and replaced
        assert len(pings) >= 1
