"""What a theory document declares, from its YAML alone (even when it does not validate).

Language server stage. Takes a document's text; gives its `Index` (metrics, actions, rules and
where each is declared, and its outline: metrics, actions, rules, ceiling steps), for hover,
completion, definition, references, document symbols and rename.
Why: the editor needs the names while the file is broken, before the front end accepts it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Symbol:
    """One entry of the document's outline: a section (metrics, actions, rules, ceiling) or
    an item in it, with the offsets of all of it and of its name."""

    name: str
    kind: str  # "section" | "metric" | "action" | "rule" | "ceiling step"
    detail: str
    whole: tuple[int, int]
    selection: tuple[int, int]
    children: list[Symbol] = field(default_factory=list)


@dataclass
class Index:
    """Names a theory file declares and where, from its YAML (even when it does not validate)."""

    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    actions: dict[str, dict[str, Any]] = field(default_factory=dict)
    rules: dict[str, dict[str, Any]] = field(default_factory=dict)
    definitions: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> offsets
    symbols: list[Symbol] = field(default_factory=list)  # the outline, section by section


def build_index(text: str, path: str) -> Index | None:
    from pedrag.dsl.spans import SourceText
    from pedrag.dsl.yaml_source import YamlError, load_yaml

    try:
        data, positions = load_yaml(SourceText(path, text))
    except YamlError:
        return None
    if not isinstance(data, dict):
        return None
    index = Index()
    for section, table in (("metrics", index.metrics), ("actions", index.actions)):
        declared = data.get(section)
        if isinstance(declared, dict):
            for name, value in declared.items():
                table[str(name)] = value if isinstance(value, dict) else {}
                where = positions.keys.get((section, name))
                if where:
                    index.definitions.setdefault(str(name), where)
    rules = data.get("rules")
    if isinstance(rules, list):
        for number, rule in enumerate(rules):
            if isinstance(rule, dict) and isinstance(rule.get("id"), str):
                index.rules[rule["id"]] = rule
                where = positions.values.get(("rules", number, "id"))
                if where:
                    index.definitions.setdefault(rule["id"], where)
    index.symbols = _outline(data, positions)
    return index


def _span(positions: Any, path: tuple[Any, ...]) -> tuple[int, int] | None:
    value = positions.values.get(path)
    key = positions.keys.get(path)
    if value is None:
        return key
    return (min(key[0], value[0]), value[1]) if key else value


def _outline(data: dict[str, Any], positions: Any) -> list[Symbol]:
    """Metrics, actions, rules and ceiling steps, each section with its items."""
    sections: list[Symbol] = []

    def section(name: str, path: tuple[Any, ...], children: list[Symbol]) -> None:
        whole = _span(positions, path)
        if whole is not None and children:
            selection = positions.keys.get(path, whole)
            sections.append(Symbol(name, "section", "", whole, selection, children))

    for name, kind in (("metrics", "metric"), ("actions", "action")):
        table = data.get(name)
        children = []
        if isinstance(table, dict):
            for item, value in table.items():
                whole = _span(positions, (name, item))
                if whole is None:
                    continue
                value = value if isinstance(value, dict) else {}
                if kind == "metric":
                    detail = f"{value.get('type', '?')} ({value.get('source', '?')})"
                else:
                    detail = f"{value.get('rung', '?')}, priority {value.get('priority', '?')}"
                selection = positions.keys.get((name, item), whole)
                children.append(Symbol(str(item), kind, detail, whole, selection))
        section(name, (name,), children)
    rules = data.get("rules")
    children = []
    for number, rule in enumerate(rules if isinstance(rules, list) else []):
        whole = _span(positions, ("rules", number))
        if whole is None or not isinstance(rule, dict):
            continue
        name = str(rule.get("id", f"rule {number + 1}"))
        selection = positions.values.get(("rules", number, "id"), whole)
        detail = f"{rule.get('when', '')} -> {rule.get('then', '?')}"
        children.append(Symbol(name, "rule", detail, whole, selection))
    section("rules", ("rules",), children)
    ceiling = data.get("ceiling")
    steps = ceiling.get("steps") if isinstance(ceiling, dict) else None
    children = []
    for number, step in enumerate(steps if isinstance(steps, list) else []):
        whole = _span(positions, ("ceiling", "steps", number))
        if whole is None or not isinstance(step, dict):
            continue
        effect = next((k for k in ("set", "at_most", "at_least") if k in step), "?")
        name = f"step {number + 1}: {effect} {step.get(effect, '?')}"
        children.append(Symbol(name, "ceiling step", str(step.get("when", "")), whole, whole))
    section("ceiling", ("ceiling",), children)
    return sections
