"""Diagnostics as JSON (DESIGN's shape: version, files, diagnostics, summary)."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

from pedrag.compiler.diagnose import Remembered
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
    """The report, one diagnostic per line: `grep`-able, diff-able between runs, and written
    by json's C encoder. Indenting every diagnostic's fields goes through json's pure-Python
    encoder instead, which took 0.13 s (a seventh of a re-check) on a 5,000-rule report."""
    encode = _line_encoder()
    LINES.begin()
    lines = [LINES.get((d,), partial(_line, encode, d)) for d in diagnostics]
    body = ",\n    ".join(lines)
    head = json.dumps({"version": 1, "files": files}, indent=2)[:-2]
    tail = json.dumps({"summary": summary}, indent=2)[1:]
    diagnostics_json = f"[\n    {body}\n  ]" if lines else "[]"
    return f'{head},\n  "diagnostics": {diagnostics_json},{tail}'


LINES: Remembered[str] = Remembered()
"""Each diagnostic's line, by the diagnostic (frozen, and held with it), in a process that
reports again (the check server): after a one-rule edit the findings of the rules it left
alone are the same objects (`Analysis.each_rule`, `diagnose.Remembered`), and encoding
4,900 of them was a fifth of the server's request at 5,000 rules."""


def _line(encode: Callable[[dict[str, Any]], str], diagnostic: Diagnostic) -> str:
    return encode(diagnostic.to_json())


def _line_encoder() -> Callable[[dict[str, Any]], str]:
    """`json.dumps` with its default options, as one encoder made once: `json.dumps` makes its
    C encoder afresh on every call, a third of its time on a diagnostic's few hundred bytes
    (5,000 of them in a 5,000-rule report). Plain `json.dumps` where there is no C encoder."""
    from json.encoder import (  # type: ignore[attr-defined]
        c_make_encoder,
        encode_basestring_ascii,
    )

    if c_make_encoder is None:
        return json.dumps
    # The arguments `JSONEncoder.iterencode` gives it for `json.dumps(value)`: circular
    # references checked, `default` raising TypeError, ASCII only, `, ` and `: `, NaN allowed.
    encoder = json.JSONEncoder()
    encode = c_make_encoder(
        {}, encoder.default, encode_basestring_ascii, None, ": ", ", ", False, False, True
    )
    return lambda value: "".join(encode(value, 0))
