"""Positions between pedrag and the Language Server Protocol.

Language server helper. Takes document text and offsets, pedrag spans (1-based lines,
code-point columns) or LSP positions (0-based lines, UTF-16 columns); gives the others. Why:
an editor counts columns in UTF-16 code units, pedrag in code points; one place converts.
"""

from __future__ import annotations

import re
from typing import Any


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def offset_at(text: str, line: int, character: int) -> int:
    """An LSP position (0-based line, UTF-16 character) as an offset into `text`."""
    lines = text.split("\n")
    line = max(0, min(line, len(lines) - 1))
    start = sum(len(part) + 1 for part in lines[:line])
    units = 0
    for column, char in enumerate(lines[line]):
        if units >= character:
            return start + column
        units += utf16(char)
    return start + len(lines[line])


def position_at(text: str, offset: int) -> Any:
    from lsprotocol import types

    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    return types.Position(line=line, character=utf16(text[start:offset]))


class LineIndex:
    """A text's lines, split once: pedrag spans as LSP positions (UTF-16) without splitting
    the text again per span (a publish of 80,000 findings converts 160,000 spans)."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self._ascii: dict[int, bool] = {}

    def character(self, line: int, column: int) -> tuple[int, int]:
        """A 1-based pedrag (line, code-point column) as a 0-based (line, UTF-16 character)."""
        lines = self.lines
        row = max(0, min(line - 1, len(lines) - 1))
        content = lines[row]
        plain = self._ascii.get(row)
        if plain is None:
            plain = self._ascii[row] = content.isascii()
        before = max(0, column - 1)
        return row, min(before, len(content)) if plain else utf16(content[:before])

    def range_of(self, span: Any) -> tuple[int, int, int, int]:
        """A span's LSP range as (start line, start character, end line, end character)."""
        return (
            *self.character(span.line, span.column),
            *self.character(span.end_line, span.end_column),
        )

    def range(self, span: Any) -> Any:
        from lsprotocol import types

        start_line, start, end_line, end = self.range_of(span)
        return types.Range(
            start=types.Position(line=start_line, character=start),
            end=types.Position(line=end_line, character=end),
        )


def span_range(text: str | LineIndex, span: Any) -> Any:
    """A 1-based pedrag span (code-point columns) as an LSP range (UTF-16)."""
    return (text if isinstance(text, LineIndex) else LineIndex(text)).range(span)


def word_at(text: str, offset: int) -> tuple[str, int, int] | None:
    for found in re.finditer(r"[A-Za-z_][A-Za-z0-9_]*", text[text.rfind("\n", 0, offset) + 1 :]):
        start = text.rfind("\n", 0, offset) + 1 + found.start()
        end = start + len(found.group(0))
        if start <= offset <= end:
            return found.group(0), start, end
    return None
