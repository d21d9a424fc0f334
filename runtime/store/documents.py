"""What the store accepts: identifiers, JSON documents and timestamps, checked before any write.

Runtime stage: persistence. Takes the values callers hand the store (ids, states, audit
records, meta) and gives them back checked or cleaned: states and audit records must be plain
JSON values (dict with str keys, list, str, int, float, bool, None); anything JSON would
silently change (a tuple, an int key, NaN) is refused with the path to the offending value,
and every string of an audit record is made safe to store and print. Also the store's clock
(UTC, timezone-aware).
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from typing import Any

from pedrag.runtime.store.errors import StoreError
from pedrag.runtime.store.safe_text import safe_text
from pedrag.runtime.store.schema import TENANT_ID_LENGTH


def _require_session_id(session_id: object, what: str = "session id") -> None:
    if not isinstance(session_id, str) or not 1 <= len(session_id) <= 128:
        raise StoreError(f"{what} must be a str of 1 to 128 characters, got {session_id!r}")


def _require_tenant_id(tenant: object) -> str:
    if not isinstance(tenant, str) or not 1 <= len(tenant) <= TENANT_ID_LENGTH:
        raise StoreError(
            f"tenant id must be a str of 1 to {TENANT_ID_LENGTH} characters, got {tenant!r}"
        )
    return tenant


def _require_document(value: object, what: str) -> None:
    """Refuse anything that would not come back unchanged from a JSON column."""
    if not isinstance(value, dict):
        raise StoreError(f"{what} must be a dict, got {type(value).__name__}")
    text = _round_trip_text(value)
    if text is not None and "\\u0000" not in text:
        return
    if _plainly_json(value):
        return
    try:
        problem = _json_problem(value, what)
    except RecursionError:
        problem = f"{what} is nested too deeply to store"
    if problem is not None:
        raise StoreError(problem)


def _safe_audit(record: dict[str, Any]) -> dict[str, Any]:
    """An audit record checked (:func:`_require_document`) with every string made safe
    (:func:`_safe_document`), at the cost of one JSON write and read in C when it is already
    clean, as a turn's record is (its parts were cleaned where they came in): the record is
    returned as given when it comes back unchanged from JSON and its JSON text holds nothing
    :func:`~pedrag.runtime.store.safe_text.safe_text` would change — no ``@`` (no URL
    credentials), no escaped control character (``\\b``, ``\\f``, ``\\u00XX``: NUL, ESC, ...),
    no C1 control and no lone surrogate (written as themselves). Anything else, including a
    false alarm (a literal backslash before ``u``), takes the full clean-and-check walk, so
    what is cleaned or refused is exactly what it was."""
    if isinstance(record, dict):
        text = _round_trip_text(record)
        if text is not None and _MAY_NEED_CLEANING.search(text) is None:
            return record
    cleaned: dict[str, Any] = _safe_document(record)
    _require_document(cleaned, "audit")
    return cleaned


# In JSON text written with ensure_ascii=False, what any string of the document would need
# safe_text for: "@" (a URL's credentials), an escaped control character (JSON escapes
# U+0000-U+001F as \b, \f, \uXXXX, or \t \n \r, which are kept) and, written as
# themselves, C1 controls (ANSI's CSI is one) and lone surrogates. An ANSI sequence starts
# with ESC or CSI, so it is caught too.
_MAY_NEED_CLEANING = re.compile(r"@|\\[bfu]|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def _refuse(value: object) -> object:
    raise TypeError(f"{type(value).__name__} is not a JSON value")


# Built once: json.dumps with any option builds a new encoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=_refuse)


def _round_trip_text(document: dict[str, Any]) -> str | None:
    """The document's JSON text (ensure_ascii=False) when reading it back gives a document
    equal to it, else None: no NaN or infinity (refused), no tuple or non-str key (JSON
    would change them, so the read-back differs), no other type (refused), not nested past
    the interpreter's recursion limit. Such a document also passes :func:`_json_problem`
    unless it holds U+0000 (``\\u0000`` in the text); both checks are done in C."""
    try:
        text = _ENCODER.encode(document)
        return text if json.loads(text) == document else None
    except (TypeError, ValueError, RecursionError):
        return None


def _safe_document(value: Any, depth: int = 0) -> Any:
    """An audit record with every string (keys too) made safe to store and print
    (``runtime.store.safe_text``): a NUL in a judge's reason or an HTTP error body, a lone
    surrogate, an ANSI escape or a password in a URL must not lose the turn or leak. Values
    of other types are left for :func:`_require_document` to judge."""
    if isinstance(value, str):
        return safe_text(value)
    if depth > 200:
        return value  # _require_document reports the nesting
    if isinstance(value, dict):
        return {
            (safe_text(key) if isinstance(key, str) else key): _safe_document(item, depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_safe_document(item, depth + 1) for item in value]
    return value


def _plainly_json(value: object) -> bool:
    """Whether `_json_problem` would find nothing, decided without building the path of every
    value it passes (which was a tenth of a turn's own cost): plain str, int, bool, None,
    finite floats, lists and str-keyed dicts, with no U+0000 and no deep nesting. Anything
    else is left to `_json_problem`, which names what is wrong and where."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        kind = type(current)
        if kind is str:
            if "\x00" in current:  # type: ignore[operator]
                return False
        elif kind is dict:
            if depth > 100:
                return False
            for key, item in current.items():  # type: ignore[attr-defined]
                if type(key) is not str or "\x00" in key:
                    return False
                stack.append((item, depth + 1))
        elif kind is list:
            if depth > 100:
                return False
            stack.extend((item, depth + 1) for item in current)  # type: ignore[attr-defined]
        elif kind is float:
            if not math.isfinite(current):  # type: ignore[arg-type]
                return False
        elif not (current is None or kind is bool or kind is int):
            return False
    return True


def _json_problem(value: object, path: str) -> str | None:
    if isinstance(value, str):
        # PostgreSQL's JSONB cannot hold U+0000; refuse it on SQLite too, so a turn that works
        # in development cannot fail in a PostgreSQL deployment.
        return f"{path} contains U+0000, which PostgreSQL cannot store" if "\x00" in value else None
    if value is None or isinstance(value, bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path} is {value!r}, which JSON cannot hold"
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path} has the key {key!r}; JSON object keys must be str"
            if "\x00" in key:
                return f"{path} has a key containing U+0000, which PostgreSQL cannot store"
            problem = _json_problem(item, f"{path}[{key!r}]")
            if problem is not None:
                return problem
        return None
    if isinstance(value, list):
        for index, item in enumerate(value):
            problem = _json_problem(item, f"{path}[{index}]")
            if problem is not None:
                return problem
        return None
    return (
        f"{path} is a {type(value).__name__}; only dict, list, str, int, float, bool and None "
        "are stored unchanged as JSON"
    )


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _as_utc(moment: datetime) -> datetime:
    # SQLite keeps no offset; every timestamp this module writes is UTC.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
