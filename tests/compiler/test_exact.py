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
from pathlib import Path

import pytest

from pedrag.compiler.config import CheckConfig
from pedrag.compiler.driver import check_paths
from pedrag.compiler.encode import Translator
from pedrag.compiler.reports.json_report import format_json
from pedrag.compiler.reports.text import format_report
from pedrag.dsl import ast
from pedrag.dsl.loader import load_file
from pedrag.runtime.theory_set import compile_theory

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
