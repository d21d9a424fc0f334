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
