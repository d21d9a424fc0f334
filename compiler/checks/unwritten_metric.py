"""unwritten-metric: a condition reads a metric that nothing writes.

Semantic check over the theory's writers (DESIGN, "Writers"; `pedrag.kernel.sources`). The
stage that writes a classified, inferred, observed or computed metric is given by its source;
a trusted metric is written only by the runtime events its `writer:` names (or the kernel's
default writer for a conventional name such as `attempts`). A trusted metric without one keeps
its default for the whole session, so every rule that needs another value can never fire in a
real session, whatever the other checks prove about the states where it would. The response
monitor writes only the observed metrics of the kernel's ``OBSERVED_WRITES`` table; an observed
metric of another name is reported too, as a warning (it is not trusted state, but the rules
that read it are as dead in practice).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING

from pedrag.compiler.checks import CheckInfo
from pedrag.dsl.diagnostics import Diagnostic, Severity
from pedrag.dsl.ir import MetricInfo, RuleInfo
from pedrag.kernel.sources import OBSERVED_WRITES, is_written

if TYPE_CHECKING:  # z3 loads only when a semantic check runs
    from pedrag.compiler.analysis import Analysis

INFO = CheckInfo(
    name="unwritten-metric",
    severity=Severity.ERROR,
    summary="a condition reads a trusted metric that no runtime event writes",
    explanation=(
        "A trusted metric is written only by the system, on the runtime events its `writer:` "
        "names (the grader's verdict, a turn, an action taken, an instructor toggle). One that "
        "no writer declares stays at its default in every real session, so the rules, ceiling "
        "steps, monitors, invariants and switches that need another value never apply. "
        "Dead rules and coverage range over every state and still count them; a conflict or an "
        "invariant violation is reported only with a state a session can reach, where every "
        "metric nothing writes is at its default."
    ),
    example=(
        "metrics:\n"
        "  lesson_phase: {type: enum, values: [review, practice], source: trusted}\n"
        "rules:\n"
        '  - {id: practise, when: "lesson_phase == practice", then: guided_practice}\n'
    ),
    fix=(
        "Declare who writes it, e.g. `writer: {advance: {review: turn}}` for a phase, "
        "`writer: {count: wrong_answer}` for a counter or `writer: {set_on: correct_answer}` for "
        "a flag (docs/theory-format.md, `writer:`), or make it a classified/inferred metric."
    ),
)


def _readers(analysis: Analysis, unwritten: frozenset[str]) -> dict[str, list[str]]:
    """Unwritten metric -> the items whose conditions read it (rules, steps, monitors,
    invariants, switches), in file order. Only `unwritten` metrics are filed: filing every
    metric each of 5,000 conditions reads, in sorted order, was a tenth of a one-rule edit's
    re-check in the language server, for lists nothing reads."""
    theory = analysis.theory
    # Each condition's metrics as its `Located` keeps them (walked when it was made); a
    # computed metric's expression is walked here.
    # A rule's part is made of the rule and the metrics alone, so after a one-rule edit the
    # other rules' are carried over (`Analysis.each_rule`), not walked again.
    conditions: list[tuple[str, frozenset[str]]] = analysis.each_rule(
        INFO.name, partial(_rule_reads, unwritten)
    )
    conditions += [
        (f"ceiling:{s.index}", s.when.reads) for s in theory.ceiling_steps if s.runtime is None
    ]
    conditions += [(f"monitor:{name}", located.reads) for name, located in theory.monitors.items()]
    # an invariant about a value nothing writes is never tested by a session, and its
    # violations there are not reported (`pedrag.compiler.written`): say why once, here
    conditions += [(f"invariant:{i.id}", i.condition.reads) for i in theory.invariants]
    conditions += [(f"switch:{s.index}", s.when.reads) for s in theory.switches]
    conditions += [
        (f"metric:{n}", analysis.reads(m.compute)) for n, m in theory.metrics.items() if m.compute
    ]
    readers: dict[str, list[str]] = {}
    for item, reads in conditions:
        for name in reads & unwritten:
            readers.setdefault(name, []).append(item)
    return readers


def _rule_reads(unwritten: frozenset[str], rule: RuleInfo) -> list[tuple[str, frozenset[str]]]:
    read = rule.when.reads & unwritten
    return [(f"rule:{rule.id}", read)] if read else []


def run(analysis: Analysis) -> Iterator[Diagnostic]:
    unwritten = frozenset(
        name
        for name, metric in analysis.theory.metrics.items()
        if not is_written(name, metric.source, metric.type, metric.writer is not None)
    )
    if not unwritten:
        return  # nothing to report: every condition's walk (`_readers`) is spared
    readers = _readers(analysis, unwritten)
    for name, metric in analysis.theory.metrics.items():
        if name not in readers:  # written, or read by nothing
            continue
        if metric.source == "observed":
            yield _unobserved(name, metric, readers[name])
            continue
        items = readers[name]
        yield Diagnostic(
            check=INFO.name,
            severity=INFO.severity,
            message=(
                f"trusted metric `{name}` is read ({_shown(items)}) but no runtime event writes "
                f"it: it stays {_literal(metric.default)} in every session"
            ),
            span=metric.span,
            items=(f"metric:{name}", *items),
            help=INFO.fix,
        )


def _unobserved(name: str, metric: MetricInfo, items: list[str]) -> Diagnostic:
    known = ", ".join(f"`{n}` ({kind})" for n, kind in OBSERVED_WRITES.items())
    return Diagnostic(
        check=INFO.name,
        severity=Severity.WARNING,
        message=(
            f"observed metric `{name}` is read ({_shown(items)}) but the response monitor does "
            f"not write it: it stays {_literal(metric.default)} in every session"
        ),
        span=metric.span,
        items=(f"metric:{name}", *items),
        help=(
            f"the response monitor writes only {known}; use one of those, or make `{name}` an "
            "inferred metric (the context analyzer estimates it) or a computed one"
        ),
    )


def _shown(items: list[str]) -> str:
    shown = ", ".join(f"`{item.split(':', 1)[1]}`" for item in items[:5])
    return shown + (f" and {len(items) - 5} more" if len(items) > 5 else "")


def _literal(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
