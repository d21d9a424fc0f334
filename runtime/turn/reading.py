"""Stages 2-3 together: one student message -> the classifier's and the analyzer's readings.

:func:`read` is the stage over the turn context: it reads the message with the turn's budgeted
backend and writes the classified metrics (the inferred ones wait for the contract stage, after
the system's trusted writes). :func:`read_message` takes the turn's :class:`PreClassifier` and :class:`ContextAnalyzer` and the message; gives
their :class:`Classification` and :class:`Inference`, still two separately typed results (the
trust boundary is unchanged: classified values may reach the policy core, inferred ones never).

Why: the two read the same message and nothing of each other, so waiting for one before
sending the other doubles the latency a learner feels before the actor even starts (issue 30:
three sequential round trips per turn). With a model behind them, the analyzer's call runs on
a worker thread while the classifier's runs on the turn's own thread, so the turn waits for the
slower of the two. An in-process backend (the offline one) answers in microseconds; there a
second thread would only add CPU, so its calls stay one after the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

from pedrag.runtime.turn.analyzer import ContextAnalyzer, Inference
from pedrag.runtime.turn.classifier import Classification, PreClassifier
from pedrag.runtime.turn.context import TurnContext
from pedrag.runtime.turn.state import MetricValue, SetMetrics

# Shared by every tutor in the process: one worker per concurrent turn's analyzer call (the
# async face runs at most 40 turns at once). A worker never waits on this pool, so a full
# pool only queues an analyzer call; it cannot deadlock.
_ANALYZER_CALLS = ThreadPoolExecutor(max_workers=40, thread_name_prefix="pedrag-analyzer")


def read_message(
    classifier: PreClassifier,
    analyzer: ContextAnalyzer,
    message: str,
    previous: Mapping[str, MetricValue],
    *,
    concurrently: bool,
) -> tuple[Classification, Inference]:
    """The classifier's and the analyzer's readings of ``message``; ``previous`` is the state's
    metrics before this turn (the analyzer keeps its own earlier values when it fails)."""
    if not concurrently or not analyzer.fields or not classifier.fields:
        return classifier.classify(message), analyzer.analyze(message, previous)
    pending = _ANALYZER_CALLS.submit(analyzer.analyze, message, dict(previous))
    classification = classifier.classify(message)
    return classification, pending.result()


def read(context: TurnContext) -> None:
    """Stages 2-3 of ``context``: sets ``classification`` and ``inference``; writes the
    classified values (enums only) into the state."""
    schema, policy, backend = context.schema, context.policy, context.backend
    fields = schema.fields
    classifier = PreClassifier(backend, {n: fields[n] for n in schema.names("classified")})
    analyzer = ContextAnalyzer(
        backend,
        {n: fields[n] for n in schema.names("inferred")},
        {n: policy.metrics[n].description for n in schema.names("inferred")},
    )
    classification, inference = read_message(
        classifier,
        analyzer,
        context.text,
        context.state.metrics,
        concurrently=context.decision.models_allowed and not context.host.in_process,
    )
    if classification.failure:
        context.failures.append({"stage": "classifier", "error": classification.failure})
    context.state = context.writer.apply(
        context.state, SetMetrics("classified", classification.values)
    )
    context.classification, context.inference = classification, inference
