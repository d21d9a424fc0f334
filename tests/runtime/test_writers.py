"""Writers as data: what the response monitor writes is one kernel table that the compiler's
`unwritten-metric` reads too, and the offline backend answers from the real metric
definitions, so a declared default survives a turn."""

from __future__ import annotations

from pathlib import Path

from pedrag.compiler.driver import check_paths
from pedrag.kernel.sources import OBSERVED_WRITES
from pedrag.runtime.policy.theory_set import TheorySet
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.response_monitor import fingerprint, observed_metrics
from pedrag.runtime.turn.state import MetricField
from pedrag.runtime.turn.tutor import Tutor
from tests.runtime.tutor_fixtures import CURRICULUM

PROBE = """\
pedrag: 1
theory: {id: obs, name: Observed probe}
metrics:
  tutor_code_lines: {type: int, range: [0, 50], source: observed}
  hints_in_row: {type: int, range: [0, 10], source: observed}
  curiosity: {type: float, range: [0, 1], default: 0.6, source: inferred}
actions:
  encourage: {rung: H0, priority: 5, description: Encourage.}
  nudge: {rung: H3, priority: 5, description: Ask about the next step.}
rules:
  - {id: lots_of_code, when: "tutor_code_lines >= 10", then: encourage}
  - {id: hinty, when: "hints_in_row >= 2 or curiosity < 0.5", then: nudge}
  - {id: calm, when: "tutor_code_lines < 10 and hints_in_row < 2 and curiosity >= 0.5", then: nudge}
ceiling: {start: H4}
"""


def _probe(tmp_path: Path) -> Path:
    path = tmp_path / "obs.yaml"
    path.write_text(PROBE)
    return path


def test_an_observed_metric_no_stage_writes_is_unwritten(tmp_path: Path) -> None:
    result = check_paths([_probe(tmp_path)])
    found = [d for d in result.diagnostics if d.check == "unwritten-metric"]
    assert len(found) == 1, [d.message for d in result.diagnostics]
    assert found[0].severity.value == "warning"
    assert "`tutor_code_lines`" in found[0].message
    assert found[0].items[0] == "metric:tutor_code_lines"
    # the monitor's own names are written: `hints_in_row` is not reported
    assert not any("hints_in_row" in d.message for d in found)


def test_the_response_monitor_writes_exactly_the_kernel_table() -> None:
    fields = {
        name: MetricField(name, kind, "observed", 0, 100, default=False if kind == "bool" else 0)  # type: ignore[arg-type]
        for name, kind in OBSERVED_WRITES.items()
    }
    fields["tutor_code_lines"] = MetricField(
        "tutor_code_lines", "int", "observed", 0, 50, default=0
    )
    print_ = fingerprint("What next?", rung=3, tags=frozenset({"hint"}), revealed=False)
    written = observed_metrics(print_, action="a", last_action="a", previous={}, fields=fields)
    assert set(written) == set(OBSERVED_WRITES)


def test_an_inferred_default_survives_offline_turns(tmp_path: Path) -> None:
    theories = TheorySet.from_paths([_probe(tmp_path)], strict=False)
    tutor = Tutor(theories, curriculum=CURRICULUM, store=MemoryStore())
    session = tutor.start("obs", exercise="mult_7x8", seed=1)
    for message in ("how do I start?", "I think it is about groups of seven"):
        tutor.turn(session, message)
        assert session.state.metrics["curiosity"] == 0.6


def test_the_offline_analyzer_estimates_exactly_the_kernel_table() -> None:
    """Each name of `HEURISTIC_INFERENCES` gets an estimate (never the odd default below), any
    other inferred metric keeps its default."""
    from pedrag.kernel.sources import HEURISTIC_INFERENCES
    from pedrag.runtime.turn.analyzer import heuristic_inference

    values = {
        "affect": ("calm", "frustrated", "anxious", "confused", "bored", "curious", "unset"),
        "reasoning_quality": ("sound", "partial", "vague", "none", "unset"),
    }
    fields: dict[str, MetricField] = {}
    for name, kind in {**HEURISTIC_INFERENCES, "not_estimated": "float"}.items():
        if kind == "enum":
            fields[name] = MetricField(
                name, "enum", "inferred", values=values[name], default="unset"
            )
        elif kind == "bool":
            fields[name] = MetricField(name, "bool", "inferred", default=True)
        else:
            fields[name] = MetricField(name, "float", "inferred", 0, 1, default=0.123)
    for message in ("I think it is 56", "ugh I give up, this is pointless!!"):
        estimated = heuristic_inference(message, fields)
        moved = {name for name in fields if estimated[name] != fields[name].default}
        assert moved == set(HEURISTIC_INFERENCES), message


def test_the_offline_backend_and_selector_name_no_shipped_metric() -> None:
    """The offline backend and the fallback selector read metric names from the kernel's tables
    (and the theory's declarations), never as string literals of their own."""
    import ast as python_ast

    from pedrag.kernel import ceiling, sources
    from pedrag.kernel.wording import MATERIAL_PLACEHOLDERS

    names = {
        *sources.HEURISTIC_INFERENCES,
        *sources.OBSERVED_WRITES,
        *sources.DEFAULT_WRITERS,
        sources.INTENT_METRIC,
        sources.CODE_ATTEMPT_METRIC,
        sources.CONCEPT_QUESTION_METRIC,
        sources.REQUEST_METRIC,
        *(step.metric for step in ceiling.RUNTIME_STEPS),
    } - set(MATERIAL_PLACEHOLDERS)  # `misconception` also names the material's placeholder
    root = Path(__file__).resolve().parents[2] / "runtime"
    found = []
    for relative in ("llm/offline.py", "llm/offline_grounded.py", "policy/rule_engine.py"):
        tree = python_ast.parse((root / relative).read_text(encoding="utf-8"))
        found += [
            f"{relative}:{node.lineno}: {node.value!r}"
            for node in python_ast.walk(tree)
            if isinstance(node, python_ast.Constant) and node.value in names
        ]
    assert found == []


def test_the_offline_selector_reads_the_kernel_signals() -> None:
    from pedrag.kernel.ceiling import runtime_step
    from pedrag.kernel.sources import DISTRESS_METRIC, DISTRESS_THRESHOLD, INTENT_METRIC
    from pedrag.runtime.policy.rule_engine import offline_select

    allowed = [
        {"id": "probe", "priority": 5, "rung": 3, "tags": ["probe"]},
        {"id": "soothe", "priority": 1, "rung": 0, "tags": ["affect_support"]},
        {"id": "hold", "priority": 1, "rung": 0, "tags": ["exam"]},
        {"id": "refuse", "priority": 1, "rung": 0, "tags": ["withhold"]},
    ]
    assert offline_select(allowed, {}) == "probe"
    assert offline_select(allowed, {DISTRESS_METRIC: DISTRESS_THRESHOLD}) == "soothe"
    assert offline_select(allowed, {runtime_step("exam_lockdown").metric: True}) == "hold"
    assert offline_select(allowed, {INTENT_METRIC: "injection"}) == "refuse"
