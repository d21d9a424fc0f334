"""Session persistence: tutoring sessions, their per-turn audit records and deployment spending.

The public store, composed of one part per concept: ``connection`` (engine, tenant,
transactions, errors), ``sessions`` (sessions and audit records), ``learners``, ``exams``
(exam sittings and retakes), ``spending``
(running totals), ``tenants`` (tenants, API keys, request counts); ``documents`` checks what
is written. This module only puts them together and is where callers import from.

Runtime stage: persistence. Takes a session's state and one audit record per turn (opaque,
JSON-able dicts owned by the turn loop) and gives them back after a restart, a crash or on
another worker; also keeps running spend totals for deployment-wide caps.

Why it looks like this:

- **A turn is one transaction.** ``save_turn`` replaces the session state and inserts the turn's
  audit record together, or writes nothing. A process killed mid-turn therefore loses nothing
  that was committed and never leaves a state without its audit record (or the reverse); the
  test suite checks this by SIGKILLing a real subprocess.
- **Turn indexes are a compare-and-set.** ``save_turn(id, n, ...)`` commits only if exactly
  ``n - 1`` turns are committed, so two writers working on the same session (two workers, a
  retried request) cannot interleave: the loser gets :class:`TurnConflict` and nothing written.
- **SQLAlchemy Core, two dialects.** SQLite is the default (``PEDRAG_DB``, a path or a URL);
  PostgreSQL replaces it by URL for multi-worker deployments, with no change for callers. Other
  databases are refused rather than half-supported: the atomic upsert behind ``add_spend`` and
  the locking behind ``save_turn`` are only verified on those two.
- **SQLite settings.** WAL, so readers (``pedrag audit``, the HTTP service) never block the
  writer. ``synchronous=NORMAL`` by default: in WAL mode a committed turn survives any crash of
  the process (a kill, an exception, the OOM killer), and the database is never corrupted; only
  a power cut or OS crash may roll back the last turns committed since the latest checkpoint
  (each turn still all or nothing). ``PEDRAG_DB_SYNCHRONOUS=FULL`` (or ``synchronous="FULL"``)
  syncs every commit so those survive too, at one fsync per turn (measured with
  ``benchmarks/turn_overhead.py``; docs/persistence.md). Foreign keys on; a busy timeout so
  concurrent writers wait instead of failing; write transactions start with
  ``BEGIN IMMEDIATE`` so they queue on the lock up front instead of failing mid-transaction
  when a deferred read lock cannot be upgraded.
- **What you save is what you load.** States and audit records must be plain JSON values (dict
  with str keys, list, str, int, float, bool, None); anything JSON would silently change (a
  tuple, an int key, NaN) is refused with the path to the offending value.
- **One exception hierarchy.** Every database failure surfaces as :class:`StoreError` (or its
  subclasses), never as a driver or SQLAlchemy exception, so the turn loop catches one thing.
- **Tenants are kept apart here, not by callers.** A store is bound to one tenant
  (``SessionStore(url, tenant=...)``, or ``store.for_tenant(id)`` sharing the connection pool;
  ``default`` when none is given) and every statement it runs carries ``tenant = ?``: another
  tenant's session, audit record, learner or spend total is indistinguishable from one that
  does not exist (:class:`SessionNotFound`, :class:`LearnerNotFound`). The HTTP service maps
  an API key to a tenant (:class:`TenantDirectory`) and then only ever holds a bound store.
- **Schema by migrations.** Opening a store applies the Alembic revisions up to the head,
  once, under a lock (``pedrag.runtime.store.migrate``), so any number of processes may start on an
  empty database at the same time.
"""

from __future__ import annotations

from pedrag.runtime.store.connection import (
    DEFAULT_DB_PATH,
    ENV_DB,
    ENV_SYNCHRONOUS,
    resolve_db_url,
    resolve_retry_seconds,
    resolve_synchronous,
)
from pedrag.runtime.store.documents import _as_utc as _as_utc
from pedrag.runtime.store.documents import _json_problem as _json_problem
from pedrag.runtime.store.documents import _plainly_json as _plainly_json
from pedrag.runtime.store.documents import _utcnow as _utcnow
from pedrag.runtime.store.errors import (
    AlreadyExists,
    ExamAlreadySat,
    LearnerNotFound,
    NoRetakeDue,
    SessionNotFound,
    StoreError,
    StoreUnavailable,
    TurnConflict,
)
from pedrag.runtime.store.schema import DEFAULT_TENANT
from pedrag.runtime.store.sessions import SessionRecords
from pedrag.runtime.store.spending import SpendRecords
from pedrag.runtime.store.stored import StoredSession
from pedrag.runtime.store.tenants import (
    API_KEY_PREFIX,
    KEY_ID_LENGTH,
    ROLES,
    ApiKey,
    RequestCounts,
    Tenant,
    TenantDirectory,
    hash_api_key,
    key_id,
)

__all__ = [
    "API_KEY_PREFIX",
    "KEY_ID_LENGTH",
    "ROLES",
    "AlreadyExists",
    "ApiKey",
    "DEFAULT_DB_PATH",
    "DEFAULT_TENANT",
    "ENV_DB",
    "ENV_SYNCHRONOUS",
    "ExamAlreadySat",
    "LearnerNotFound",
    "NoRetakeDue",
    "SessionNotFound",
    "SessionStore",
    "StoreError",
    "StoreUnavailable",
    "StoredSession",
    "Tenant",
    "TenantDirectory",
    "TurnConflict",
    "hash_api_key",
    "key_id",
    "resolve_db_url",
    "resolve_retry_seconds",
    "resolve_synchronous",
]


class SessionStore(SessionRecords, SpendRecords, RequestCounts):
    """Sessions, audit records, learners, spend totals and request counts in one SQL database
    (see the module docstring).

    Safe to share between threads; several stores (in one process or many) may open the same
    database. Use as a context manager or call :meth:`close`.
    """

    @property
    def tenants(self) -> TenantDirectory:
        """The directory of tenants and API keys on this database (not tenant-scoped: it is
        what maps a key to its tenant)."""
        return TenantDirectory(self)
