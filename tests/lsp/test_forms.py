"""The published diagnostics' JSON forms kept between publishes (`LspForms`) are exactly what
converting every diagnostic afresh gives, after edits that keep, move and change findings."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from pedrag.lsp import checking

_GEN = Path(__file__).resolve().parents[2] / "benchmarks" / "theory_gen.py"
_spec = importlib.util.spec_from_file_location("theory_gen", _GEN)
assert _spec is not None and _spec.loader is not None
theory_gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(theory_gen)

URI = "file:///forms.yaml"


def _afresh(text: str, found: list[object]) -> list[object]:
    unstructure = checking.converter().unstructure
    return [unstructure(checking.to_lsp(text, d, URI, None)) for d in found]


def _notification(text: str, found: list[object]) -> object:
    """The publish notification as pygls's converter makes it from `to_lsp`'s objects."""
    from lsprotocol import types

    params = types.PublishDiagnosticsParams(
        uri=URI, version=4, diagnostics=[checking.to_lsp(text, d, URI, None) for d in found]
    )
    notification = types.PublishDiagnosticsNotification(params=params)
    return json.loads(json.dumps(checking.converter().unstructure(notification)))


def test_kept_forms_equal_forms_made_afresh_across_edits() -> None:
    text = theory_gen.generate(40, 5, "priority")
    edits = [
        text,
        theory_gen.one_rule_edit(text, "r3"),  # one rule's findings change
        "# a comment line moves every finding down\n" + theory_gen.one_rule_edit(text, "r3"),
        text.replace("frustration", "frustratio", 1),  # a front-end error: few findings
        text,
    ]
    forms = checking.LspForms()
    reused = 0
    for version in edits:
        found = checking.analyse(version, "forms.yaml", True, None)
        before = {id(entry[0]) for kept in forms.kept.values() for entry in kept.values()}
        converted = forms.convert(version, found, URI, None)
        assert converted == _afresh(version, found)
        assert json.loads(forms.notification(URI, 4, converted)) == _notification(version, found)
        reused += sum(id(form) in before for form in converted)
    assert reused > 0  # the kept forms were used, not only made


def test_a_non_ascii_line_counts_utf16_units() -> None:
    # A description before the condition puts code points that are two UTF-16 units each
    # (and one that is one) ahead of every finding's columns.
    text = theory_gen.generate(12, 1, "priority").replace(
        "  - {id: ", '  - {description: "é 𝛼𝛼", id: '
    )
    found = checking.analyse(text, "forms.yaml", True, None)
    assert found and all(d.span is not None for d in found if d.check == "conflict")
    converted = checking.LspForms().convert(text, found, URI, None)
    assert converted == _afresh(text, found)
    form, finding = next(
        (form, d) for form, d in zip(converted, found, strict=True) if d.check == "conflict"
    )
    assert form["range"]["start"]["line"] == finding.span.line - 1
    # Two astral code points before the span: each is two UTF-16 units.
    assert form["range"]["start"]["character"] == finding.span.column - 1 + 2
