"""Input and error hygiene (issue 25): client input that cannot be stored is 422 before anything
is written, sizes are bounded, booleans are strict, every 5xx carries its request id in the
header, the body and the log line."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from pedrag.runtime.service.app import RequestIdFilter, ServiceSettings, create_app
from pedrag.runtime.service.schemas import MAX_BODY_BYTES, MAX_META_BYTES
from pedrag.runtime.store.session_store import SessionStore


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    db = str(tmp_path_factory.mktemp("hygiene") / "db.sqlite")
    with SessionStore(db) as store:
        store.tenants.create("school")
        key = store.tenants.issue_key("school", role="admin")
    app = create_app(ServiceSettings(db=db), backend=None)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield {"client": client, "headers": {"Authorization": f"Bearer {key}"}, "db": db}


def _raw(service: dict[str, Any], path: str, body: bytes) -> Any:
    headers = {**service["headers"], "Content-Type": "application/json"}
    return service["client"].post(path, content=body, headers=headers)


def test_text_that_cannot_be_stored_is_422_and_nothing_is_written(
    service: dict[str, Any],
) -> None:
    client, headers = service["client"], service["headers"]
    session = client.post("/v1/sessions", json={}, headers=headers).json()["id"]
    for body in (
        rb'{"message": "hello\u0000there"}',
        rb'{"message": "lone \ud800 surrogate"}',
        rb'{"message": "\udfff"}',
    ):
        refused = _raw(service, f"/v1/sessions/{session}/turns", body)
        assert refused.status_code == 422, refused.text
        assert refused.json()["type"] == "urn:pedrag:problem:invalid-request"
    assert client.get(f"/v1/sessions/{session}", headers=headers).json()["turns"] == 0
    for body in (
        rb'{"id": "ana", "meta": {"name": "\ud83d"}}',
        rb'{"id": "ana", "meta": {"bad\u0000key": 1}}',
        rb'{"id": "ana", "meta": {"nested": [{"deeper": "\u0000"}]}}',
    ):
        assert _raw(service, "/v1/learners", body).status_code == 422
    assert client.get("/v1/learners/ana", headers=headers).status_code == 404  # not written
    assert _raw(service, "/v1/learners", b"\xc6\xa9N\xff").status_code == 422  # not UTF-8
    for path in ("/v1/sessions/a%00b", "/v1/learners/%ED%A0%80", f"/v1/sessions/{'x' * 200}"):
        assert client.get(path, headers=headers).status_code == 422, path


def test_sizes_are_bounded_and_booleans_strict(service: dict[str, Any]) -> None:
    client, headers = service["client"], service["headers"]
    big_meta = {"id": "big", "meta": {"notes": "x" * (MAX_META_BYTES + 1)}}
    assert client.post("/v1/learners", json=big_meta, headers=headers).status_code == 422
    huge = _raw(service, "/v1/learners", b'{"meta": {"x": "' + b"y" * MAX_BODY_BYTES + b'"}}')
    assert huge.status_code == 413 and huge.json()["type"] == "urn:pedrag:problem:too-large"
    session = client.post("/v1/sessions", json={}, headers=headers).json()["id"]
    for toggle in (
        {"explain_mode": "yes"},
        {"explain_mode": 1},
        {"metrics": {"explain_mode": "true"}},
    ):
        answer = client.post(f"/v1/sessions/{session}/instructor", json=toggle, headers=headers)
        assert answer.status_code == 422, (toggle, answer.text)
    state = client.get(f"/v1/sessions/{session}/state", headers=headers).json()
    assert state["metrics"]["explain_mode"] is False
    long_theory = {"theory": "t" * 500}
    assert client.post("/v1/sessions", json=long_theory, headers=headers).status_code == 422


def test_a_500_carries_its_request_id_in_header_body_and_log_line(
    service: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    client, headers = service["client"], service["headers"]
    session = client.post("/v1/sessions", json={}, headers=headers).json()["id"]
    with SessionStore(service["db"]) as store:  # a row damaged behind the service's back
        stored = store.for_tenant("school").read_session(session)
        damaged = {**stored.state, "metrics": ["not", "a", "mapping"]}
        store.for_tenant("school").set_state(session, stored.turns, damaged)
    caplog.handler.addFilter(RequestIdFilter())
    with caplog.at_level(logging.ERROR, logger="pedrag.service"):
        failed = client.post(
            f"/v1/sessions/{session}/turns",
            json={"message": "hi"},
            headers={**headers, "X-Request-ID": "req-500"},
        )
    assert failed.status_code == 500
    assert failed.headers["x-request-id"] == "req-500"
    assert failed.json()["request_id"] == "req-500"
    assert "metrics" not in failed.text and "Traceback" not in failed.text
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert logged and all(r.request_id == "req-500" for r in logged)  # type: ignore[attr-defined]
    assert any(r.exc_info for r in logged)
