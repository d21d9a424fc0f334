"""`--fix`, `pedrag diff`, the switch graph across files, coverage of reals, and `unknown`."""

from __future__ import annotations

import shutil
from pathlib import Path

from pedrag.cli import main
from pedrag.compiler.analysis import Analysis
from pedrag.compiler.config import CheckConfig
from pedrag.compiler.driver import check_paths
from pedrag.compiler.fixes import fix_text
from pedrag.dsl.loader import load_text

DATA = Path(__file__).resolve().parents[1] / "data" / "checks"


def test_fix_inserts_a_safe_rule_that_closes_the_gap(tmp_path: Path) -> None:
    path = tmp_path / "gap.yaml"
    shutil.copy(DATA / "coverage-gap.yaml", path)
    result = check_paths([str(path)], CheckConfig())
    assert any(d.check == "coverage-gap" for d in result.diagnostics)
    outcome = fix_text(path.read_text(), str(path))
    assert [s.rule_id for s in outcome.applied] == ["fill_gap_1"] and not outcome.rejected
    path.write_text(outcome.fixed)
    again = check_paths([str(path)], CheckConfig())
    assert not [d for d in again.diagnostics if d.severity.value == "error"]
    assert not any(d.check == "coverage-gap" for d in again.diagnostics)
    assert again.theories[0]["coverage"] == 1.0


def test_gap_region_names_the_uncovered_ranges() -> None:
    loaded = load_text((DATA / "coverage-gap.yaml").read_text(), "gap.yaml")
    analysis = Analysis(loaded.theory)  # type: ignore[arg-type]
    (region,) = analysis.gaps()
    assert region.condition == "0.4 <= frustration < 0.7 and hint_requests == 0"
    assert abs(region.share - 0.05) < 1e-9
    assert abs(analysis.coverage()[0] - 0.95) < 1e-9


def test_diff_reports_where_the_choice_changes(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    old = DATA / "coverage-gap.yaml"
    new = tmp_path / "new.yaml"
    new.write_text(old.read_text().replace("frustration < 0.4", "frustration < 0.5"))
    assert main(["diff", str(old), str(new), "--exit-code"]) == 1
    out = capsys.readouterr().out
    assert "(fallback selector)  ->  probe" in out
    assert "0.4 <= frustration < 0.5 and hint_requests == 0" in out  # exact: 0.4 changes too
    assert main(["diff", str(old), str(old), "--exit-code"]) == 0


def test_switch_cycle_between_files_needs_progress(tmp_path: Path) -> None:
    base = (
        "pedrag: 1\ntheory: {{id: {id}, name: T}}\nmetrics:\n  frustration: {{type: float, range: [0, 1], source: inferred}}\n"
        'actions:\n  a: {{rung: H0, priority: 5, description: D.}}\nrules:\n  - {{id: r, when: "true", then: a}}\n'
        'adaptation:\n  switch:\n    - {{when: "{when}", to: {to}}}\n'
    )
    (tmp_path / "a.yaml").write_text(base.format(id="one", when="frustration >= 0.8", to="two"))
    (tmp_path / "b.yaml").write_text(base.format(id="two", when="frustration < 0.5", to="one"))
    assert not [
        d
        for d in check_paths([str(tmp_path)], CheckConfig()).diagnostics
        if d.check == "switch-graph"
    ]
    (tmp_path / "b.yaml").write_text(base.format(id="two", when="frustration >= 0.5", to="one"))
    found = [
        d
        for d in check_paths([str(tmp_path)], CheckConfig()).diagnostics
        if d.check == "switch-graph"
    ]
    assert len(found) == 1 and "one -> two -> one" in found[0].message
    assert found[0].witness == {"frustration": 0.8}


class _TimingOutSolver:
    """Stands in for a z3 solver that hits its timeout on every query."""

    def push(self) -> None: ...
    def pop(self) -> None: ...
    def add(self, *terms: object) -> None: ...

    def check(self, *assumptions: object) -> object:
        import z3

        return z3.unknown


def test_solver_timeout_is_reported_as_unknown_not_as_a_pass(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from pedrag.compiler import analysis as analysis_module
    from pedrag.compiler.checks import dead_rule

    monkeypatch.setattr(analysis_module, "_CACHE", {})
    loaded = load_text((DATA / "dead-rule.yaml").read_text(), "dead.yaml")
    analysis = Analysis(loaded.theory)  # type: ignore[arg-type]
    analysis.solver = _TimingOutSolver()  # type: ignore[assignment]
    found = list(dead_rule.run(analysis))
    assert found and all(d.data.get("result") == "unknown" for d in found)
    assert all(d.message.startswith("unknown:") for d in found)


def test_shipped_theories_check_without_errors() -> None:
    root = Path(__file__).resolve().parents[2] / "theories"
    result = check_paths([str(root)], CheckConfig())
    assert result.errors == 0, [
        (d.check, d.message) for d in result.diagnostics if d.severity.value == "error"
    ]
