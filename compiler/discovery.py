"""Which files `pedrag check` checks: the files named, and pedrag files under named folders.

Compiler stage helper (before the front end). Takes the paths of a command line; gives the
files to check in order, and the YAML files under folders it skipped. It reads each candidate's
text for a top-level `pedrag:` key and the configuration's `files` globs, never the front end,
so a check whose whole report is kept (`pedrag.compiler.kept_report`) finds its inputs without
importing the front end or the checks.
"""

from __future__ import annotations

import re
from pathlib import Path

from pedrag.compiler.config import ConfigSource
from pedrag.kernel.errors import PedragError

SUFFIXES = (".yaml", ".yml")


class PathError(PedragError):
    pass


def discover(
    paths: list[str],
    skipped: list[Path] | None = None,
    pedrag_only: bool = False,
    config: ConfigSource | None = None,
) -> list[Path]:
    """Files named on the command line, and pedrag files under named folders, in order.

    A named file is always checked (with `pedrag_only`, as pre-commit names every staged YAML
    file, only if it is a pedrag file). Under a folder, hidden folders (`.git`, `.github`,
    `.venv`, ...) are not searched and YAML files that are not pedrag documents (no top-level
    `pedrag:` key: CI workflows, docker-compose files, ...) are skipped; they are appended to
    `skipped` so the report can say so. A file a `files` glob of its configuration matches
    is a pedrag file too.
    """

    def wanted(candidate: Path) -> bool:
        if _is_pedrag_document(candidate):
            return True
        return config is not None and config.for_file(str(candidate)).claims(str(candidate))

    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for candidate in sorted(path.rglob("*")):
                relative = candidate.relative_to(path).parts
                if candidate.suffix.lower() not in SUFFIXES or not candidate.is_file():
                    continue
                if any(part.startswith(".") for part in relative[:-1]):
                    continue
                if wanted(candidate):
                    found.append(candidate)
                elif skipped is not None and candidate not in skipped:
                    skipped.append(candidate)
        elif path.is_file():
            if pedrag_only and not wanted(path):
                if skipped is not None and path not in skipped:
                    skipped.append(path)
                continue
            found.append(path)
        else:
            raise PathError(f"no such file or directory: {raw}")
    unique: list[Path] = []
    for path in found:
        if path not in unique:
            unique.append(path)
    return unique


# A top-level `pedrag:` key, in block style or as the first key of a flow mapping.
_PEDRAG_KEY = re.compile(r"""^(?:\ufeff)?(?:\{\s*)?["']?pedrag["']?[ \t]*:""", re.MULTILINE)


def is_pedrag_text(text: str) -> bool:
    """Whether a YAML text is a pedrag document: it has a top-level `pedrag:` key (found
    without parsing, so a document broken elsewhere still counts)."""
    return _PEDRAG_KEY.search(text) is not None


def _is_pedrag_document(path: Path) -> bool:
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return True  # let the loader report why it cannot be read
    return is_pedrag_text(text)
