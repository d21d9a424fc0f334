"""`pedrag graph`: metrics -> rules -> actions and the switch graph, as Mermaid or DOT."""

from __future__ import annotations

from pathlib import Path

import pytest

from pedrag.cli import main

ROOT = Path(__file__).resolve().parents[2]
SOCRATIC = str(ROOT / "theories" / "socratic.yaml")


def test_mermaid_has_metrics_rules_actions_and_switches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", SOCRATIC]) == 0
    out = capsys.readouterr().out
    assert out.startswith("flowchart LR\n")
    assert '"frustrated_learner"' in out and '"acknowledge_and_encourage H0"' in out
    assert '"frustration (inferred)"' in out
    assert '"frustration >= 0.8 and progress <= 0"' in out  # a switch edge label


def test_dot_output_and_determinism(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", SOCRATIC, "--format", "dot"]) == 0
    first = capsys.readouterr().out
    assert main(["graph", SOCRATIC, "--format", "dot"]) == 0
    assert capsys.readouterr().out == first
    assert first.startswith("digraph pedrag {") and first.rstrip().endswith("}")
    assert "->" in first


def test_switch_graph_across_a_folder(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", str(ROOT / "theories"), "--switches-only"]) == 0
    out = capsys.readouterr().out
    assert '"Socratic Learning Method"' in out and "subgraph" in out
    assert "metrics" not in out


def test_graph_bad_path_exits_2(tmp_path: Path) -> None:
    assert main(["graph", str(tmp_path / "nope.yaml")]) == 2
