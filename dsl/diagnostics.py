"""The one diagnostic type every stage reports with.

Front end, compiler checks, the CLI and the runtime's loaders all speak `Diagnostic`, so a
finding can be printed as text, JSON or SARIF by the same writers no matter who found it.
Exceptions stay inside a stage and are converted to diagnostics at its boundary.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from pedrag.dsl.spans import Span


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"

    @property
    def rank(self) -> int:
        return {"error": 2, "warning": 1, "note": 0}[self.value]


@dataclass(frozen=True)
class Diagnostic:
    """A finding about a source file: what, where, which items, and a concrete witness."""

    check: str
    severity: Severity
    message: str
    span: Span | None = None
    items: tuple[str, ...] = ()
    witness: dict[str, Any] | None = None
    help: str | None = None
    # Extra caret locations (e.g. the exact atoms of an unsat core) shown under the main one.
    related: tuple[Span, ...] = ()
    # Machine-readable extras a writer may show (suggested fix, share of a gap, ...).
    data: dict[str, Any] = field(default_factory=dict)

    def with_severity(self, severity: Severity) -> Diagnostic:
        return replace(self, severity=severity)

    @property
    def file(self) -> str | None:
        return self.span.file if self.span else None

    def sort_key(self) -> tuple[str, int, int, str]:
        if self.span is None:
            return ("", 0, 0, self.check)
        return (self.span.file, self.span.line, self.span.column, self.check)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "check": self.check,
            "severity": self.severity.value,
            "message": self.message,
            "file": self.span.file if self.span else None,
            "line": self.span.line if self.span else None,
            "column": self.span.column if self.span else None,
            "end_line": self.span.end_line if self.span else None,
            "end_column": self.span.end_column if self.span else None,
            "items": list(self.items),
            "witness": self.witness,
            "help": self.help,
        }
        if self.related:
            out["related"] = [
                {
                    "line": r.line,
                    "column": r.column,
                    "end_line": r.end_line,
                    "end_column": r.end_column,
                }
                for r in self.related
            ]
        if self.data:
            out["data"] = self.data
        return out


def error(check: str, message: str, span: Span | None, **kw: Any) -> Diagnostic:
    return Diagnostic(check=check, severity=Severity.ERROR, message=message, span=span, **kw)


def warning(check: str, message: str, span: Span | None, **kw: Any) -> Diagnostic:
    return Diagnostic(check=check, severity=Severity.WARNING, message=message, span=span, **kw)
