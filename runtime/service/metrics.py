"""Prometheus metrics of the service (``GET /metrics``), through ``prometheus-client``.

With several workers each process keeps its own values; ``pedrag serve --workers N`` points
``PROMETHEUS_MULTIPROC_DIR`` at a fresh folder so that ``/metrics``, answered by any worker,
adds them up (prometheus-client's multiprocess mode).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)

TURN_SECONDS = Histogram(
    "pedrag_turn_seconds",
    "Wall time of a tutor turn in the service (model calls included), by mode",
    ["mode"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
MODEL_CALLS = Counter("pedrag_model_calls", "Model calls made by tutor turns")
FALLBACKS = Counter("pedrag_fallbacks", "Turns answered by the action's template (fail closed)")
REVEALS_BLOCKED = Counter(
    "pedrag_reveals_blocked",
    "Drafts the detector stopped before they reached the student (a streamed draft once)",
)
TURN_CONFLICTS = Counter(
    "pedrag_turn_conflicts", "Turns refused because another request committed that turn first"
)
TURN_RERUNS = Counter(
    "pedrag_turn_reruns", "Turns run again because an instructor's toggle landed while they ran"
)
REQUESTS = Counter("pedrag_http_requests", "HTTP requests answered", ["status"])

# The labelled series in use, by label value: prometheus-client's ``labels()`` validates the
# value and takes a lock on every call (2.8 us a request for the status, 1.2 us a turn for the
# mode, against 0.35 and 0.7 for the child's own increment). Filled on first use, as
# ``labels()`` creates a series, so /metrics shows the same series as before.
_REQUESTS_BY_STATUS: dict[int, Any] = {}
_TURN_SECONDS_BY_MODE: dict[str, Any] = {}


def count_request(status: int) -> None:
    """Count one answered HTTP request under its status code."""
    child = _REQUESTS_BY_STATUS.get(status)
    if child is None:
        child = _REQUESTS_BY_STATUS.setdefault(status, REQUESTS.labels(status=str(status)))
    child.inc()


def record_turn(mode: str, seconds: float, audit: Mapping[str, Any]) -> None:
    """Count one committed turn from its audit record."""
    child = _TURN_SECONDS_BY_MODE.get(mode)
    if child is None:
        child = _TURN_SECONDS_BY_MODE.setdefault(mode, TURN_SECONDS.labels(mode=mode))
    child.observe(seconds)
    calls = int(audit.get("calls", 0) or 0)
    if calls:  # an increment by 0 still writes (to a shared file with several workers)
        MODEL_CALLS.inc(calls)
    if audit.get("fallback"):
        FALLBACKS.inc()
    blocked = sum(1 for draft in audit.get("drafts", ()) if draft.get("flagged"))
    if not blocked and (audit.get("stream") or {}).get("withheld"):
        blocked = 1  # a stream cut short before its draft was recorded as flagged
    if blocked:
        REVEALS_BLOCKED.inc(blocked)


def exposition() -> tuple[bytes, str]:
    """The metrics text and its content type; all workers' values in multiprocess mode."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    from prometheus_client import REGISTRY

    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
