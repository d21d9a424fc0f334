"""`pedrag serve --bind-key KEY_ID --learner ID`: a learner key issued before revision 0009
(bound to nobody) becomes one learner's, on a real SQLite database, and the service honours it
from the next request; the sessions it started anonymously stay anonymous. Every refusal
writes nothing."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from pedrag.cli import main
from pedrag.runtime.service.app import ServiceSettings, create_app
from pedrag.runtime.store.session_store import SessionStore, StoreError
from pedrag.runtime.store.tenants import hash_api_key, key_id
from tests.service.postgres import postgres_bin, running_postgres

ROOT = Path(__file__).resolve().parents[2]
PRACTICE = {"theory": "socratic", "exercise": "mult_7x8"}
RACERS = 8


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    folder = tmp_path / "theories"
    folder.mkdir()
    shutil.copy(ROOT / "theories" / "socratic.yaml", folder)
    shutil.copy(ROOT / "tests" / "data" / "runtime" / "learning.yaml", folder)  # mult_7x8
    db = str(tmp_path / "db.sqlite")
    monkeypatch.setenv("PEDRAG_DB", db)  # `pedrag serve --db` sets it; restored after the test
    with SessionStore(db) as store:
        keys: dict[str, str] = {}
        for tenant in ("school", "other"):
            store.tenants.create(tenant)
            store.for_tenant(tenant).create_learner(f"{tenant}-learner")
        store.for_tenant("school").create_learner("ana")
        keys["old"] = store.tenants.issue_key("school", role="learner")  # as before 0009
        keys["other_old"] = store.tenants.issue_key("school", role="learner")
        keys["instructor"] = store.tenants.issue_key("school", role="instructor")
        keys["revoked"] = store.tenants.issue_key("school", role="learner")
        store.tenants.revoke_key(_id(keys["revoked"]))
    app = create_app(ServiceSettings(db=db, theories=(str(folder),)), backend=None)
    with TestClient(app) as client:
        yield {"client": client, "keys": keys, "db": db}


def _id(key: str) -> str:
    return key_id(hash_api_key(key))


def _bind(capsys: pytest.CaptureFixture[str], db: str, key: str, *learner: str) -> tuple[int, str]:
    code = main(["serve", "--db", db, "--bind-key", key, *learner])
    return code, capsys.readouterr().err


def _as(world: dict[str, Any], who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {world['keys'][who]}"}


def test_a_bound_key_is_its_learner_and_its_anonymous_sessions_stay_anonymous(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    client, db = world["client"], world["db"]
    named = client.post(
        "/v1/sessions", json={**PRACTICE, "learner_id": "ana"}, headers=_as(world, "old")
    )
    assert named.status_code == 403  # before: the old key names no learner
    anonymous = client.post("/v1/sessions", json=PRACTICE, headers=_as(world, "old"))
    assert anonymous.status_code == 201
    before = anonymous.json()["id"]

    code, err = _bind(capsys, db, _id(world["keys"]["old"]), "--learner", "ana")
    assert code == 0, err
    assert "is learner 'ana' from its next request" in err
    assert client.get("/v1/key", headers=_as(world, "old")).json()["learner_id"] == "ana"
    mine = client.post("/v1/sessions", json=PRACTICE, headers=_as(world, "old"))
    assert mine.status_code == 201
    with SessionStore(db, tenant="school") as store:
        assert store.load_learner("ana")["sessions"] == 1  # the new session is ana's
    assert client.get(f"/v1/sessions/{before}", headers=_as(world, "old")).status_code == 404
    # still anonymous, and the key that started it is another learner now: no learner key
    # reaches it (not even another bound to nobody), an instructor's does
    assert client.get(f"/v1/sessions/{before}", headers=_as(world, "other_old")).status_code == 404
    assert client.get(f"/v1/sessions/{before}", headers=_as(world, "instructor")).status_code == 200


def test_binding_refuses_and_writes_nothing(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    db, keys = world["db"], world["keys"]
    assert _bind(capsys, db, _id(keys["old"]), "--learner", "ana")[0] == 0
    cases = [
        (_id(keys["old"]), ["--learner", "school-learner"], "bound to learner 'ana' already"),
        (_id(keys["instructor"]), ["--learner", "ana"], "an instructor key"),
        (_id(keys["revoked"]), ["--learner", "ana"], "no key"),
        ("0" * 12, ["--learner", "ana"], "no key '000000000000' in force"),
        (
            _id(keys["other_old"]),
            ["--learner", "other-learner"],
            "no learner with id 'other-learner' in the key's tenant",
        ),
        (_id(keys["other_old"]), ["--learner", "nobody"], "an existing learner"),
        (_id(keys["other_old"]), [], "--bind-key KEY_ID goes with --learner ID"),
    ]
    for key, learner, message in cases:
        code, err = _bind(capsys, db, key, *learner)
        assert code == 2 and message in err, (key, learner, err)
    with SessionStore(db) as store:
        bound = {item.id: item.learner for item in store.tenants.list_keys("school")}
    assert bound == {
        _id(keys["old"]): "ana",
        _id(keys["other_old"]): None,
        _id(keys["instructor"]): None,
        _id(keys["revoked"]): None,
    }


def racing_binds_bind_once(url: str) -> None:
    """Eight stores (each its own pool, as workers and admins are) bind one unbound key to
    eight learners at once: one wins, the others are refused, and the key is the winner's."""
    learners = [f"l{n}" for n in range(RACERS)]
    with SessionStore(url) as store:
        store.tenants.create("school")
        for learner in learners:
            store.for_tenant("school").create_learner(learner)
        key = _id(store.tenants.issue_key("school", role="learner"))
    stores = [SessionStore(url) for _ in learners]
    gate = threading.Barrier(RACERS)
    won: list[str] = []
    refused: list[str] = []

    def bind(store: SessionStore, learner: str) -> None:
        gate.wait()
        try:
            store.tenants.bind_key(key, learner)
            won.append(learner)
        except StoreError as error:
            refused.append(str(error))

    threads = [
        threading.Thread(target=bind, args=pair) for pair in zip(stores, learners, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert len(won) == 1 and len(refused) == RACERS - 1, refused
        assert all("already" in text or "changed while binding" in text for text in refused)
        assert [item.learner for item in stores[0].tenants.list_keys("school")] == won
    finally:
        for store in stores:
            store.close()


def test_racing_binds_of_one_key_bind_it_once_on_sqlite(tmp_path: Path) -> None:
    racing_binds_bind_once(str(tmp_path / "db.sqlite"))


@pytest.mark.skipif(postgres_bin() is None, reason="no PostgreSQL binaries")
def test_racing_binds_of_one_key_bind_it_once_on_postgresql() -> None:
    from tests.service.test_postgres import fresh_database

    with running_postgres() as url:
        racing_binds_bind_once(fresh_database(url))
