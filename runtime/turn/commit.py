"""Stages 9-11 over the turn context: response monitor, behavioural monitor, audit, commit.

Takes the turn context and the reply the student saw (its :class:`~pedrag.runtime.turn.context.
Outcome`; for a streamed turn, how it was streamed); gives the
:class:`~pedrag.runtime.turn.session.TurnResult`, built from the context. The observed metrics
are written from the reply's fingerprint; the behavioural monitor reads the history once more
(prepared once, and only when the observed values changed the current row); the new state
(next exercise, theory switch, the actor's bounded history, what was said) and the audit
record are committed to the store in one transaction, and only then does the session adopt
the new state, so a failure — or a killed process — never leaves a half-written state.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Mapping
from typing import Any

from pedrag.kernel.sources import INTENT_METRIC
from pedrag.runtime.detect.detector import DetectorVerdict
from pedrag.runtime.learning.loop import WRONG_ANSWERS
from pedrag.runtime.learning.material import SAID, after_reply, exercise_start
from pedrag.runtime.store.documents import plain_audit
from pedrag.runtime.store.errors import StoreError
from pedrag.runtime.store.safe_text import clean_text, redact_credentials
from pedrag.runtime.turn import audit as audit_module
from pedrag.runtime.turn.behaviour_monitor import adapt
from pedrag.runtime.turn.budget import DEPLOYMENT_SCOPE, BudgetedBackend
from pedrag.runtime.turn.context import (
    GOAL_RECORDS,
    HISTORY,
    HISTORY_CHARS,
    Outcome,
    TurnContext,
    TurnHost,
    goal_records,
    prepare_again,
)
from pedrag.runtime.turn.response_monitor import fingerprint, observed_metrics
from pedrag.runtime.turn.session import TurnResult, info_id
from pedrag.runtime.turn.state import (
    EXAM_LOCK,
    CommitTurn,
    RecordSpend,
    SetExercise,
    SetMetrics,
    StateWriter,
    SwitchTheory,
)
from pedrag.runtime.turn.trusted_writer import action_event, trusted_updates


def commit(
    context: TurnContext, outcome: Outcome, stream: Mapping[str, Any] | None = None
) -> TurnResult:
    """Stages 9-11 on the reply the student saw; commits state and audit in one
    transaction, and only then does the session adopt the new state."""
    context.outcome = outcome
    host, session, text = context.host, context.session, context.text
    context.failures[:] = [_safe_failure(item) for item in context.failures]
    state, writer, schema, backend = context.state, context.writer, context.schema, context.backend
    fields = schema.fields
    choice, contract, action, policy = (
        context.choice,
        context.contract,
        context.action,
        context.policy,
    )

    # 9. response monitor
    print_ = fingerprint(
        outcome.reply,
        rung=choice.rung,
        tags=frozenset(action.tags),
        revealed=outcome.final_verdict.flagged,
    )
    observed = observed_metrics(
        print_,
        action=choice.action,
        last_action=state.last_action,
        previous=state.metrics,
        fields={n: fields[n] for n in schema.names("observed")},
    )
    decided = state.metrics
    state = writer.apply(state, SetMetrics("observed", observed))

    # 10. behavioural monitor + adaptation, over the history prepared once more only when the
    # observed values changed the current row the rules were matched on
    prepared = context.prepared
    if not hasattr(policy, "prepare"):
        prepared = context.history(state.metrics)
    else:
        history = context.history(state.metrics)
        prepared = prepare_again(policy, prepared, decided, state.metrics, history)
    adaptation = adapt(
        policy,
        prepared,
        action=choice.action,
        rung_of={name: info.rung for name, info in policy.actions.items()},
        ceiling=contract.ceiling,
        theory_ids=host.theories.ids,
        previous=state.plan,
    )

    # 11. audit, then commit state + record in one transaction
    new = writer.apply(state, CommitTurn(choice.action, choice.rung, adaptation.plan))
    new = writer.apply(new, RecordSpend(backend.calls, backend.tokens, backend.cost_usd))
    extra = dict(new.extra)  # the turn's bookkeeping, written into one copy
    if host.history_turns > 0:
        # DESIGN, "Learners, grading and mastery": a bounded conversation history for the
        # actor (never for the policy core, whose input has no text field).
        exchanges = [*extra.get(HISTORY, ()), [_bounded(text), _bounded(outcome.reply)]]
        if len(exchanges) > host.history_turns:
            # Trimmed in steps, to the newer half: a window sliding by one exchange a turn
            # would change the actor prompt right after its stable text on every turn and
            # defeat a server's prefix cache (issue 30); in steps, the prompt only grows
            # between trims.
            exchanges = exchanges[-max(1, (host.history_turns + 1) // 2) :]
        extra[HISTORY] = exchanges
    info = session.exercise
    extra[SAID] = after_reply(
        context.said,
        outcome.reply,
        context.material,
        info.material if info else None,
        keep_text=host.keep_transcript,
        message="" if context.solved_now else text,  # the steps their working has done
    )
    after_reply_events = ("turn", action_event(choice.action))
    updates, extra = trusted_updates(
        schema, new.metrics, after_reply_events, extra, rung=choice.rung
    )
    if updates:
        new = writer.apply(new, SetMetrics("trusted", updates))
    new = new.but(extra=extra)
    following = context.following
    if following is not None:
        # The next exercise starts now: counters and flags start again, and the mastery
        # metric is the new goal's (the theory's writers, `exercise_start`).
        new = writer.apply(new, SetExercise(following.id, following.goal))
        mastery = host.curriculum_map().record(goal_records(new), following.goal).mastery
        updates, extra = trusted_updates(
            schema, new.metrics, ("exercise_start",), new.extra, mastery
        )
        extra[WRONG_ANSWERS] = []
        extra[SAID] = exercise_start(extra.get(SAID, {}))
        new = writer.apply(new, SetMetrics("trusted", updates)).but(extra=extra)
    if adaptation.switch_to and new.extra.get(EXAM_LOCK) is not True:
        new = StateWriter(schema).apply(
            new, SwitchTheory(adaptation.switch_to, host.schema(adaptation.switch_to))
        )
    elapsed_ms = (time.perf_counter() - context.started) * 1000
    assessment, inference = context.assessment, context.inference
    detector = _detector_dict(outcome.final_verdict)
    judge = outcome.judge.to_dict() if outcome.judge else None
    record = {
        "version": audit_module.AUDIT_VERSION,
        "turn": new.turn,
        "theory": context.loaded.id,
        "budget": context.decision.to_dict(),
        "classified": dict(context.policy_input.classified),  # with the concept signal
        "inferred": dict(inference.values),
        "trusted": dict(context.policy_input.trusted),
        "contract": contract.to_dict(),
        "choice": choice.to_dict(),
        "drafts": outcome.drafts,
        "detector": detector,
        "judge": judge,
        "grounding": context.grounding.to_dict(outcome.reply) if context.grounding else None,
        "fallback": outcome.fallback,
        "revised": outcome.revised,
        "fingerprint": print_.to_dict(),
        "adaptation": adaptation.to_dict(),
        "solved": context.solved_now,
        "grade": {
            "verdict": assessment.grade.verdict,
            "events": list(assessment.events),
            # a graded answer the classifier labelled otherwise reads as an attempt
            # (`trusted_writes.read_as_attempt`): the classifier's own label, kept
            **_classifier_intent(context),
            **({"facts": list(assessment.grade.facts)} if host.keep_transcript else {}),
        },
        "exercise": info_id(info),
        "goal_in_scope": context.goal_in_scope,
        "next_exercise": info_id(following),
        "metric_deltas": audit_module.metric_deltas(context.before, state.metrics),
        "latency_ms": round(elapsed_ms, 3),
        "calls": backend.calls,
        "tokens": backend.tokens,
        "cost_usd": backend.cost_usd,
        "usage": backend.by_role,
        "failures": context.failures,
    }
    if stream is not None:
        record["stream"] = dict(stream)
    if host.keep_transcript:
        record["student"] = text
        record["tutor"] = outcome.reply
    learner = None
    if session.learner is not None and info is not None and assessment.record is not None:
        goal_record = new.extra.get(GOAL_RECORDS, {}).get(info.goal)
        learner = (session.learner, {info.goal: goal_record}) if goal_record else None
    try:
        # Made plain, checked, cleaned and written as JSON once, here, by the store's own walk
        # and check: the store neither checks nor copies it again, and nothing done to
        # `record` later reaches what it saves. (A value plain refuses raises TypeError or
        # ValueError, as before: not a StoreError, so no spend is counted for it.)
        record, checked = plain_audit(record)
        given: dict[str, Any] = {} if learner is None else {"learner": learner}
        if session.version is not None:
            given["version"] = session.version
        host.store.save_turn(session.id, new.turn, new.to_dict(), checked, **given)
    except StoreError:
        # The model calls were made and paid for even though the turn is not committed
        # (another writer won the turn, the database failed): count them against the
        # deployment cap, or racing requests could spend past it. The turn's error wins.
        with contextlib.suppress(StoreError):
            _add_deployment_spend(host, backend)
        raise
    _add_deployment_spend(host, backend)
    session.state = new  # only now: the store has committed the turn
    if session.version is not None:
        session.version += 1
    if following is not None:
        session.exercise = following
    result = TurnResult(
        turn=new.turn,
        student=text,
        tutor=outcome.reply,
        theory=context.loaded.id,
        action=choice.action,
        rung=choice.rung,
        contract=contract,
        detector=detector,
        judge=judge,
        fallback=outcome.fallback,
        revised=outcome.revised,
        failures=tuple(context.failures),
        audit=record,
    )
    session.results.append(result)
    return result


def _add_deployment_spend(host: TurnHost, backend: BudgetedBackend) -> None:
    """Count the turn's model spend in the deployment total, unless the backend's ledger
    already did, call by call (its reservations are settled in the store)."""
    usd = backend.cost_usd
    if usd and not backend.records_spend and hasattr(host.store, "add_spend"):
        host.store.add_spend(DEPLOYMENT_SCOPE, usd)


def _bounded(text: str) -> str:
    return text if len(text) <= HISTORY_CHARS else text[: HISTORY_CHARS - 1] + "…"


def _detector_dict(verdict: DetectorVerdict) -> dict[str, Any]:
    return {
        "flagged": verdict.flagged,
        "rule_ids": list(verdict.rule_ids),
        "reason": verdict.reason,
    }


_QUOTED = re.compile(r"\"(?:[^\"\\\n]|\\.){0,400}\"|'(?:[^'\\\n]|\\.){0,400}'")


def _safe_failure(item: Mapping[str, str]) -> dict[str, str]:
    """A failure as it is stored and shown: quoted values (a model's output, which can echo
    the student's message or the answer) elided, credentials in URLs removed, control
    characters replaced."""
    return {
        key: clean_text(redact_credentials(_QUOTED.sub("'…'", str(value))))
        for key, value in item.items()
    }


def _classifier_intent(context: TurnContext) -> dict[str, Any]:
    """The classifier's intent label when the trusted writes read the message otherwise."""
    said = context.classification.values.get(INTENT_METRIC)
    read = dict(context.policy_input.classified).get(INTENT_METRIC)
    return {"classifier_intent": said} if said != read else {}
