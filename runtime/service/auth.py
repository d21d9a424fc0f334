"""API key -> tenant -> the tenant's store and tutors; per-tenant rate limits and budgets.

A request names its key as ``Authorization: Bearer <key>`` (or ``X-API-Key``). The directory
stores only the key's SHA-256 digest. Everything a handler touches afterwards comes from the
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
from typing import Any

from fastapi import Request

from pedrag.runtime.policy.theory_set import TheorySet
from pedrag.runtime.service.problems import Problem
from pedrag.runtime.store.session_store import SessionStore, Tenant
from pedrag.runtime.turn.budget import Budget
from pedrag.runtime.turn.tutor import Tutor


@dataclass
class TenantContext:
    """One request's tenant, with the store and tutors bound to it."""

    tenant: Tenant
    store: SessionStore
    tutors: TutorCache

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


def api_key(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    key = request.headers.get("x-api-key", "").strip()
    if key:
        return key
    raise Problem(
        401,
        "missing-api-key",
        "send your API key as `Authorization: Bearer <key>` (or `X-API-Key: <key>`)",
        headers={"WWW-Authenticate": "Bearer"},
    )


def authenticate(request: Request) -> TenantContext:
    """The request's tenant context; 401 for a missing or unknown key, 429 over the rate."""
    key = api_key(request)
    service = request.app.state.service
    tenant = service.store.tenants.authenticate(key)
    if tenant is None:
        raise Problem(
            401,
            "unknown-api-key",
            "this API key is not known",
            headers={"WWW-Authenticate": "Bearer"},
        )
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
    request.state.tenant = tenant.id
    return TenantContext(tenant, store, service.tutors)
