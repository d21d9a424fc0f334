"""The service on a real PostgreSQL with `pedrag serve --workers 4` (DESIGN, "The service").

A module-wide PostgreSQL server and one server process with four workers; the offline backend
answers, so every figure here is the service's own work. Needs Debian's `postgresql` package
(`.ci/run` installs it where it is missing).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from pedrag.runtime.store.migrate import HEAD
from pedrag.runtime.store.session_store import SessionStore, TurnConflict
from tests.fake_openai import FakeOpenAI
from tests.runtime.test_budget import race_workers_against, settle_malformed_against
from tests.runtime.test_store import a_second_burst_opens_no_connection
from tests.runtime.test_store_statements import (
    a_driver_error_writes_nothing,
    driver_row_is_sqlalchemys,
)
from tests.service.postgres import SKIP_REASON, postgres_bin, running_postgres
from tests.service.servers import running_server
from tests.service.test_store_tenancy import (
    key_with_session_reads_only_the_keys_tenant,
    request_windows_are_dropped_when_old,
)

pytestmark = pytest.mark.skipif(postgres_bin() is None, reason=SKIP_REASON)


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with running_postgres() as url:
        yield url


@pytest.fixture(scope="module")
def server(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with SessionStore(pg_url) as store:
        keys = {}
        for tenant in ("alpha", "beta"):
            store.tenants.create(tenant)
            keys[tenant] = store.tenants.issue_key(tenant, role="admin")
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    with running_server(pg_url, workers=4, log=log) as base:
        yield {"base": base, "keys": keys, "log": log}


def headers(server: dict[str, Any], tenant: str = "alpha") -> dict[str, str]:
    return {"Authorization": f"Bearer {server['keys'][tenant]}"}


def fresh_database(pg_url: str) -> str:
    name = "fresh_" + uuid.uuid4().hex[:8]
    admin = create_engine(pg_url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f"CREATE DATABASE {name}"))
    admin.dispose()
    return pg_url.rsplit("/", 1)[0] + "/" + name


OPEN_AND_WRITE = """
import sys, time
from pedrag.runtime.store.session_store import SessionStore
url, session_id, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
while time.time() < start:  # imports done: every process opens the store at the same moment
    time.sleep(0.001)
with SessionStore(url) as store:
    store.create_session(session_id, {"process": session_id}, {})
    store.save_turn(session_id, 1, {"done": True}, {"turn": 1})
"""


def test_sixteen_processes_start_on_an_empty_database_without_failure(pg_url: str) -> None:
    url = fresh_database(pg_url)
    start = time.time() + 8
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_AND_WRITE, url, f"p{index}", str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in range(16)
    ]
    outcomes = [(process.wait(timeout=120), process.stderr.read()) for process in processes]  # type: ignore[union-attr]
    assert [code for code, _ in outcomes] == [0] * 16, [err for code, err in outcomes if code]
    with SessionStore(url) as store:
        ids = sorted(item["id"] for item in store.list_sessions(limit=100))
        assert ids == sorted(f"p{index}" for index in range(16))
        assert all(store.audit_records(session_id) == [{"turn": 1}] for session_id in ids)
    engine = create_engine(url)
    with engine.connect() as connection:
        versions = connection.execute(text("SELECT version_num FROM alembic_version")).all()
    engine.dispose()
    assert [row[0] for row in versions] == [HEAD]


def _race_one_turn(first: SessionStore, second: SessionStore, session_id: str) -> dict[str, str]:
    barrier = threading.Barrier(2)
    results: dict[str, str] = {}

    def write(store: SessionStore, name: str) -> None:
        barrier.wait()
        try:
            store.save_turn(session_id, 1, {"by": name}, {"by": name})
            results[name] = "won"
        except TurnConflict:
            results[name] = "conflict"

    threads = [
        threading.Thread(target=write, args=(store, name))
        for store, name in ((first, "a"), (second, "b"))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_two_writers_of_the_same_turn_on_postgres_one_wins_nothing_lost(pg_url: str) -> None:
    with SessionStore(pg_url) as first, SessionStore(pg_url) as second:
        for round_ in range(10):
            session_id = f"race-{round_}-{uuid.uuid4().hex[:6]}"
            first.create_session(session_id, {}, {"turn": 0})
            results = _race_one_turn(first, second, session_id)
            assert sorted(results.values()) == ["conflict", "won"]
            winner = next(name for name, outcome in results.items() if outcome == "won")
            assert first.load_session(session_id)[1:] == ({"by": winner}, 1)
            assert first.audit_records(session_id) == [{"by": winner}]


async def _converse(client: httpx.AsyncClient, auth: dict[str, str], turns: int) -> dict[str, Any]:
    created = await client.post("/v1/sessions", json={"theory": "socratic"}, headers=auth)
    assert created.status_code == 201, created.text
    session_id = created.json()["id"]
    replies = []
    for index in range(1, turns + 1):
        message = {"message": f"turn {index}: I think the answer is {index * 3}", "turn": index}
        if index == turns:  # the last turn streamed: SSE through the same workers
            response = await client.post(
                f"/v1/sessions/{session_id}/turns/stream", json=message, headers=auth
            )
            assert response.status_code == 200
            last = response.text.strip().split("\n\n")[-1]
            assert last.startswith("event: end\n"), last
            replies.append(json.loads(last.split("data: ", 1)[1])["reply"])
        else:
            response = await client.post(
                f"/v1/sessions/{session_id}/turns", json=message, headers=auth
            )
            assert response.status_code == 200, response.text
            replies.append(response.json()["reply"])
    return {"id": session_id, "replies": replies}


def test_fifty_concurrent_sessions_of_ten_turns_keep_every_turn_and_audit(
    server: dict[str, Any],
) -> None:
    auth = headers(server)

    async def main() -> list[dict[str, Any]]:
        limits = httpx.Limits(max_connections=50)
        async with httpx.AsyncClient(base_url=server["base"], timeout=120, limits=limits) as client:
            return list(await asyncio.gather(*(_converse(client, auth, 10) for _ in range(50))))

    sessions = asyncio.run(main())
    assert len({item["id"] for item in sessions}) == 50
    with httpx.Client(base_url=server["base"], timeout=60, headers=auth) as client:
        for item in sessions:
            audit = client.get(f"/v1/sessions/{item['id']}/audit").json()["records"]
            assert [record["turn"] for record in audit] == list(range(1, 11))
            assert [record["tutor"] for record in audit] == item["replies"]
            assert client.get(f"/v1/sessions/{item['id']}").json()["turns"] == 10
        metrics = client.get("/metrics").text
    counts = [
        float(line.split()[-1])
        for line in metrics.splitlines()
        if line.startswith("pedrag_turn_seconds_count")
    ]
    assert sum(counts) >= 500  # the workers' metrics are summed (multiprocess mode)


def test_two_requests_posting_the_same_turn_one_wins_the_other_409(
    server: dict[str, Any],
) -> None:
    auth = headers(server)

    async def race(client_a: httpx.AsyncClient, client_b: httpx.AsyncClient) -> None:
        created = await client_a.post("/v1/sessions", json={"theory": "socratic"}, headers=auth)
        session_id = created.json()["id"]
        for index in (1, 2):
            answers = await asyncio.gather(
                *(
                    client.post(
                        f"/v1/sessions/{session_id}/turns",
                        json={"message": f"{who} says hello", "turn": index},
                        headers=auth,
                    )
                    for client, who in ((client_a, "ann"), (client_b, "bob"))
                )
            )
            statuses = sorted(answer.status_code for answer in answers)
            assert statuses == [200, 409], [answer.text for answer in answers]
            loser = next(answer for answer in answers if answer.status_code == 409)
            assert loser.headers["content-type"] == "application/problem+json"
            assert loser.json()["type"] == "urn:pedrag:problem:turn-conflict"
            won = next(
                who
                for answer, who in zip(answers, ("ann", "bob"), strict=True)
                if answer.status_code == 200
            )
            winner = next(answer for answer in answers if answer.status_code == 200).json()
            audit = (await client_a.get(f"/v1/sessions/{session_id}/audit", headers=auth)).json()
            assert [record["turn"] for record in audit["records"]] == list(range(1, index + 1))
            assert audit["records"][-1]["student"] == f"{won} says hello"
            assert audit["records"][-1]["tutor"] == winner["reply"]

    async def main() -> None:
        # Two clients, two connections: the requests are spread over the workers.
        async with (
            httpx.AsyncClient(base_url=server["base"], timeout=60) as client_a,
            httpx.AsyncClient(base_url=server["base"], timeout=60) as client_b,
        ):
            for _ in range(8):
                await race(client_a, client_b)

    asyncio.run(main())


def test_a_key_of_tenant_a_gets_404_for_every_id_of_tenant_b(server: dict[str, Any]) -> None:
    with (
        httpx.Client(base_url=server["base"], timeout=60, headers=headers(server, "beta")) as b,
        httpx.Client(base_url=server["base"], timeout=60, headers=headers(server, "alpha")) as a,
    ):
        learner = b.post("/v1/learners", json={"meta": {"name": "Bea"}}).json()["id"]
        session = b.post("/v1/sessions", json={"theory": "socratic", "learner_id": learner})
        session_id = session.json()["id"]
        assert b.post(f"/v1/sessions/{session_id}/turns", json={"message": "hi"}).status_code == 200

        b_key_id = b.post("/v1/keys", json={"role": "learner"}).json()["id"]
        turn = {"message": "let me in"}
        attempts = {
            ("get", "/v1/learners/{learner_id}"): lambda: a.get(f"/v1/learners/{learner}"),
            ("get", "/v1/learners/{learner_id}/sessions"): lambda: a.get(
                f"/v1/learners/{learner}/sessions"
            ),
            ("get", "/v1/learners/{learner_id}/goals"): lambda: a.get(
                f"/v1/learners/{learner}/goals"
            ),
            ("delete", "/v1/learners/{learner_id}"): lambda: a.delete(f"/v1/learners/{learner}"),
            ("get", "/v1/learners/{learner_id}/exams"): lambda: a.get(
                f"/v1/learners/{learner}/exams"
            ),
            ("post", "/v1/learners/{learner_id}/exams/{exam_id}/retake"): lambda: a.post(
                f"/v1/learners/{learner}/exams/final/retake"
            ),
            ("get", "/v1/sessions/{session_id}"): lambda: a.get(f"/v1/sessions/{session_id}"),
            ("get", "/v1/sessions/{session_id}/state"): lambda: a.get(
                f"/v1/sessions/{session_id}/state"
            ),
            ("delete", "/v1/keys/{key_id}"): lambda: a.delete(f"/v1/keys/{b_key_id}"),
            ("get", "/v1/sessions/{session_id}/audit"): lambda: a.get(
                f"/v1/sessions/{session_id}/audit"
            ),
            ("post", "/v1/sessions/{session_id}/turns"): lambda: a.post(
                f"/v1/sessions/{session_id}/turns", json=turn
            ),
            ("post", "/v1/sessions/{session_id}/turns/stream"): lambda: a.post(
                f"/v1/sessions/{session_id}/turns/stream", json=turn
            ),
            ("post", "/v1/sessions/{session_id}/instructor"): lambda: a.post(
                f"/v1/sessions/{session_id}/instructor", json={"explain_mode": True}
            ),
        }
        # Every route that takes an id is in the list: a new one must be added here.
        openapi = a.get("/openapi.json").json()["paths"]
        with_ids = {
            (method, path)
            for path, operations in openapi.items()
            if "{" in path
            for method in operations
        }
        assert with_ids == set(attempts)
        for route, attempt in attempts.items():
            response = attempt()
            assert response.status_code == 404, (route, response.text)
            assert response.headers["content-type"] == "application/problem+json", route
        # An id of tenant B in a body is unknown too, and B's sessions are not listed for A.
        attach = a.post("/v1/sessions", json={"theory": "socratic", "learner_id": learner})
        assert attach.status_code == 404
        assert session_id not in {item["id"] for item in a.get("/v1/sessions").json()}
        # ... and nothing of B's changed.
        assert b.get(f"/v1/sessions/{session_id}").json()["turns"] == 1
        assert b.get(f"/v1/sessions/{session_id}/state").json()["metrics"]["explain_mode"] is False
        assert b_key_id in {
            item["id"] for item in b.get("/v1/keys").json() if not item["revoked_at"]
        }
        assert b.get(f"/v1/learners/{learner}").json()["sessions"] == 1
        # On the workers and PostgreSQL too, a learner key reaches its own learner's session
        # only: Bea's key reads it; a key of nobody, and A's key bound to its own learner,
        # get the 404 of an unknown id.
        issued = b.post("/v1/keys", json={"role": "learner", "learner_id": learner}).json()
        anonymous = b.post("/v1/keys", json={"role": "learner"}).json()["key"]
        a_learner = a.post("/v1/learners", json={}).json()["id"]
        a_key = a.post("/v1/keys", json={"role": "learner", "learner_id": a_learner}).json()
        for key, status in ((issued["key"], 200), (anonymous, 404), (a_key["key"], 404)):
            seen = httpx.get(
                f"{server['base']}/v1/sessions/{session_id}",
                headers={"Authorization": f"Bearer {key}"},
                timeout=60,
            )
            assert seen.status_code == status, seen.text


def test_racing_turns_cannot_spend_past_the_deployment_cap_on_postgresql(
    pg_url: str, fake_openai: FakeOpenAI
) -> None:
    """As on SQLite (tests/runtime/test_budget.py): eight turns race for a cap with room for
    three calls' worst case, reserving in the PostgreSQL store; the total never passes it."""
    with SessionStore(fresh_database(pg_url)) as store:
        race_workers_against(store, fake_openai)


def test_a_malformed_reply_is_settled_at_its_cost_on_postgresql(
    pg_url: str, fake_openai: FakeOpenAI
) -> None:
    """As on SQLite: a reply that fails its schema is paid for, so its reservation in the
    PostgreSQL ledger is settled with its cost, not given back."""
    with SessionStore(fresh_database(pg_url)) as store:
        settle_malformed_against(store, fake_openai)


def test_a_keys_check_and_its_tenants_session_come_in_one_statement_on_postgresql(
    pg_url: str,
) -> None:
    with SessionStore(fresh_database(pg_url)) as store:
        key_with_session_reads_only_the_keys_tenant(store)


def test_a_read_on_psycopg_directly_gives_the_row_sqlalchemy_gives(pg_url: str) -> None:
    with SessionStore(fresh_database(pg_url)) as store:
        driver_row_is_sqlalchemys(store)


def test_request_counts_on_psycopg_directly_drop_old_windows(pg_url: str) -> None:
    with SessionStore(fresh_database(pg_url)) as store:
        assert store.for_tenant("a").count_request(7) == 1
        request_windows_are_dropped_when_old(store)


def test_a_burst_of_concurrent_reads_reopens_no_postgresql_connection(pg_url: str) -> None:
    with SessionStore(fresh_database(pg_url)) as store:
        a_second_burst_opens_no_connection(store)


def test_a_refused_statement_of_a_commit_on_psycopg_writes_nothing(pg_url: str) -> None:
    with SessionStore(fresh_database(pg_url)) as store:
        a_driver_error_writes_nothing(store, "duplicate key value")
