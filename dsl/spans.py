"""Source positions: where in which file a thing was written.

Spans are 1-based (line, column) pairs as editors and compilers print them. A `SourceText`
turns character offsets into spans; `ScalarMap` maps offsets inside a YAML scalar's *value*
(the condition text a parser sees) back to offsets in the file, so a syntax error in a block
scalar still points at the right line and column of the YAML file.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Span:
    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


_NEWLINE = re.compile("\n")


class SourceText:
    """A file's text with fast offset -> (line, column) conversion."""

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.text = text
        self._line_starts = [0]
        self._line_starts += (match.end() for match in _NEWLINE.finditer(text))

    def position(self, offset: int) -> tuple[int, int]:
        offset = max(0, min(offset, len(self.text)))
        line_index = bisect.bisect_right(self._line_starts, offset) - 1
        return line_index + 1, offset - self._line_starts[line_index] + 1

    def span(self, start: int, end: int | None = None) -> Span:
        end = start if end is None else max(start, end)
        line, column = self.position(start)
        end_line, end_column = self.position(end)
        return Span(self.name, line, column, end_line, end_column)

    def line_text(self, line: int) -> str:
        if line < 1 or line > len(self._line_starts):
            return ""
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        line_text = self.text[start:] if end < 0 else self.text[start:end]
        # Windows line endings: the `\r` is part of the break, not of the line a caret sits under.
        return line_text[:-1] if line_text.endswith("\r") else line_text


class ScalarMap:
    """Maps offsets in a YAML scalar's value to offsets in the file.

    YAML folds and unindents block scalars and strips quotes, so the value a condition parser
    sees is not a substring of the file. We align the value with the raw source greedily: each
    non-blank value character is matched with the next equal source character. That is exact
    for plain, single-line quoted and block scalars, and close for escapes.
    """

    def __init__(self, source: SourceText, start: int, end: int, value: str) -> None:
        self.source = source
        self.start = start
        self._end = end
        self._value = value
        # The aligned offsets (`_offsets`) and the start they were made or last moved at,
        # one object, so a reader in another thread never sees one without the other.
        self._aligned: tuple[int, list[int]] | None = None

    @property
    def _offsets(self) -> list[int]:
        """Aligned on first use: only a diagnostic inside a condition needs it, and aligning
        every condition of a 5,000-rule theory up front cost 0.1 s of each check. Moved by
        `move` when read: every offset of a scalar moves with its start."""
        found = self._aligned
        if found is None:
            offsets = self._align()
            self._aligned = (self.start, offsets)
            return offsets
        at, offsets = found
        if at != self.start:
            shift = self.start - at
            offsets = [offset + shift for offset in offsets]
            self._aligned = (self.start, offsets)
        return offsets

    def _align(self) -> list[int]:
        start, raw = self.start, self.source.text[self.start : self._end]
        offsets: list[int] = []
        j = 0
        if raw[:1] in ("|", ">"):
            newline = raw.find("\n")
            j = len(raw) if newline < 0 else newline + 1
        elif raw[:1] in ("'", '"'):
            j = 1
        for char in self._value:
            if char.isspace():
                offsets.append(start + min(j, len(raw)))
                continue
            found = raw.find(char, j)
            if found < 0:
                offsets.append(start + min(j, len(raw)))
                continue
            offsets.append(start + found)
            j = found + 1
        offsets.append(start + min(j, len(raw)))
        return offsets

    def move(self, source: SourceText, at: int, delta: int) -> None:
        """Read `source` from now on, a text that is this one's with `delta` characters more
        (fewer, if negative) at offset `at`, nothing else changed: an offset at or after `at`
        moves by `delta` (`pedrag.dsl.incremental`)."""
        self.source = source
        if self.start >= at:
            # The aligned offsets follow when next read (`_offsets`): a splice moves every
            # condition after the edit, and rewriting 4,600 offset lists was a tenth of it.
            self.start += delta
            self._end += delta

    def offset(self, value_offset: int) -> int:
        if not self._offsets:
            return self.start
        return self._offsets[max(0, min(value_offset, len(self._offsets) - 1))]

    def span(self, value_start: int, value_end: int | None = None) -> Span:
        start = self.offset(value_start)
        if value_end is None or value_end <= value_start:
            return self.source.span(start, start + 1)
        end = self.offset(value_end - 1) + 1
        return self.source.span(start, end)
