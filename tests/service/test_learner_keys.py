"""A learner key is one learner (red team T1, finding 1): whatever id a body, a path or a query
names, a learner key starts sessions for its own learner only, reads and continues only that
learner's sessions (another's answers 404, as an id that does not exist), lists no learner,
and so writes no other learner's mastery, goals or exam sitting. Every route a learner key can
reach is walked with another learner's id, and with another tenant's."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from pedrag.runtime.service.app import ServiceSettings, create_app
from pedrag.runtime.store.session_store import SessionStore

ROOT = Path(__file__).resolve().parents[2]
LEARNING = ROOT / "tests" / "data" / "runtime" / "learning.yaml"  # a curriculum with exams
PRACTICE = {"theory": "socratic", "exercise": "mult_7x8"}
EXAM = {"theory": "socratic", "exercise": "times_exam"}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("theories")
    shutil.copy(ROOT / "theories" / "socratic.yaml", folder)
    shutil.copy(LEARNING, folder)
    db = str(folder / "db.sqlite")
    with SessionStore(db) as store:
        keys = {}
        for tenant in ("school", "other"):
            store.tenants.create(tenant)
            for learner in ("ana", "bob"):
                store.for_tenant(tenant).create_learner(learner)
            keys[tenant] = {
                learner: store.tenants.issue_key(tenant, role="learner", learner=learner)
                for learner in ("ana", "bob")
            }
            keys[tenant]["anonymous"] = store.tenants.issue_key(tenant, role="learner")
            # another person's key bound to nobody: anonymous practice is each key's own
            keys[tenant]["stranger"] = store.tenants.issue_key(tenant, role="learner")
            keys[tenant]["instructor"] = store.tenants.issue_key(tenant, role="instructor")
            keys[tenant]["admin"] = store.tenants.issue_key(tenant, role="admin")
    app = create_app(ServiceSettings(db=db, theories=(str(folder),)), backend=None)
    with TestClient(app) as client:
        yield {"client": client, "keys": keys}


def _as(service: dict[str, Any], who: str, tenant: str = "school") -> dict[str, str]:
    return {"Authorization": f"Bearer {service['keys'][tenant][who]}"}


def _start(service: dict[str, Any], who: str, tenant: str = "school", **body: Any) -> str:
    created = service["client"].post(
        "/v1/sessions", json={**PRACTICE, **body}, headers=_as(service, who, tenant)
    )
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def _learner(service: dict[str, Any], learner: str, tenant: str = "school") -> dict[str, Any]:
    """What an instructor of the tenant sees of a learner: record, sessions, goals, exams."""
    client, instructor = service["client"], _as(service, "instructor", tenant)
    base = f"/v1/learners/{learner}"
    goals = client.get(f"{base}/goals", headers=instructor).json()
    return {
        "sessions": sorted(
            s["id"] for s in client.get(f"{base}/sessions", headers=instructor).json()
        ),
        "evidence": {g["goal"]: g["evidence"] for g in goals},
        "exams": client.get(f"{base}/exams", headers=instructor).json()["sittings"],
    }


def test_a_learner_keys_session_is_its_learners_whatever_the_body_says(
    service: dict[str, Any],
) -> None:
    client = service["client"]
    bob_before = _learner(service, "bob")
    mine = client.post("/v1/sessions", json=PRACTICE, headers=_as(service, "ana"))
    assert mine.status_code == 201 and mine.json()["learner_id"] == "ana"
    named = client.post(
        "/v1/sessions", json={**PRACTICE, "learner_id": "ana"}, headers=_as(service, "ana")
    )
    assert named.status_code == 201 and named.json()["learner_id"] == "ana"
    # another learner of the tenant, one that does not exist, one of another tenant only:
    # the same 403, before any lookup (nothing said about whether they exist)
    for other in ("bob", "zed"):
        refused = client.post(
            "/v1/sessions", json={**PRACTICE, "learner_id": other}, headers=_as(service, "ana")
        )
        assert refused.status_code == 403, refused.text
        assert refused.json()["type"] == "urn:pedrag:problem:another-learner"
        assert other not in refused.json()["detail"]
    # judged before the body's other fields, as a key's role is
    odd = {"theory": "no-such-theory", "exercise": "nope", "learner_id": "bob"}
    assert client.post("/v1/sessions", json=odd, headers=_as(service, "ana")).status_code == 403
    assert _learner(service, "bob") == bob_before  # no session, no goal, no sitting of bob's


def test_a_learner_key_bound_to_nobody_keeps_anonymous_practice_but_names_no_learner(
    service: dict[str, Any],
) -> None:
    client, anonymous = service["client"], _as(service, "anonymous")
    bob_before = _learner(service, "bob")
    practice = client.post("/v1/sessions", json=PRACTICE, headers=anonymous)
    assert practice.status_code == 201 and practice.json()["learner_id"] is None
    turn = client.post(
        f"/v1/sessions/{practice.json()['id']}/turns", json={"message": "hi"}, headers=anonymous
    )
    assert turn.status_code == 200, turn.text
    named = client.post("/v1/sessions", json={**PRACTICE, "learner_id": "bob"}, headers=anonymous)
    assert named.status_code == 403
    assert named.json()["type"] == "urn:pedrag:problem:key-not-bound-to-a-learner"
    assert "--learner" in named.json()["detail"]
    assert client.get("/v1/key", headers=anonymous).json()["learner_id"] is None
    assert client.get("/v1/key", headers=_as(service, "ana")).json()["learner_id"] == "ana"
    assert _learner(service, "bob") == bob_before


def test_another_learners_session_answers_404_on_every_route_a_learner_key_reaches(
    service: dict[str, Any],
) -> None:
    """Read, turn, stream: another learner's session, an anonymous one (to a bound key, and
    to another key bound to nobody), another tenant's learner of the same name: each answers as an id that never existed, and nothing of the
    session changes (its turns, its learner's goals)."""
    client = service["client"]
    bobs = _start(service, "bob")
    anonymous = _start(service, "anonymous")
    other_anas = _start(service, "ana", tenant="other")
    unknown = "0" * 32
    instructor = _as(service, "instructor")
    bob_before = _learner(service, "bob")

    def reach(session: str, headers: dict[str, str]) -> list[Any]:
        # a query naming the session's learner changes nothing either
        return [
            client.get(f"/v1/sessions/{session}", headers=headers),
            client.get(f"/v1/sessions/{session}?learner_id=bob", headers=headers),
            client.post(f"/v1/sessions/{session}/turns", json={"message": "72"}, headers=headers),
            client.post(
                f"/v1/sessions/{session}/turns/stream",
                json={"message": "is it 72?"},
                headers=headers,
            ),
        ]

    expected = [(r.status_code, r.json()["type"]) for r in reach(unknown, _as(service, "ana"))]
    assert expected == [(404, "urn:pedrag:problem:session-not-found")] * 4
    for session, who in (
        (bobs, "ana"),
        (anonymous, "ana"),
        (bobs, "anonymous"),
        (anonymous, "stranger"),
        (other_anas, "ana"),
    ):
        answers = reach(session, _as(service, who))
        assert [(r.status_code, r.json()["type"]) for r in answers] == expected, who
        for answer in answers:  # worded as an unknown id: nothing says whose it is
            assert answer.json()["detail"] == f"no session with id {session!r}"
    for session in (bobs, anonymous):
        assert client.get(f"/v1/sessions/{session}/state", headers=instructor).json()["turns"] == 0
    assert _learner(service, "bob") == bob_before
    # the owner, and an instructor, still reach them
    assert client.get(f"/v1/sessions/{bobs}", headers=_as(service, "bob")).status_code == 200
    assert (
        client.get(f"/v1/sessions/{anonymous}", headers=_as(service, "anonymous")).status_code
        == 200
    )
    assert client.get(f"/v1/sessions/{bobs}", headers=instructor).status_code == 200


def test_a_learner_key_lists_no_learner_and_no_session(service: dict[str, Any]) -> None:
    client, ana = service["client"], _as(service, "ana")
    for path in (
        "/v1/sessions",
        "/v1/sessions?learner_id=ana",
        "/v1/learners/ana",
        "/v1/learners/bob",
        "/v1/learners/bob/sessions",
        "/v1/learners/bob/goals",
        "/v1/learners/bob/exams",
        "/v1/keys",
    ):
        answer = client.get(path, headers=ana)
        assert answer.status_code == 403, (path, answer.text)


def test_a_learner_key_cannot_lock_another_learner_out_of_an_exam(service: dict[str, Any]) -> None:
    """Exams are sat once per learner: a key that could start bob's sitting could spend it."""
    client = service["client"]
    for who in ("ana", "anonymous"):
        refused = client.post(
            "/v1/sessions", json={**EXAM, "learner_id": "bob"}, headers=_as(service, who)
        )
        assert refused.status_code == 403
    # another tenant's bob is another learner: their sitting is not this bob's
    theirs = client.post("/v1/sessions", json=EXAM, headers=_as(service, "bob", "other"))
    assert theirs.status_code == 201, theirs.text
    assert _learner(service, "bob")["exams"] == []
    sat = client.post("/v1/sessions", json=EXAM, headers=_as(service, "bob"))
    assert sat.status_code == 201 and sat.json()["learner_id"] == "bob"
    # and no instructor of the other tenant can grant this bob a retake of it
    foreign = client.post(
        "/v1/learners/bob/exams/times_exam/retake", headers=_as(service, "instructor", "other")
    )
    assert foreign.status_code == 201  # their own bob's: this tenant's bob is untouched
    again = client.post("/v1/sessions", json=EXAM, headers=_as(service, "bob"))
    assert again.status_code == 422 and sat.json()["id"] in again.json()["detail"]


def test_keys_name_their_learner_when_issued_and_die_with_the_learner(
    service: dict[str, Any],
) -> None:
    client, admin = service["client"], _as(service, "admin")
    instructor = _as(service, "instructor")
    assert client.post("/v1/learners", json={"id": "cy"}, headers=instructor).status_code == 201
    issued = client.post("/v1/keys", json={"role": "learner", "learner_id": "cy"}, headers=admin)
    assert issued.status_code == 201 and issued.json()["learner_id"] == "cy"
    listed = {k["id"]: k for k in client.get("/v1/keys", headers=admin).json()}
    assert listed[issued.json()["id"]]["learner_id"] == "cy"
    refused = client.post(
        "/v1/keys", json={"role": "instructor", "learner_id": "cy"}, headers=admin
    )
    assert refused.status_code == 422 and "only a learner key" in refused.json()["detail"]
    unknown = client.post("/v1/keys", json={"role": "learner", "learner_id": "zed"}, headers=admin)
    assert unknown.status_code == 404
    other = client.post(  # a learner of another tenant is not one of this tenant's
        "/v1/keys",
        json={"role": "learner", "learner_id": "cy"},
        headers=_as(service, "admin", "other"),
    )
    assert other.status_code == 404
    cy = {"Authorization": f"Bearer {issued.json()['key']}"}
    assert client.post("/v1/sessions", json=PRACTICE, headers=cy).status_code == 201
    assert client.delete("/v1/learners/cy", headers=admin).status_code == 200
    # a learner created again with the same id is someone else: the old key is revoked
    assert client.post("/v1/learners", json={"id": "cy"}, headers=instructor).status_code == 201
    gone = client.post("/v1/sessions", json=PRACTICE, headers=cy)
    assert gone.status_code == 401 and gone.json()["type"].endswith("revoked-api-key")
