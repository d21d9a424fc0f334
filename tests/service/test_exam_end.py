"""An instructor ends a learner's exam over the service (`end_exam` on the instructor route), as
`pedrag instructor --end-exam` and the Python API do: the learner's next message gets the one
result line, from the template, and a session that is not an exam answers 422."""

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
        learner = store.tenants.issue_key("school", role="learner")
    app = create_app(ServiceSettings(db=db, theories=(str(folder),)), backend=RevealingActor())
    with TestClient(app) as client:
        yield {
            "client": client,
            "instructor": {"Authorization": f"Bearer {instructor}"},
            "learner": {"Authorization": f"Bearer {learner}"},
        }


def _session(service: dict[str, Any], exercise: str) -> str:
    created = service["client"].post(
        "/v1/sessions",
        json={"theory": "socratic", "exercise": exercise},
        headers=service["learner"],
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
    session = _session(exam_service, "mult_7x8")
    refused = exam_service["client"].post(
        f"/v1/sessions/{session}/instructor",
        json={"end_exam": True},
        headers=exam_service["instructor"],
    )
    assert refused.status_code == 422 and "not an exam" in refused.json()["detail"]


def test_a_learner_sits_an_exam_once_over_the_service(exam_service: dict[str, Any]) -> None:
    """A fresh session on the same exam gave fresh submissions: a learner guessed across
    sessions until a result line said they passed. The second sitting is a 422 now."""
    client = exam_service["client"]
    created = client.post("/v1/learners", json={"id": "mal"}, headers=exam_service["instructor"])
    assert created.status_code == 201, created.text
    body = {"theory": "socratic", "exercise": "times_exam", "learner_id": "mal"}
    first = client.post("/v1/sessions", json=body, headers=exam_service["learner"])
    assert first.status_code == 201, first.text
    again = client.post("/v1/sessions", json=body, headers=exam_service["learner"])
    assert again.status_code == 422
    assert again.json()["type"].endswith("invalid-session")
    assert first.json()["id"] in again.json()["detail"]
