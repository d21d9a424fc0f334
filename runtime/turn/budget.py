"""Stage 1, the budget: spending and turn caps, checked before any model call (fail closed).

Takes the session's totals (turns, cost) and the deployment's running spend; gives a
:class:`BudgetDecision` — whether this turn may call models at all. Over a cap, the turn still
runs (the contract still holds) but without model calls: the offline path answers, and the
audit says which cap was hit. :class:`BudgetedBackend` enforces the per-turn call cap and the
spending caps *during* the turn, raising ``LLMBudgetExceeded`` before a call that would cross
them, so one turn cannot run away; a streamed call is admitted and counted the same way.

Why calls reserve: the classifier's and the analyzer's calls run at once, and a cap checked
against what was *spent* let both pass when the room left was one call's (the cap was exceeded
by one call). So each call reserves its worst-case cost (the backend's ``max_cost_usd``, when
it can say) before it is sent, and a call that might not fit in what is left after every
reservation in flight is refused; the reservation is settled with the real cost when the call
ends. Given a ledger (the store: ``reserve_spend``/``settle_spend``), the deployment cap is
reserved there too, in one atomic statement, so concurrent turns on any number of workers hold
it as well. A call whose cost cannot be known before it (no price) reserves nothing and is
admitted while the spend is below the cap, as before.
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
    LLMError,
    LLMRequest,
    LLMResponse,
    LLMStream,
    RoleUsage,
    Usage,
    open_stream,
)

DEPLOYMENT_SCOPE = "deployment"


class SpendLedger(Protocol):
    def add_spend(self, scope: str, usd: float) -> float: ...
    def spend(self, scope: str) -> float: ...


class SpendReservations(Protocol):
    """A spend total that reserves within a cap atomically (``SessionStore``, ``MemoryStore``)."""

    def reserve_spend(self, scope: str, usd: float, cap: float | None) -> bool: ...
    def settle_spend(self, scope: str, reserved: float, usd: float) -> float: ...


def call_fits(spent: float, estimate: float, cap: float | None) -> bool:
    """Whether a call reserving ``estimate`` may start when ``spent`` (spent and reserved) is
    already counted: it must fit whole; a call of unknown cost (0) while below the cap."""
    if cap is None:
        return True
    return spent + estimate <= cap if estimate > 0 else spent < cap


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
    """Wraps a backend for one turn: counts calls, tokens and cost; refuses past the caps.

    What the turn's calls spent is one :class:`Usage` (:attr:`usage`, the type a backend's
    and an evaluation's totals use); ``tokens``, ``cost_usd``, ``by_role`` and
    ``cost_known`` are read from it. ``calls`` is the per-turn cap's own count: every call
    admitted, also one in flight or one that failed before the server answered (it used up a
    try), while ``usage`` counts the calls the server answered.

    ``ledger``, when given, holds the deployment cap across workers: every call reserves its
    worst-case cost in the ledger's ``deployment`` total and settles it with the real cost, so
    the ledger's total already includes this turn's spend (the caller must not add
    ``cost_usd`` to it again; :attr:`records_spend` says so)."""

    def __init__(
        self,
        inner: LLMBackend,
        budget: Budget,
        *,
        session_usd: float,
        deployment_usd: float,
        ledger: SpendReservations | None = None,
    ) -> None:
        self.inner = inner
        self.budget = budget
        self.session_usd = session_usd
        self.deployment_usd = deployment_usd
        self.ledger = ledger
        self.calls = 0  # admitted (the cap's count); what they spent is in `usage`
        self.usage = Usage()
        # `usage` summed over its roles, with the count of recorded calls it was summed at:
        # the caps ask for the cost on every call and the audit for tokens and cost several
        # times, and each sum rebuilt a RoleUsage per role (issue 30).
        self._recorded = 0
        self._summed: tuple[int, RoleUsage] | None = None
        self.reserved_usd = 0.0  # worst-case cost of the calls in flight
        # The classifier's and the analyzer's calls may run at once (`reading`): the counts
        # and reservations change under a lock.
        self._lock = threading.Lock()

    @property
    def records_spend(self) -> bool:
        """Whether this backend keeps the ledger's deployment total itself."""
        return self.ledger is not None

    def complete(self, request: LLMRequest) -> LLMResponse:
        reserved = self._admit(request)
        try:
            response = self.inner.complete(request)
        except LLMError as error:
            if error.spent is None:
                self._release(reserved)
            else:  # answered, paid for, then failed (malformed, refused): settle what it cost
                self._account(request, error.spent, reserved, failed=True)
            raise
        except BaseException:
            self._release(reserved)
            raise
        self._account(request, response, reserved)
        return response

    def stream(self, request: LLMRequest) -> LLMStream:
        """:meth:`complete`, streamed: the caps are checked when the stream starts (raising
        while iterating), the usage is counted when it ends — also when it fails or is closed
        early, from the inner stream's (then estimated) response."""

        def deltas(handle: LLMStream) -> Iterator[str]:
            reserved = self._admit(request)
            try:
                inner = open_stream(self.inner, request)
            except BaseException:
                self._release(reserved)
                raise
            failed = False  # closed early is not failed: what was read was used
            try:
                yield from inner
            except LLMError:
                failed = True
                raise
            finally:
                inner.close()
                handle.response = inner.response
                if inner.response is not None:
                    self._account(request, inner.response, reserved, failed=failed)
                else:
                    self._release(reserved)

        return LLMStream(deltas)

    def _estimate(self, request: LLMRequest) -> float:
        """The call's worst-case cost, when the backend can say (0: not known)."""
        estimate = getattr(self.inner, "max_cost_usd", None)
        cost = estimate(request) if callable(estimate) else None
        return float(cost) if cost else 0.0

    def _admit(self, request: LLMRequest) -> float:
        """Count the call and reserve its worst-case cost, or raise ``LLMBudgetExceeded``;
        the reservation, for :meth:`_account` or :meth:`_release`."""
        estimate = self._estimate(request)
        with self._lock:
            self._admit_locked(request, estimate)
        if self.ledger is not None:
            try:
                admitted = self.ledger.reserve_spend(
                    DEPLOYMENT_SCOPE, estimate, self.budget.max_deployment_usd
                )
            except BaseException:
                self._release(estimate, uncount=True, ledger=False)
                raise
            if not admitted:
                self._release(estimate, uncount=True, ledger=False)
                raise LLMBudgetExceeded("deployment spending cap reached", role=request.role)
        return estimate

    def _admit_locked(self, request: LLMRequest, estimate: float) -> None:
        if self.calls >= self.budget.max_calls_per_turn:
            raise LLMBudgetExceeded(
                f"per-turn call cap of {self.budget.max_calls_per_turn} reached", role=request.role
            )
        committed = self.cost_usd + self.reserved_usd
        if not call_fits(self.session_usd + committed, estimate, self.budget.max_session_usd):
            raise LLMBudgetExceeded("session spending cap reached", role=request.role)
        if not call_fits(self.deployment_usd + committed, estimate, self.budget.max_deployment_usd):
            raise LLMBudgetExceeded("deployment spending cap reached", role=request.role)
        self.calls += 1
        self.reserved_usd += estimate

    def _release(self, reserved: float, *, uncount: bool = False, ledger: bool = True) -> None:
        """Give back a reservation whose call was not made, or failed unanswered (nothing to
        count; a call answered, then failed, is settled with ``LLMError.spent``)."""
        with self._lock:
            self.reserved_usd -= reserved
            if uncount:
                self.calls -= 1
        if ledger and self.ledger is not None:
            self.ledger.settle_spend(DEPLOYMENT_SCOPE, reserved, 0.0)

    def _account(
        self, request: LLMRequest, response: LLMResponse, reserved: float, *, failed: bool = False
    ) -> None:
        with self._lock:
            self.reserved_usd -= reserved
            # Filed under the request's role; no price known for the model is an unpriced call
            # (its cost_usd 0 means "not known": tokens only).
            self.usage.record(response, request.role, failed=failed)
            self._recorded += 1
        if self.ledger is not None:
            self.ledger.settle_spend(DEPLOYMENT_SCOPE, reserved, response.cost_usd)

    def _total(self) -> RoleUsage:
        """``usage.total``, summed again only after a call was recorded (the count is read
        before summing, so a call recorded meanwhile by the other reading thread is summed
        on the next ask)."""
        recorded, summed = self._recorded, self._summed
        if summed is not None and summed[0] == recorded:
            return summed[1]
        total = self.usage.total
        self._summed = (recorded, total)
        return total

    @property
    def tokens(self) -> int:
        return self._total().total_tokens

    @property
    def cost_usd(self) -> float:
        return self._total().cost_usd

    @property
    def by_role(self) -> dict[str, dict[str, float]]:
        """The turn's usage per role, as its record writes it (:meth:`Usage.turn_view`)."""
        return self.usage.turn_view()

    @property
    def cost_known(self) -> bool:
        """Whether every call this turn had a price (else ``cost_usd`` undercounts)."""
        return self._total().unpriced_calls == 0
