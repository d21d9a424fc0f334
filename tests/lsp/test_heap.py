"""The server's collector: a check that makes a whole collection due does not run it (the
keystroke after a file's open paid 0.6 to 1.0 s for one); the server's idle time does, and a
host that never idles still gets one once the heap has grown `LIMIT` times past the line."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from pedrag.lsp import heap


@pytest.fixture
def whole_collections(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The oldest generation's collections from here on, with the heap's record starting at
    `heap._heap` objects frozen; the frozen objects are put back in the heap after."""
    seen: list[int] = []

    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "stop" and info["generation"] == 2:
            seen.append(1)

    gc.collect()  # a known start: everything collected and frozen
    gc.freeze()
    monkeypatch.setattr(heap, "_heap", 10_000)
    monkeypatch.setattr(heap, "_grown", 0)
    gc.callbacks.append(callback)
    try:
        yield seen
    finally:
        gc.callbacks.remove(callback)
        gc.unfreeze()


def _check_making(objects: int, kept: list[Any]) -> None:
    """A check that leaves `objects` new container objects behind."""
    with heap.quiet_collector():
        kept.extend([i] for i in range(objects))


def test_a_check_that_makes_a_collection_due_does_not_run_it(whole_collections: list[int]) -> None:
    kept: list[Any] = []
    _check_making(25_000, kept)  # past REGROW * 10,000, short of LIMIT times that
    assert whole_collections == []
    assert heap.due()
    assert heap.collect_if_due()
    assert whole_collections == [1]
    assert not heap.due()
    assert not heap.collect_if_due()  # nothing due: nothing run
    assert whole_collections == [1]


def test_no_idle_collection_while_a_check_is_under_way(whole_collections: list[int]) -> None:
    kept: list[Any] = []
    _check_making(25_000, kept)
    with heap.quiet_collector():
        assert not heap.collect_if_due()
    assert whole_collections == []


def test_a_host_that_never_idles_still_collects_past_the_limit(
    whole_collections: list[int],
) -> None:
    kept: list[Any] = []
    _check_making(15_000, kept)
    assert whole_collections == []
    _check_making(30_000, kept)  # 45,000 frozen since: past LIMIT * REGROW * 10,000
    assert whole_collections == [1]
    assert not heap.due()
