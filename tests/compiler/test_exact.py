"""Exact, deterministic answers (issue 9): each shrunk wrong-answer case is a golden fixture.

`tests/data/exact/<case>.yaml` reproduces one case the differential test found; its text and
JSON reports are stored beside it. Regenerate after an intended change with
`PEDRAG_REGEN_GOLDEN=1 pytest tests/compiler/test_exact.py`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from pathlib import Path

import pytest

from pedrag.compiler.analysis import Analysis
from pedrag.compiler.config import CheckConfig
from pedrag.compiler.driver import check_paths
from pedrag.compiler.encode import Translator
from pedrag.compiler.measure import Measure
from pedrag.compiler.reports.json_report import format_json
from pedrag.compiler.reports.text import format_report
from pedrag.dsl import ast
from pedrag.dsl.loader import load_file, load_text
from pedrag.runtime.policy.theory_set import compile_theory

ROOT = Path(__file__).resolve().parents[2]
DATA = Path("tests/data/exact")
CASES = sorted(p.stem for p in (ROOT / DATA).glob("*.yaml"))


def reports(path: str) -> dict[str, str]:
    result = check_paths([path], CheckConfig())
    files = [f.path for f in result.files]
    summary = result.summary()
    sources = {f.path: f.source for f in result.files}
    return {
        "txt": format_report(result.diagnostics, sources, len(files), summary) + "\n",
        "json": format_json(files, result.diagnostics, summary) + "\n",
    }


@pytest.mark.parametrize("name", CASES)
def test_case_reports_match_golden_files(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    for suffix, text in reports(str(DATA / f"{name}.yaml")).items():
        golden = ROOT / DATA / f"{name}.{suffix}"
        if os.environ.get("PEDRAG_REGEN_GOLDEN"):
            golden.write_text(text, "utf-8")
        assert golden.read_text("utf-8") == text, (
            f"{golden} differs; regenerate with PEDRAG_REGEN_GOLDEN=1"
        )


def test_translating_dropped_temporaries_never_reuses_another_formula() -> None:
    # A chained comparison's links are built, translated and dropped; CPython then hands the
    # next link the same address. A cache keyed by `id()` gave it the old link's formula.
    theory = load_file(str(ROOT / DATA / "chained-empty.yaml")).theory
    assert theory is not None
    translator = Translator(theory)
    formulas = [
        translator.condition(ast.Compare((ast.MetricRef("a"), ast.Number(bound)), ("<",)))
        for bound in range(40)
    ]
    assert len(set(formulas)) == 40
    assert all(node.vars == {"a"} for node in formulas)


def test_an_empty_chained_comparison_is_dead_after_other_chains(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    result = check_paths([str(DATA / "chained-empty.yaml")], CheckConfig())
    assert [(d.check, d.items) for d in result.diagnostics] == [("dead-rule", ("rule:dead_a",))]


def _check_json(path: str, seed: int) -> bytes:
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    done = subprocess.run(
        [sys.executable, "-m", "pedrag.cli", "check", path, "--format", "json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr.decode()
    return done.stdout


def test_the_same_input_gives_byte_identical_json_in_20_fresh_processes() -> None:
    # Fresh processes differ in string hashing (PYTHONHASHSEED) and object addresses, the two
    # things a cache or an iteration order could silently depend on.
    path = str(DATA / "chained-many.yaml")
    with ThreadPoolExecutor(max_workers=4) as pool:
        outputs = list(pool.map(lambda seed: _check_json(path, seed), range(20)))
    assert b'"dead-rule"' in outputs[0]
    assert all(output == outputs[0] for output in outputs)


def _eligible_at(path: Path, witness: dict[str, object]) -> set[str]:
    theory = load_file(str(path)).theory
    assert theory is not None
    policy = compile_theory(theory)
    state = {k: v for k, v in witness.items() if k in policy.metrics}
    ceiling = policy.ceiling(state).rung
    return {policy.rules[i].id for i in policy.eligible([state], ceiling)}


@pytest.mark.parametrize("name", CASES)
def test_every_witness_is_the_state_the_runtime_sees(name: str) -> None:
    # Witnesses are rounded for display; the rounded state must still be a witness, and
    # `pedrag why` and the compiled policy must agree with the compiler there.
    path = ROOT / DATA / f"{name}.yaml"
    result = check_paths([str(path)], CheckConfig())
    for diagnostic in result.diagnostics:
        if diagnostic.witness is None:
            continue
        eligible = _eligible_at(path, diagnostic.witness)
        if diagnostic.check == "conflict":
            assert {item.removeprefix("rule:") for item in diagnostic.items} <= eligible
        if diagnostic.check == "coverage-gap":
            assert eligible == set()


def test_a_sliver_conflict_is_witnessed_inside_the_sliver() -> None:
    result = check_paths([str(ROOT / DATA / "sliver-witness.yaml")], CheckConfig())
    (conflict,) = [d for d in result.diagnostics if d.check == "conflict"]
    assert conflict.witness is not None
    assert 0.100000001 <= conflict.witness["g"] <= 0.100000002


def test_gap_regions_lie_on_the_uncovered_side_of_a_close_threshold() -> None:
    result = check_paths([str(ROOT / DATA / "close-threshold-gap.yaml")], CheckConfig())
    regions = [d.data["region"] for d in result.diagnostics if d.check == "coverage-gap"]
    assert regions == ["m0 == anxious", "m2 <= 0.099999997"]


def test_a_files_findings_do_not_depend_on_the_other_files_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    target = str(DATA / "close-threshold-gap.yaml")
    alone = check_paths([target], CheckConfig()).diagnostics
    others = [str(DATA / "chained-many.yaml"), "tests/data/checks/coverage-gap.yaml"]
    together = check_paths([*others, target], CheckConfig()).diagnostics
    assert [d for d in together if d.file == target] == alone


def _share(text: str) -> tuple[Fraction, Fraction]:
    theory = load_text(text, "m.yaml").theory
    assert theory is not None
    analysis = Analysis(theory)
    return Measure(analysis.domains, [analysis.any_eligible]).exact_share(analysis.any_eligible)


def _theory(metrics: str, when: str) -> str:
    return (
        "pedrag: 1\ntheory: {id: m, name: M}\nmetrics:\n"
        + metrics
        + "actions:\n  probe: {rung: H3, priority: 5, description: Probe.}\n"
        + f'rules:\n  - {{id: r, when: "{when}", then: probe}}\n'
    )


def test_a_linear_atom_over_a_wide_int_range_is_measured_exactly_without_enumerating() -> None:
    metrics = (
        "  a: {type: int, range: [0, 1000000000], source: trusted}\n"
        "  b: {type: int, range: [0, 10], source: trusted}\n"
    )
    # Uncovered: a + b <= 3, i.e. 4 + 3 + 2 + 1 = 10 of the 11 * (10^9 + 1) states.
    assert _share(_theory(metrics, "a + b > 3")) == (1 - Fraction(10, 11 * (10**9 + 1)), 0)


def test_two_wide_ints_and_a_float_in_one_atom_are_measured_exactly() -> None:
    metrics = (
        "  a: {type: int, range: [0, 1000000000], source: trusted}\n"
        "  c: {type: int, range: [0, 1000000000], source: trusted}\n"
        "  g: {type: float, range: [0, 1], source: inferred}\n"
    )
    # a - c >= 1 always holds it, a == c half the time, a < c never: exactly one half.
    assert _share(_theory(metrics, "a - c + g > 0.5")) == (Fraction(1, 2), 0)


def test_floats_in_a_linear_atom_are_measured_exactly() -> None:
    metrics = "".join(f"  {n}: {{type: float, range: [0, 1], source: inferred}}\n" for n in "pqr")
    # The corner simplex p + q + r > 2.5 has volume 0.5^3 / 6.
    assert _share(_theory(metrics, "p + q + r > 2.5")) == (Fraction(1, 48), 0)
    mixed = "  m3: {type: float, range: [-5, 5], source: inferred}\n"
    mixed += "  m4: {type: int, range: [0, 2], source: trusted}\n"
    # m4 = 0, 1, 2 leave 2.7, 3.7 and 4.7 of the 10 units of m3.
    assert _share(_theory(mixed, "m3 - m4 < -2.3")) == (Fraction(37, 100), 0)


def test_an_inexact_share_comes_with_an_error_bound_that_holds() -> None:
    metrics = "".join(f"  {n}: {{type: float, range: [0, 1], source: inferred}}\n" for n in "pqrs")
    share, error = _share(_theory(metrics, "p + q + r + s > 2.5"))
    truth = (Fraction(3, 2) ** 4 - 4 * Fraction(1, 2) ** 4) / 24  # Irwin-Hall, by symmetry
    assert 0 < error < Fraction(1, 100)
    assert abs(share - truth) <= error


def test_the_text_report_says_when_coverage_is_an_estimate(tmp_path: Path) -> None:
    metrics = "".join(f"  {n}: {{type: float, range: [0, 1], source: inferred}}\n" for n in "pqrs")
    path = tmp_path / "four.yaml"
    path.write_text(_theory(metrics, "p + q + r + s > 2.5"), "utf-8")
    text = reports(str(path))["txt"]
    assert "coverage 20.1% (estimate, not exact: within ±0.37%)" in text


def test_contradictory_enum_equalities_make_a_dead_rule(tmp_path: Path) -> None:
    # Box.get read an empty set of enum values as "unrestricted" (an empty frozenset is
    # falsy), so `m0 == calm and m0 == eager` was a live box and the rule was not dead.
    path = tmp_path / "enum.yaml"
    path.write_text(
        "pedrag: 1\ntheory: {id: enum_dead, name: Enum dead}\n"
        "metrics:\n  m0: {type: enum, values: [calm, eager], source: inferred}\n"
        "actions:\n  a0: {rung: H0, priority: 1, description: Do a0.}\n"
        "  a1: {rung: H0, priority: 1, description: Do a1.}\n"
        'rules:\n  - {id: r0, when: "m0 == calm and m0 == eager", then: a0}\n'
        '  - {id: r1, when: "true", then: a1}\nceiling: {start: H0}\n',
        "utf-8",
    )
    result = check_paths([str(path)], CheckConfig())
    assert [(d.check, d.items) for d in result.diagnostics] == [("dead-rule", ("rule:r0",))]
