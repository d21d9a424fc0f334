"""The check driver: which files a folder yields, set-level ids, and `ignore:` at every scope."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pedrag.cli import main
from pedrag.compiler.config import CheckConfig, ConfigError, load_config
from pedrag.compiler.driver import check_paths

THEORY = """\
pedrag: 1
theory: {{id: {id}, name: T}}
{top}metrics:
  f: {{type: float, range: [0, 1], source: inferred}}
  g: {{type: float, range: [0, 1], source: inferred{metric_extra}}}
actions:
  a: {{rung: H0, priority: 5, description: A.}}
  b: {{rung: H0, priority: 5, description: B.{action_extra}}}
rules:
  - {{id: r1, when: "f >= 0.5", then: a}}
  - {{id: r2, when: "f >= 0.2 and f < 0.1", then: a{rule_extra}}}
"""


def theory(
    id: str = "t",
    top: str = "",
    metric_extra: str = "",
    action_extra: str = "",
    rule_extra: str = "",
) -> str:
    return THEORY.format(
        id=id,
        top=top,
        metric_extra=metric_extra,
        action_extra=action_extra,
        rule_extra=rule_extra,
    )


def checks(path: Path, config: CheckConfig | None = None) -> list[tuple[str, str, int]]:
    result = check_paths([str(path)], config or CheckConfig())
    return [
        (d.check, Path(d.file or "").name, d.span.line if d.span else 0) for d in result.diagnostics
    ]


def test_a_folder_skips_yaml_files_that_are_not_pedrag_documents(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(theory())
    (tmp_path / "docker-compose.yml").write_text("version: '3'\nservices: {web: {image: x}}\n")
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text("name: CI\non: [push]\n")
    (tmp_path / "FLOW.YAML").write_text("{pedrag: 1, kind: curriculum, id: c, goals: []}\n")
    result = check_paths([str(tmp_path)], CheckConfig())
    assert sorted(Path(f.path).name for f in result.files) == ["FLOW.YAML", "t.yaml"]
    assert [Path(p).name for p in result.skipped] == ["docker-compose.yml"]
    assert result.summary()["skipped"] == result.skipped


def test_the_text_report_lists_skipped_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "t.yaml").write_text(theory().replace("f >= 0.2 and f < 0.1", "f < 0.5"))
    (tmp_path / "compose.yaml").write_text("services: {}\n")
    main(["check", str(tmp_path), "--color", "never"])
    out = capsys.readouterr().out
    assert "skipped 1 YAML file without a top-level `pedrag:` key" in out
    assert "compose.yaml" in out


def test_a_named_non_pedrag_file_gets_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "ci.yml"
    path.write_text("name: CI\non: [push]\njobs: {}\n")
    result = check_paths([str(path)], CheckConfig())
    assert [(d.check, d.span.line if d.span else 0) for d in result.diagnostics] == [
        ("syntax-error", 1)
    ]
    assert "not a pedrag file" in result.diagnostics[0].message


def test_duplicate_theory_ids_across_a_set_are_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(theory(id="same"))
    (tmp_path / "b.yaml").write_text(theory(id="same"))
    for semantic in (True, False):
        result = check_paths([str(tmp_path)], CheckConfig(), semantic=semantic)
        found = [d for d in result.diagnostics if d.check == "duplicate-id"]
        assert len(found) == 1
        assert found[0].file is not None and found[0].file.endswith("b.yaml")
        assert (found[0].span.line, found[0].span.column) == (2, 14)  # type: ignore[union-attr]
        assert "a.yaml:2:14" in found[0].message


def test_duplicate_curriculum_ids_across_a_set_are_an_error(tmp_path: Path) -> None:
    text = "pedrag: 1\nkind: curriculum\nid: intro\ngoals: [{id: g, domain: d, topic: t}]\n"
    (tmp_path / "a.yaml").write_text(text)
    (tmp_path / "b.yaml").write_text(text)
    found = [c for c in checks(tmp_path) if c[0] == "duplicate-id"]
    assert found == [("duplicate-id", "b.yaml", 3)]


def test_file_level_ignore_silences_whole_theory_findings(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(theory())
    assert {c[0] for c in checks(path)} >= {"coverage-gap", "unused-metric", "dead-rule"}
    path.write_text(theory(top="ignore: [coverage-gap, unused-metric]\n"))
    assert {c[0] for c in checks(path)} == {"dead-rule", "unused-action", "missing-ceiling"}


def test_item_level_ignore_silences_findings_about_that_item_only(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        theory(
            metric_extra=", ignore: [unused-metric]",
            action_extra=", ignore: [unused-action]",
            rule_extra=", ignore: [dead-rule]",
        )
    )
    assert {c[0] for c in checks(path)} == {"coverage-gap", "missing-ceiling"}


def test_ignore_lists_naming_unknown_or_front_end_checks_are_errors(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        theory(top="ignore: [coverage_gap, type-error]\n", rule_extra=", ignore: [dead]")
    )
    result = check_paths([str(path)], CheckConfig())
    found = {(d.check, d.span.line, d.span.column, d.help) for d in result.diagnostics if d.span}
    assert ("unknown-name", 3, 10, "did you mean `coverage-gap`?") in found
    assert any(f[:3] == ("type-error", 3, 24) for f in found)
    assert any(f[0] == "unknown-name" and f[1] == 12 for f in found)
    assert result.errors >= 3


def test_front_end_errors_cannot_be_ignored_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(theory(top="ignore: [type-error]\n").replace('"f >= 0.5"', '"f >= 2"'))
    result = check_paths([str(path)], CheckConfig())
    assert any(
        d.check == "type-error" and "outside the range" in d.message for d in result.diagnostics
    )


@pytest.mark.parametrize(
    "toml",
    ['ignore = ["trust-boundary"]', 'severity = { syntax-error = "warning" }'],
)
def test_pyproject_cannot_ignore_or_downgrade_front_end_checks(tmp_path: Path, toml: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.pedrag]\n{toml}\n")
    with pytest.raises(ConfigError, match="cannot ignore or downgrade"):
        load_config(tmp_path)


def test_pyproject_ignores_and_severities_apply(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent(
            """\
            [tool.pedrag]
            ignore = ["unused-metric"]
            severity = { coverage-gap = "error", type-error = "error" }
            """
        )
    )
    config = load_config(tmp_path)
    path = tmp_path / "t.yaml"
    path.write_text(theory())
    result = check_paths([str(path)], config)
    assert not any(d.check == "unused-metric" for d in result.diagnostics)
    assert all(d.severity.value == "error" for d in result.diagnostics if d.check == "coverage-gap")


def test_progress_names_every_semantic_check_of_every_theory() -> None:
    from pedrag.compiler.checks import catalog
    from pedrag.compiler.driver import check_paths

    seen: list[str] = []
    check_paths(["tests/data/checks/dead-rule.yaml"], progress=seen.append)
    semantic = [c.info.name for c in catalog().values() if c.info.stage == "semantic"]
    assert [s.split(": ")[1].split(" (")[0] for s in seen] == semantic
    assert all(s.startswith("tests/data/checks/dead-rule.yaml: ") for s in seen)
