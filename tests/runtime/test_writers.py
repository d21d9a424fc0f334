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
