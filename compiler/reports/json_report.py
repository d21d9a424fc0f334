"""Diagnostics as JSON (DESIGN's shape: version, files, diagnostics, summary)."""

from __future__ import annotations

import json
from typing import Any

from pedrag.dsl.diagnostics import Diagnostic


def report_dict(
    files: list[str], diagnostics: list[Diagnostic], summary: dict[str, Any]
) -> dict[str, Any]:
    return {
        "version": 1,
        "files": files,
        "diagnostics": [d.to_json() for d in diagnostics],
        "summary": summary,
    }


def format_json(files: list[str], diagnostics: list[Diagnostic], summary: dict[str, Any]) -> str:
    return json.dumps(report_dict(files, diagnostics, summary), indent=2, sort_keys=False)
