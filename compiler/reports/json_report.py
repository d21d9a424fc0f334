"""Diagnostics as JSON (DESIGN's shape: version, files, diagnostics, summary)."""

from __future__ import annotations

import json
from collections.abc import Callable
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
    """The report, one diagnostic per line: `grep`-able, diff-able between runs, and written
    by json's C encoder. Indenting every diagnostic's fields goes through json's pure-Python
    encoder instead, which took 0.13 s (a seventh of a re-check) on a 5,000-rule report."""
    lines = _lines(diagnostics)
    body = ",\n    ".join(lines)
    head = json.dumps({"version": 1, "files": files}, indent=2)[:-2]
    tail = json.dumps({"summary": summary}, indent=2)[1:]
    diagnostics_json = f"[\n    {body}\n  ]" if lines else "[]"
    return f'{head},\n  "diagnostics": {diagnostics_json},{tail}'


_LINES: list[dict[int, tuple[Diagnostic, str]]] = [{}, {}]
"""Each diagnostic's line by the diagnostic (frozen, and held with it), the last two reports'
(previous, current), in a process that reports again (the check server): after a one-rule
edit the findings of the rules it left alone are the same objects (`Analysis.each_rule`,
`diagnose.Remembered`), and encoding 4,900 of them was a fifth of the server's request at
5,000 rules."""


def _lines(diagnostics: list[Diagnostic]) -> list[str]:
    from pedrag.compiler import encode as formulas

    encode = _line_encoder()
    if not formulas.SHARING:  # a process that reports once
        return [encode(d.to_json()) for d in diagnostics]
    previous = _LINES[1]
    current: dict[int, tuple[Diagnostic, str]] = {}
    _LINES[:] = [previous, current]
    out = []
    for d in diagnostics:
        hit = current.get(id(d)) or previous.get(id(d))
        if hit is None:
            hit = (d, encode(d.to_json()))
        current[id(d)] = hit
        out.append(hit[1])
    return out


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
