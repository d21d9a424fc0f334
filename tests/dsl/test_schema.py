"""The JSON Schema editors use: shipped in the package, every key described (the same text as
docs/theory-format.md), rungs and sources as enums, the models' conditional requirements, and
the same verdict as the loader on shipped theories and broken files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from pedrag.cli import main
from pedrag.dsl.loader import load_text
from pedrag.dsl.schema import generated, shipped, shipped_file
from pedrag.dsl.schema_text import KEYS, RUNGS, SOURCES

ROOT = Path(__file__).resolve().parents[2]


def _validator(kind: str = "theory") -> jsonschema.Draft202012Validator:
    schema = json.loads(shipped(kind))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _valid(data: Any, kind: str = "theory") -> bool:
    return not list(_validator(kind).iter_errors(data))


def test_the_shipped_schema_is_what_the_models_generate() -> None:
    for kind in ("theory", "curriculum"):
        assert json.loads(shipped(kind)) == generated(kind)
        assert shipped_file(kind).is_file()


def test_pedrag_schema_prints_the_shipped_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["schema"]) == 0
    assert capsys.readouterr().out == shipped("theory")
    assert main(["schema", "--kind", "curriculum", "-o", str(tmp_path / "s" / "c.json")]) == 0
    assert (tmp_path / "s" / "c.json").read_text("utf-8") == shipped("curriculum")
    assert main(["schema", "--path"]) == 0
    assert Path(capsys.readouterr().out.strip()).read_text("utf-8") == shipped("theory")


def _properties(node: Any, where: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every property schema declared anywhere in the schema, with where it is."""
    found = []
    if isinstance(node, dict):
        for key, value in node.get("properties", {}).items():
            found.append((f"{where}.{key}", value))
        for key, value in node.items():
            if key not in ("if", "then", "else", "not", "allOf", "oneOf"):
                found.extend(_properties(value, f"{where}/{key}"))
    elif isinstance(node, list):
        for item in node:
            found.extend(_properties(item, where))
    return found


@pytest.mark.parametrize("kind", ["theory", "curriculum"])
def test_every_key_is_described(kind: str) -> None:
    schema = json.loads(shipped(kind))
    properties = _properties(schema)
    assert len(properties) >= (60 if kind == "theory" else 20)
    undescribed = [where for where, prop in properties if not prop.get("description")]
    assert undescribed == []


def test_rungs_and_sources_are_enums_with_descriptions() -> None:
    defs = json.loads(shipped("theory"))["$defs"]
    for rung in (
        defs["Action"]["properties"]["rung"],
        defs["Ceiling"]["properties"]["start"],
        defs["CeilingStep"]["properties"]["set"]["anyOf"][0],
    ):
        assert rung["enum"] == [f"H{n}" for n in range(8)]
        assert len(rung["enumDescriptions"]) == 8
    source = defs["Metric"]["properties"]["source"]
    assert source["enum"] == list(SOURCES) and len(source["enumDescriptions"]) == 5
    assert "pattern" not in json.dumps(defs["Action"]["properties"]["rung"])
    assert RUNGS["H7"] == "full solution"


METRIC = {"type": "float", "range": [0, 1], "source": "inferred"}


def _theory(**metric: Any) -> dict[str, Any]:
    return {
        "pedrag": 1,
        "theory": {"id": "t", "name": "T"},
        "metrics": {"m": metric},
        "actions": {"a": {"rung": "H0", "priority": 5, "description": "D."}},
        "rules": [{"id": "r", "when": "true", "then": "a"}],
    }


@pytest.mark.parametrize(
    ("metric", "valid"),
    [
        (METRIC, True),
        ({"type": "float", "source": "inferred"}, False),  # a float needs a range
        ({"type": "int", "range": [0, 5], "source": "observed"}, True),
        ({"type": "int", "range": [0, 2.5], "source": "observed"}, False),
        ({"type": "enum", "values": ["a", "b"], "source": "inferred"}, True),
        ({"type": "enum", "source": "inferred"}, False),
        ({"type": "enum", "values": [], "source": "inferred"}, False),
        ({"type": "enum", "values": ["a", "a"], "source": "inferred"}, False),
        ({"type": "enum", "values": ["a"], "range": [0, 1], "source": "inferred"}, False),
        ({"type": "float", "range": [0, 1], "values": ["a"], "source": "inferred"}, False),
        ({"type": "bool", "source": "trusted"}, True),
        ({"type": "bool", "range": [0, 1], "source": "trusted"}, False),
        ({"type": "float", "range": [-1, 1], "source": "computed"}, False),  # needs compute
        ({"type": "int", "range": [0, 3], "source": "computed", "compute": "count(true, 3)"}, True),
        ({**METRIC, "compute": "count(true, 3)"}, False),  # compute only on computed metrics
        ({**METRIC, "source": "guessed"}, False),
    ],
)
def test_metric_types_have_conditional_requirements(metric: dict[str, Any], valid: bool) -> None:
    data = _theory(**metric)
    assert _valid(data) is valid
    # The loader agrees (structure and the resolver's compute rules alike).
    text = yaml.safe_dump(data, sort_keys=False)
    loaded = load_text(text, "t.yaml")
    structural = [d for d in loaded.diagnostics if d.check in ("syntax-error", "type-error")]
    assert (not structural) is valid, [d.message for d in loaded.diagnostics]


@pytest.mark.parametrize(
    ("step", "valid"),
    [
        ({"when": "true", "set": "H0"}, True),
        ({"when": "true"}, False),
        ({"when": "true", "set": "H0", "at_most": "H2"}, False),
        ({"when": "true", "at_most": "H9"}, False),
    ],
)
def test_a_ceiling_step_takes_exactly_one_effect(step: dict[str, Any], valid: bool) -> None:
    data = {**_theory(**METRIC), "ceiling": {"start": "H4", "steps": [step]}}
    assert _valid(data) is valid


def test_an_invariant_takes_never_or_always() -> None:
    base = _theory(**METRIC)
    assert _valid({**base, "invariants": [{"id": "i", "never": "rung > H3"}]})
    assert not _valid({**base, "invariants": [{"id": "i"}]})
    assert not _valid({**base, "invariants": [{"id": "i", "never": "x", "always": "y"}]})


def _all_documents() -> list[Path]:
    return sorted((ROOT / "theories").glob("*.yaml")) + sorted(
        (ROOT / "tests" / "data" / "checks").glob("*.yaml")
    )


def _is_yaml(path: Path) -> bool:
    try:
        yaml.safe_load(path.read_text("utf-8"))
    except yaml.YAMLError:
        return False
    return True


def _documents() -> list[Path]:
    return [path for path in _all_documents() if _is_yaml(path)]


def test_every_shipped_theory_and_fixture_is_yaml() -> None:
    """The schema applies to every document below (none is skipped as "not YAML": a fixture
    PyYAML cannot read would hide a broken fixture, as a curriculum with an unquoted `?` did)."""
    assert [path.name for path in _all_documents() if not _is_yaml(path)] == []


@pytest.mark.parametrize("path", _documents(), ids=lambda p: p.name)
def test_schema_and_loader_agree_on_shipped_theories_and_fixtures(path: Path) -> None:
    text = path.read_text("utf-8")
    data = yaml.safe_load(text)
    kind = "curriculum" if isinstance(data, dict) and data.get("kind") == "curriculum" else "theory"
    loaded = load_text(text, path.name)
    structural = loaded.model is None and not any(
        d.check == "syntax-error" and d.message.startswith("YAML") for d in loaded.diagnostics
    )
    assert _valid(data, kind) is (not structural), [d.message for d in loaded.diagnostics]
    if path.parent.name == "theories":
        assert _valid(data, kind)


BROKEN = [
    ("range: [0, 1]", "range: [0, 1, 2]"),
    ("type: float", "type: floaty"),
    ("rung: H0", "rung: H9"),
    ("priority: 9", "priority: 11"),
    ("id: tiny", "id: Tiny"),
    ("start: H4", "start: H8"),
    ("then: encourage}", "then: encourage, weight: 0}"),
    ("then: encourage}", "then: encourage, colour: red}"),
]


@pytest.mark.parametrize(("old", "new"), BROKEN)
def test_broken_files_are_rejected_by_schema_and_loader_alike(old: str, new: str) -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    tiny = re.search(r"```yaml\n(# theories/tiny.yaml\n.*?)```", readme, re.DOTALL)
    assert tiny
    good = tiny.group(1)
    assert _valid(yaml.safe_load(good))
    assert old in good
    broken = good.replace(old, new, 1)
    assert not _valid(yaml.safe_load(broken))
    assert load_text(broken, "tiny.yaml").model is None


def test_the_key_tables_in_the_format_reference_say_what_the_schema_says() -> None:
    doc = (ROOT / "docs" / "theory-format.md").read_text("utf-8")
    for heading, model in (("## Top level", "Theory"), ("## Metrics", "Metric")):
        section = doc.split(heading, 1)[1].split("\n## ", 1)[0]
        rows = re.findall(r"^\| `(\w+)` \|.*\| ([^|]+) \|$", section, re.MULTILINE)
        assert {key: text.strip() for key, text in rows} == KEYS[model], model
