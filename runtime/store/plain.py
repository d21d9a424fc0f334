"""Values made plain JSON as a round trip through JSON text would make them, without the text.

Runtime stage: persistence, stdlib only. Takes a turn's audit record (dicts, lists, tuples,
enum labels, objects with ``to_dict``, sets); gives it as plain JSON values, the form the store
saves (:func:`~pedrag.runtime.store.documents.plain_audit` makes the turn's record plain and
checked for the store in one).

Why here, in the store: what it builds holds nothing but exact plain types (finite floats, str
keys), which is what the store's check looks for; made by the store's own walk, the record
need not be read back from its JSON text to be trusted (issue 30: a warm turn under 2 ms).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from math import isfinite
from typing import Any


def plain(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record as plain JSON values (tuples -> lists), as the store requires: exactly what
    a ``json.dumps``/``json.loads`` round trip would give (keys as JSON writes them, objects
    through their ``to_dict``, sets sorted; a NaN or an unknown type raises), without writing
    and reading the text on every turn."""
    value = _plain_dict(record) if type(record) is dict else _plain(record)
    if not isinstance(value, dict):
        raise TypeError(f"an audit record is a dict, not {type(record).__name__}")
    return value


_KEPT = frozenset({str, int, bool, type(None)})  # JSON writes and reads these back unchanged


# A record is mostly dicts and lists of exact types: each is copied by a loop of its own that
# tests an item's exact type before calling anything (a call per item, and the tests of
# `_plain` on every container, were most of a record's walk; issue 30). A finite float is kept
# there too (each of a turn's record's floats, about twenty, was a call to `_plain`); a NaN or
# an infinity goes to `_plain`, which refuses it.
def _plain_dict(value: Mapping[Any, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        if type(key) is not str:
            key = _key(key)
        kind = type(item)
        if kind in _KEPT or (kind is float and isfinite(item)):
            out[key] = item
        elif kind is dict:
            out[key] = _plain_dict(item)
        elif kind is list or kind is tuple:
            out[key] = _plain_list(item)
        else:
            out[key] = _plain(item)
    return out


def _plain_list(value: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for item in value:
        kind = type(item)
        if kind in _KEPT or (kind is float and isfinite(item)):
            out.append(item)
        elif kind is dict:
            out.append(_plain_dict(item))
        elif kind is list or kind is tuple:
            out.append(_plain_list(item))
        else:
            out.append(_plain(item))
    return out


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return _plain_dict(value)
    if kind is list or kind is tuple:
        return _plain_list(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float or isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("Out of range float values are not JSON compliant: " + repr(value))
        return float(value)
    if isinstance(value, str):
        return str.__str__(value)  # an enum label: its text
    if isinstance(value, int):
        return int(value)
    if isinstance(value, dict):
        return _plain_dict(value)
    if isinstance(value, list | tuple):
        return _plain_list(value)
    return _plain(_default(value))


def _default(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, frozenset | set):
        return sorted(value)
    raise TypeError(f"not JSON-able: {type(value).__name__}")


def _key(key: Any) -> str:
    """A dict key as JSON writes it."""
    if isinstance(key, str):
        return str.__str__(key)
    if key is True or key is False or key is None:
        return json.dumps(key)
    if isinstance(key, int):
        return str(int(key))
    if isinstance(key, float):
        return json.dumps(float(key))
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
