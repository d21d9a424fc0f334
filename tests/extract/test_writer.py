"""The written theory file: the format's key order, defaults left out, comments kept."""

from __future__ import annotations

import yaml

from pedrag.dsl.loader import load_text
from pedrag.dsl.model import Action, Metric, Principle, Rule, Source
from pedrag.extract.merge import Draft
from pedrag.extract.writer import render_theory

DRAFT = Draft(
    metrics={"confusion": Metric(type="float", source="inferred", range=(0.0, 1.0), default=0.5)},
    metric_sources={"confusion": ["meno_c1"]},
    actions={
        "ask": Action(
            rung="H3", priority=7, description="Ask: what next?", tags=["probe"], source="meno_c1"
        )
    },
    rules=[
        Rule(id="confused", when="confusion >= 0.5", then="ask", weight=2, source="meno_c1"),
        Rule(id="calm", when="true", then="ask", source="meno_c1"),
    ],
    principles=[Principle(id="ask_first", text="Ask first.", source="meno_c1")],
)
SOURCES = [
    Source(id="meno_c1", title="meno.txt, chunk 1", document="meno.txt", page=1, locator="p. 1")
]


def test_rendered_theory_loads_cleanly_in_the_format_order() -> None:
    text = render_theory(DRAFT, "meno", "Meno", SOURCES, ["first line", "second: line"])

    loaded = load_text(text, "meno.yaml")
    assert loaded.ok, [d.message for d in loaded.diagnostics]
    data = yaml.safe_load(text)
    assert list(data) == ["pedrag", "theory", "selection", "metrics", "actions", "rules", "ceiling"]
    assert data["ceiling"] == {"start": "H4", "steps": []}  # never the missing-ceiling default
    assert list(data["theory"]) == ["id", "name", "principles", "sources"]
    assert list(data["metrics"]["confusion"]) == [
        "type",
        "range",
        "default",
        "source",
        "provenance",
    ]
    assert data["metrics"]["confusion"]["range"] == [0, 1]
    assert data["rules"][0]["weight"] == 2 and "weight" not in data["rules"][1]
    assert data["rules"][1]["when"] == "true"
    assert text.startswith("# first line\n# second: line\n\npedrag: 1\n")
    assert data["metrics"]["confusion"]["provenance"] == "meno_c1"
    assert "tags: [probe]" in text


def test_empty_draft_still_renders_a_file() -> None:
    data = yaml.safe_load(render_theory(Draft(), "empty", "Empty", []))

    assert data["metrics"] == {} and data["actions"] == {} and data["rules"] == []
