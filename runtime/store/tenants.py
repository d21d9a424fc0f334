"""Tenants and their API keys, and each tenant's request counter (the rate limit).

Runtime stage: persistence, the part of the store that is not tenant-scoped. Takes an API key
(or a tenant id) and gives the tenant it belongs to (:class:`TenantDirectory`), the key's
record (:class:`ApiKey`, never the key itself: keys are stored hashed), and
:class:`RequestCounts`, the per-tenant, per-minute counter behind the service's rate limit.
"""

from __future__ import annotations

import builtins
import hashlib
import secrets
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam, delete, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from pedrag.runtime.store.connection import StoreConnection
from pedrag.runtime.store.documents import (
    _as_utc,
    _require_session_id,
    _require_tenant_id,
    _utcnow,
)
from pedrag.runtime.store.errors import AlreadyExists, LearnerNotFound, StoreError
from pedrag.runtime.store.schema import api_keys, learners, rate_windows, sessions, tenants
from pedrag.runtime.store.stored import StoredSession

API_KEY_PREFIX = "pdg_"


def hash_api_key(key: str) -> str:
    """The digest an API key is stored as. SHA-256 suffices (no salt, no slow hash): keys are
    32 random bytes from :func:`secrets.token_urlsafe`, not guessable passwords."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Tenant:
    """A tenant and its settings; ``None`` means no limit."""

    id: str
    name: str
    retention_days: int | None = None
    max_usd: float | None = None
    requests_per_minute: int | None = None


class TenantDirectory:
    """Tenants and their API keys (hashed at rest). The one part of the store that is not
    tenant-scoped: it is how a request's key becomes a tenant."""

    def __init__(self, store: StoreConnection) -> None:
        self._store = store

    def create(
        self,
        tenant_id: str,
        name: str | None = None,
        *,
        retention_days: int | None = None,
        max_usd: float | None = None,
        requests_per_minute: int | None = None,
    ) -> Tenant:
        _require_tenant_id(tenant_id)
        tenant = Tenant(tenant_id, name or tenant_id, retention_days, max_usd, requests_per_minute)
        store = self._store
        with store._errors(f"create tenant {tenant_id!r}"):
            try:
                with store._transaction(write=True) as connection:
                    connection.execute(
                        insert(tenants).values(
                            id=tenant.id,
                            name=tenant.name,
                            created_at=_utcnow(),
                            retention_days=retention_days,
                            max_usd=max_usd,
                            requests_per_minute=requests_per_minute,
                        )
                    )
            except IntegrityError as error:
                raise AlreadyExists(f"a tenant with id {tenant_id!r} already exists") from error
        return tenant

    def get(self, tenant_id: str) -> Tenant | None:
        store = self._store
        with store._errors(f"load tenant {tenant_id!r}"):
            with store._transaction(write=False) as connection:
                row = connection.execute(
                    select(tenants).where(tenants.c.id == tenant_id)
                ).one_or_none()
        return _tenant(row) if row is not None else None

    def list(self) -> list[Tenant]:
        store = self._store
        with store._errors("list tenants"):
            with store._transaction(write=False) as connection:
                rows = connection.execute(select(tenants).order_by(tenants.c.id)).all()
        return [_tenant(row) for row in rows]

    def issue_key(
        self, tenant_id: str, label: str = "", *, role: str = "learner", learner: str | None = None
    ) -> str:
        """A new API key of ``role`` for the tenant (least privilege by default). The key
        itself is returned once and never stored; :func:`key_id` names it afterwards.

        ``learner`` binds a learner key to one learner of the tenant (:class:`LearnerNotFound`
        if there is none): the key's sessions are that learner's, and it reaches no other's.
        A learner key without one starts anonymous sessions only (docs/service.md)."""
        if role not in ROLES:
            raise StoreError(f"unknown role {role!r} (roles: {', '.join(ROLES)})")
        if learner is not None and role != "learner":
            raise StoreError(
                f"only a learner key is bound to a learner; a {role} key reaches every learner"
            )
        key = API_KEY_PREFIX + secrets.token_urlsafe(32)
        store = self._store
        with store._errors(f"issue an API key for tenant {tenant_id!r}"):
            with store._transaction(write=True) as connection:
                if (
                    connection.execute(
                        select(tenants.c.id).where(tenants.c.id == tenant_id)
                    ).first()
                    is None
                ):
                    raise StoreError(f"no tenant with id {tenant_id!r}")
                if learner is not None and not _has_learner(connection, tenant_id, learner):
                    raise LearnerNotFound(learner)
                connection.execute(
                    insert(api_keys).values(
                        key_hash=hash_api_key(key),
                        tenant=tenant_id,
                        label=label[:200],
                        created_at=_utcnow(),
                        role=role,
                        learner_id=learner,
                    )
                )
        return key

    def authenticate(self, key: str) -> Tenant | None:
        """The tenant of an API key in force, or None for an unknown or revoked key."""
        found = self.key(key)
        return found.tenant if found is not None and found.revoked_at is None else None

    def key(self, key: str) -> ApiKey | None:
        """The record of an API key (revoked or not), or None for an unknown key."""
        store = self._store
        with store._errors("check an API key"):
            with store._read_statement() as statements:
                row = statements.row(_KEY, {"b_hash": hash_api_key(key)})
        return _api_key(row) if row is not None else None

    def key_with_session(
        self, key: str, session_id: str
    ) -> tuple[ApiKey | None, StoredSession | None]:
        """:meth:`key`, with the session ``session_id`` of the key's tenant (None if that
        tenant has no such session: another tenant's is as unknown as none), in one statement.

        Why: a service turn checks its key and reads its session before anything else; as two
        statements that was two round trips and two passes through SQLAlchemy per turn."""
        store = self._store
        with store._errors(f"check an API key and load session {session_id!r}"):
            with store._read_statement() as statements:
                row = statements.row(
                    _KEY_AND_SESSION, {"b_hash": hash_api_key(key), "b_session": session_id}
                )
        if row is None:
            return None, None
        return _api_key(row), None if row.turns is None else StoredSession.from_row(row)

    def list_keys(self, tenant_id: str) -> builtins.list[ApiKey]:
        """The tenant's keys (revoked ones too), oldest first; never the keys themselves."""
        store = self._store
        with store._errors(f"list the API keys of tenant {tenant_id!r}"):
            with store._transaction(write=False) as connection:
                rows = connection.execute(
                    select(tenants, *_KEY_COLUMNS)
                    .join(api_keys, api_keys.c.tenant == tenants.c.id)
                    .where(tenants.c.id == tenant_id)
                    .order_by(api_keys.c.created_at, api_keys.c.key_hash)
                ).all()
        return [_api_key(row) for row in rows]

    def bind_key(self, key_id: str, learner: str) -> ApiKey:
        """Bind the learner key named ``key_id``, in force and bound to nobody (a key issued
        before revision 0009), to ``learner`` of the key's tenant: from the next request it
        **is** that learner, as a key issued with ``learner`` is. Refused with
        :class:`StoreError` (nothing written) for a key not in force, not a learner key, or
        bound already (rebinding would hand one learner's key another's records: issue a new
        key instead), and with :class:`LearnerNotFound` for a learner the tenant lacks.

        Sessions carry their learner, not their key: the anonymous sessions the key started
        stay anonymous, and the bound key no longer reaches them (it reaches its learner's)."""
        if not isinstance(key_id, str) or len(key_id) != KEY_ID_LENGTH:
            raise StoreError(f"no key {key_id!r} in force (a key id is {KEY_ID_LENGTH} hex digits)")
        _require_session_id(learner, "learner id")
        named = func.substr(api_keys.c.key_hash, 1, KEY_ID_LENGTH) == key_id
        store = self._store
        with store._errors(f"bind API key {key_id!r} to learner {learner!r}"):
            with store._transaction(write=True) as connection:
                row = connection.execute(
                    select(tenants, *_KEY_COLUMNS)
                    .join(api_keys, api_keys.c.tenant == tenants.c.id)
                    .where(named, api_keys.c.revoked_at.is_(None))
                ).first()
                if row is None:
                    raise StoreError(f"no key {key_id!r} in force (see --list-keys)")
                found = _api_key(row)
                if found.role != "learner":
                    raise StoreError(
                        f"key {key_id} is an {found.role} key: only a learner key is bound to a "
                        "learner"
                    )
                if found.learner is not None:
                    raise StoreError(
                        f"key {key_id} is bound to learner {found.learner!r} already: issue "
                        "a new key for another learner"
                    )
                if not _has_learner(connection, found.tenant.id, learner):
                    raise LearnerNotFound(learner)
                bound = connection.execute(
                    update(api_keys)
                    .where(named, api_keys.c.revoked_at.is_(None), api_keys.c.learner_id.is_(None))
                    .values(learner_id=learner)
                ).rowcount
                if not bound:  # revoked or bound by someone else since the read
                    raise StoreError(f"key {key_id} changed while binding it: try again")
        return replace(found, learner=learner)

    def revoke_key(self, key_id: str, tenant_id: str | None = None) -> bool:
        """Revoke the key named ``key_id`` (of ``tenant_id`` when given: another tenant's key
        is as unknown as none); False if there is no such key in force. Takes effect on the
        next request of every worker (keys are checked per request, never cached)."""
        if not isinstance(key_id, str) or len(key_id) != KEY_ID_LENGTH:
            return False
        scope = [
            func.substr(api_keys.c.key_hash, 1, KEY_ID_LENGTH) == key_id,
            api_keys.c.revoked_at.is_(None),
        ]
        if tenant_id is not None:
            scope.append(api_keys.c.tenant == tenant_id)
        store = self._store
        with store._errors(f"revoke API key {key_id!r}"):
            with store._transaction(write=True) as connection:
                revoked = connection.execute(
                    update(api_keys).where(*scope).values(revoked_at=_utcnow())
                ).rowcount
        return bool(revoked)


def _has_learner(connection: Any, tenant_id: str, learner_id: str) -> bool:
    found = select(learners.c.id).where(learners.c.tenant == tenant_id, learners.c.id == learner_id)
    return connection.execute(found).first() is not None


ROLES = ("learner", "instructor", "admin")
"""The roles of API keys, each allowed everything the ones before it are (docs/service.md)."""

KEY_ID_LENGTH = 12


def key_id(key_hash: str) -> str:
    """How a key is named once issued: the first hex digits of its digest (not a secret)."""
    return key_hash[:KEY_ID_LENGTH]


@dataclass(frozen=True)
class ApiKey:
    """An API key's record: never the key itself."""

    id: str
    tenant: Tenant
    role: str
    label: str
    created_at: datetime
    revoked_at: datetime | None
    # A learner key's learner: the only learner its sessions may be (None: anonymous only,
    # or an instructor or admin key).
    learner: str | None = None


_KEY_COLUMNS = (
    api_keys.c.key_hash,
    api_keys.c.role,
    api_keys.c.learner_id.label("key_learner"),
    api_keys.c.label,
    api_keys.c.created_at.label("key_created_at"),
    api_keys.c.revoked_at,
)


# The key's record and its tenant, built once and bound by name (every request checks a key).
_KEY = (
    select(tenants, *_KEY_COLUMNS)
    .join(api_keys, api_keys.c.tenant == tenants.c.id)
    .where(api_keys.c.key_hash == bindparam("b_hash"))
)
# The same, with the session a turn resumes: of the key's tenant only (the join says so).
_KEY_AND_SESSION = _KEY.add_columns(
    sessions.c.meta, sessions.c.state, sessions.c.turns, sessions.c.version
).outerjoin(
    sessions,
    and_(sessions.c.id == bindparam("b_session"), sessions.c.tenant == api_keys.c.tenant),
)


def _api_key(row: Any) -> ApiKey:
    return ApiKey(
        id=key_id(row.key_hash),
        tenant=_tenant(row),
        role=row.role,
        label=row.label,
        created_at=_as_utc(row.key_created_at),
        revoked_at=None if row.revoked_at is None else _as_utc(row.revoked_at),
        learner=row.key_learner,
    )


def _tenant(row: Any) -> Tenant:
    return Tenant(
        id=row.id,
        name=row.name,
        retention_days=row.retention_days,
        max_usd=None if row.max_usd is None else float(row.max_usd),
        requests_per_minute=row.requests_per_minute,
    )


class RequestCounts(StoreConnection):
    """A tenant's requests per minute, counted atomically across workers."""

    def count_request(self, minute: int) -> int:
        """Count one request of this tenant in minute ``minute`` (since the epoch) and return
        the minute's count so far, atomically across workers (the rate limit's counter).
        Windows older than the previous minute are dropped on the way.

        Run on the driver (``_write_statements``, as a turn's commit is), with statements
        built once per dialect: a rate-limited tenant pays this write on every request, and
        building the upsert and running it through SQLAlchemy's connection cost 342 us of CPU
        on SQLite and 438 on PostgreSQL, against 47 and 147 so (2,000 counts in process)."""
        values = {"b_tenant": self._tenant, "b_minute": minute}
        with self._errors("count a request"):
            with self._write_statements() as statements:
                count = statements.scalar(_COUNT_REQUEST[self._engine.dialect.name], values)
                if count == 1:  # the first request of a minute clears the old windows
                    statements.rowcount(
                        _DROP_OLD_WINDOWS, {"b_tenant": self._tenant, "b_before": minute - 1}
                    )
        return int(count)


def _count_request(dialect_insert: Any) -> Any:
    """A tenant's request counted in its minute's window (the window made at its first),
    giving the window's count; values bound by name, built once per dialect."""
    columns = rate_windows.c
    row = dialect_insert(rate_windows).values(
        tenant=bindparam("b_tenant", type_=columns.tenant.type),
        minute=bindparam("b_minute", type_=columns.minute.type),
        requests=1,
    )
    return row.on_conflict_do_update(
        index_elements=[columns.tenant, columns.minute],
        set_={"requests": columns.requests + 1},
    ).returning(columns.requests)


_COUNT_REQUEST = {
    "sqlite": _count_request(sqlite.insert),
    "postgresql": _count_request(postgresql.insert),
}
_DROP_OLD_WINDOWS = delete(rate_windows).where(
    rate_windows.c.tenant == bindparam("b_tenant", type_=rate_windows.c.tenant.type),
    rate_windows.c.minute < bindparam("b_before", type_=rate_windows.c.minute.type),
)
