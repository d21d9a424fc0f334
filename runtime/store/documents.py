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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, final

import orjson

from pedrag.runtime.store.errors import StoreError
from pedrag.runtime.store.plain import plain
from pedrag.runtime.store.safe_text import safe_text

TENANT_ID_LENGTH = 64
"""The longest tenant id (the schema's column width): here, with its check, so a store that
checks documents (the in-memory one too) does not import SQLAlchemy to know it."""


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
    _require_json(value, what)


def _require_json(value: object, what: str) -> None:
    """Refuse a value (of any JSON type) that would not come back unchanged from a JSON
    column: NaN or infinity (orjson, the columns' writer, would store ``null``), U+0000, a
    non-str key, a tuple, anything not plain JSON; the error names where it is."""
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
    (:func:`_safe_document`). A turn's record is already clean (its parts were cleaned where
    they came in), so one walk first asks whether there is anything to do
    (:func:`_clean_and_plain`); only a record with something to clean or refuse is rebuilt
    string by string and checked again, so what is cleaned or refused is exactly what it was."""
    if isinstance(record, dict) and _clean_and_plain(record):
        return record
    cleaned: dict[str, Any] = _safe_document(record)
    _require_document(cleaned, "audit")
    return cleaned


def _clean_and_plain(value: object) -> bool:
    """Whether :func:`_plainly_json` passes ``value`` and
    :func:`~pedrag.runtime.store.safe_text.safe_text` leaves every string and key of it as it
    is, in one walk that builds nothing. A string is handed to ``safe_text`` only when it
    could change: when it has an ``@`` (a URL's credentials) or a character that is not
    printable (every control character, lone surrogate and ANSI escape is one; so are tab and
    newline, which ``safe_text`` keeps)."""
    return _plain_walk(value, _stays)


def _stays(text: str) -> bool:
    """Whether ``safe_text`` leaves ``text`` as it is; asked of it only when it could not."""
    return (text.isprintable() and "@" not in text) or safe_text(text) == text


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
    return _plain_walk(value, _has_no_nul)


def _has_no_nul(text: str) -> bool:
    return "\x00" not in text


def _plain_walk(value: object, text_ok: Callable[[str], bool]) -> bool:
    """The one walk both quick checks make, building nothing: plain str (each passing
    ``text_ok``), int, bool, None, finite floats, lists and dicts with str keys (each passing
    ``text_ok``), nested at most 100 deep."""
    kind = type(value)
    if kind is dict or kind is list:
        return _plain_container(value, text_ok, 0)
    return _plain_item(value, kind, text_ok)


def _plain_item(value: object, kind: type, text_ok: Callable[[str], bool]) -> bool:
    """A value that is not a container: what :func:`_plain_walk` passes."""
    if kind is str:
        return text_ok(value)  # type: ignore[arg-type]
    if kind is float:
        return math.isfinite(value)  # type: ignore[arg-type]
    return value is None or kind is bool or kind is int


def _plain_container(container: Any, text_ok: Callable[[str], bool], depth: int) -> bool:
    """A dict or list at ``depth`` and everything in it (recursion: a frame per level of
    nesting, at most 101; a loop per container, with the common leaves decided inline,
    which halved the walk's cost against one explicit stack of every value)."""
    if depth > 100:
        return False
    if type(container) is dict:
        for key in container:
            if type(key) is not str or not text_ok(key):
                return False
        items = container.values()
    else:
        items = container
    for item in items:
        kind = type(item)
        if kind is str:
            if not text_ok(item):
                return False
        elif kind is dict or kind is list:
            if not _plain_container(item, text_ok, depth + 1):
                return False
        elif not (item is None or kind is bool or kind is int):
            if kind is not float or not math.isfinite(item):
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


# What orjson would write itself but the standard library refuses (a dataclass, a datetime)
# or writes differently (a subclass of str, int, dict or list, through its base type): handed
# back to it, so the standard library decides, as it did before.
_ORJSON_DEFERS = (
    orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


@dataclass(frozen=True, slots=True)
class WrittenDocument:
    """A document already checked and written as its JSON column's text: :func:`json_text`
    gives the text back instead of writing the document again."""

    text: str


def _document_text(value: object, what: str) -> WrittenDocument:
    """:func:`_require_document` and the column's text in one (the turn's state)."""
    text = _plain_text(value)
    if text is None:
        _require_document(value, what)
        text = json_text(value)
    return WrittenDocument(text)


def _audit_text(record: dict[str, Any] | CheckedAudit) -> WrittenDocument:
    """:func:`_safe_audit` and the column's text in one (the turn's audit record); a
    :class:`CheckedAudit` is that already, and is not checked or written again."""
    if isinstance(record, CheckedAudit):  # no subclass can exist: see __init_subclass__
        return WrittenDocument(record.text)
    text = _plain_text(record)
    if text is None or _may_hold_unsafe_text(text):
        text = json_text(_safe_audit(record))
    return WrittenDocument(text)


@final
class CheckedAudit:
    """An audit record the store has checked, cleaned and written as its JSON column's text,
    once: ``save_turn`` of either store takes it instead of the record and neither checks nor
    writes it again.

    Why a type of its own: the turn's commit makes the record, keeps it (the turn's result
    shows it) and hands it to the store, which checked it and wrote it as JSON once more, and
    the in-memory store copied it through JSON twice on top (issue 30: a warm turn under 2 ms
    of CPU). Made only by the store: from a record, by its own check (:func:`_audit_text`: a
    value the store refuses raises :class:`StoreError` here, as from ``save_turn``), or by
    :func:`plain_audit` from the value the store's own walk built; it holds only the text,
    immutable, so nothing a caller keeps or changes afterwards reaches what is saved."""

    __slots__ = ("text",)
    text: str

    def __init_subclass__(cls, **kwargs: object) -> None:
        raise TypeError("a checked audit record is made only by the store's check")

    def __init__(self, record: dict[str, Any]) -> None:
        object.__setattr__(self, "text", _audit_text(record).text)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("a checked audit record cannot be changed")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("a checked audit record cannot be changed")

    def __repr__(self) -> str:
        return f"CheckedAudit({self.text[:60]!r}...)"

    @classmethod
    def _written(cls, text: str) -> CheckedAudit:
        """One whose text :func:`plain_audit` wrote from a value only the store's walk built."""
        checked = object.__new__(cls)
        object.__setattr__(checked, "text", text)
        return checked


def plain_audit(record: Mapping[str, Any]) -> tuple[dict[str, Any], CheckedAudit]:
    """The turn's record made plain (:func:`~pedrag.runtime.store.plain.plain`: raises as it
    does) and checked for the store, in one walk: ``(the plain record, its CheckedAudit)``.

    Why one walk does: what ``plain`` builds holds only exact plain types, finite floats and
    str keys, the one thing :func:`_plain_text` reads the text back to establish (a tuple, a
    NaN or a subclass is what it would catch); so the text orjson writes of it is the
    column's text as is, unless it could hold something to clean (U+0000 among them,
    :func:`_may_hold_unsafe_text`) or orjson cannot write it, when the full check decides as
    before (:class:`CheckedAudit`)."""
    value = plain(record)
    try:
        text = orjson.dumps(value, option=_ORJSON_DEFERS).decode()
    except TypeError:  # an int beyond 64 bits, too deep: orjson.JSONEncodeError is one
        return value, CheckedAudit(value)
    if _may_hold_unsafe_text(text):
        return value, CheckedAudit(value)
    return value, CheckedAudit._written(text)


def _plain_text(value: object) -> str | None:
    """The JSON text of ``value`` when it is one :func:`_require_document` passes, decided on
    the text orjson writes rather than by walking the value in Python (twice as fast on a
    turn's state and record): a dict that orjson writes (no non-str key, no subclass, no
    unknown type, not too deep), with no U+0000, and that reads back equal (a tuple reads back
    a list, NaN or infinity ``null``: not equal). None when unsure: the caller then asks
    :func:`_require_document`, which names what is wrong and where."""
    if type(value) is not dict:
        return None
    try:
        text = orjson.dumps(value, option=_ORJSON_DEFERS).decode()
    except TypeError:  # orjson.JSONEncodeError is one
        return None
    if "\\u0000" in text or orjson.loads(text) != value:
        return None
    return text


_C1_CONTROL = re.compile("[\x7f-\x9f]")


def _may_hold_unsafe_text(text: str) -> bool:
    """Whether a string of the document orjson wrote as ``text`` could be one ``safe_text``
    changes: it has an ``@`` (a URL's credentials) or a character ``safe_text`` replaces,
    which orjson writes as an escape (``\\u0000``-``\\u001f`` but ``\\t``, ``\\n``,
    ``\\r``, written ``\\b`` and ``\\f`` for two of them) or as itself (DEL and the C1
    controls, ANSI's CSI among them). A lone surrogate orjson refuses to write at all. An
    escaped backslash before ``u``, ``b`` or ``f`` answers yes too: then the strings are
    checked one by one."""
    if "@" in text or "\\u" in text or "\\b" in text or "\\f" in text:
        return True
    return "\x7f" in text if text.isascii() else _C1_CONTROL.search(text) is not None


def json_text(value: Any) -> str:
    """A JSON column's text (the store's engines write every JSON column with it): orjson's,
    13 times faster than ``json.dumps`` on a turn's state and audit record (7 us against
    97 us for both), and more compact (no spaces, non-ASCII as UTF-8 rather than ``\\u``
    escapes), so the stored text differs from what the standard library wrote but reads back
    to the same values (tested: ``json.loads`` of either is equal). What orjson cannot write
    (an int beyond 64 bits, a lone surrogate, a non-str key, anything passed through above) is
    left to ``json.dumps`` as before. orjson writes NaN and infinity as ``null``; every
    value the store writes to a JSON column has been refused them first
    (:func:`_require_document`, :func:`_require_json`). A :class:`WrittenDocument` is
    its text."""
    if type(value) is WrittenDocument:
        return value.text
    try:
        return orjson.dumps(value, option=_ORJSON_DEFERS).decode()
    except TypeError:  # orjson.JSONEncodeError is one
        return json.dumps(value)


def json_value(text: str) -> Any:
    """A JSON column's value as ``json.loads`` reads it (SQLite's engines read every JSON
    column with it), faster for the text :func:`json_text` writes: orjson's reading, kept
    when orjson writes it back to the same text, else ``json.loads``'s. On a 14 kB turn state
    about 50 us against 100-135 us (a service turn reads its session's state on every request).

    Why the check: orjson reads an int beyond 64 bits as a float, without an error; such a
    text (``json_text`` leaves those ints to ``json.dumps``) is never what orjson writes back
    (a float is written with its exponent, and ``json.dumps`` puts a space after every
    separator), nor is a lone surrogate's escape or an older store's ``json.dumps`` text."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)
    try:
        if orjson.dumps(value).decode() == text:
            return value
    except TypeError:  # orjson.JSONEncodeError is one: nothing orjson read, still
        pass
    return json.loads(text)


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _as_utc(moment: datetime) -> datetime:
    # SQLite keeps no offset; every timestamp this module writes is UTC.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
