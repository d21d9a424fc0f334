"""`pedrag check`'s CI conventions, each through the CLI: output formats, check selection,
statistics, stdin, quiet, exit status, configuration found from each file, the pre-commit
hook and the GitHub Action."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pedrag.cli import main

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "checks"

# A dead rule (error), an unused action (warning) and a coverage gap (warning).
THEORY = """\
pedrag: 1
theory: {id: conventions, name: Conventions}
metrics:
  frustration: {type: float, range: [0, 1], source: inferred}
actions:
  encourage: {rung: H0, priority: 5, description: Encourage.}
  probe: {rung: H3, priority: 5, description: Probe.}
  spare: {rung: H1, priority: 5, description: Never used.}
rules:
  - {id: upset, when: "frustration >= 0.7", then: encourage}
  - {id: impossible, when: "frustration > 0.8 and frustration < 0.2", then: probe}
ceiling: {start: H4}
"""
WARNINGS_ONLY = THEORY.replace(
    '  - {id: impossible, when: "frustration > 0.8 and frustration < 0.2", then: probe}\n', ""
)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(argv)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def theory(tmp_path: Path) -> Path:
    path = tmp_path / "theories" / "conventions.yaml"
    path.parent.mkdir()
    path.write_text(THEORY, "utf-8")
    return path


def _checks(out: str) -> list[str]:
    return sorted(d["check"] for d in json.loads(out)["diagnostics"])


def test_format_github_prints_one_escaped_annotation_per_finding(
    theory: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = _run(["check", str(theory), "--format", "github"], capsys)
    assert status == 1
    lines = out.splitlines()
    assert len(lines) == 3 and all(line.startswith("::") for line in lines)
    dead = next(line for line in lines if "dead-rule" in line)
    assert dead.startswith(f"::error file={theory},line=11,col=")
    assert ",title=pedrag dead-rule::" in dead
    gap = next(line for line in lines if "coverage-gap" in line)
    assert gap.startswith("::warning ")
    assert "%0Ahelp: add a rule such as" in gap  # the help line, newline escaped
    assert "\n" not in gap


def test_select_ignore_and_extend_select_choose_checks_by_name(
    theory: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    everything = ["coverage-gap", "dead-rule", "unused-action"]
    assert _checks(_run(["check", str(theory), "--format", "json"], capsys)[1]) == everything
    status, out, _ = _run(
        ["check", str(theory), "--format", "json", "--select", "dead-rule"], capsys
    )
    assert (status, _checks(out)) == (1, ["dead-rule"])
    argv = ["check", str(theory), "--format", "json", "--select", "dead-rule"]
    out = _run([*argv, "--extend-select", "unused-action"], capsys)[1]
    assert _checks(out) == ["dead-rule", "unused-action"]
    status, out, _ = _run(
        ["check", str(theory), "--format", "json", "--ignore", "dead-rule,coverage-gap"], capsys
    )
    assert (status, _checks(out)) == (0, ["unused-action"])


def test_unknown_or_front_end_check_names_are_usage_errors(
    theory: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = _run(["check", str(theory), "--select", "dead-rules"], capsys)
    assert status == 2 and "did you mean `dead-rule`?" in err
    status, _, err = _run(["check", str(theory), "--ignore", "syntax-error"], capsys)
    assert status == 2 and "cannot ignore or downgrade `syntax-error`" in err


def test_front_end_findings_are_reported_whatever_is_selected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text(THEORY.replace("then: probe", "then: prob"), "utf-8")
    status, out, _ = _run(["check", str(path), "--format", "json", "--select", "dead-rule"], capsys)
    assert status == 1 and _checks(out) == ["unknown-name"]


def test_statistics_counts_findings_per_check(
    theory: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = _run(["check", str(theory), "--statistics"], capsys)
    assert status == 1
    rows = [line.split() for line in out.splitlines()]
    assert [row[:3] for row in rows] == [
        ["1", "coverage-gap", "warning"],
        ["1", "dead-rule", "error"],
        ["1", "unused-action", "warning"],
    ]
    assert "[*] 1 fixable with --fix" in out.splitlines()[0]
    out = _run(["check", str(theory), "--statistics", "--format", "json"], capsys)[1]
    assert {row["check"]: row["count"] for row in json.loads(out)} == {
        "coverage-gap": 1,
        "dead-rule": 1,
        "unused-action": 1,
    }


def test_stdin_is_checked_under_the_stdin_filename(
    theory: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (theory.parent.parent / "pyproject.toml").write_text('[tool.pedrag]\nignore = ["dead-rule"]\n')
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(THEORY.encode())))
    status, out, _ = _run(
        ["check", "-", "--stdin-filename", str(theory), "--format", "json"], capsys
    )
    report = json.loads(out)
    assert status == 0  # dead-rule ignored by the pyproject.toml found from the stdin filename
    assert report["files"] == [str(theory)]
    assert {d["file"] for d in report["diagnostics"]} == {str(theory)}
    assert "dead-rule" not in _checks(out)


def test_quiet_prints_the_findings_only(theory: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loud = _run(["check", str(theory)], capsys)[1]
    status, quiet, err = _run(["check", str(theory), "--quiet"], capsys)
    assert status == 1 and "checked 1 file" in loud and "checked 1 file" not in quiet
    assert "error[dead-rule]" in quiet and "warning[unused-action]" in quiet and not err


def test_exit_zero_and_fail_on_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "warnings.yaml"
    path.write_text(WARNINGS_ONLY, "utf-8")
    assert _run(["check", str(path)], capsys)[0] == 0
    assert _run(["check", str(path), "--fail-on", "warning"], capsys)[0] == 1
    assert _run(["check", str(path), "--fail-on", "warning", "--exit-zero"], capsys)[0] == 0
    path.write_text(THEORY, "utf-8")
    assert _run(["check", str(path), "--exit-zero"], capsys)[0] == 0
    (tmp_path / "pyproject.toml").write_text('[tool.pedrag]\nfail-on = "warning"\n')
    path.write_text(WARNINGS_ONLY, "utf-8")
    assert _run(["check", str(path)], capsys)[0] == 1


def test_config_is_found_from_each_file_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    strict, lenient = tmp_path / "strict", tmp_path / "lenient"
    for folder in (strict, lenient):
        (folder / "theories").mkdir(parents=True)
        text = THEORY.replace("id: conventions", f"id: {folder.name}")
        (folder / "theories" / "t.yaml").write_text(text, "utf-8")
    (lenient / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.pedrag]\nignore = ["dead-rule", "coverage-gap"]\n'
    )
    # A pyproject.toml without [tool.pedrag] closer to the file is passed over.
    (lenient / "theories" / "pyproject.toml").write_text('[project]\nname = "y"\n')
    argv = ["check", str(strict), str(lenient), "--format", "json"]
    results = []
    for cwd in (tmp_path, strict, lenient / "theories"):
        monkeypatch.chdir(cwd)
        status, out, _ = _run(argv, capsys)
        by_file: dict[str, list[str]] = {}
        for d in json.loads(out)["diagnostics"]:
            by_file.setdefault(Path(d["file"]).parent.parent.name, []).append(d["check"])
        results.append((status, {k: sorted(v) for k, v in by_file.items()}))
    assert results[0] == results[1] == results[2]
    assert results[0][1] == {
        "strict": ["coverage-gap", "dead-rule", "unused-action"],
        "lenient": ["unused-action"],
    }


def test_misspelt_config_key_is_an_error_with_a_suggestion(
    theory: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pyproject = theory.parent.parent / "pyproject.toml"
    pyproject.write_text('[tool.pedrag]\nselect = ["dead-rule"]\nigonre = ["coverage-gap"]\n')
    status, _, err = _run(["check", str(theory)], capsys)
    assert status == 2
    assert re.search(
        r"pyproject\.toml:3: unknown key `igonre` in \[tool\.pedrag\]; did you mean `ignore`\?", err
    )
    pyproject.write_text('[tool.pedrag]\nseverity = { dead-rul = "warning" }\n')
    status, _, err = _run(["check", str(theory)], capsys)
    assert status == 2 and "unknown check `dead-rul`; did you mean `dead-rule`?" in err


def _pedrag() -> str:
    return str(Path(sys.executable).with_name("pedrag"))


def test_pre_commit_hooks_run_pedrag_on_the_staged_files(tmp_path: Path) -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text("utf-8"))
    by_id = {hook["id"]: hook for hook in hooks}
    check = by_id["pedrag-check"]
    assert check["language"] == "python" and check["types"] == ["yaml"]
    # Every YAML file is passed (a theory in any folder is checked) ...
    assert all("files" not in hook for hook in hooks)
    assert by_id["pedrag-check-system"]["language"] == "system"  # the lighter entry
    assert by_id["pedrag-check-system"]["entry"] == check["entry"]
    # pre-commit runs `entry` followed by the staged file names.
    good = tmp_path / "lessons" / "good.yaml"
    good.parent.mkdir()
    good.write_text(WARNINGS_ONLY, "utf-8")
    bad = tmp_path / "bad.yaml"
    bad.write_text(THEORY, "utf-8")
    # ... and one that is not a pedrag file is skipped without error.
    workflow = tmp_path / ".github" / "workflows" / "ci.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text("name: ci\non: push\n", "utf-8")
    entry = check["entry"].split()
    entry[0] = _pedrag()
    passed = subprocess.run([*entry, str(good), str(workflow)], capture_output=True, text=True)
    assert passed.returncode == 0, passed.stdout
    failed = subprocess.run([*entry, str(good), str(bad)], capture_output=True, text=True)
    assert failed.returncode == 1 and "dead-rule" in failed.stdout
    fix = by_id["pedrag-check-fix"]["entry"].split()
    fix[0] = _pedrag()
    gap = tmp_path / "gap.yaml"
    gap.write_text((DATA / "coverage-gap.yaml").read_text("utf-8"), "utf-8")
    assert subprocess.run([*fix, str(gap)], capture_output=True).returncode == 0
    assert "fill_gap_1" in gap.read_text("utf-8")


def test_github_action_writes_sarif_and_annotations_and_fails_like_the_check(
    tmp_path: Path,
) -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    upload = next(
        s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif")
    )
    assert upload["with"]["sarif_file"] == "${{ inputs.sarif-file }}"
    assert "always()" in upload["if"]  # uploaded even when the check fails
    check = next(s for s in steps if s.get("id") == "check")
    (tmp_path / "theories").mkdir()
    (tmp_path / "theories" / "t.yaml").write_text(THEORY, "utf-8")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        # One argument per line: a path with a space stays one path; a user's `--format`
        # is dropped with a warning instead of colliding with the action's own.
        "PEDRAG_PATHS": "theories/\nmore theories/\n",
        "PEDRAG_ARGS": "--ignore\nunused-action\n--format\njson\n",
        "PEDRAG_SARIF": "out.sarif",
    }
    (tmp_path / "more theories").mkdir()
    run = subprocess.run(
        ["bash", "-e", "-c", check["run"]], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert run.returncode == 1, run.stderr
    sarif = json.loads((tmp_path / "out.sarif").read_text("utf-8"))
    results = sarif["runs"][0]["results"]
    assert sorted(r["ruleId"] for r in results) == ["coverage-gap", "dead-rule"]
    assert "::error file=theories/t.yaml,line=11" in run.stdout
    assert "::warning::pedrag action: dropped --format" in run.stdout
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache@"))
    assert cache["with"]["path"] == "~/.cache/pip"
    assert "fork" in upload["if"]  # a fork's read-only token cannot upload
    (tmp_path / "theories" / "t.yaml").write_text(WARNINGS_ONLY, "utf-8")
    run = subprocess.run(
        ["bash", "-e", "-c", check["run"]], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert "::warning file=theories/t.yaml" in run.stdout


def test_stdin_that_is_not_utf8_is_a_located_syntax_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = b"pedrag: 1\ntheory: {id: t, name: caf\xe9}\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw)))
    status, out, _ = _run(["check", "-", "--stdin-filename", "x.yaml"], capsys)
    assert status == 1
    assert "x.yaml:2:26: error[syntax-error] file is not UTF-8 text (byte 35: 0xe9)" in out


def test_a_closed_pipe_keeps_the_exit_status_of_the_findings(tmp_path: Path) -> None:
    """`pedrag check bad.yaml | head -1` under `pipefail`: the reader closes the pipe after a
    byte of a report larger than the pipe's buffer; the errors still make the status 1."""
    rules = "".join(
        f'  - {{id: r{i}, when: "frustraton >= 0.{i % 9 + 1}", then: encourage}}\n'
        for i in range(1500)
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text(THEORY.split("rules:\n")[0] + "rules:\n" + rules + "ceiling: {start: H4}\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "pedrag.cli", "check", str(bad), "--no-semantic", "--no-cache"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.read(1)
    process.stdout.close()
    error = process.stderr.read().decode()
    assert process.wait() == 1
    assert "Traceback" not in error and "Exception ignored" not in error


def test_fix_writes_through_a_symlink_and_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "store" / "gap.yaml"
    real.parent.mkdir()
    real.write_text((DATA / "coverage-gap.yaml").read_text("utf-8"), "utf-8")
    link = tmp_path / "theories" / "gap.yaml"
    link.parent.mkdir()
    link.symlink_to(real)
    assert main(["check", str(link), "--fix", "-q"]) == 0
    assert link.is_symlink() and link.resolve() == real
    assert "fill_gap_1" in real.read_text("utf-8")


def test_diff_on_a_file_with_front_end_errors_says_why_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text(THEORY.replace("then: probe", "then: prob"), "utf-8")
    status, out, err = _run(["check", str(path), "--diff"], capsys)
    assert (status, out) == (1, "")
    assert f"{path}: no fix offered: it has front-end errors" in err
    assert "(unknown-name)" in err
    assert path.read_text("utf-8") == THEORY.replace("then: probe", "then: prob")
    assert _run(["check", str(path), "--diff", "--exit-zero"], capsys)[0] == 0


def test_docs_url_sets_every_sarif_help_link_and_a_bad_one_is_a_usage_error(
    theory: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pyproject = theory.parent.parent / "pyproject.toml"
    pyproject.write_text('[tool.pedrag]\ndocs-url = "https://docs.example.org/pedrag"\n')
    _, out, _ = _run(["check", str(theory), "--format", "sarif"], capsys)
    rules = json.loads(out)["runs"][0]["tool"]["driver"]["rules"]
    assert {r["helpUri"] for r in rules} == {
        f"https://docs.example.org/pedrag/checks/{r['id']}/" for r in rules
    }
    pyproject.write_text('[tool.pedrag]\ndocs-url = "docs.example.org"\n')
    status, _, err = _run(["check", str(theory)], capsys)
    assert status == 2 and "docs-url must be an http(s) URL" in err


def test_skip_non_pedrag_skips_named_yaml_files_that_are_not_pedrag_files(
    theory: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workflow = theory.parent.parent / "ci.yml"
    workflow.write_text("name: ci\non: push\n", "utf-8")
    status, _, _ = _run(["check", str(workflow), "--format", "json"], capsys)
    assert status == 1  # named, so checked: "not a pedrag file"
    status, out, _ = _run(
        ["check", str(workflow), str(theory), "--skip-non-pedrag", "--format", "json"], capsys
    )
    report = json.loads(out)
    assert report["summary"]["skipped"] == [str(workflow)]
    assert "not a pedrag file" not in out and status == 1  # the theory's dead rule
    # A `files` glob claims a file without the `pedrag:` key.
    (theory.parent.parent / "pyproject.toml").write_text('[tool.pedrag]\nfiles = ["*.yml"]\n')
    status, out, _ = _run(["check", str(workflow), "--skip-non-pedrag", "--format", "json"], capsys)
    assert json.loads(out)["summary"]["skipped"] == [] and status == 1
