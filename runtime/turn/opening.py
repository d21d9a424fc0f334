"""Stage 1, opening a turn: the turn context, and the budget that decides which backend the
turn's model calls may use.

Takes the tutor (a :class:`~pedrag.runtime.turn.context.TurnHost`), the session and the cleaned
student message; gives a :class:`~pedrag.runtime.turn.context.TurnContext` with the session's
state, its theory and metric schema, the earlier turns' metric rows (taken once, for every later
stage) and the budget's decision with the budgeted backend.

Fails closed: a turn over a spending or turn cap makes no model call (the offline backend
answers every role) and says so in the audit's failures.
"""

from __future__ import annotations

import time

from pedrag.runtime.turn.budget import (
    DEPLOYMENT_SCOPE,
    BudgetedBackend,
    check_budget,
)
from pedrag.runtime.turn.context import TurnContext, TurnHost
from pedrag.runtime.turn.session import Session
from pedrag.runtime.turn.state import StateWriter


def open_turn(host: TurnHost, session: Session, text: str) -> TurnContext:
    started = time.perf_counter()
    state = session.state
    schema = host.schema(state.theory_id)
    context = TurnContext(
        host=host,
        session=session,
        text=text,
        started=started,
        loaded=host.theories[state.theory_id],
        schema=schema,
        writer=StateWriter(schema),
        state=state,
        before=dict(state.metrics),
        rows=tuple(state.history),
    )
    # The deployment's running spend is read only when a deployment cap asks for it: the read
    # is a transaction of its own on a shared store, and an uncapped deployment never uses it.
    budget, store = host.budget, host.store
    deployment_usd = (
        store.spend(DEPLOYMENT_SCOPE)
        if budget.max_deployment_usd is not None and hasattr(store, "spend")
        else 0.0
    )
    decision = check_budget(
        budget, turns=state.turn, session_usd=state.cost_usd, deployment_usd=deployment_usd
    )
    if not decision.models_allowed:
        context.failures.append({"stage": "budget", "error": decision.reason})
    context.decision = decision
    context.backend = BudgetedBackend(
        host.backend if decision.models_allowed else host.offline,
        budget,
        session_usd=state.cost_usd,
        deployment_usd=deployment_usd,
        # With a deployment cap and a store that reserves atomically, every call reserves its
        # worst case in the store first, so racing turns in other workers cannot spend past it.
        ledger=store
        if budget.max_deployment_usd is not None and hasattr(store, "reserve_spend")
        else None,
    )
    return context
