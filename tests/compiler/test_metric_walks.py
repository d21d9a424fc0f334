"""unused-metric and unwritten-metric stop walking conditions once nothing is left to find:
what they report must not depend on where in the file a metric is read."""

from __future__ import annotations

from pedrag.compiler.driver import check_text

METRICS = """\
pedrag: 1
theory: {id: walks, name: Walks}
metrics:
  early: {type: float, range: [0, 1], source: inferred}
  late: {type: float, range: [0, 1], source: inferred}
  never: {type: float, range: [0, 1], source: inferred}
  stage: {type: enum, values: [intro, drill], source: trusted}
actions:
  a: {rung: H0, priority: 5, description: A.}
rules:
"""


def _rules(count: int, last: str) -> str:
    lines = [f'  - {{id: r{i}, when: "early >= 0.{i % 9 + 1}", then: a}}' for i in range(count)]
    lines.append(f'  - {{id: last, when: "{last}", then: a}}')
    return "\n".join(lines) + "\nceiling: {start: H4, steps: []}\n"


def _findings(text: str, check: str) -> list[str]:
    result = check_text(text, "walks.yaml")
    return sorted(d.message for d in result.diagnostics if d.check == check)


def test_a_metric_read_only_by_the_last_rule_is_not_unused() -> None:
    found = _findings(METRICS + _rules(40, "late >= 0.5 and stage == drill"), "unused-metric")
    assert found == [
        "metric `never` is never read by any condition, computation, monitor or switch"
    ]


def test_every_metric_read_early_reports_none_unused() -> None:
    text = METRICS.replace("  never: {type: float, range: [0, 1], source: inferred}\n", "")
    first = '  - {id: all, when: "early + late >= 0.5 and stage == drill", then: a}\n'
    assert _findings(text + first + _rules(40, "late >= 0.5"), "unused-metric") == []


def test_an_unwritten_trusted_metric_read_last_names_the_rule_that_reads_it() -> None:
    found = _findings(METRICS + _rules(40, "stage == drill"), "unwritten-metric")
    assert len(found) == 1 and "`stage`" in found[0] and "`last`" in found[0]


def test_each_condition_keeps_the_metrics_it_reads_through_a_pickle_and_a_replace() -> None:
    # unwritten-metric and unused-metric read `Located.reads` (walked when the condition is
    # made, and kept with a kept front end) instead of walking every condition again.
    import pickle
    from dataclasses import replace
    from pathlib import Path

    from pedrag.dsl import ast
    from pedrag.dsl.loader import load_file

    root = Path(__file__).resolve().parents[2] / "theories"
    checked = 0
    for path in sorted(root.glob("*.yaml")):
        loaded = pickle.loads(pickle.dumps(load_file(path)))
        theory = loaded.theory
        if theory is None:
            continue
        # the front end walked every rule's before it could be kept: a kept one carries them
        assert all("_reads" in rule.when.__dict__ for rule in theory.rules)
        located = [
            *(r.when for r in theory.rules),
            *(s.when for s in theory.ceiling_steps),
            *(i.condition for i in theory.invariants),
            *theory.monitors.values(),
            *(s.when for s in theory.switches),
        ]
        for one, other in zip(located, [*located[1:], located[0]], strict=True):
            assert one.reads == ast.metric_names(one.expr)
            assert replace(one, expr=other.expr).reads == ast.metric_names(other.expr)
            checked += 1
    assert checked > 100
