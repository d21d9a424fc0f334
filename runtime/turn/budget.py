"""Stage 1, the budget: spending and turn caps, checked before any model call (fail closed).

Takes the session's totals (turns, cost) and the deployment's running spend; gives a
:class:`BudgetDecision` — whether this turn may call models at all. Over a cap, the turn still
runs (the contract still holds) but without model calls: the offline path answers, and the
audit says which cap was hit. :class:`BudgetedBackend` enforces the per-turn call cap and the
spending caps *during* the turn, raising ``LLMBudgetExceeded`` before a call that would cross
them, so one turn cannot run away; a streamed call is admitted and counted the same way.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pedrag.runtime.llm.interface import (
    LLMBackend,
    LLMBudgetExceeded,
    LLMRequest,
    LLMResponse,
    LLMStream,
    open_stream,
)

DEPLOYMENT_SCOPE = "deployment"


class SpendLedger(Protocol):
    def add_spend(self, scope: str, usd: float) -> float: ...
    def spend(self, scope: str) -> float: ...


@dataclass(frozen=True)
class Budget:
    """Caps; ``None`` means no cap. Read from the environment by :meth:`from_env`."""

    max_turns: int | None = 200
    max_session_usd: float | None = 1.0
    max_deployment_usd: float | None = None
    max_calls_per_turn: int = 8

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Budget:
        def number(name: str, default: float | None) -> float | None:
            raw = env.get(name, "").strip()
            return float(raw) if raw else default

        turns = number("PEDRAG_MAX_TURNS", 200)
        return cls(
            max_turns=None if turns is None else int(turns),
            max_session_usd=number("PEDRAG_MAX_SESSION_USD", 1.0),
            max_deployment_usd=number("PEDRAG_MAX_DEPLOYMENT_USD", None),
            max_calls_per_turn=int(number("PEDRAG_MAX_CALLS_PER_TURN", 8) or 8),
        )


@dataclass(frozen=True)
class BudgetDecision:
    models_allowed: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"models_allowed": self.models_allowed, "reason": self.reason}


def check_budget(
    budget: Budget, *, turns: int, session_usd: float, deployment_usd: float
) -> BudgetDecision:
    if budget.max_turns is not None and turns >= budget.max_turns:
        return BudgetDecision(False, f"turn cap reached ({turns} of {budget.max_turns})")
    if budget.max_session_usd is not None and session_usd >= budget.max_session_usd:
        return BudgetDecision(False, f"session spending cap reached (${session_usd:.4f})")
    if budget.max_deployment_usd is not None and deployment_usd >= budget.max_deployment_usd:
        return BudgetDecision(False, f"deployment spending cap reached (${deployment_usd:.4f})")
    return BudgetDecision(True, "within budget")


class BudgetedBackend:
    """Wraps a backend for one turn: counts calls, tokens and cost; refuses past the caps."""

    def __init__(
        self,
        inner: LLMBackend,
        budget: Budget,
        *,
        session_usd: float,
        deployment_usd: float,
    ) -> None:
        self.inner = inner
        self.budget = budget
        self.session_usd = session_usd
        self.deployment_usd = deployment_usd
        self.calls = 0
        self.tokens = 0
        self.cost_usd = 0.0
        self.by_role: dict[str, dict[str, float]] = {}
        # The classifier's and the analyzer's calls may run at once (`reading`): the counts
        # change under a lock. Both are admitted against the spend before either is counted.
        self._lock = threading.Lock()

    def complete(self, request: LLMRequest) -> LLMResponse:
        self._admit(request)
        response = self.inner.complete(request)
        self._account(request, response)
        return response

    def stream(self, request: LLMRequest) -> LLMStream:
        """:meth:`complete`, streamed: the caps are checked when the stream starts (raising
        while iterating), the usage is counted when it ends — also when it fails or is closed
        early, from the inner stream's (then estimated) response."""

        def deltas(handle: LLMStream) -> Iterator[str]:
            self._admit(request)
            inner = open_stream(self.inner, request)
            try:
                yield from inner
            finally:
                inner.close()
                handle.response = inner.response
                if inner.response is not None:
                    self._account(request, inner.response)

        return LLMStream(deltas)

    def _admit(self, request: LLMRequest) -> None:
        with self._lock:
            self._admit_locked(request)

    def _admit_locked(self, request: LLMRequest) -> None:
        if self.calls >= self.budget.max_calls_per_turn:
            raise LLMBudgetExceeded(
                f"per-turn call cap of {self.budget.max_calls_per_turn} reached", role=request.role
            )
        cap = self.budget.max_session_usd
        if cap is not None and self.session_usd + self.cost_usd >= cap:
            raise LLMBudgetExceeded("session spending cap reached", role=request.role)
        cap = self.budget.max_deployment_usd
        if cap is not None and self.deployment_usd + self.cost_usd >= cap:
            raise LLMBudgetExceeded("deployment spending cap reached", role=request.role)
        self.calls += 1

    def _account(self, request: LLMRequest, response: LLMResponse) -> None:
        with self._lock:
            self._account_locked(request, response)

    def _account_locked(self, request: LLMRequest, response: LLMResponse) -> None:
        tokens = response.prompt_tokens + response.completion_tokens
        self.tokens += tokens
        self.cost_usd += response.cost_usd
        entry = self.by_role.setdefault(
            request.role,
            {"calls": 0, "tokens": 0, "cost_usd": 0.0, "latency_ms": 0.0, "unpriced_calls": 0},
        )
        entry["calls"] += 1
        entry["tokens"] += tokens
        entry["cost_usd"] += response.cost_usd
        entry["latency_ms"] += response.latency_ms
        # No price known for the model: cost_usd is 0 and means "not known" (tokens only).
        entry["unpriced_calls"] += 0 if response.priced else 1

    @property
    def cost_known(self) -> bool:
        """Whether every call this turn had a price (else ``cost_usd`` undercounts)."""
        return all(not entry["unpriced_calls"] for entry in self.by_role.values())
