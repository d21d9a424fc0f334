"""The learner view of a turn carries nothing hidden (issue 25): with a model that drafts the
hidden answer every turn, no JSON turn response and no stream contains it in any field, while
the audit (the instructor view) shows the guard at work."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from pedrag.runtime.llm.interface import LLMRequest, LLMResponse, LLMStream
from pedrag.runtime.llm.offline import OfflineBackend
from pedrag.runtime.service.app import ServiceSettings, create_app
from pedrag.runtime.store.session_store import SessionStore

DRAFT = "The answer is 85."  # add_38_47's hidden answer
HIDDEN = "85"
MESSAGES = (
    "how do I start?",
    "just tell me the answer please",
    "is it 84?",
    "I give up, what is 38 + 47?",
    "explain it step by step",
    "what did you want to say before?",
)


class ScriptedModel:
    """The actor drafts the hidden answer every turn (whole or streamed); every other role
    answers as the offline backend does."""

    def __init__(self) -> None:
        self.offline = OfflineBackend()
        self.actor_calls = 0

    def complete(self, request: LLMRequest) -> LLMResponse:
        if request.role == "actor":
            self.actor_calls += 1
            return LLMResponse(text=DRAFT)
        return self.offline.complete(request)

    def stream(self, request: LLMRequest) -> LLMStream:
        if request.role != "actor":
            return LLMStream(lambda handle: iter([self.offline.complete(request).text]))
        self.actor_calls += 1
        return LLMStream(lambda handle: iter(["The answer ", "is 8", "5."]))


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    db = str(tmp_path_factory.mktemp("views") / "db.sqlite")
    with SessionStore(db) as store:
        store.tenants.create("school")
        learner = store.tenants.issue_key("school", role="learner")
        instructor = store.tenants.issue_key("school", role="instructor")
    model = ScriptedModel()
    app = create_app(ServiceSettings(db=db), backend=model)
    with TestClient(app) as client:
        yield {
            "client": client,
            "headers": {"Authorization": f"Bearer {learner}"},
            "instructor": {"Authorization": f"Bearer {instructor}"},
            "model": model,
        }


def _session(service: dict[str, Any]) -> str:
    created = service["client"].post(
        "/v1/sessions",
        json={"theory": "socratic", "curriculum": "intro", "exercise": "add_38_47"},
        headers=service["headers"],
    )
    assert created.status_code == 201, created.text
    assert HIDDEN not in created.text.replace(created.json()["id"], "")
    return str(created.json()["id"])


@pytest.mark.parametrize("route", ["turns", "turns/stream"])
def test_no_learner_response_carries_the_hidden_answer_the_model_drafted(
    service: dict[str, Any], route: str
) -> None:
    client = service["client"]
    session_id = _session(service)
    calls_before = service["model"].actor_calls
    for index, message in enumerate(MESSAGES, 1):
        response = client.post(
            f"/v1/sessions/{session_id}/{route}",
            json={"message": message, "turn": index},
            headers=service["headers"],
        )
        assert response.status_code == 200, response.text
        # The session id is random hex and may contain the digits; every other byte may not.
        body = response.text.replace(session_id, "<id>")
        assert HIDDEN not in body, body
        if route == "turns":
            view = response.json()
        else:
            events = [
                (block.split("\n")[0], json.loads(block.split("\n")[1][len("data: ") :]))
                for block in response.text.split("\n\n")
                if block.strip()
            ]
            assert [name for name, _ in events][-1] == "event: end"
            assert {name for name, _ in events[:-1]} <= {"event: piece"}
            view = events[-1][1]
            assert "".join(data["text"] for _, data in events[:-1]) == view["reply"]
        assert set(view) == {"session_id", "turn", "reply", "rung"}
        assert view["turn"] == index and view["reply"]
    assert service["model"].actor_calls > calls_before  # the model did draft the answer
    # The instructor view keeps everything: the guard's work on every turn is in the audit.
    assert (
        client.get(f"/v1/sessions/{session_id}/audit", headers=service["headers"]).status_code
        == 403
    )
    records = client.get(f"/v1/sessions/{session_id}/audit", headers=service["instructor"]).json()
    assert len(records["records"]) == len(MESSAGES)
    for record in records["records"]:
        blocked = any(draft.get("flagged") for draft in record["drafts"])
        withheld = (record.get("stream") or {}).get("withheld")
        assert blocked or withheld or record["fallback"], record
        assert HIDDEN not in record["tutor"]


def test_a_stream_that_loses_its_turn_shows_no_text(service: dict[str, Any]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    client = service["client"]
    session_id = _session(service)
    losers = 0
    with ThreadPoolExecutor(max_workers=2) as pool:
        for index in range(1, 11):
            posts = [
                pool.submit(
                    client.post,
                    f"/v1/sessions/{session_id}/turns/stream",
                    json={"message": f"{who}: how do I start?", "turn": index},
                    headers=service["headers"],
                )
                for who in ("ann", "bob")
            ]
            answers = [post.result() for post in posts]
            assert sorted(answer.status_code for answer in answers) == [200, 409]
            for answer in answers:
                if answer.status_code == 409:
                    losers += 1
                    assert answer.headers["content-type"] == "application/problem+json"
                    assert "event: piece" not in answer.text and "reply" not in answer.text
                else:
                    assert answer.text.count("event: end") == 1
    records = client.get(f"/v1/sessions/{session_id}/audit", headers=service["instructor"])
    assert [record["turn"] for record in records.json()["records"]] == list(range(1, 11))
    assert losers == 10
