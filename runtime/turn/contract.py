"""Stages 3-4 over the turn context: the inferred and computed metrics, the policy's prepared
history, and the per-turn contract.

Takes the turn context after the trusted writes; gives, in the context, the state with the
analyzer's inferred values and the theory's computed metrics written, ``prepared`` (the
compiled policy's preparation of the metric history: computed values and history calls, which
the rule engine reads next), the policy core's input (trusted and classified values only) and
the :class:`~pedrag.runtime.policy.policy_core.Contract`.

History once: the earlier turns' rows were taken from the state when the turn opened; the
policy prepares them here with the current row, and that preparation is passed on. It is
prepared a second time only when writing the computed values changed the current row (a
history call may read a computed metric), so the rule engine sees exactly the state that was
written.
"""

from __future__ import annotations

from dataclasses import replace

from pedrag.kernel.sources import CONCEPT_QUESTION_METRIC
from pedrag.runtime.policy.policy_core import Contract, PolicyInput, compute_contract
from pedrag.runtime.store.errors import StoreError
from pedrag.runtime.turn.analyzer import Inference, computed_metrics
from pedrag.runtime.turn.classifier import Classification
from pedrag.runtime.turn.context import TurnContext, prepare_again
from pedrag.runtime.turn.state import SetMetrics


def decide_contract(context: TurnContext) -> None:
    """Sets ``prepared``, ``policy_input``, ``materials`` and ``contract``."""
    writer, policy, schema = context.writer, context.policy, context.schema
    inference = context.inference
    if inference.failure:
        context.failures.append({"stage": "analyzer", "error": inference.failure})
    state = writer.apply(context.state, SetMetrics("inferred", inference.values))
    if hasattr(policy, "prepare"):
        prepared = policy.prepare(context.history(state.metrics))
        computed = computed_metrics(policy, prepared, schema.fields)
        written = writer.apply(state, SetMetrics("computed", computed))
        prepared = prepare_again(
            policy, prepared, state.metrics, written.metrics, context.history(written.metrics)
        )
        state = written
    else:  # a policy without a preparation step reads the history itself
        history = context.history(state.metrics)
        computed = computed_metrics(policy, history, schema.fields)
        state = writer.apply(state, SetMetrics("computed", computed))
        prepared = context.history(state.metrics)
    context.state, context.prepared = state, prepared

    # 4. policy core: trusted + classified values only
    trusted = {n: state.metrics[n] for n in schema.names("trusted")}
    classified = {n: state.metrics[n] for n in schema.names("classified")}
    # The pre-classifier's grounding signal, when the theory does not classify it itself.
    classified.setdefault(CONCEPT_QUESTION_METRIC, context.classification.concept_question)
    policy_input = PolicyInput.of(trusted, classified)
    # Whether the course has materials matters only on a turn grounding could apply to (a
    # concept question now, or a `grounded` action later); only then is the store asked.
    materials = bool(classified.get(CONCEPT_QUESTION_METRIC)) and has_materials(context)
    context.policy_input, context.materials = policy_input, materials
    context.contract = risky_when_unread(
        compute_contract(policy_input, policy, materials=materials),
        context.classification,
        inference,
    )


def has_materials(context: TurnContext) -> bool:
    """Whether the session's course has indexed materials (read when asked, so materials
    indexed while a tutor runs are used); a store failure means none (fails closed)."""
    host = context.host
    if host.course_index is None or host.course is None:
        return False
    try:
        return host.course_index.has_course(host.course)
    except StoreError as error:
        context.failures.append({"stage": "retrieval", "error": str(error)})
        return False


def risky_when_unread(
    contract: Contract, classification: Classification, inference: Inference
) -> Contract:
    """Fail safer, not softer: a turn whose message the classifier or the analyzer could not
    read is risky — its defaults (``intent=other``) would otherwise lower scrutiny exactly when
    the model path is unhealthy — so the judge must pass the draft, and a judge that fails
    too sends the template. The ceiling is the policy core's and stays as computed."""
    unread = [
        f"{stage}_failed"
        for stage, failure in (
            ("classifier", classification.failure),
            ("analyzer", inference.failure),
        )
        if failure
    ]
    if not unread:
        return contract
    return replace(contract, judge_required=True, risks=(*contract.risks, *unread))
