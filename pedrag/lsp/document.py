"""What a theory document declares, from its YAML alone (even when it does not validate).

Language server stage. Takes a document's text; gives its `Index` (metrics, actions, rules and
where each is declared), for hover, completion, definition, references, symbols and rename.
Why: the editor needs the names while the file is broken, before the front end accepts it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Index:
    """Names a theory file declares and where, from its YAML (even when it does not validate)."""

    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    actions: dict[str, dict[str, Any]] = field(default_factory=dict)
    rules: dict[str, dict[str, Any]] = field(default_factory=dict)
    definitions: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> offsets


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
    return index
