"""An instructor ends a learner's exam over the service (`end_exam` on the instructor route), as
`pedrag instructor --end-exam` and the Python API do: the learner's next message gets the one
result line, from the template, and a session that is not an exam answers 422. A learner sits
an exam once, by a key bound to them; an instructor grants a retake."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from pedrag.runtime.learning.exam import PASSED
from pedrag.runtime.service.app import ServiceSettings, create_app
from pedrag.runtime.store.session_store import SessionStore
from tests.service.test_app import RevealingActor

ROOT = Path(__file__).resolve().parents[2]
LEARNING = ROOT / "tests" / "data" / "runtime" / "learning.yaml"


@pytest.fixture(scope="module")
def exam_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("theories")
    shutil.copy(ROOT / "theories" / "socratic.yaml", folder)
    shutil.copy(LEARNING, folder)  # a curriculum with exams (times_exam: 3 submissions)
    db = str(folder / "db.sqlite")
    with SessionStore(db) as store:
        store.tenants.create("school")
        instructor = store.tenants.issue_key("school", role="instructor")
        school = store.for_tenant("school")
        for name in ("lee", "mal", "rae"):
            school.create_learner(name)
        # An exam is sat by a named learner: each learner's app holds a key bound to them.
        learner = store.tenants.issue_key("school", role="learner", learner="lee")
        mal = store.tenants.issue_key("school", role="learner", learner="mal")
        rae = store.tenants.issue_key("school", role="learner", learner="rae")
        anonymous = store.tenants.issue_key("school", role="learner")
    app = create_app(ServiceSettings(db=db, theories=(str(folder),)), backend=RevealingActor())
    with TestClient(app) as client:
        yield {
            "client": client,
            "instructor": {"Authorization": f"Bearer {instructor}"},
            "learner": {"Authorization": f"Bearer {learner}"},
            "mal": {"Authorization": f"Bearer {mal}"},
            "rae": {"Authorization": f"Bearer {rae}"},
            "anonymous": {"Authorization": f"Bearer {anonymous}"},
        }


def _session(service: dict[str, Any], exercise: str, key: str = "learner") -> str:
    created = service["client"].post(
        "/v1/sessions",
        json={"theory": "socratic", "exercise": exercise},
        headers=service[key],
    )
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def _turn(service: dict[str, Any], session: str, message: str) -> dict[str, Any]:
    posted = service["client"].post(
        f"/v1/sessions/{session}/turns", json={"message": message}, headers=service["learner"]
    )
    assert posted.status_code == 200, posted.text
    return dict(posted.json())


def test_an_instructor_ends_an_exam_and_the_learner_gets_the_result_line(
    exam_service: dict[str, Any],
) -> None:
    client = exam_service["client"]
    session = _session(exam_service, "times_exam")
    first = _turn(exam_service, session, "72")
    assert first["reply"].startswith("Answer recorded (submission 1 of 3)")
    # the learner's key may not end it; the instructor's may
    refused = client.post(
        f"/v1/sessions/{session}/instructor",
        json={"end_exam": True},
        headers=exam_service["learner"],
    )
    assert refused.status_code == 403
    ended = client.post(
        f"/v1/sessions/{session}/instructor",
        json={"end_exam": True},
        headers=exam_service["instructor"],
    )
    assert ended.status_code == 200, ended.text
    assert _turn(exam_service, session, "can I have a hint?")["reply"] == PASSED
    assert _turn(exam_service, session, "71")["reply"] == PASSED  # over: nothing reopens it
    audit = client.get(f"/v1/sessions/{session}/audit", headers=exam_service["instructor"])
    records = audit.json()["records"]
    # templates only: no actor or judge call and no draft on any exam turn (the classifier
    # and analyzer still read the message)
    assert len(records) == 3
    assert all(not {"actor", "judge"} & set(r["usage"]) and not r["drafts"] for r in records)


def test_ending_an_exam_on_a_practice_session_is_refused(exam_service: dict[str, Any]) -> None:
    session = _session(exam_service, "mult_7x8", "anonymous")
    refused = exam_service["client"].post(
        f"/v1/sessions/{session}/instructor",
        json={"end_exam": True},
        headers=exam_service["instructor"],
    )
    assert refused.status_code == 422 and "not an exam" in refused.json()["detail"]


def test_a_learner_sits_an_exam_once_over_the_service(exam_service: dict[str, Any]) -> None:
    """A fresh session on the same exam gave fresh submissions: a learner guessed across
    sessions until a result line said they passed. The second sitting is a 422 now, whether
    the body names the key's learner or leaves it out."""
    client = exam_service["client"]
    named = {"theory": "socratic", "exercise": "times_exam", "learner_id": "mal"}
    first = client.post("/v1/sessions", json=named, headers=exam_service["mal"])
    assert first.status_code == 201, first.text
    assert first.json()["learner_id"] == "mal"
    for body in (named, {"theory": "socratic", "exercise": "times_exam"}):
        again = client.post("/v1/sessions", json=body, headers=exam_service["mal"])
        assert again.status_code == 422
        assert again.json()["type"].endswith("invalid-session")
        assert first.json()["id"] in again.json()["detail"]


def test_an_anonymous_session_cannot_start_an_exam(exam_service: dict[str, Any]) -> None:
    """Sittings are counted per learner: an exam session naming nobody could be opened again
    and again (the learner guessing across them). Refused for every key; practice is open."""
    client = exam_service["client"]
    body = {"theory": "socratic", "exercise": "times_exam"}
    for key in ("anonymous", "instructor"):
        refused = client.post("/v1/sessions", json=body, headers=exam_service[key])
        assert refused.status_code == 422, refused.text
        assert "sat once by a named learner" in refused.json()["detail"]
    listed = client.get("/v1/sessions", headers=exam_service["instructor"]).json()
    assert not [
        s
        for s in listed
        if s["meta"].get("exercise") == "times_exam" and not s["meta"].get("learner_id")
    ]
    practice = {"theory": "socratic", "exercise": "mult_7x8"}
    assert (
        client.post("/v1/sessions", json=practice, headers=exam_service["anonymous"]).status_code
        == 201
    )


def test_an_instructor_grants_a_retake_and_the_learner_sits_exactly_once_more(
    exam_service: dict[str, Any],
) -> None:
    client, instructor = exam_service["client"], exam_service["instructor"]
    body = {"theory": "socratic", "exercise": "times_exam"}
    retake = "/v1/learners/rae/exams/times_exam/retake"
    # nothing to retake before a first sitting
    early = client.post(retake, headers=instructor)
    assert early.status_code == 409 and "has not sat" in early.json()["detail"]
    first = client.post("/v1/sessions", json=body, headers=exam_service["rae"])
    assert first.status_code == 201, first.text
    # the learner's own key may not grant one, nor may the anonymous one
    for key in ("rae", "anonymous"):
        assert client.post(retake, headers=exam_service[key]).status_code == 403
    assert client.post("/v1/sessions", json=body, headers=exam_service["rae"]).status_code == 422
    granted = client.post(retake, headers=instructor)
    assert granted.status_code == 201, granted.text
    instructor_key = client.get("/v1/key", headers=instructor).json()["id"]
    assert granted.json()["granted_by"] == instructor_key
    assert granted.json()["sitting"] == 2 and granted.json()["learner_id"] == "rae"
    # a second grant before the retake is used gives no third sitting
    twice = client.post(retake, headers=instructor)
    assert twice.status_code == 409 and "not used yet" in twice.json()["detail"]
    second = client.post("/v1/sessions", json=body, headers=exam_service["rae"])
    assert second.status_code == 201, second.text
    third = client.post("/v1/sessions", json=body, headers=exam_service["rae"])
    assert third.status_code == 422 and second.json()["id"] in third.json()["detail"]
    exams = client.get("/v1/learners/rae/exams", headers=instructor).json()
    assert [(s["exam"], s["sitting"], s["session_id"]) for s in exams["sittings"]] == [
        ("times_exam", 1, first.json()["id"]),
        ("times_exam", 2, second.json()["id"]),
    ]
    assert [(r["sitting"], r["granted_by"]) for r in exams["retakes"]] == [(2, instructor_key)]
    assert client.get("/v1/learners/rae/exams", headers=exam_service["rae"]).status_code == 403
    # an exam that does not exist, a learner that does not
    missing = client.post("/v1/learners/rae/exams/mult_7x8/retake", headers=instructor)
    assert missing.status_code == 404 and missing.json()["type"].endswith("exam-not-found")
    nobody = client.post("/v1/learners/nobody/exams/times_exam/retake", headers=instructor)
    assert nobody.status_code == 404 and nobody.json()["type"].endswith("learner-not-found")
