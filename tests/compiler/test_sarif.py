"""SARIF 2.1.0 output is structurally valid: what GitHub code scanning requires of every run,
rule and result, checked over every check's fixture and over awkward file names."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from pedrag.cli import main
from pedrag.compiler.config import CheckConfig
from pedrag.compiler.driver import check_paths
from pedrag.compiler.reports.sarif import artifact_uri, sarif_dict

DATA = Path(__file__).resolve().parents[1] / "data" / "checks"
LEVELS = {"none", "note", "warning", "error"}
# RFC 3986 URI-reference characters (unreserved, reserved, and percent escapes).
URI_REFERENCE = re.compile(r"^(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})+$")


def validate_sarif(log: dict[str, Any]) -> None:
    """The SARIF 2.1.0 requirements a consumer relies on; raises AssertionError on the first."""
    assert log["version"] == "2.1.0"
    assert isinstance(log.get("$schema"), str)
    assert isinstance(log["runs"], list) and log["runs"]
    for run in log["runs"]:
        driver = run["tool"]["driver"]
        assert isinstance(driver["name"], str) and driver["name"]
        rules = driver.get("rules", [])
        ids = [rule["id"] for rule in rules]
        assert len(ids) == len(set(ids)), "rule ids must be unique"
        for rule in rules:
            assert isinstance(rule["id"], str) and rule["id"]
            assert rule["shortDescription"]["text"]
            assert rule["defaultConfiguration"]["level"] in LEVELS
        assert run.get("columnKind", "utf16CodeUnits") in ("utf16CodeUnits", "unicodeCodePoints")
        for result in run["results"]:
            assert isinstance(result["message"]["text"], str) and result["message"]["text"]
            assert result.get("level", "warning") in LEVELS
            assert result["ruleId"] in ids
            if "ruleIndex" in result:
                assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
            locations = result["locations"]
            assert locations, "code scanning rejects a result without a location"
            for location in locations:
                physical = location["physicalLocation"]
                uri = physical["artifactLocation"]["uri"]
                assert URI_REFERENCE.match(uri), f"not a URI reference: {uri!r}"
                region = physical["region"]
                assert isinstance(region["startLine"], int) and region["startLine"] >= 1
                assert region.get("startColumn", 1) >= 1
                assert region.get("endLine", region["startLine"]) >= region["startLine"]
                if region.get("endLine", region["startLine"]) == region["startLine"]:
                    assert region.get("endColumn", 2) > region.get("startColumn", 1)


@pytest.mark.parametrize("fixture", sorted(p.name for p in DATA.glob("*.yaml")))
def test_every_fixture_gives_valid_sarif(fixture: str) -> None:
    result = check_paths([str(DATA / fixture)], CheckConfig())
    assert result.diagnostics
    validate_sarif(sarif_dict(result.diagnostics))


def test_awkward_files_give_valid_sarif_with_encoded_uris(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "my theories"
    folder.mkdir()
    shutil.copy(DATA / "dead-rule.yaml", folder / "thé orie #1.yaml")
    (folder / "latin1.yaml").write_bytes(b"pedrag: 1\ntheory: {id: t, name: caf\xe9}\n")
    (folder / "empty.yaml").write_text("pedrag: 1\n")
    (folder / "crlf.yaml").write_bytes(
        (DATA / "type-error.yaml").read_bytes().replace(b"\n", b"\r\n")
    )
    monkeypatch.chdir(tmp_path)
    assert main(["check", "my theories", "--format", "sarif"]) == 1
    log = json.loads(capsys.readouterr().out)
    validate_sarif(log)
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in log["runs"][0]["results"]
    }
    assert "my%20theories/th%C3%A9%20orie%20%231.yaml" in uris
    assert "my%20theories/latin1.yaml" in uris
    latin1 = next(r for r in log["runs"][0]["results"] if "latin1" in str(r["locations"]))
    assert latin1["locations"][0]["physicalLocation"]["region"]["startLine"] == 2


def test_artifact_uris_are_relative_under_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert artifact_uri(str(tmp_path / "a b.yaml")) == "a%20b.yaml"
    assert artifact_uri("sub/x.yaml") == "sub/x.yaml"
    outside = artifact_uri("/elsewhere/x.yaml")
    assert outside == "file:///elsewhere/x.yaml"


# -- against the official schema ----------------------------------------------------------------

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "data" / "sarif" / "sarif-schema-2.1.0.json"


def _official_validator() -> Any:
    import jsonschema

    schema = json.loads(SCHEMA_FILE.read_text("utf-8"))
    assert schema["id"].endswith("/sarif-schema-2.1.0.json")  # OASIS 2.1.0 (errata 01)
    return jsonschema.Draft4Validator(schema)


def _sarif_of(paths: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    status = main(["check", *paths, "--format", "sarif"])
    return status, json.loads(capsys.readouterr().out)


def test_sarif_of_every_fixture_validates_against_the_official_schema(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(DATA.parents[2])
    validator = _official_validator()
    for fixture in sorted(DATA.glob("*.yaml")):
        status, log = _sarif_of([str(fixture.relative_to(DATA.parents[2]))], capsys)
        errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
        assert not errors, f"{fixture.name}: {errors[0].message} at {list(errors[0].path)}"
        validate_sarif(log)
        (invocation,) = log["runs"][0]["invocations"]
        assert invocation["exitCode"] == status and invocation["executionSuccessful"]
        assert invocation["arguments"][:2] == ["pedrag", "check"]


def test_the_validator_rejects_what_the_schema_forbids() -> None:
    validator = _official_validator()
    result = check_paths([str(DATA / "conflict.yaml")], CheckConfig())
    log = sarif_dict(result.diagnostics)
    log["runs"][0]["results"][0]["level"] = "fatal"
    assert list(validator.iter_errors(log))


def test_locations_are_relative_to_a_declared_base_with_related_locations(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = DATA.parents[2]
    monkeypatch.chdir(root)
    _, log = _sarif_of(["tests/data/checks/conflict.yaml"], capsys)
    run = log["runs"][0]
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == root.as_uri() + "/"
    (result,) = [r for r in run["results"] if r["ruleId"] == "conflict"]
    location = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "tests/data/checks/conflict.yaml", "uriBaseId": "SRCROOT"}
    (related,) = result["relatedLocations"]
    first_rule = result["message"]["text"].split("`")[1]
    source = (DATA / "conflict.yaml").read_text("utf-8").splitlines()
    line = source[related["physicalLocation"]["region"]["startLine"] - 1]
    assert f"id: {first_rule}" in line  # the conflict's other rule
    assert related["message"]["text"].startswith("related: `")
    rules = run["tool"]["driver"]["rules"]
    assert all(rule["helpUri"].startswith("https://") for rule in rules)
    assert {rule["id"] for rule in rules if rule["helpUri"].endswith("/checks/conflict/")} == {
        "conflict"
    }


def _whitespace_edit(text: str) -> str:
    """The same document, re-spaced: blank lines, wider flow mappings, trailing spaces."""
    out = []
    for line in text.splitlines():
        out.append("")
        out.append(line.replace(", ", ",   ").replace(": ", ":  ").rstrip() + "   ")
    return "\n".join(out) + "\n\n"


@pytest.mark.parametrize("fixture", ["conflict", "dead-rule", "unknown-name", "coverage-gap"])
def test_fingerprints_survive_a_whitespace_only_edit(
    fixture: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "t.yaml"
    original = (DATA / f"{fixture}.yaml").read_text("utf-8")

    def fingerprints() -> list[tuple[str, str, int]]:
        _, log = _sarif_of(["t.yaml"], capsys)
        return sorted(
            (
                r["ruleId"],
                r["partialFingerprints"]["pedragFinding/v1"],
                r["locations"][0]["physicalLocation"]["region"]["startLine"],
            )
            for r in log["runs"][0]["results"]
        )

    path.write_text(original, "utf-8")
    before = fingerprints()
    path.write_text(_whitespace_edit(original), "utf-8")
    after = fingerprints()
    assert [b[:2] for b in before] == sorted(a[:2] for a in after)
    assert [b[2] for b in before] != [a[2] for a in after]  # the findings did move
    # A real edit (the rules renamed) gives the findings about them new fingerprints.
    renamed_text = re.sub(r"(- \{?id: )(\w+)", r"\1\2_renamed", original)
    assert renamed_text != original
    path.write_text(renamed_text, "utf-8")
    renamed = fingerprints()
    if fixture != "coverage-gap":  # a gap is about the theory, not about one rule
        assert {b[1] for b in before} != {r[1] for r in renamed}
