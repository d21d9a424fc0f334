"""Roles on API keys (issue 25): every route of the OpenAPI document walked with a key of each
role, a revoked key refused, and the `pedrag serve` key administration."""

from __future__ import annotations

import io
import itertools
import sys
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import pytest
from fastapi.testclient import TestClient

from pedrag.cli import main as cli_main
from pedrag.runtime.service.app import ServiceSettings, create_app
from pedrag.runtime.store.session_store import SessionStore

ROLES = ("learner", "instructor", "admin")

# The oracle, written out here and not read from the service: what each role may do.
PUBLIC = {("get", "/healthz"), ("get", "/readyz")}
LEARNER = {
    ("get", "/v1/key"),
    ("get", "/v1/theories"),
    ("post", "/v1/sessions"),
    ("get", "/v1/sessions/{session_id}"),
    ("post", "/v1/sessions/{session_id}/turns"),
    ("post", "/v1/sessions/{session_id}/turns/stream"),
}
ADMIN = {
    ("delete", "/v1/learners/{learner_id}"),
    ("get", "/v1/keys"),
    ("post", "/v1/keys"),
    ("delete", "/v1/keys/{key_id}"),
}
# Everything else needs an instructor key: toggles, audits, learner records, checks, and the
# Prometheus metrics (counts of every tenant's turns), unless the service opts in to an open
# scrape endpoint.

# Routes a key of the role needed reaches but the walk's fresh ids cannot satisfy: the role is
# checked (a weaker key still gets 403); the answer is the route's own refusal. Granting a
# retake needs an exam the learner sat (tests/service/test_exam_end.py: the shipped theories
# have no exam).
REFUSED_BY_THE_ROUTE = {("post", "/v1/learners/{learner_id}/exams/{exam_id}/retake"): 404}

BODIES: dict[tuple[str, str], Any] = {
    ("post", "/v1/theories/check"): {"source": "pedrag: 1\n"},
    ("post", "/v1/learners"): {},
    ("post", "/v1/sessions"): {"theory": "socratic"},
    ("post", "/v1/sessions/{session_id}/turns"): {"message": "how do I start?"},
    ("post", "/v1/sessions/{session_id}/turns/stream"): {"message": "and then?"},
    ("post", "/v1/sessions/{session_id}/instructor"): {"explain_mode": False},
    ("post", "/v1/keys"): {"role": "learner", "label": "walk"},
}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    db = str(tmp_path_factory.mktemp("roles") / "db.sqlite")
    with SessionStore(db) as store:
        store.tenants.create("school")
        keys = {role: store.tenants.issue_key("school", role=role) for role in ROLES}
    app = create_app(ServiceSettings(db=db), backend=None)
    with TestClient(app) as client:
        yield {"client": client, "keys": keys, "db": db}


def _as(service: dict[str, Any], role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {service['keys'][role]}"}


def _fresh_ids(service: dict[str, Any], role: str) -> dict[str, str]:
    """A session (started by the walking role's key: a learner key bound to nobody reaches the
    anonymous sessions it started only), a learner and a key of the tenant, new for each call
    (some routes delete)."""
    client, admin = service["client"], _as(service, "admin")
    learner = client.post("/v1/learners", json={}, headers=admin).json()["id"]
    started = client.post("/v1/sessions", json={"theory": "socratic"}, headers=_as(service, role))
    session = started.json()["id"]
    key = client.post("/v1/keys", json={"role": "learner"}, headers=admin).json()["id"]
    return {"session_id": session, "learner_id": learner, "key_id": key, "exam_id": "none"}


def test_every_route_of_the_openapi_document_answers_each_role_as_its_role_allows(
    service: dict[str, Any],
) -> None:
    client = service["client"]
    document = client.get("/openapi.json").json()
    routes = {(method, path) for path, ops in document["paths"].items() for method in ops}
    assert LEARNER | ADMIN | PUBLIC <= routes
    walked = 0
    for (method, path), role in itertools.product(sorted(routes), ROLES):
        operation = document["paths"][path][method]
        needed = (
            None
            if (method, path) in PUBLIC
            else "learner"
            if (method, path) in LEARNER
            else "admin"
            if (method, path) in ADMIN
            else "instructor"
        )
        assert operation.get("x-pedrag-role") == needed, (method, path)
        if needed is not None:
            assert {"HTTPBearer": []} in operation["security"], (method, path)
        url = path.format(**_fresh_ids(service, role))
        call: Callable[..., Any] = getattr(client, method)
        kwargs: dict[str, Any] = {"headers": _as(service, role)}
        if (method, path) in BODIES:
            kwargs["json"] = BODIES[(method, path)]
        response = call(url, **kwargs)
        allowed = needed is None or ROLES.index(role) >= ROLES.index(needed)
        if allowed and (method, path) in REFUSED_BY_THE_ROUTE:
            expected = REFUSED_BY_THE_ROUTE[(method, path)]
            assert response.status_code == expected, (method, path, role, response.text)
        elif allowed:
            assert response.status_code < 300, (method, path, role, response.text)
        else:
            assert response.status_code == 403, (method, path, role, response.text)
            problem = response.json()
            assert problem["type"] == "urn:pedrag:problem:forbidden"
            assert problem["title"] == "Forbidden"
            assert needed in problem["detail"] and role in problem["detail"]
        if (method, path) == ("get", "/v1/key"):  # any key may read its own role
            assert response.json()["role"] == role
        walked += 1
        if needed is not None:  # no key at all: 401 before anything else
            assert call(url, **{**kwargs, "headers": {}}).status_code == 401
    assert walked == 3 * len(routes)


def test_metrics_need_an_instructor_key_unless_the_service_makes_them_public(
    service: dict[str, Any],
) -> None:
    client = service["client"]
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers=_as(service, "learner")).status_code == 403
    assert "pedrag_turn_seconds" in client.get("/metrics", headers=_as(service, "instructor")).text
    public = create_app(ServiceSettings(db=service["db"], metrics_public=True), backend=None)
    with TestClient(public) as open_client:
        assert "pedrag_turn_seconds" in open_client.get("/metrics").text
        document = open_client.get("/openapi.json").json()
        assert "x-pedrag-role" not in document["paths"]["/metrics"]["get"]
    env = {"PEDRAG_SERVE_METRICS_PUBLIC": "1"}
    assert ServiceSettings.from_env(env).metrics_public
    assert not ServiceSettings.from_env({}).metrics_public
    with pytest.raises(ValueError, match="PEDRAG_SERVE_METRICS_PUBLIC"):
        ServiceSettings.from_env({"PEDRAG_SERVE_METRICS_PUBLIC": "yes please"})


def test_a_learner_key_changes_no_toggle_reads_no_audit_lists_no_learner(
    service: dict[str, Any],
) -> None:
    client, learner = service["client"], _as(service, "learner")
    ids = _fresh_ids(service, "learner")
    session = f"/v1/sessions/{ids['session_id']}"
    for response in (
        client.post(f"{session}/instructor", json={"explain_mode": True}, headers=learner),
        client.post(
            f"{session}/instructor", json={"lift_conduct_restriction": True}, headers=learner
        ),
        client.get(f"{session}/audit", headers=learner),
        client.get(f"{session}/state", headers=learner),
        client.get("/v1/sessions", headers=learner),
        client.get(f"/v1/learners/{ids['learner_id']}", headers=learner),
        client.delete(f"/v1/learners/{ids['learner_id']}", headers=learner),
        client.post("/v1/keys", json={"role": "admin"}, headers=learner),
    ):
        assert response.status_code == 403, response.text
    state = client.get(f"{session}/state", headers=_as(service, "instructor")).json()
    assert state["metrics"]["explain_mode"] is False
    # What a learner key does see of a session: no metrics, no meta.
    seen = client.get(session, headers=learner).json()
    assert "metrics" not in seen and "meta" not in seen


def test_a_revoked_key_is_refused_from_the_next_request_on(service: dict[str, Any]) -> None:
    client, admin = service["client"], _as(service, "admin")
    issued = client.post("/v1/keys", json={"role": "instructor"}, headers=admin)
    assert issued.status_code == 201
    key, key_id = issued.json()["key"], issued.json()["id"]
    assert key.startswith("pdg_") and key_id not in key
    fresh = {"Authorization": f"Bearer {key}"}
    assert client.get("/v1/sessions", headers=fresh).status_code == 200
    listed = {item["id"]: item for item in client.get("/v1/keys", headers=admin).json()}
    assert listed[key_id]["role"] == "instructor" and listed[key_id]["revoked_at"] is None
    assert "key" not in listed[key_id]
    assert client.delete(f"/v1/keys/{key_id}", headers=admin).status_code == 200
    refused = client.get("/v1/sessions", headers=fresh)
    assert refused.status_code == 401
    assert refused.json()["type"] == "urn:pedrag:problem:revoked-api-key"
    assert client.delete(f"/v1/keys/{key_id}", headers=admin).status_code == 404


@pytest.mark.parametrize("route", ["turns", "turns/stream"])
def test_a_revoked_key_cannot_post_a_turn(service: dict[str, Any], route: str) -> None:
    """The turn routes, JSON and streamed, check their key in the turn's own worker thread
    and read statement (auth.deferred_role, TenantDirectory.key_with_session): the same 401s
    as every other route, and nothing runs."""
    client, admin = service["client"], _as(service, "admin")
    issued = client.post("/v1/keys", json={"role": "learner"}, headers=admin).json()
    learner = {"Authorization": f"Bearer {issued['key']}"}
    session = client.post(
        "/v1/sessions",
        json={"theory": "socratic", "curriculum": "intro", "exercise": "mult_7x8"},
        headers=learner,
    ).json()["id"]
    turn = {"message": "Is it 56?", "turn": 1}
    assert client.post(f"/v1/sessions/{session}/{route}", json=turn, headers=learner).is_success
    assert client.delete(f"/v1/keys/{issued['id']}", headers=admin).status_code == 200
    turn["turn"] = 2
    refused = client.post(f"/v1/sessions/{session}/{route}", json=turn, headers=learner)
    assert refused.status_code == 401
    assert refused.json()["type"] == "urn:pedrag:problem:revoked-api-key"
    unknown = {"Authorization": "Bearer pdg_not-a-key"}
    refused = client.post(f"/v1/sessions/{session}/{route}", json=turn, headers=unknown)
    assert refused.json()["type"] == "urn:pedrag:problem:unknown-api-key"
    assert client.post(f"/v1/sessions/{session}/{route}", json=turn).status_code == 401
    audit = client.get(f"/v1/sessions/{session}/audit", headers=admin).json()["records"]
    assert len(audit) == 1  # the refused turns ran nothing


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli_main(["serve", *args])
    return code, out.getvalue(), err.getvalue()


def test_pedrag_serve_issues_lists_and_revokes_keys_by_role(tmp_path: Any) -> None:
    db = str(tmp_path / "keys.sqlite")
    code, admin_key, err = _cli("--db", db, "--add-tenant", "acme")
    assert code == 0 and "admin API key" in err
    code, learner_key, err = _cli("--db", db, "--issue-key", "acme", "--role", "learner")
    assert code == 0 and "learner API key" in err
    code, listing, _ = _cli("--db", db, "--list-keys", "acme")
    rows = [line.split("\t") for line in listing.splitlines()]
    assert [row[1:3] for row in rows] == [["admin", "in force"], ["learner", "in force"]]
    with SessionStore(db) as store:
        found = store.tenants.key(learner_key.strip())
        assert found is not None and found.role == "learner" and found.id == rows[1][0]
        code, _, err = _cli("--db", db, "--revoke-key", found.id)
        assert code == 0
        assert store.tenants.authenticate(learner_key.strip()) is None
        assert store.tenants.authenticate(admin_key.strip()) is not None
    assert _cli("--db", db, "--revoke-key", found.id)[0] == 2  # already revoked
    assert _cli("--db", db, "--list-keys", "nobody")[0] == 2
    with pytest.raises(SystemExit):
        _cli("--db", db, "--issue-key", "acme", "--role", "root")


def test_pedrag_serve_issues_a_learners_own_key(tmp_path: Any) -> None:
    """`--learner` binds a learner key to one learner of the tenant (created when new); the
    key then acts as that learner only. Any other role with `--learner` is a usage error."""
    db = str(tmp_path / "keys.sqlite")
    assert _cli("--db", db, "--add-tenant", "acme")[0] == 0
    code, key, err = _cli(
        "--db", db, "--issue-key", "acme", "--role", "learner", "--learner", "ana"
    )
    assert code == 0 and "bound to learner 'ana'" in err and "learner 'ana' created" in err
    code, again, err = _cli(
        "--db", db, "--issue-key", "acme", "--role", "learner", "--learner", "ana"
    )
    assert code == 0 and "created" not in err  # the same ana, a second key of hers
    code, listing, _ = _cli("--db", db, "--list-keys", "acme")
    assert [line.split("\t")[3] for line in listing.splitlines()] == [
        "-",
        "learner=ana",
        "learner=ana",
    ]
    with SessionStore(db) as store:
        found = store.tenants.key(key.strip())
        assert found is not None and (found.role, found.learner) == ("learner", "ana")
        assert store.for_tenant("acme").load_learner("ana")["id"] == "ana"
    for role in ("instructor", "admin"):
        code, out, err = _cli("--db", db, "--issue-key", "acme", "--role", role, "--learner", "ana")
        assert code == 2 and out == "" and "--learner goes with" in err
    code, _, err = _cli("--db", db, "--issue-key", "nobody", "--role", "learner", "--learner", "x")
    assert code == 2 and "no tenant" in err


def test_pedrag_audit_and_instructor_reach_a_tenants_service_sessions(
    service: dict[str, Any],
) -> None:
    import json as json_module

    client = service["client"]
    session_id = client.post(
        "/v1/sessions", json={"theory": "socratic"}, headers=_as(service, "learner")
    ).json()["id"]
    client.post(
        f"/v1/sessions/{session_id}/turns", json={"message": "hi"}, headers=_as(service, "learner")
    )
    code, _, err = _cli_command("audit", session_id, "--db", service["db"])
    assert code == 1 and "no session" in err  # not the default tenant's
    code, out, _ = _cli_command(
        "audit", session_id, "--db", service["db"], "--tenant", "school", "--format", "json"
    )
    assert code == 0 and session_id in out
    code, _, err = _cli_command(
        "instructor",
        session_id,
        "--db",
        service["db"],
        "--tenant",
        "school",
        "--set",
        "explain_mode=on",
    )
    assert code == 0, err
    state = client.get(f"/v1/sessions/{session_id}/state", headers=_as(service, "instructor"))
    assert state.json()["metrics"]["explain_mode"] is True
    assert json_module.loads(out) is not None


def _cli_command(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli_main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_pedrag_serve_without_the_service_extra_says_what_to_install(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pip install .` leaves the service extra out; the service stopped on a traceback from
    its first import of uvicorn. Key administration needs no extra and still works."""
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # importing it raises ImportError
    db = str(tmp_path / "extra.sqlite")
    assert _cli("--db", db, "--add-tenant", "acme")[0] == 0
    code, out, err = _cli("--db", db, "--port", "0")
    assert code == 2 and out == ""
    assert "uvicorn not installed" in err and "pip install 'pedrag[service]'" in err
    assert "Traceback" not in err
