"""Rename a metric or an action across a theory set.

Language server stage. Takes a declared name, what it names (a metric or an action), the new
name and the documents of the theory set (the pedrag files in the renamed document's folder
and below, as `pedrag check FOLDER` finds them, with the editor's unsaved text where a file is
open); gives the offsets to replace in each document that declares the name.

Only places that name the item change: its declaration key, words of conditions (`when`,
`never`, `always`, `compute`, monitors), and for an action `then:`, `conflicts:`, the
`adaptation:` tables and writers' `action:<name>` events. Descriptions, templates and comments that happen to contain the word
are left alone. Theories of a set share the learner's state, so a metric renamed in one is
renamed in every theory of the set that declares it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pedrag.dsl import ast
from pedrag.dsl.spans import SourceText
from pedrag.dsl.yaml_source import YamlError, load_yaml
from pedrag.kernel.errors import PedragError

IDENTIFIER = re.compile(r"[a-z][a-z0-9_]*")
CONDITION_KEYS = frozenset({"when", "never", "always", "compute"})
SECTIONS = {"metric": "metrics", "action": "actions"}


def conventional_metrics() -> frozenset[str]:
    """Metric names the kernel reads by name: default writers and runtime ceiling steps."""
    from pedrag.kernel.ceiling import RUNTIME_STEPS
    from pedrag.kernel.sources import DEFAULT_WRITERS

    return frozenset(DEFAULT_WRITERS) | frozenset(step.metric for step in RUNTIME_STEPS)


class RenameError(PedragError):
    """A rename that cannot be made (a bad or taken name); the message says why."""


@dataclass(frozen=True)
class Replacement:
    start: int
    end: int


def _is_condition(path: tuple[Any, ...]) -> bool:
    last = path[-1] if path else None
    return (isinstance(last, str) and last in CONDITION_KEYS) or (
        len(path) == 2 and path[0] == "monitors"
    )


def _is_action_reference(path: tuple[Any, ...]) -> bool:
    if not path:
        return False
    if len(path) >= 3 and path[0] == "rules" and path[-1] == "then":
        return True
    if len(path) == 4 and path[0] == "actions" and path[2] == "conflicts":
        return True
    if len(path) >= 3 and path[:2] in (("adaptation", "escalate"), ("adaptation", "alternatives")):
        return True
    return False


def _declared(text: str, path: str, kind: str, name: str) -> Any:
    """The declaration of `name` in the document (its mapping, or True), None if absent."""
    try:
        data, _ = load_yaml(SourceText(path, text))
    except YamlError:
        return None
    table = data.get(SECTIONS[kind]) if isinstance(data, dict) else None
    if not isinstance(table, dict) or name not in table:
        return None
    return table[name] if table[name] is not None else True


def declares(text: str, path: str, kind: str, name: str) -> bool:
    return _declared(text, path, kind, name) is not None


def occurrences(text: str, path: str, kind: str, name: str) -> list[Replacement]:
    """Where `name` (a metric or an action the document declares) is written in it."""
    try:
        _, positions = load_yaml(SourceText(path, text))
    except YamlError:
        return []
    word = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
    found: set[tuple[int, int]] = set()
    declaration = positions.keys.get((SECTIONS[kind], name))
    if declaration is not None:
        found.add(declaration)
    for key_path, (start, end) in positions.keys.items():
        # Keys of the adaptation tables are action names (`escalate: {hint: explain}`).
        if kind == "action" and len(key_path) == 3 and key_path[0] == "adaptation":
            if text[start:end].strip("'\"") == name:
                found.add((start, end))
    for value_path, (start, end) in positions.values.items():
        written = text[start:end]
        if _is_condition(value_path):
            found.update((start + m.start(), start + m.end()) for m in word.finditer(written))
        elif kind == "action" and value_path[:1] == ("metrics",) and "writer" in value_path:
            # A writer names its runtime events `action:<name>`.
            event = re.compile(rf"(?<=action:){re.escape(name)}(?!\w)")
            found.update((start + m.start(), start + m.end()) for m in event.finditer(written))
        elif kind == "action" and _is_action_reference(value_path):
            inner = written.strip()
            if inner.strip("'\"") == name:
                offset = written.index(name)
                found.add((start + offset, start + offset + len(name)))
    return [Replacement(start, end) for start, end in sorted(found)]


def rename(
    documents: dict[str, str], kind: str, name: str, new_name: str
) -> dict[str, list[Replacement]]:
    """The replacements per document (path -> text given) for renaming `name` to `new_name`
    in every document that declares it. Raises RenameError for a name that is not an
    identifier, is reserved, or is already declared in one of those documents."""
    if not IDENTIFIER.fullmatch(new_name):
        raise RenameError(
            f"`{new_name}` is not a name: lowercase letters, digits and `_`, starting with a letter"
        )
    if new_name in ast.RESERVED:
        raise RenameError(f"`{new_name}` is a reserved word")
    declaring = {p: t for p, t in documents.items() if declares(t, p, kind, name)}
    trusted = any(
        isinstance(found, dict) and found.get("source") == "trusted"
        for found in (_declared(t, p, kind, name) for p, t in declaring.items())
    )
    if kind == "metric" and trusted:  # the kernel reads trusted metrics by name
        for word in (name, new_name):
            if word in conventional_metrics():
                raise RenameError(
                    f"`{word}` is a metric name the runtime gives a meaning to (its default "
                    "writer or a runtime ceiling step, such as the exam lockdown): renaming "
                    f"{'it' if word == name else 'a metric to it'} would change what the theory does"
                )
    for path, text in declaring.items():
        for other in SECTIONS:
            if declares(text, path, other, new_name):
                raise RenameError(f"{path} already declares a {other} `{new_name}`")
    return {path: occurrences(text, path, kind, name) for path, text in declaring.items()}
