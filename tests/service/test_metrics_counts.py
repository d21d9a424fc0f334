"""What one committed turn adds to the service's counters (``metrics.record_turn``)."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import REGISTRY

from pedrag.runtime.service.metrics import count_request, record_turn


def _blocked() -> float:
    return REGISTRY.get_sample_value("pedrag_reveals_blocked_total") or 0.0


@pytest.mark.parametrize(
    ("audit", "expected"),
    [
        ({"drafts": [{"flagged": False}]}, 0),
        ({"drafts": [{"flagged": True}, {"flagged": False}]}, 1),
        ({"drafts": [{"flagged": True}, {"flagged": True}]}, 2),
        # A streamed reveal is one flagged draft whose units were withheld: counted once.
        (
            {
                "drafts": [{"flagged": True, "streamed": True}, {"flagged": False}],
                "stream": {"withheld": ["answer-digits", "answer-words"]},
            },
            1,
        ),
        ({"drafts": [], "stream": {"withheld": ["answer-digits"]}}, 1),
    ],
)
def test_a_blocked_reveal_is_counted_once(audit: dict[str, Any], expected: int) -> None:
    before = _blocked()
    record_turn("stream", 0.01, audit)
    assert _blocked() - before == expected


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_each_request_and_turn_is_counted_under_its_own_label() -> None:
    """The labelled series are kept between calls (``metrics.count_request``,
    ``record_turn``): each call still counts once, under its own status or mode only."""
    before = {
        status: _sample("pedrag_http_requests_total", status=status) for status in ("200", "409")
    }
    turns = {mode: _sample("pedrag_turn_seconds_count", mode=mode) for mode in ("json", "stream")}
    for status in (200, 200, 409, 200):
        count_request(status)
    for mode in ("json", "stream", "json"):
        record_turn(mode, 0.02, {})
    assert _sample("pedrag_http_requests_total", status="200") - before["200"] == 3
    assert _sample("pedrag_http_requests_total", status="409") - before["409"] == 1
    assert _sample("pedrag_turn_seconds_count", mode="json") - turns["json"] == 2
    assert _sample("pedrag_turn_seconds_count", mode="stream") - turns["stream"] == 1
