"""Fuzz the API with schemathesis against its own `/openapi.json` (issue 25): every operation,
and stateful sequences of calls, with a key of each role, against a real `pedrag serve` (SQLite,
offline backend): no 5xx, and every response matches the status codes, content types and
schemas the document declares.

Each stateful example starts in a tenant of its own, empty but for its key: the machine's next
step depends on what the server answered (a link followed, a key revoked, a learner deleted),
and Hypothesis replays an example expecting the same answers. In one shared tenant a replay met
what earlier examples left behind and drew differently (FlakyStrategyDefinition)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from pedrag.runtime.store.session_store import SessionStore
from tests.service.servers import running_server

ROLES = ("learner", "instructor", "admin")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    folder: Path = tmp_path_factory.mktemp("fuzz")
    db = str(folder / "db.sqlite")
    with SessionStore(db) as store:
        store.tenants.create("school")
        keys = {role: store.tenants.issue_key("school", role=role) for role in ROLES}
    with running_server(db, workers=1, log=folder / "serve.log") as base:
        yield {"base": base, "keys": keys, "db": db}


def fresh_key(db: str, role: str) -> str:
    """A key of ``role`` in a new tenant with nothing else in it: a known state to start from
    (the server reads tenants and keys from the database on each request)."""
    with SessionStore(db) as store:
        tenant = store.tenants.create(f"fuzz-{uuid4().hex[:16]}")
        return store.tenants.issue_key(tenant.id, role=role)


def test_no_5xx_and_every_response_matches_the_document(server: dict[str, Any]) -> None:
    api = schemathesis.openapi.from_url(f"{server['base']}/openapi.json")
    operations = [result.ok() for result in api.get_all_operations()]
    assert len(operations) >= 20
    checks = (
        not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_schema_conformance,
    )
    statuses: Counter[int] = Counter()
    for operation in operations:

        @settings(
            max_examples=6,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        @given(case=operation.as_strategy())
        def check(case: Any) -> None:
            for role in ROLES:  # the same generated request with a key of each role
                headers = {"Authorization": f"Bearer {server['keys'][role]}"}
                response = case.call(headers=headers)
                statuses[response.status_code] += 1
                case.validate_response(response, checks=checks)

        check()
    print(f"schemathesis: {sum(statuses.values())} requests, by status {dict(statuses)}")
    # The fuzz reached past the door: accepted requests and refused roles, not only 401s.
    assert statuses[200] + statuses[201] > 0 and statuses[403] > 0 and statuses[422] > 0
    assert not any(status >= 500 for status in statuses)


# Stateful runs per role: the admin key opens every route (the longest sequences); the learner
# and instructor keys meet their 403s mid-sequence (links followed into routes they may not
# call), with a smaller budget each so the three stay near 15 s together.
STATEFUL_EXAMPLES = {"learner": 8, "instructor": 8, "admin": 15}


@pytest.mark.parametrize("role", ROLES)
def test_stateful_sequences_of_calls_find_no_5xx(server: dict[str, Any], role: str) -> None:
    api = schemathesis.openapi.from_url(f"{server['base']}/openapi.json")
    statuses: Counter[int] = Counter()

    class Machine(api.as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            # every example, replays included, starts from an empty tenant of its own
            self.key = fresh_key(server["db"], role)

        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"headers": {"Authorization": f"Bearer {self.key}"}}

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            statuses[response.status_code] += 1
            case.validate_response(
                response,
                checks=(
                    not_a_server_error,
                    status_code_conformance,
                    content_type_conformance,
                    response_schema_conformance,
                ),
            )

    Machine.run(
        settings=settings(
            max_examples=STATEFUL_EXAMPLES[role],
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
            stateful_step_count=6,
        )
    )
    print(f"schemathesis stateful ({role}): by status {dict(statuses)}")
    assert statuses[200] + statuses[201] > 0  # sequences went past the door
