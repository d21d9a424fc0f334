"""Canonical JSON and the content hash of a compiled policy.

One definition, so `pedrag compile`, the runtime's loader and the theory-set cache agree byte
for byte on what a policy is.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

HASH_FIELD = "content_hash"


def canonical_json(data: Any) -> str:
    """Sorted keys, no spaces, UTF-8 kept, no NaN: the same data always gives the same bytes."""
    return json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def content_hash(data: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``data`` without its own hash field."""
    body = {key: value for key, value in data.items() if key != HASH_FIELD}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()
