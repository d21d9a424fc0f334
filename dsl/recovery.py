"""Error recovery after validation: the document without its broken items, for name resolution.

Stage: front end, between validation and resolution. Takes a document that failed validation,
its positions and where pydantic found each mistake; gives the same document with each broken
item left out (an action, a metric, a rule, a ceiling step: the innermost list or named table
entry holding the mistake; an unknown key alone), its positions re-indexed to match (a rule
after a dropped one keeps pointing at its own line), and the names left out.

Why: validation reports every structural mistake at once, but resolution ran only on a valid
document, so a file with broken actions and misspelt names in its rules showed its errors in
waves, one fix-and-rerun per wave. Resolving the valid rest reports the independent mistakes
in one run; a reference to a left-out item is not reported again (its own error says why it
is missing).
"""

from __future__ import annotations

import copy
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Union

from pydantic import BaseModel

from pedrag.dsl.yaml_source import Path, Positions


def unwrap_optional(annotation: Any) -> Any:
    """The model inside `X | None` or `Annotated[X, ...]`, else the annotation itself."""
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        for arg in typing.get_args(annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                return arg
    if origin is typing.Annotated:
        return unwrap_optional(typing.get_args(annotation)[0])
    return annotation


def unwrap(annotation: Any, part: Any) -> Any:
    """The annotation one step (a key or an index) inside `annotation`; None if unknown."""
    annotation = unwrap_optional(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        info = annotation.model_fields.get(part) if isinstance(part, str) else None
        return info.annotation if info else None
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is dict and args:
        return args[1]
    if origin in (list, tuple) and args:
        return args[0]
    return None


def annotation_at(model: type[BaseModel], loc: Path) -> Any:
    annotation: Any = model
    for part in loc:
        annotation = unwrap(annotation, part)
        if annotation is None:
            return None
    return annotation


@dataclass
class Recovered:
    data: dict[str, Any]
    positions: Positions
    dropped: set[str] = field(default_factory=set)
    """Names (table keys, item ids) of the items left out."""


def _named_table(model: type[BaseModel], loc: Path) -> bool:
    annotation = unwrap_optional(annotation_at(model, loc))
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return typing.get_origin(annotation) is dict


def _node(data: Any, loc: Path) -> Any:
    for part in loc:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return None
    return data


def _broken_item(model: type[BaseModel], data: Any, loc: Path) -> Path | None:
    """The path of the innermost item (a mapping in a list or in a named table: an action, a
    rule, a ceiling step) that holds the mistake at `loc`; None when the mistake is in the
    document's own keys. A bad scalar in a list (an enum value) takes its whole item along:
    leaving the scalar out would only make another mistake (an empty list)."""
    for depth in range(len(loc) - 1, -1, -1):
        container = _node(data, loc[:depth])
        if not isinstance(_node(data, loc[: depth + 1]), dict):
            continue
        if isinstance(container, list) and isinstance(loc[depth], int):
            return loc[: depth + 1]
        if isinstance(container, dict) and depth and _named_table(model, loc[:depth]):
            return loc[: depth + 1]
    return None


def _optional_top_level(model: type[BaseModel], key: Any) -> bool:
    info = model.model_fields.get(key) if isinstance(key, str) else None
    return info is not None and not info.is_required()


def _reindexed(positions: Positions, removed: list[Path]) -> Positions:
    """`positions` with the list items at `removed` gone and their later siblings moved up;
    `removed` in the order the items were deleted (see `without_broken`)."""
    tables: list[dict[Path, Any]] = [
        dict(positions.values),
        dict(positions.keys),
        dict(positions.scalars),
    ]
    for item in removed:
        parent, index = item[:-1], int(item[-1])
        depth = len(parent)
        for number, table in enumerate(tables):
            moved: dict[Path, Any] = {}
            for path, value in table.items():
                if len(path) > depth and path[:depth] == parent and isinstance(path[depth], int):
                    at = path[depth]
                    if at == index:
                        continue
                    if isinstance(at, int) and at > index:
                        path = (*parent, at - 1, *path[depth + 1 :])
                moved[path] = value
            tables[number] = moved
    return Positions(positions.source, tables[0], tables[1], tables[2])


def without_broken(
    model: type[BaseModel],
    data: dict[str, Any],
    positions: Positions,
    mistakes: Iterable[tuple[str, Path]],
) -> Recovered | None:
    """The document without the items holding `mistakes` (pydantic's error kind and document
    path each); None when a mistake cannot be left out (a required top-level key)."""
    repaired = copy.deepcopy(data)
    unknown_keys: list[Path] = []
    items: set[Path] = set()
    for kind, loc in mistakes:
        if kind == "extra_forbidden" and loc:
            unknown_keys.append(loc)  # the key alone goes; its item may still be valid
            continue
        item = _broken_item(model, repaired, loc)
        if item is None:
            if len(loc) >= 1 and _optional_top_level(model, loc[0]):
                item = loc[:1]
            else:
                return None
        items.add(item)
    for loc in unknown_keys:
        parent = _node(repaired, loc[:-1])
        if isinstance(parent, dict):
            parent.pop(loc[-1], None)
    outermost = [
        item for item in items if not any(item[: len(o)] == o and item != o for o in items)
    ]
    dropped: set[str] = set()
    list_items: list[Path] = []
    for item in outermost:
        parent, key = _node(repaired, item[:-1]), item[-1]
        value = _node(repaired, item)
        if isinstance(value, dict) and isinstance(value.get("id"), str):
            dropped.add(value["id"])
        if isinstance(parent, list):
            list_items.append(item)
        elif isinstance(parent, dict):
            dropped.add(str(key))
    # Table entries first (they move nothing); then list items, inner lists before the lists
    # holding them and the highest index first, so no removal moves one still to be made.
    for item in outermost:
        parent = _node(repaired, item[:-1])
        if isinstance(parent, dict):
            parent.pop(item[-1], None)
    list_items.sort(key=lambda p: (-len(p), -int(p[-1])))
    for item in list_items:
        parent = _node(repaired, item[:-1])
        if isinstance(parent, list):
            del parent[int(item[-1])]
    return Recovered(repaired, _reindexed(positions, list_items), dropped)
