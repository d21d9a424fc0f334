"""API key -> tenant -> the tenant's store and tutors; per-tenant rate limits and budgets.

A request names its key as ``Authorization: Bearer <key>`` (or ``X-API-Key``). The directory
stores only the key's SHA-256 digest, with its role. **Roles** are ordered, each allowed what
the ones before it are: ``learner`` (sessions and turns; sees only what the student sees),
``instructor`` (toggles, audits, learner records, theory checks), ``admin`` (keys, deletion).
A route states the role it needs by its dependency (:func:`role`), the one place that rule
lives: the OpenAPI document's ``x-pedrag-role`` is read from it, and a key of a lower role gets
``403``. **A learner key is one learner** (``pedrag_api_keys.learner_id``): what it may start
and reach is decided here (:func:`learner_of_new_session`, :func:`require_reachable`), so a
learner key never writes another learner's mastery, goals or exam sitting; a learner key
bound to nobody (issued before keys named learners) keeps anonymous practice only. A revoked key is refused (``401``) on the next request of every worker. Everything a handler touches afterwards comes from the
:class:`TenantContext`: a store bound to the tenant (``SessionStore.for_tenant``, so the store
layer scopes every query) and tutors built on it, so a handler has no way to reach another
tenant's rows. The tenant's ``max_usd`` is the deployment spending cap of its tutors
(``Budget.max_deployment_usd``, counted in the tenant's own spend total); its
``requests_per_minute`` is counted in the database, so it holds across every worker.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from typing import Annotated, Any

from fastapi import Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from pedrag.runtime.policy.theory_set import TheorySet
from pedrag.runtime.service.problems import Problem
from pedrag.runtime.store.session_store import (
    ROLES,
    ApiKey,
    SessionNotFound,
    SessionStore,
    StoredSession,
    Tenant,
)
from pedrag.runtime.store.stored import session_learner
from pedrag.runtime.turn.budget import Budget
from pedrag.runtime.turn.tutor import Tutor


@dataclass
class TenantContext:
    """One request's tenant, with the store and tutors bound to it."""

    tenant: Tenant
    store: SessionStore
    tutors: TutorCache
    role: str = "learner"
    key_id: str = ""
    learner: str | None = None  # a learner key's learner (ApiKey.learner)

    def tutor(self, curriculum: str | None = None) -> Tutor:
        return self.tutors.get(self.tenant, self.store, curriculum)


@dataclass
class TutorCache:
    """One :class:`Tutor` per (tenant, curriculum, budget) in a worker: the tutor keeps no
    per-request state, and its compiled rule engines are worth reusing."""

    theories: TheorySet
    backend: Any
    budget: Budget
    _tutors: dict[tuple[str, str | None, float | None], Tutor] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, tenant: Tenant, store: SessionStore, curriculum: str | None) -> Tutor:
        key = (tenant.id, curriculum, tenant.max_usd)
        with self._lock:
            tutor = self._tutors.get(key)
            if tutor is None:
                model = None
                if curriculum is not None:
                    if curriculum not in self.theories.curricula:
                        known = ", ".join(sorted(self.theories.curricula)) or "none"
                        raise Problem(
                            422,
                            "unknown-curriculum",
                            f"unknown curriculum {curriculum!r} (known: {known})",
                        )
                    model = self.theories.curricula[curriculum]
                budget = self.budget
                if tenant.max_usd is not None:
                    budget = replace(budget, max_deployment_usd=tenant.max_usd)
                tutor = Tutor(self.theories, self.backend, model, store, budget=budget)
                self._tutors[key] = tutor
            return tutor


# Security schemes: OpenAPI (and so /docs and generated clients) learns how to send a key.
# auto_error=False: a missing key is this module's 401 problem, not FastAPI's plain 403.
_BEARER = HTTPBearer(auto_error=False, description="an API key: `Authorization: Bearer pdg_...`")
_HEADER = APIKeyHeader(
    name="X-API-Key", auto_error=False, description="the same API key, as `X-API-Key`"
)


def api_key(bearer: HTTPAuthorizationCredentials | None, header: str | None) -> str:
    if bearer is not None and bearer.credentials.strip():
        return bearer.credentials.strip()
    if header is not None and header.strip():
        return header.strip()
    raise Problem(
        401,
        "missing-api-key",
        "send your API key as `Authorization: Bearer <key>` (or `X-API-Key: <key>`)",
        headers={"WWW-Authenticate": "Bearer"},
    )


def role(required: str) -> Any:
    """The dependency of a route that needs a key of role ``required`` or above: it gives the
    request's :class:`TenantContext`."""
    if required not in ROLES:
        raise ValueError(f"unknown role {required!r}")

    def authenticated(
        request: Request,
        bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_BEARER)],
        header: Annotated[str | None, Security(_HEADER)],
    ) -> TenantContext:
        context = authenticate(request, api_key(bearer, header))
        _require(context, required)
        return context

    authenticated.required_role = required  # type: ignore[attr-defined]
    return authenticated


def required_role(dependency: Any) -> str | None:
    """The role a route dependency made by :func:`role` requires (None for any other)."""
    return getattr(dependency, "required_role", None)


def authenticate(request: Request, key: str) -> TenantContext:
    """The key's tenant context; 401 for an unknown or revoked key, 429 over the rate."""
    context = tenant_context(request.app.state.service, key)
    request.state.tenant = context.tenant.id
    return context


def tenant_context(service: Any, key: str) -> TenantContext:
    """:func:`authenticate` without the request: the key's tenant context, read from the
    database (a key's revocation counts from the next request), or a 401/429 problem."""
    return _context_of(service, service.store.tenants.key(key))


def _context_of(service: Any, found: ApiKey | None) -> TenantContext:
    """The tenant context of a key's record as the database gave it (None: an unknown key),
    or a 401/429 problem."""
    if found is None or found.revoked_at is not None:
        raise Problem(
            401,
            "unknown-api-key" if found is None else "revoked-api-key",
            "this API key is not known" if found is None else "this API key was revoked",
            headers={"WWW-Authenticate": "Bearer"},
        )
    tenant = found.tenant
    store = service.store.for_tenant(tenant.id)
    if tenant.requests_per_minute is not None:
        now = time.time()
        minute = int(now // 60)
        count = store.count_request(minute)
        if count > tenant.requests_per_minute:
            retry = max(1, int(60 - now % 60))
            raise Problem(
                429,
                "rate-limited",
                f"tenant {tenant.id!r} is limited to {tenant.requests_per_minute} requests per "
                f"minute; retry in {retry} s",
                headers={"Retry-After": str(retry)},
            )
    return TenantContext(tenant, store, service.tutors, found.role, found.id, found.learner)


@dataclass(frozen=True)
class KeyClaim:
    """A request's API key, not checked yet: :func:`deferred_role` hands it to a route that
    checks it in the worker thread where it reads the database anyway (the turn routes), so
    the check costs neither a thread hop of its own nor a transaction of its own."""

    key: str
    required: str

    def verify(self, request: Request) -> TenantContext:
        """The key's tenant context, or the 401/403/429 problem :func:`role` would raise."""
        return self._verified(request, tenant_context(request.app.state.service, self.key))

    def verify_with_session(
        self, request: Request, session_id: str
    ) -> tuple[TenantContext, StoredSession]:
        """:meth:`verify`, and the session ``session_id`` of the key's tenant, read by the same
        statement (``TenantDirectory.key_with_session``); the key's problems come first, then
        ``SessionNotFound``, as :meth:`verify` and a read would raise them."""
        service = request.app.state.service
        found, stored = service.store.tenants.key_with_session(self.key, session_id)
        context = self._verified(request, _context_of(service, found))
        if stored is None:
            raise SessionNotFound(session_id)
        return context, stored

    def _verified(self, request: Request, context: TenantContext) -> TenantContext:
        request.state.tenant = context.tenant.id
        _require(context, self.required)
        return context


def deferred_role(required: str) -> Any:
    """:func:`role`, with the database check left to the route (:class:`KeyClaim`): a missing
    key is still a 401 here; an unknown, revoked or too weak one when the route verifies."""
    if required not in ROLES:
        raise ValueError(f"unknown role {required!r}")

    async def claimed(
        bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_BEARER)],
        header: Annotated[str | None, Security(_HEADER)],
    ) -> KeyClaim:
        return KeyClaim(api_key(bearer, header), required)

    claimed.required_role = required  # type: ignore[attr-defined]
    claimed.deferred = True  # type: ignore[attr-defined]
    return claimed


def is_deferred(dependency: Any) -> bool:
    """Whether a route dependency is :func:`deferred_role`'s: the route checks the key."""
    return getattr(dependency, "deferred", False) is True


async def claim(request: Request, required: str) -> KeyClaim:
    """What :func:`deferred_role`'s dependency gives, read without FastAPI's dependency
    solving (the turn routes' plain case, ``app._TurnRoute``): the same security schemes
    read the same headers, and a missing key is the same 401."""
    return KeyClaim(api_key(await _BEARER(request), await _HEADER(request)), required)


def _require(context: TenantContext, required: str) -> None:
    if ROLES.index(context.role) < ROLES.index(required):
        raise Problem(
            403,
            "forbidden",
            f"this route needs an {required} key or above; this key's role is {context.role}",
        )


def learner_of_new_session(context: TenantContext, asked: str | None) -> str | None:
    """The learner a new session of this key belongs to, ``asked`` being the one the body
    names. An instructor's or admin's key names any learner of its tenant (or none); a learner
    key's session is its own learner's whatever the body says, and a body naming another is
    refused before any lookup (403, so nothing is said about that learner); a learner key
    bound to no learner starts anonymous sessions only."""
    if context.role != "learner":
        return asked
    if context.learner is None:
        if asked is not None:
            raise Problem(
                403,
                "key-not-bound-to-a-learner",
                "this learner key is bound to no learner, so it starts anonymous sessions "
                "only; a learner's own key is issued with their id (POST /v1/keys "
                '{"role": "learner", "learner_id": ...}, or pedrag serve --issue-key TENANT '
                "--role learner --learner ID)",
            )
        return None
    if asked is not None and asked != context.learner:
        raise Problem(
            403,
            "another-learner",
            "this key is bound to one learner and starts sessions for that learner only; "
            "leave learner_id out or name the key's own learner",
        )
    return context.learner


STARTED_BY = "started_by_key"
"""The session meta field naming the key that started a session (its public id, never the key)."""


def new_session_meta(context: TenantContext, learner: str | None) -> dict[str, Any]:
    """What a new session's meta records of who may reach it: its learner, and the key that
    started it, which is all an anonymous session has to say whose it is."""
    meta: dict[str, Any] = {STARTED_BY: context.key_id}
    if learner is not None:
        meta["learner_id"] = learner
    return meta


def require_reachable(context: TenantContext, session_id: str, meta: dict[str, Any]) -> None:
    """A learner key reaches only its own learner's sessions, and a key bound to nobody only
    the anonymous sessions it started itself (several such keys of a tenant are several
    people, and each one's practice is theirs); any other answers exactly as a session that
    does not exist (404), so a session id says nothing about whose it is. Instructor and admin
    keys reach all. An anonymous session started before sessions named their key is reached
    by instructor and admin keys only."""
    if context.role != "learner":
        return
    learner = session_learner(meta)
    if learner != context.learner or (learner is None and meta.get(STARTED_BY) != context.key_id):
        raise SessionNotFound(session_id)
