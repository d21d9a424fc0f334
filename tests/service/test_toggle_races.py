"""Toggles that hold (issue 25): an instructor's toggle racing a turn 200 times, and every
toggle the service answered 200 for is the one in force afterwards, whichever committed first."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from fastapi.testclient import TestClient

from pedrag.runtime.llm.interface import LLMRequest, LLMResponse, LLMStream
from pedrag.runtime.llm.offline import OfflineBackend
from pedrag.runtime.service.app import ServiceSettings, create_app
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.store.session_store import SessionStore, TurnConflict

RACES = 200


class SlowActor:
    """The offline backend, its actor a few milliseconds slow: the toggle lands mid-turn."""

    def __init__(self) -> None:
        self.offline = OfflineBackend()

    def complete(self, request: LLMRequest) -> LLMResponse:
        if request.role == "actor":
            time.sleep(0.004)
        return self.offline.complete(request)

    def stream(self, request: LLMRequest) -> LLMStream:
        return LLMStream(lambda handle: iter([self.complete(request).text]))


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    db = str(tmp_path_factory.mktemp("races") / "db.sqlite")
    with SessionStore(db) as store:
        store.tenants.create("school")
        learner = store.tenants.issue_key("school", role="learner")
        instructor = store.tenants.issue_key("school", role="instructor")
    app = create_app(ServiceSettings(db=db), backend=SlowActor())
    with TestClient(app) as client:
        yield {
            "client": client,
            "learner": {"Authorization": f"Bearer {learner}"},
            "instructor": {"Authorization": f"Bearer {instructor}"},
        }


@pytest.mark.parametrize("route", ["turns", "turns/stream"])
def test_a_toggle_racing_a_turn_is_never_lost(service: dict[str, Any], route: str) -> None:
    client = service["client"]
    outcomes: Counter[str] = Counter()
    lost = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        session_id = ""
        for race in range(RACES):
            if race % 25 == 0:  # a fresh session now and then keeps each turn small
                session_id = client.post(
                    "/v1/sessions", json={"theory": "socratic"}, headers=service["learner"]
                ).json()["id"]
            base = f"/v1/sessions/{session_id}"
            wanted = race % 2 == 0
            turn = pool.submit(
                client.post,
                f"{base}/{route}",
                json={"message": "how do I go on?"},
                headers=service["learner"],
            )
            time.sleep(0.002 * (race % 4))  # land the toggle at different points of the turn
            toggle = pool.submit(
                client.post,
                f"{base}/instructor",
                json={"explain_mode": wanted},
                headers=service["instructor"],
            )
            turn_status, toggle_status = turn.result().status_code, toggle.result().status_code
            outcomes[f"turn {turn_status}, toggle {toggle_status}"] += 1
            assert turn_status in (200, 409) and toggle_status in (200, 409)
            state = client.get(f"{base}/state", headers=service["instructor"]).json()
            if toggle_status == 200 and state["metrics"]["explain_mode"] is not wanted:
                lost.append(race)
    reruns = [
        line.split()[-1]
        for line in client.get("/metrics", headers=service["instructor"]).text.splitlines()
        if line.startswith("pedrag_turn_reruns_total ")
    ]
    print(f"toggle races: {dict(outcomes)}; turns re-run: {reruns}; lost toggles: {len(lost)}")
    assert lost == [], (lost, outcomes)
    assert outcomes["turn 200, toggle 200"] >= RACES * 0.9, outcomes


def test_the_store_refuses_a_turn_that_read_the_state_before_a_toggle(tmp_path: Any) -> None:
    for store in (SessionStore(str(tmp_path / "v.sqlite")), MemoryStore()):
        with store:
            store.create_session("s", {}, {"toggle": False})
            read = store.read_session("s")
            assert (read.turns, read.version) == (0, 0)
            store.set_state("s", 0, {"toggle": True}, version=read.version)  # the toggle
            with pytest.raises(TurnConflict) as lost:
                store.save_turn("s", 1, {"toggle": False}, {"turn": 1}, version=read.version)
            assert lost.value.state_changed and "toggle" in str(lost.value)
            assert store.read_session("s").state == {"toggle": True}
            again = store.read_session("s")
            store.save_turn("s", 1, {"toggle": True, "turn": 1}, {"turn": 1}, version=again.version)
            after = store.read_session("s")
            assert (after.turns, after.version) == (1, 2)
            with pytest.raises(TurnConflict) as stale:  # a toggle that read before the turn
                store.set_state("s", 0, {"toggle": False}, version=again.version)
            assert not stale.value.state_changed
            assert store.read_session("s").state == {"toggle": True, "turn": 1}
