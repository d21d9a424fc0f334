"""JSON Schema export of the file formats, generated from the pydantic models.

Front-end helper for editors. Takes the models (`dsl/model.py`) and the one description of
each key (`dsl/schema_text.py`); gives a JSON Schema (draft 2020-12) that yaml-language-server
and other editors use for completion, hover and validation: every key described, rungs and
metric sources as enums with a description per value, and the conditional requirements the
models check (a numeric metric needs `range`, an enum metric `values`, a bool neither; a
ceiling step takes one effect, an invariant one of `never`/`always`).

The generated schemas are shipped in the package (`pedrag/dsl/schemas/*.schema.json`, read
with `importlib.resources`; a test keeps them equal to what this module generates), so the
shipped theories' modeline `$schema=../dsl/schemas/theory.schema.json` resolves in a checkout
and in an installed package alike.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from pedrag.dsl.model import Curriculum, Theory
from pedrag.dsl.schema_text import KEYS, RUNGS, SOURCES

_RUNG_PATTERN = "^H[0-7]$"
KINDS = ("theory", "curriculum")


def _rung_enum(node: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "string",
        "enum": list(RUNGS),
        "enumDescriptions": [f"{rung}: {text}" for rung, text in RUNGS.items()],
        "markdownEnumDescriptions": [f"**{rung}**: {text}" for rung, text in RUNGS.items()],
        "description": node.get("description", "a rung of the hint ladder, H0..H7"),
    }


def _rewrite(node: Any) -> Any:
    """Rungs as enums (editors complete enums, not patterns), recursively."""
    if isinstance(node, dict):
        if node.get("pattern") == _RUNG_PATTERN:
            return _rung_enum(node)
        return {key: _rewrite(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_rewrite(item) for item in node]
    return node


def _describe(properties: dict[str, Any], model: str) -> None:
    for key, prop in properties.items():
        text = KEYS.get(model, {}).get(key)
        if text:
            prop["description"] = text
            prop["markdownDescription"] = text


def _metric_conditions(metric: dict[str, Any]) -> None:
    source = metric["properties"]["source"]
    source["enumDescriptions"] = [f"{name}: {text}" for name, text in SOURCES.items()]
    source["markdownEnumDescriptions"] = [f"**{name}**: {text}" for name, text in SOURCES.items()]
    assert source["enum"] == list(SOURCES), "SOURCES must list the model's sources in order"
    metric["allOf"] = [
        {
            "if": {"properties": {"type": {"enum": ["int", "float"]}}, "required": ["type"]},
            "then": {"required": ["range"], "not": {"required": ["values"]}},
        },
        {
            "if": {"properties": {"type": {"const": "enum"}}, "required": ["type"]},
            "then": {
                "required": ["values"],
                "properties": {"values": {"type": "array", "minItems": 1, "uniqueItems": True}},
                "not": {"required": ["range"]},
            },
        },
        {
            "if": {"properties": {"type": {"const": "bool"}}, "required": ["type"]},
            "then": {
                "allOf": [{"not": {"required": ["range"]}}, {"not": {"required": ["values"]}}]
            },
        },
        {
            "if": {"properties": {"type": {"const": "int"}}, "required": ["type"]},
            "then": {
                "properties": {"range": {"prefixItems": [{"type": "integer"}, {"type": "integer"}]}}
            },
        },
        {
            "if": {"properties": {"source": {"const": "computed"}}, "required": ["source"]},
            "then": {"required": ["compute"]},
            "else": {"not": {"required": ["compute"]}},
        },
    ]


def _one_of_keys(definition: dict[str, Any], keys: list[str]) -> None:
    """Exactly one of `keys` present (a ceiling step's effect, an invariant's kind)."""
    definition["oneOf"] = [
        {"required": [key], "not": {"anyOf": [{"required": [k]} for k in keys if k != key]}}
        for key in keys
    ]


def _schema(model: type[Theory] | type[Curriculum], title: str) -> dict[str, Any]:
    schema: dict[str, Any] = _rewrite(model.model_json_schema())
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = title
    _describe(schema["properties"], model.__name__)
    for name, definition in schema.get("$defs", {}).items():
        for shape in [definition, *definition.get("anyOf", ())]:  # a model or a bare string
            if "properties" in shape:
                _describe(shape["properties"], name)
    definitions = schema.get("$defs", {})
    if "Metric" in definitions:
        _metric_conditions(definitions["Metric"])
    if "CeilingStep" in definitions:
        _one_of_keys(definitions["CeilingStep"], ["at_most", "at_least", "set"])
    if "Invariant" in definitions:
        _one_of_keys(definitions["Invariant"], ["never", "always"])
    return schema


def theory_schema() -> dict[str, Any]:
    return _schema(Theory, "pedrag theory file, format version 1")


def curriculum_schema() -> dict[str, Any]:
    return _schema(Curriculum, "pedrag curriculum file, format version 1")


def generated(kind: str) -> dict[str, Any]:
    return theory_schema() if kind == "theory" else curriculum_schema()


def schema_text(schema: dict[str, Any]) -> str:
    """The schema as the shipped file holds it."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def shipped_file(kind: str) -> Any:
    """The shipped schema file of `kind` (an importlib.resources Traversable)."""
    return resources.files("pedrag.dsl").joinpath("schemas", f"{kind}.schema.json")


def shipped(kind: str) -> str:
    return str(shipped_file(kind).read_text("utf-8"))
