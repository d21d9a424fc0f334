"""Extraction support, the answer cache: model answers on disk, so a rerun resumes.

Takes a request's identity (what is asked — a chunk's text or a repair prompt — the model
and the prompt version); gives back the stored answer, if any. Keys are SHA-256 digests of
that identity, so a changed chunk, model or prompt is a miss and nothing stale is reused.
Each entry is one small JSON file written atomically: a run killed midway leaves every
finished chunk usable and no half-written entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def cache_key(kind: str, model: str, prompt_version: str, content: str) -> str:
    identity = json.dumps([kind, model, prompt_version, content], ensure_ascii=False)
    return hashlib.sha256(identity.encode()).hexdigest()


class AnswerCache:
    """A folder of `<key>.json` entries; `directory=None` caches nothing."""

    def __init__(self, directory: str | Path | None) -> None:
        self.directory = Path(directory) if directory is not None else None
        self.hits = 0
        self.misses = 0

    def contains(self, key: str) -> bool:
        """Whether an answer is stored under `key` (not counted as a hit or a miss)."""
        return self.directory is not None and (self.directory / f"{key}.json").is_file()

    def get(self, key: str) -> dict[str, Any] | None:
        if self.directory is None:
            self.misses += 1
            return None
        try:
            value = json.loads((self.directory / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):  # absent or unreadable: ask again
            self.misses += 1
            return None
        if not isinstance(value, dict):
            self.misses += 1
            return None
        self.hits += 1
        return value

    def put(self, key: str, value: dict[str, Any]) -> None:
        if self.directory is None:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                json.dump(value, stream, ensure_ascii=False)
            os.replace(temporary, self.directory / f"{key}.json")
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
