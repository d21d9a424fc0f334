"""What one committed turn adds to the service's counters (``metrics.record_turn``)."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import REGISTRY

from pedrag.runtime.service.metrics import record_turn


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
