"""Diagnostics as SARIF 2.1.0, the format GitHub code scanning ingests.

The rule list comes from the check catalog (id, short and full description, help, helpUri).
Results carry physical locations with 1-based lines and columns, relative to the working
directory (`uriBaseId: SRCROOT`, declared in `originalUriBaseIds`), the finding's other
places as `relatedLocations` (a conflict's first rule, the contradicting parts of a dead
rule), and a `partialFingerprints` entry built from what the finding is about (check, file,
items, message and the text it points at, all without whitespace) so code scanning can
follow an alert across commits that only move or reformat it. `invocations` records the
command line, its times and exit code.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from pedrag import __version__
from pedrag.compiler.checks import catalog
from pedrag.compiler.config import DOCS_URL, check_page
from pedrag.dsl.diagnostics import Diagnostic, Severity
from pedrag.dsl.spans import SourceText, Span

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
BASE_ID = "SRCROOT"
FINGERPRINT = "pedragFinding/v1"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}


@dataclass(frozen=True)
class Invocation:
    """How the tool was run, for SARIF's `invocations`."""

    arguments: list[str]
    start: str  # ISO 8601 UTC, e.g. 2026-01-01T12:00:00Z
    end: str
    exit_code: int


def artifact_uri(file: str) -> str:
    """A file path as a SARIF `artifactLocation.uri`: a percent-encoded URI reference, relative
    to the working directory when the file lies under it (what code scanning maps onto the
    repository), else an absolute `file://` URI."""
    path = Path(file)
    if path.is_absolute():
        try:
            path = path.relative_to(Path.cwd())
        except ValueError:
            return path.as_uri()
    return quote(PurePosixPath(*path.parts).as_posix().replace("\\", "/"), safe="/")


def _artifact(file: str) -> dict[str, Any]:
    uri = artifact_uri(file)
    return {"uri": uri} if uri.startswith("file:") else {"uri": uri, "uriBaseId": BASE_ID}


def _region(span: Span) -> dict[str, int]:
    return {
        "startLine": span.line,
        "startColumn": span.column,
        "endLine": span.end_line,
        "endColumn": max(span.end_column, span.column + 1)
        if span.end_line == span.line
        else span.end_column,
    }


def _span_text(span: Span, sources: dict[str, SourceText]) -> str:
    source = sources.get(span.file)
    if source is None:
        return ""
    lines = [source.line_text(line) for line in range(span.line, span.end_line + 1)]
    if not lines:
        return ""
    if len(lines) == 1:
        return lines[0][span.column - 1 : span.end_column - 1]
    lines[0] = lines[0][span.column - 1 :]
    lines[-1] = lines[-1][: span.end_column - 1]
    return "\n".join(lines)


_WHITESPACE = re.compile(r"\s+")
_LINE_NUMBER = re.compile(r"\blines? \d+(?:[-–]\d+)?")


def fingerprint(diagnostic: Diagnostic, sources: dict[str, SourceText]) -> str:
    """What the finding is about, independent of where whitespace put it: a whitespace-only
    edit (re-indenting, blank lines, a flow mapping spread over lines) keeps it."""
    parts = [
        diagnostic.check,
        artifact_uri(diagnostic.span.file) if diagnostic.span else "",
        "\x1f".join(diagnostic.items),
        _LINE_NUMBER.sub("line", diagnostic.message),
        _span_text(diagnostic.span, sources) if diagnostic.span else "",
    ]
    text = _WHITESPACE.sub("", "\x1e".join(parts))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def sarif_dict(
    diagnostics: list[Diagnostic],
    sources: dict[str, SourceText] | None = None,
    invocation: Invocation | None = None,
    docs_url: str | None = None,
) -> dict[str, Any]:
    """The SARIF log; each rule's `helpUri` is its check's page on the documentation site at
    `docs_url` (`[tool.pedrag] docs-url`; default `config.DOCS_URL`)."""
    sources = sources or {}
    checks = catalog()
    names = sorted(set(checks) | {d.check for d in diagnostics})
    rules = []
    for name in names:
        check = checks.get(name)
        info = check.info if check else None
        rules.append(
            {
                "id": name,
                "name": "".join(part.capitalize() for part in name.split("-")),
                "shortDescription": {"text": info.summary if info else name},
                "fullDescription": {"text": info.explanation if info else name},
                "help": {
                    "text": (info.fix if info else name),
                    "markdown": f"{info.explanation}\n\nExample:\n```yaml\n{info.example}```\n\nFix: {info.fix}"
                    if info
                    else name,
                },
                "helpUri": check_page(name, docs_url),
                "defaultConfiguration": {"level": _LEVEL[info.severity] if info else "error"},
                "properties": {"tags": [info.stage if info else "internal"]},
            }
        )
    index = {name: i for i, name in enumerate(names)}
    results = []
    seen: dict[str, int] = {}
    for d in diagnostics:
        result: dict[str, Any] = {
            "ruleId": d.check,
            "ruleIndex": index[d.check],
            "level": _LEVEL[d.severity],
            "message": {"text": d.message + (f" (help: {d.help})" if d.help else "")},
        }
        if d.span is not None:
            result["locations"] = [
                {
                    "physicalLocation": {
                        "artifactLocation": _artifact(d.span.file),
                        "region": _region(d.span),
                    }
                }
            ]
            related = []
            for number, span in enumerate(d.related, 1):
                excerpt = _WHITESPACE.sub(" ", _span_text(span, sources)).strip()
                related.append(
                    {
                        "id": number,
                        "physicalLocation": {
                            "artifactLocation": _artifact(span.file),
                            "region": _region(span),
                        },
                        "message": {
                            "text": f"related: `{excerpt}`" if excerpt else "related location"
                        },
                    }
                )
            if related:
                result["relatedLocations"] = related
        # The same finding twice in a file (rare) gets distinct fingerprints by occurrence.
        key = fingerprint(d, sources)
        seen[key] = seen.get(key, 0) + 1
        result["partialFingerprints"] = {
            FINGERPRINT: key if seen[key] == 1 else f"{key}:{seen[key]}"
        }
        properties: dict[str, Any] = {}
        if d.items:
            properties["items"] = list(d.items)
        if d.witness is not None:
            properties["witness"] = d.witness
        if properties:
            result["properties"] = properties
        results.append(result)
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "pedrag",
                "version": __version__,
                "informationUri": docs_url or DOCS_URL,
                "rules": rules,
            }
        },
        "originalUriBaseIds": {BASE_ID: {"uri": Path.cwd().as_uri().rstrip("/") + "/"}},
        "results": results,
        # Our columns count characters (code points), not SARIF's default UTF-16 units.
        "columnKind": "unicodeCodePoints",
    }
    if invocation is not None:
        run["invocations"] = [_invocation(invocation)]
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}


def _invocation(invocation: Invocation) -> dict[str, Any]:
    return {
        "arguments": invocation.arguments,
        "commandLine": " ".join(_shell_quote(a) for a in invocation.arguments),
        "startTimeUtc": invocation.start,
        "endTimeUtc": invocation.end,
        "exitCode": invocation.exit_code,
        # The tool ran to the end; findings do not make an execution unsuccessful.
        "executionSuccessful": invocation.exit_code in (0, 1),
        "workingDirectory": {"uri": Path.cwd().as_uri().rstrip("/") + "/"},
    }


def with_invocation(report: str, invocation: Invocation) -> str:
    """A log `format_sarif` made without an invocation, with this run's, as `format_sarif`
    would have written it: the rest of a log is a function of the check's inputs, so a kept
    one (`pedrag.compiler.kept_report`) serves a re-check whose command line, times and exit
    code are its own."""
    data = json.loads(report)
    data["runs"][0]["invocations"] = [_invocation(invocation)]
    return json.dumps(data, indent=2)


def _shell_quote(argument: str) -> str:
    import shlex

    return shlex.quote(argument)


def format_sarif(
    diagnostics: list[Diagnostic],
    sources: dict[str, SourceText] | None = None,
    invocation: Invocation | None = None,
    docs_url: str | None = None,
) -> str:
    return json.dumps(sarif_dict(diagnostics, sources, invocation, docs_url), indent=2)
