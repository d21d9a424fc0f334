"""Rename across a theory set (`pedrag.lsp.rename`) on the shipped theories: every place that
names the item changes, prose does not, and the renamed theory checks exactly as before."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from pedrag.compiler.driver import check_text
from pedrag.lsp.rename import RenameError, rename

THEORIES = Path(__file__).resolve().parents[2] / "theories"


def _apply(text: str, spots: list) -> str:  # type: ignore[type-arg]
    for spot in reversed(spots):
        text = text[: spot.start] + "zz_renamed" + text[spot.end :]
    return text


def _diagnostics(text: str) -> list[tuple[str, str]]:
    return sorted((d.check, d.message) for d in check_text(text, "t.yaml").diagnostics)


@pytest.mark.parametrize(
    ("theory", "kind", "name"),
    [
        ("socratic", "metric", "frustration"),
        ("socratic", "action", "leading_question"),
        ("direct_instruction", "action", "model_worked_example"),  # named by a writer too
    ],
)
def test_a_renamed_theory_checks_exactly_as_before(theory: str, kind: str, name: str) -> None:
    text = (THEORIES / f"{theory}.yaml").read_text("utf-8")
    renamed = _apply(text, rename({"t.yaml": text}, kind, name, "zz_renamed")["t.yaml"])
    assert _diagnostics(renamed) == _diagnostics(text)
    data = yaml.safe_load(renamed)
    named = [r["when"] for r in data["rules"]] + [r["then"] for r in data["rules"]]
    named += [i.get("never") or i.get("always") for i in data.get("invariants", [])]
    named += [s["when"] for s in data.get("ceiling", {}).get("steps", [])]
    named += [
        str(m.get("compute", "")) + str(m.get("writer", "")) for m in data["metrics"].values()
    ]
    named += list(data["metrics"]) + list(data["actions"])
    assert not [text for text in named if re.search(rf"(?<!\w){name}(?!\w)", str(text))]


def test_a_conventional_trusted_metric_is_not_renamed() -> None:
    text = (THEORIES / "srl.yaml").read_text("utf-8")
    with pytest.raises(RenameError, match="exam lockdown"):
        rename({"t.yaml": text}, "metric", "exam_active", "exam_on")
