"""The turn routes' plain case skips FastAPI's dependency solving (app._TurnRoute): every
answer must be the one FastAPI's own handler gives. Two apps on one database, the service's
and a reference whose turn routes are plain FastAPI routes, get the same requests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import fastapi.routing
import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from pedrag.runtime.service import app as service_app
from pedrag.runtime.service.app import ServiceSettings, create_app
from pedrag.runtime.store.session_store import SessionStore

ROUTES = ("turns", "turns/stream")


@pytest.fixture(scope="module")
def apps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    db = str(tmp_path_factory.mktemp("turn-route") / "db.sqlite")
    with SessionStore(db) as store:
        store.tenants.create("alpha")
        key = store.tenants.issue_key("alpha", role="learner")
    fast = create_app(ServiceSettings(db=db), backend=None)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(service_app._TurnRoute, "get_route_handler", APIRoute.get_route_handler)
        reference = create_app(ServiceSettings(db=db), backend=None)
    with TestClient(fast) as fast_client, TestClient(reference) as reference_client:
        yield {"fast": fast_client, "reference": reference_client, "key": key, "db": db}


def _session(apps: dict[str, Any]) -> str:
    response = apps["fast"].post(
        "/v1/sessions",
        json={"theory": "socratic", "curriculum": "intro", "exercise": "mult_7x8", "seed": 7},
        headers={"Authorization": f"Bearer {apps['key']}"},
    )
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def _answer(response: Any, session: str) -> tuple[int, str, Any]:
    """Status, content type and body, without what differs by request (its id, the
    session's id)."""
    kind = response.headers["content-type"]
    if "json" not in kind:
        return response.status_code, kind, response.text.replace(session, "")
    body = response.json()
    if isinstance(body, dict):
        body.pop("request_id", None)
        body.pop("session_id", None)
        body["detail"] = str(body.get("detail", "")).replace(session, "")
    return response.status_code, kind, body


JSON = {"Content-Type": "application/json"}
# (path id, headers beyond the key, raw body, send the key): every way a turn request can
# miss the plain case, and some that hit it but fail later (unknown session, conflict).
CASES = {
    "bad-id": ("bad id!", JSON, b'{"message": "hi"}', True),
    "long-id": ("x" * 129, JSON, b'{"message": "hi"}', True),
    "id-newline": ("abc%0A", JSON, b'{"message": "hi"}', True),
    "not-json": (None, JSON, b'{"message": ', True),
    "not-utf8": (None, JSON, b'{"message": "\xff"}', True),
    "empty": (None, JSON, b"", True),
    "a-list": (None, JSON, b'["hi"]', True),
    "extra-field": (None, JSON, b'{"message": "hi", "extra": 1}', True),
    "bool-turn": (None, JSON, b'{"message": "hi", "turn": true}', True),
    "float-turn": (None, JSON, b'{"message": "hi", "turn": 1.0}', True),
    "nan-turn": (None, JSON, b'{"message": "hi", "turn": NaN}', True),
    "turn-0": (None, JSON, b'{"message": "hi", "turn": 0}', True),
    "empty-message": (None, JSON, b'{"message": ""}', True),
    "long-message": (None, JSON, json.dumps({"message": "a" * 8001}).encode(), True),
    "surrogate": (None, JSON, b'{"message": "\\ud800"}', True),
    "nul": (None, JSON, b'{"message": "a\\u0000"}', True),
    "text-plain": (None, {"Content-Type": "text/plain"}, b'{"message": "hi"}', True),
    "no-content-type": (None, {}, b'{"message": "hi"}', True),
    "json-suffix": (None, {"Content-Type": "application/vnd.x+json"}, b'{"message": "hi"}', True),
    "charset": (None, {"Content-Type": "application/json; charset=utf-8"}, b'{"turn": 1}', True),
    "no-key": (None, JSON, b'{"message": "hi"}', False),
    "no-key-bad-body": (None, JSON, b'{"message": 3}', False),
    "unknown-session": ("nope", JSON, b'{"message": "hi"}', True),
    "conflict": (None, JSON, b'{"message": "hi", "turn": 5}', True),
    "duplicate-field": (None, JSON, b'{"message": "hi", "turn": 9, "turn": 1}', True),
    # Bodies pydantic-core's JSON parser and json.loads read differently (the plain case
    # parses with the former, FastAPI with the latter).
    "byte-order-mark": (None, JSON, b'\xef\xbb\xbf{"message": "hi", "turn": 1}', True),
    "utf-16": (None, JSON, '{"message": "hi", "turn": 1}'.encode("utf-16"), True),
    "raw-tab": (None, JSON, b'{"message": "a\tb"}', True),
    "trailing-comma": (None, JSON, b'{"message": "hi",}', True),
    "trailing-text": (None, JSON, b'{"message": "hi"} x', True),
    "leading-zero": (None, JSON, b'{"message": "hi", "turn": 01}', True),
    "huge-turn": (None, JSON, b'{"message": "hi", "turn": 1180591620717411303424}', True),
    "string-turn": (None, JSON, b'{"message": "hi", "turn": "1"}', True),
    "nul-byte-first": (None, JSON, b'\x00{"message": "hi"}', True),
}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_turn_request_answers_as_fastapis_own_handler_would(
    apps: dict[str, Any], route: str, case: str
) -> None:
    path_id, headers, body, with_key = CASES[case]
    headers = {**headers, **({"Authorization": f"Bearer {apps['key']}"} if with_key else {})}
    answers = []
    for name in ("fast", "reference"):
        session = path_id or _session(apps)  # a session each: equal sessions, equal turns
        response = apps[name].post(f"/v1/sessions/{session}/{route}", content=body, headers=headers)
        answers.append(_answer(response, session))
    assert answers[0] == answers[1]
    # None of these runs a turn, but a duplicated field (the last value counts: turn 1), a
    # `+json` type (FastAPI reads it as JSON: its own handler runs that turn) and UTF-16 or a
    # byte-order mark (json.loads reads them; pydantic-core does not, so FastAPI answers).
    assert (answers[0][0] == 200) == (
        case in ("duplicate-field", "json-suffix", "byte-order-mark", "utf-16")
    )


@pytest.mark.parametrize("route", ROUTES)
def test_a_plain_turn_skips_dependency_solving_and_answers_as_fastapi_would(
    apps: dict[str, Any], route: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    solved: list[str] = []
    real = fastapi.routing.solve_dependencies

    async def counted(**kwargs: Any) -> Any:
        if "/turns" in kwargs["request"].url.path:
            solved.append(kwargs["request"].url.path)
        return await real(**kwargs)

    monkeypatch.setattr(fastapi.routing, "solve_dependencies", counted)
    key = {"Authorization": f"Bearer {apps['key']}"}
    answers = []
    for name in ("fast", "reference"):
        session = _session(apps)
        turn = {"message": "Is it 56?", "turn": 1}
        response = apps[name].post(f"/v1/sessions/{session}/{route}", json=turn, headers=key)
        answers.append(_answer(response, session))
        assert len(solved) == (name == "reference")
    assert answers[0] == answers[1]
    assert answers[0][0] == 200
    # A request off the plain case is FastAPI's: its dependencies are solved.
    apps["fast"].post(f"/v1/sessions/{session}/{route}", json={"message": ""}, headers=key)
    assert len(solved) == 2


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    "body", [{"message": 1}, {"message": "hi", "extra": True}, b"\xff not json", b"[]"]
)
def test_a_bad_key_is_refused_before_a_bad_body_is_judged(
    apps: dict[str, Any], route: str, body: Any
) -> None:
    # The turn routes check a key in the turn's thread, which a malformed request never
    # reaches: an unknown or revoked key must still get its 401, not the body's 422 (which
    # would answer a caller with no valid key).
    session = _session(apps)
    with SessionStore(apps["db"]) as store:
        revoked = store.tenants.issue_key("alpha", role="learner")
        assert store.tenants.revoke_key(store.tenants.key(revoked).id)  # type: ignore[union-attr]
    sent = {"json": body} if not isinstance(body, bytes) else {"content": body}
    path = f"/v1/sessions/{session}/{route}"
    for key, status, slug in (
        ("pdg_not_a_key", 401, "unknown-api-key"),
        (revoked, 401, "revoked-api-key"),
        (apps["key"], 422, "invalid-request"),
    ):
        response = apps["fast"].post(
            path,
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
            **sent,
        )
        assert (response.status_code, response.json()["type"].rsplit(":", 1)[1]) == (
            status,
            slug,
        ), response.text


@pytest.mark.parametrize(
    "body", [{"theory": 3}, {"theory": "socratic", "colour": "red"}, b"\xff not json", b"[]"]
)
def test_a_session_request_with_a_bad_key_is_refused_before_its_body_is_judged(
    apps: dict[str, Any], body: Any
) -> None:
    # A session's creation checks its key in the thread that creates it, as a turn does: a
    # malformed body must not answer a caller with no valid key, and a valid key's body is
    # judged as before.
    with SessionStore(apps["db"]) as store:
        revoked = store.tenants.issue_key("alpha", role="learner")
        assert store.tenants.revoke_key(store.tenants.key(revoked).id)  # type: ignore[union-attr]
    sent = {"json": body} if not isinstance(body, bytes) else {"content": body}
    for key, status, slug in (
        ("pdg_not_a_key", 401, "unknown-api-key"),
        (revoked, 401, "revoked-api-key"),
        (apps["key"], 422, "invalid-request"),
    ):
        response = apps["fast"].post(
            "/v1/sessions",
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
            **sent,
        )
        assert (response.status_code, response.json()["type"].rsplit(":", 1)[1]) == (
            status,
            slug,
        ), response.text
    missing = apps["fast"].post("/v1/sessions", json={"theory": 3})
    assert missing.status_code == 401 and missing.json()["type"].endswith("missing-api-key")
