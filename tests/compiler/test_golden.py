"""Golden reports: each check's failing fixture, as text, JSON and SARIF.

`tests/data/checks/<check>.yaml` is the failing example of one check; its reports are stored
beside it. Regenerate after an intended change with `PEDRAG_REGEN_GOLDEN=1 pytest tests/compiler`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pedrag.compiler.checks import catalog
from pedrag.compiler.config import CheckConfig
from pedrag.compiler.driver import check_paths
from pedrag.compiler.reports.json_report import format_json
from pedrag.compiler.reports.sarif import format_sarif
from pedrag.compiler.reports.text import format_report

ROOT = Path(__file__).resolve().parents[2]
DATA = Path("tests/data/checks")
FIXTURES = sorted(p.stem for p in (ROOT / DATA).glob("*.yaml"))


def reports(name: str) -> dict[str, str]:
    path = str(DATA / f"{name}.yaml")
    result = check_paths([path], CheckConfig())
    files = [f.path for f in result.files]
    summary = result.summary()
    sources = {f.path: f.source for f in result.files}
    return {
        "txt": format_report(result.diagnostics, sources, len(files), summary) + "\n",
        "json": format_json(files, result.diagnostics, summary) + "\n",
        # The working directory's URI (originalUriBaseIds) differs per checkout.
        "sarif": format_sarif(result.diagnostics, sources).replace(
            ROOT.as_uri() + "/", "file:///ROOT/"
        )
        + "\n",
    }


def test_every_check_has_a_failing_fixture() -> None:
    assert set(FIXTURES) >= set(catalog())


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_reports_match_golden_files(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    produced = reports(name)
    for suffix, text in produced.items():
        golden = ROOT / DATA / f"{name}.{suffix}"
        if os.environ.get("PEDRAG_REGEN_GOLDEN"):
            golden.write_text(text, "utf-8")
        assert golden.read_text("utf-8") == text, (
            f"{golden} differs; regenerate with PEDRAG_REGEN_GOLDEN=1"
        )


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_fails_its_own_check(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = check_paths([str(DATA / f"{name}.yaml")], CheckConfig())
    assert name in {d.check for d in result.diagnostics}
