"""Extraction, last stage: a draft theory -> theory file text (YAML).

Takes the merged (and repaired) draft, the theory's id and name, its cited sources and the
lines of the header comment; gives the text of a theory file in the format's key order
(`pedrag`, `theory`, `selection`, `metrics`, `actions`, `rules`, `ceiling`; within items the order of
DESIGN's example), leaving out keys that hold their default — except `ceiling`, always written
(at the low default) so an extracted theory never runs on a ceiling nobody wrote. Because metrics cannot cite
sources under `source:` (that key is its trust category), each metric cites them under
`provenance:`. The repair loop
checks exactly this text, so line numbers in its diagnostics are those of the written file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from pedrag.dsl.model import DEFAULT_CEILING_START, Action, Metric, Principle, Rule, Source
from pedrag.extract.merge import Draft

_METRIC_KEYS = (
    "type",
    "range",
    "values",
    "default",
    "source",
    "description",
    "compute",
    "provenance",
)
_ACTION_KEYS = (
    "rung",
    "priority",
    "description",
    "guidance",
    "tags",
    "template",
    "conflicts",
    "source",
)
_RULE_KEYS = ("id", "when", "then", "weight", "priority", "description", "source")
_SOURCE_KEYS = ("id", "title", "document", "page", "locator", "author", "year")


def render_theory(
    draft: Draft,
    theory_id: str,
    name: str,
    sources: Sequence[Source],
    header: Sequence[str] = (),
    description: str | None = None,
) -> str:
    parts: list[str] = [_comment(line) for line in header]
    if parts:
        parts.append("")
    theory: dict[str, Any] = {"id": theory_id, "name": name}
    if description:
        theory["description"] = description
    if draft.principles:
        theory["principles"] = [principle_data(p) for p in draft.principles]
    if sources:
        theory["sources"] = [_ordered(s.model_dump(), _SOURCE_KEYS) for s in sources]
    parts.append(_dump({"pedrag": 1, "theory": theory, "selection": "weighted"}))
    parts.append("metrics:" + ("" if draft.metrics else " {}"))
    for metric_name, metric in draft.metrics.items():
        data = metric_data(metric)
        data.pop("provenance", None)  # the draft's chunk ids are the provenance, not the model's
        cited = draft.metric_sources.get(metric_name, [])
        if cited:
            data["provenance"] = cited[0] if len(cited) == 1 else list(cited)
        parts.append(_indent(_dump({metric_name: data})))
    parts.append(_dump({"actions": {n: action_data(a) for n, a in draft.actions.items()} or {}}))
    parts.append(_dump({"rules": [rule_data(r) for r in draft.rules]}))
    # Always written, at the format's low default: a corpus rarely states a ceiling, and a
    # theory file without one is the `missing-ceiling` finding. The designer adds the steps.
    parts.append("# The help ceiling: raise it with steps where the theory allows more help.")
    parts.append(_dump({"ceiling": {"start": DEFAULT_CEILING_START, "steps": []}}))
    return "\n".join(part.rstrip("\n") for part in parts) + "\n"


def metric_data(metric: Metric) -> dict[str, Any]:
    data = _ordered(metric.model_dump(exclude={"ignore"}), _METRIC_KEYS)
    if "range" in data:
        data["range"] = [_number(value) for value in data["range"]]
    if isinstance(data.get("default"), float):
        data["default"] = _number(data["default"])
    return data


def action_data(action: Action) -> dict[str, Any]:
    return _ordered(action.model_dump(exclude={"ignore"}), _ACTION_KEYS)


def rule_data(rule: Rule) -> dict[str, Any]:
    data = _ordered(rule.model_dump(exclude={"ignore"}), _RULE_KEYS)
    if data.get("weight") == 1:
        del data["weight"]
    elif "weight" in data:
        data["weight"] = _number(data["weight"])
    return data


def principle_data(principle: Principle) -> dict[str, Any]:
    return _ordered(principle.model_dump(), ("id", "text", "source"))


def _ordered(data: dict[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    return {key: data[key] for key in keys if data.get(key) not in (None, [], {})}


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)


class _Dumper(yaml.SafeDumper):
    """Block style, except lists of plain values (`range: [0, 1]`, `tags: [probe]`)."""


def _represent_list(dumper: yaml.SafeDumper, data: Any) -> yaml.Node:
    flow = all(isinstance(item, (str, int, float, bool)) for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(tuple, _represent_list)


def _dump(data: Any) -> str:
    return yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=100,
        default_flow_style=False,
    )


def _indent(text: str) -> str:
    return "\n".join("  " + line if line else line for line in text.rstrip("\n").split("\n"))


def _comment(line: str) -> str:
    return "\n".join(f"# {part}".rstrip() for part in str(line).split("\n"))
