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


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


_TAB = "    "


def _width(text: str) -> int:
    """Terminal columns `text` takes once tabs are expanded: wide (CJK, emoji) characters take
    two, combining marks none. Carets must line up under what the terminal shows."""
    if text.isascii():  # nearly every line of a theory file: no wide or combining characters
        return len(text) + (len(_TAB) - 1) * text.count("\t")
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
    source: SourceText | None, marks: list[tuple[Span, str]], colour: bool
) -> list[str]:
    """One source line and a caret line under it marking each span in `marks` (all on that
    line) with its marker: `^` the finding, `-` a related part. Two labels on one line share
    it, so the line is printed once."""
    if source is None or not source.text or not marks:
        return []
    span = marks[0][0]
    line_text = source.line_text(span.line)
    if not line_text and span.line > 1 and span.column == 1:
        return []
    width = len(str(span.line))
    gutter = " " * width
    cells: list[str] = []
    for mark_span, marker in marks:
        start = mark_span.column - 1
        end = mark_span.end_column - 1 if mark_span.end_line == mark_span.line else len(line_text)
        offset = _width(line_text[:start])
        length = max(1, _width(line_text[start:end]))
        cells += [" "] * max(0, offset + length - len(cells))
        for column in range(offset, offset + length):
            if cells[column] == " ":  # the finding's own carets win where labels overlap
                cells[column] = marker
    caret = "".join(cells).rstrip()
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
        by_line: dict[tuple[str, int], list[tuple[Span, str]]] = {
            (span.file, span.line): [(span, "^")]
        }
        for related in diagnostic.related:
            by_line.setdefault((related.file, related.line), []).append((related, "-"))
        for number, ((file, _), marks) in enumerate(by_line.items()):
            block = _caret_block(sources.get(file), marks, colour)
            lines.extend(block if number == 0 else block[1:])
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
        counts = ", ".join(_plural(theory[k], k[:-1]) for k in ("metrics", "actions", "rules"))
        extras.append(f"  {theory['id']}: {counts}{cov}")
    others = files - len(extras)
    if extras and others > 0:  # every checked file is accounted for
        extras.append(
            f"  and {_plural(others, 'other file')} (curricula, files that did not load): "
            "no theory summary"
        )
    return "\n\n".join(blocks + [tail]) + ("\n" + "\n".join(extras) if extras else "")
