"""Diagnostics as GitHub Actions workflow commands: one annotation per finding.

    ::error file=theories/x.yaml,line=12,col=56,endLine=12,endColumn=65,title=pedrag unknown-name::...

GitHub shows them on the pull request's diff and in the run's summary. Values are escaped as
the runner's toolkit does (`%`, CR and LF in messages; also `:` and `,` in properties).
"""

from __future__ import annotations

from pedrag.dsl.diagnostics import Diagnostic, Severity

_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "notice"}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def format_annotation(diagnostic: Diagnostic) -> str:
    properties = []
    span = diagnostic.span
    if span is not None:
        properties += [
            f"file={_escape_property(span.file)}",
            f"line={span.line}",
            f"col={span.column}",
            f"endLine={span.end_line}",
            f"endColumn={span.end_column}",
        ]
    properties.append(f"title={_escape_property(f'pedrag {diagnostic.check}')}")
    message = diagnostic.message
    if diagnostic.help:
        message += f"\nhelp: {diagnostic.help}"
    return f"::{_COMMAND[diagnostic.severity]} {','.join(properties)}::{_escape_data(message)}"


def format_github(diagnostics: list[Diagnostic]) -> str:
    return "\n".join(format_annotation(d) for d in diagnostics)
