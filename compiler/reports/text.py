"""Diagnostics as text, in the style of rustc and ruff.

    theories/x.yaml:17:19: error[unknown-name] `frustated` is not a value of enum `affect`
       |
    17 |         affect == frustated
       |                   ^^^^^^^^^
       = help: did you mean `frustrated`?

Colour only when writing to a terminal (and never with NO_COLOR set).
"""

from __future__ import annotations

import unicodedata
from typing import Any

from pedrag.dsl.diagnostics import Diagnostic, Severity
from pedrag.dsl.spans import SourceText, Span

_COLOURS = {
    Severity.ERROR: "\x1b[1;31m",
    Severity.WARNING: "\x1b[1;33m",
    Severity.NOTE: "\x1b[1;36m",
}
_BOLD, _BLUE, _RESET = "\x1b[1m", "\x1b[1;34m", "\x1b[0m"


def witness_text(witness: dict[str, Any]) -> str:
    parts = []
    for key, value in witness.items():
        if isinstance(value, bool):
            value = "true" if value else "false"  # the condition language's spelling
        elif isinstance(value, float):
            value = repr(value)  # the shortest text that reads back as this float, never rounded
        parts.append(f"{key}={value}")
    return ", ".join(parts)


_TAB = "    "


def _width(text: str) -> int:
    """Terminal columns `text` takes once tabs are expanded: wide (CJK, emoji) characters take
    two, combining marks none. Carets must line up under what the terminal shows."""
    total = 0
    for char in text:
        if char == "\t":
            total += len(_TAB)
        elif unicodedata.combining(char):
            continue
        else:
            total += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return total


def _caret_block(
    source: SourceText | None, span: Span, colour: bool, marker: str = "^"
) -> list[str]:
    if source is None or not source.text:
        return []
    line_text = source.line_text(span.line)
    if not line_text and span.line > 1 and span.column == 1:
        return []
    width = len(str(span.line))
    gutter = " " * width
    start = span.column - 1
    end = span.end_column - 1 if span.end_line == span.line else len(line_text)
    length = max(1, _width(line_text[start:end]))
    caret = " " * _width(line_text[:start]) + marker * length
    line_text = line_text.replace("\t", _TAB)
    blue = _BLUE if colour else ""
    reset = _RESET if colour else ""
    return [
        f"{blue}{gutter} |{reset}",
        f"{blue}{span.line} |{reset} {line_text}",
        f"{blue}{gutter} |{reset} {caret}",
    ]


def format_diagnostic(
    diagnostic: Diagnostic, sources: dict[str, SourceText], colour: bool = False
) -> str:
    span = diagnostic.span
    where = f"{span.file}:{span.line}:{span.column}: " if span else ""
    level = diagnostic.severity.value
    if colour:
        head = f"{_BOLD}{where}{_RESET}{_COLOURS[diagnostic.severity]}{level}[{diagnostic.check}]{_RESET} {_BOLD}{diagnostic.message}{_RESET}"
    else:
        head = f"{where}{level}[{diagnostic.check}] {diagnostic.message}"
    lines = [head]
    if span is not None:
        source = sources.get(span.file)
        lines.extend(_caret_block(source, span, colour))
        for related in diagnostic.related:
            lines.extend(_caret_block(source, related, colour, marker="-")[1:])
    pad = " " * (len(str(span.line)) if span else 1)
    if diagnostic.witness:
        lines.append(f"{pad} = witness: {witness_text(diagnostic.witness)}")
    if diagnostic.help:
        lines.append(f"{pad} = help: {diagnostic.help}")
    return "\n".join(lines)


def format_report(
    diagnostics: list[Diagnostic],
    sources: dict[str, SourceText],
    files: int,
    summary: dict[str, Any],
    colour: bool = False,
) -> str:
    blocks = [format_diagnostic(d, sources, colour) for d in diagnostics]
    errors, warnings = summary["errors"], summary["warnings"]
    tail = f"checked {files} file{'s' if files != 1 else ''}: {errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''}"
    skipped = summary.get("skipped") or []
    if skipped:
        shown = ", ".join(skipped[:5]) + (
            f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""
        )
        tail += (
            f"\nskipped {len(skipped)} YAML file{'s' if len(skipped) != 1 else ''} without a "
            f"top-level `pedrag:` key: {shown} (name a file to check it anyway)"
        )
    extras = []
    for theory in summary.get("theories", []):
        coverage = theory.get("coverage")
        cov = f", coverage {coverage:.1%}" if isinstance(coverage, float) else ""
        if cov and theory.get("coverage_exact") is False:
            error = theory.get("coverage_error")
            bound = f"within ±{error:.2%}" if isinstance(error, float) else "error unknown"
            cov += f" (estimate, not exact: {bound})"
        extras.append(
            f"  {theory['id']}: {theory['metrics']} metrics, {theory['actions']} actions, {theory['rules']} rules{cov}"
        )
    return "\n\n".join(blocks + [tail]) + ("\n" + "\n".join(extras) if extras else "")
