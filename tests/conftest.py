"""Shared pytest fixtures for the whole test tree.

``fake_openai``: a scripted OpenAI-compatible server on 127.0.0.1 (see ``tests/fake_openai.py``),
so LLM tests run the real ``openai`` client without any network.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.fake_openai import FakeOpenAI

# No test is timed (speed lives in benchmarks/): Hypothesis's per-example deadline and its
# "input generation is slow" check measure the machine's load, not the code, and failed a
# property test while the suite ran beside other work. Every other health check stays on.
settings.register_profile("pedrag", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("pedrag")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`'s worker count: one per usable core, at most four. Several test files start
    their own PostgreSQL or model server, so more workers than cores only adds memory and
    contention; the cores come from the CPU affinity mask, which a container's limit sets."""
    import os

    return max(1, min(4, len(os.sched_getaffinity(0))))


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A running fake server: ``.base_url`` (ends in ``/v1``), ``.script(...)``, ``.always(...)``,
    ``.requests``. A chat request nobody scripted fails the test at teardown."""
    with FakeOpenAI() as server:
        yield server
        if server.unscripted:
            pytest.fail(
                f"fake_openai received {len(server.unscripted)} unscripted chat request(s); "
                "script(...) or always(...) a reply for them"
            )


@pytest.fixture(autouse=True, scope="session")
def _session_database_outside_the_checkout(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[None]:
    """The tutor persists to `$PEDRAG_DB` (default `./.pedrag/sessions.db`); tests must never
    write into the checkout or a developer's database, so the whole run gets its own file."""
    import os

    previous = os.environ.get("PEDRAG_DB")
    os.environ["PEDRAG_DB"] = str(tmp_path_factory.mktemp("pedrag-db") / "sessions.db")
    yield
    if previous is None:
        os.environ.pop("PEDRAG_DB", None)
    else:
        os.environ["PEDRAG_DB"] = previous


@pytest.fixture(autouse=True, scope="session")
def _session_check_cache_outside_the_user_cache(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[None]:
    """`pedrag check` keeps answers in the platform's cache folder; tests use their own."""
    import os

    previous = os.environ.get("PEDRAG_CACHE_DIR")
    os.environ["PEDRAG_CACHE_DIR"] = str(tmp_path_factory.mktemp("pedrag-cache"))
    yield
    if previous is None:
        os.environ.pop("PEDRAG_CACHE_DIR", None)
    else:
        os.environ["PEDRAG_CACHE_DIR"] = previous
