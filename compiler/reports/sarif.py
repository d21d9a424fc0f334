"""Diagnostics as SARIF 2.1.0, the format GitHub code scanning ingests.

The rule list comes from the check catalog (id, short and full description, help), results
carry physical locations with 1-based lines and columns relative to the working directory.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from pedrag import __version__
from pedrag.compiler.checks import catalog
from pedrag.dsl.diagnostics import Diagnostic, Severity

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}


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


def sarif_dict(diagnostics: list[Diagnostic]) -> dict[str, Any]:
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
                "defaultConfiguration": {"level": _LEVEL[info.severity] if info else "error"},
                "properties": {"tags": [info.stage if info else "internal"]},
            }
        )
    index = {name: i for i, name in enumerate(names)}
    results = []
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
                        "artifactLocation": {"uri": artifact_uri(d.span.file)},
                        "region": {
                            "startLine": d.span.line,
                            "startColumn": d.span.column,
                            "endLine": d.span.end_line,
                            "endColumn": max(d.span.end_column, d.span.column + 1)
                            if d.span.end_line == d.span.line
                            else d.span.end_column,
                        },
                    }
                }
            ]
        properties: dict[str, Any] = {}
        if d.items:
            properties["items"] = list(d.items)
        if d.witness is not None:
            properties["witness"] = d.witness
        if properties:
            result["properties"] = properties
        results.append(result)
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "pedrag",
                        "version": __version__,
                        "informationUri": "https://pypi.org/project/pedrag/",
                        "rules": rules,
                    }
                },
                "results": results,
                # Our columns count characters (code points), not SARIF's default UTF-16 units.
                "columnKind": "unicodeCodePoints",
            }
        ],
    }


def format_sarif(diagnostics: list[Diagnostic]) -> str:
    return json.dumps(sarif_dict(diagnostics), indent=2)
