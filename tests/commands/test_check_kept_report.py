"""`pedrag check` keeps its whole report by what it is made of (`pedrag.compiler.kept_report`):
a re-check of unchanged inputs prints the kept report without loading the front end, and any
change to an input (a file's bytes, a file added to a folder, the configuration, an option)
gives the report a check without the cache gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pedrag.cli import main
from pedrag.compiler import analysis as analysis_module
from pedrag.compiler import driver
from pedrag.compiler.check_cache import MISSING
from pedrag.compiler.kept_front_ends import KeptFrontEnds
from tests.commands.test_check import THEORY as CONVENTIONS

ROOT = Path(__file__).resolve().parents[2]

THEORY = CONVENTIONS.replace("id: conventions", "id: kept")  # a dead rule, warnings

PROBE = """
import json, sys
from pedrag.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
loaded = sorted(m for m in sys.modules if m.startswith(("pedrag.dsl.loader", "pedrag.compiler.analysis", "pydantic", "yaml")))
print(json.dumps({"code": code, "loaded": loaded}), file=sys.stderr)
"""


def _probe(cache: Path, *args: str) -> tuple[int, list[str], str]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, "check", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PEDRAG_CACHE_DIR": str(cache)},
    )
    report = json.loads(result.stderr.strip().splitlines()[-1])
    return report["code"], report["loaded"], result.stdout


def test_an_unchanged_recheck_prints_the_kept_report_without_the_front_end(
    tmp_path: Path,
) -> None:
    path = tmp_path / "kept.yaml"
    path.write_text(THEORY, "utf-8")
    runs = [_probe(tmp_path / "cache", str(path), "--format", "json") for _ in range(3)]
    fresh = _probe(tmp_path / "cache", str(path), "--format", "json", "--no-cache")
    assert [(code, out) for code, _, out in runs] == [(fresh[0], fresh[2])] * 3
    assert fresh[0] == 1 and "dead-rule" in fresh[2]
    assert "pedrag.dsl.loader" in runs[1][1]  # the second check of the same bytes keeps it
    assert runs[2][1] == []  # the third reads it: no front end, no analysis, no YAML


def test_a_one_rule_edits_second_check_prints_the_kept_report_without_the_front_end(
    tmp_path: Path,
) -> None:
    """A one-rule edit's front end is spliced and kept (as its edit) at its first check, so
    its report says nothing waits to be kept: the second check reads the report alone (it
    imported the front end and pydantic to find the front end kept already)."""
    path = tmp_path / "kept.yaml"
    path.write_text(THEORY, "utf-8")
    for _ in range(2):  # seen, then kept whole
        _probe(tmp_path / "cache", str(path), "--format", "json")
    path.write_text(THEORY.replace("frustration >= 0.7", "frustration >= 0.6"), "utf-8")
    runs = [_probe(tmp_path / "cache", str(path), "--format", "json") for _ in range(2)]
    fresh = _probe(tmp_path / "cache", str(path), "--format", "json", "--no-cache")
    assert [(code, out) for code, _, out in runs] == [(fresh[0], fresh[2])] * 2
    assert "pedrag.dsl.loader" in runs[0][1]  # the edit itself is checked
    assert runs[1][1] == []  # its second check: no front end, no analysis, no YAML


def _report(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    analysis_module._CACHE.clear()  # as a fresh process: only the disk remembers
    status = main(["check", *argv])
    return status, capsys.readouterr().out


def test_every_input_of_a_kept_report_changes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "theories"
    folder.mkdir()
    path = folder / "kept.yaml"
    path.write_text(THEORY, "utf-8")
    monkeypatch.chdir(tmp_path)

    def same_as_uncached(*argv: str) -> tuple[int, str]:
        kept = [_report([*argv], capsys) for _ in range(3)]  # seen, kept, read back
        fresh = _report([*argv, "--no-cache"], capsys)
        assert kept == [fresh] * 3, argv
        return fresh

    first = same_as_uncached("theories", "--format", "json")
    assert list((Path(os.environ["PEDRAG_CACHE_DIR"]) / "check" / "reports").glob("*.pickle"))
    changes = []
    # An option.
    changes.append(same_as_uncached("theories", "--format", "json", "--ignore", "dead-rule"))
    changes.append(same_as_uncached("theories", "--format", "text", "--color", "never"))
    # The configuration the file uses, found upward from it.
    (tmp_path / "pyproject.toml").write_text('[tool.pedrag]\nignore = ["unused-action"]\n')
    changes.append(same_as_uncached("theories", "--format", "json"))
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pedrag]\nfail-on = "warning"\nignore = ["dead-rule"]\n'
    )
    changes.append(same_as_uncached("theories", "--format", "json"))
    (tmp_path / "pyproject.toml").unlink()
    # A file's bytes, and a file added to the folder checked.
    path.write_text(THEORY.replace("frustration >= 0.7", "frustration >= 0.6"), "utf-8")
    changes.append(same_as_uncached("theories", "--format", "json"))
    (folder / "other.yaml").write_text(THEORY.replace("id: kept", "id: other"), "utf-8")
    changes.append(same_as_uncached("theories", "--format", "json"))
    (folder / "notes.yaml").write_text("not: pedrag\n", "utf-8")  # skipped, and listed so
    changes.append(same_as_uncached("theories", "--format", "json"))
    # Back to the first inputs: the report kept for them.
    (folder / "other.yaml").unlink()
    (folder / "notes.yaml").unlink()
    path.write_text(THEORY, "utf-8")
    assert same_as_uncached("theories", "--format", "json") == first
    assert len(set([first, *changes])) == len(changes) + 1
    # Warnings alone pass, unless the configuration fails on them (the same findings).
    assert changes[0] == (0, changes[3][1]) and changes[3][0] == 1


def test_a_report_with_an_undecided_question_is_never_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "kept.yaml"
    path.write_text(THEORY, "utf-8")
    checked = []
    real = driver.check_paths

    def undecided(*args: object, **kwargs: object) -> driver.CheckResult:
        result = real(*args, **kwargs)  # type: ignore[arg-type]
        result.unsettled.append(str(path))  # as a solver timeout marks it
        checked.append(path)
        return result

    monkeypatch.setattr(driver, "check_paths", undecided)
    reports = [_report([str(path), "--format", "json"], capsys) for _ in range(4)]
    assert len(checked) == 4  # every check ran: none was read back
    assert reports == [reports[0]] * 4


def test_a_file_saved_while_it_is_checked_keeps_no_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "kept.yaml"
    saved = THEORY.replace("frustration >= 0.7", "frustration >= 0.6")
    checked = []
    real = driver.check_paths

    def saved_meanwhile(*args: object, **kwargs: object) -> driver.CheckResult:
        path.write_text(saved, "utf-8")  # the editor saves between the lookup and the check
        checked.append(path)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(driver, "check_paths", saved_meanwhile)
    for _ in range(4):
        path.write_text(THEORY, "utf-8")
        _report([str(path), "--format", "json"], capsys)
    assert len(checked) == 4  # the report of the saved bytes was never kept under the first's


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_a_damaged_kept_report_is_dropped_and_checked_again(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    damage: str,
) -> None:
    monkeypatch.setenv("PEDRAG_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "kept.yaml"
    path.write_text(THEORY, "utf-8")
    fresh = _report([str(path), "--format", "json", "--no-cache"], capsys)
    for _ in range(2):
        _report([str(path), "--format", "json"], capsys)
    (kept,) = (tmp_path / "cache" / "check" / "reports").glob("*.pickle")
    body = bytearray(kept.read_bytes())
    if damage == "flip":
        body[len(body) // 2] ^= 0x10  # inside the report's text
    else:
        del body[len(body) // 2 :]
    kept.write_bytes(bytes(body))
    assert _report([str(path), "--format", "json"], capsys) == fresh
    assert kept.exists()  # written again, whole
    assert _report([str(path), "--format", "json"], capsys) == fresh


def test_the_second_check_of_new_bytes_analyses_nothing_and_keeps_the_front_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first check of new bytes keeps their report at once, so the second reads it (it
    analysed everything again before, slower than the first); the second still keeps the
    front end, so an edit after it is spliced into that version, not loaded whole."""
    monkeypatch.setenv("PEDRAG_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "kept.yaml"
    analysed: list[str] = []
    whole: list[str] = []
    check_loaded, load_bytes = driver.check_loaded, driver.load_bytes

    def counting_check(*args: object, **kwargs: object) -> driver.CheckResult:
        analysed.append("check")
        return check_loaded(*args, **kwargs)  # type: ignore[arg-type]

    def counting_load(*args: object, **kwargs: object) -> object:
        whole.append("load")
        return load_bytes(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(driver, "check_loaded", counting_check)
    monkeypatch.setattr(driver, "load_bytes", counting_load)

    def counts(text: str) -> list[tuple[int, int]]:
        """(analyses, whole front ends) of three checks of `text`, each report the same as
        --no-cache's."""
        path.write_text(text, "utf-8")
        fresh = _report([str(path), "--format", "json", "--no-cache"], capsys)
        found = []
        for _ in range(3):
            analysed.clear()
            whole.clear()
            assert _report([str(path), "--format", "json"], capsys) == fresh
            found.append((len(analysed), len(whole)))
        return found

    # New file: the second check loads (and keeps) the front end, analyses nothing.
    assert counts(THEORY) == [(1, 1), (0, 1), (0, 0)]
    # A one-rule edit: spliced into the kept version, analysed once, then read back.
    first_edit = THEORY.replace("frustration >= 0.7", "frustration >= 0.6")
    assert counts(first_edit) == [(1, 0), (0, 0), (0, 0)]
    # An edit of another rule: spliced into the first edit's version, which the first edit's
    # second check kept (the original differs from it on two lines: not spliceable).
    second_edit = first_edit.replace("frustration < 0.2", "frustration < 0.3")
    assert counts(second_edit) == [(1, 0), (0, 0), (0, 0)]

    # The same bytes under other options: a new report, whose second check finds the front
    # end kept already and does not read it back (a 5,000-rule one takes 0.1 s to read).
    reads: list[str] = []
    read = KeptFrontEnds._front

    def counting_read(self: KeptFrontEnds, digest: str) -> object:
        found = read(self, digest)
        if found is not MISSING:
            reads.append("loaded")
        return found

    monkeypatch.setattr(KeptFrontEnds, "_front", counting_read)
    found = []
    for _ in range(2):
        analysed.clear()
        _report([str(path), "--format", "text", "--color", "never"], capsys)
        found.append((len(analysed), reads.count("loaded")))
    assert found == [(1, 1), (0, 1)]


def test_a_report_another_solver_version_made_is_not_read_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pedrag.compiler import code_version

    path = tmp_path / "kept.yaml"
    path.write_text(THEORY, "utf-8")
    checked = []
    real_check, real_version = driver.check_paths, code_version._installed_version
    solver = ["4.12.0.0"]

    def counted(*args: object, **kwargs: object) -> driver.CheckResult:
        checked.append(solver[0])
        return real_check(*args, **kwargs)  # type: ignore[arg-type]

    def installed(name: str) -> str:  # as if z3-solver were upgraded in place
        return f"z3_solver-{solver[0]}.dist-info" if name == "z3" else real_version(name)

    monkeypatch.setattr(driver, "check_paths", counted)
    monkeypatch.setattr(code_version, "_installed_version", installed)
    argv = [str(path), "--format", "json"]
    try:
        code_version.library_versions.cache_clear()
        first = [_report(argv, capsys) for _ in range(2)]
        solver[0] = "4.13.0.0"
        code_version.library_versions.cache_clear()  # a new process after the upgrade
        upgraded = [_report(argv, capsys) for _ in range(2)]
    finally:
        code_version.library_versions.cache_clear()
    assert checked == ["4.12.0.0", "4.13.0.0"]  # each solver's first check ran, then was read
    assert first == upgraded == [first[0]] * 2


def test_a_sarif_recheck_reads_the_kept_log_and_prints_what_an_uncached_check_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pedrag.commands import check as check_command

    (tmp_path / "kept.yaml").write_text(THEORY, "utf-8")
    monkeypatch.chdir(tmp_path)
    clock = ["2026-01-01T12:00:00Z"]
    monkeypatch.setattr(check_command, "_now", lambda: clock[0])
    checked = []
    real = driver.check_paths

    def counted(*args: object, **kwargs: object) -> driver.CheckResult:
        checked.append(True)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(driver, "check_paths", counted)
    argv = ["kept.yaml", "--format", "sarif"]
    kept = [_report(argv, capsys) for _ in range(3)]
    assert len(checked) == 1  # the second and third read the kept log
    status, uncached = _report([*argv, "--no-cache"], capsys)
    # Byte for byte, but for the flag the uncached check's command line records.
    assert uncached.count("--no-cache") == 2
    same_command = uncached.replace(',\n            "--no-cache"', "").replace(" --no-cache", "")
    assert kept == [(status, same_command)] * 3 and status == 1
    assert '"ruleId": "dead-rule"' in uncached

    # Read back, the invocation is the run's own: its command line and times.
    clock[0] = "2026-01-02T08:30:00Z"
    checked.clear()
    reordered = _report(["--format", "sarif", "kept.yaml"], capsys)
    assert checked == []  # the same options in another order: the same kept log
    (invocation,) = json.loads(reordered[1])["runs"][0]["invocations"]
    assert invocation["arguments"] == ["pedrag", "check", "--format", "sarif", "kept.yaml"]
    assert invocation["commandLine"] == "pedrag check --format sarif kept.yaml"
    assert invocation["startTimeUtc"] == invocation["endTimeUtc"] == clock[0]
    assert invocation["exitCode"] == 1


def test_a_check_raises_the_collectors_thresholds_and_restores_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc

    from pedrag.commands.check import COLLECTOR_THRESHOLDS

    monkeypatch.setenv("PEDRAG_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "kept.yaml"
    path.write_text(THEORY, "utf-8")
    during: list[tuple[int, int, int]] = []
    check_paths = driver.check_paths

    def watching(*args: object, **kwargs: object) -> driver.CheckResult:
        during.append(gc.get_threshold())
        return check_paths(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(driver, "check_paths", watching)
    before = gc.get_threshold()
    assert before != COLLECTOR_THRESHOLDS
    status, _ = _report([str(path), "--format", "json", "--no-cache"], capsys)
    assert status in (0, 1)
    assert during == [COLLECTOR_THRESHOLDS]
    assert gc.get_threshold() == before
