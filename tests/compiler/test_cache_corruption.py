"""A damaged check cache changes nothing but time: every single-bit flip and truncation of
every cache file gives the report `--no-cache` gives, counts the damage, and is repaired.

Each trial starts from the same cache (a check, then two checks after a one-rule edit and
one after another, so the folder holds folded shards, a journal, the parsed and resolved
conditions, the set answers, lark's tables, a kept front end and an edit of it), damages one file, checks the edited theory as a fresh process would
(`analysis._CACHE` cleared: only the disk remembers) and compares the JSON report with the
uncached one byte for byte; then checks again, which must find the cache repaired.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from pedrag.cli import main
from pedrag.commands.check import CACHE_DAMAGE
from pedrag.compiler import analysis as analysis_module
from pedrag.compiler.check_cache import ENV_CACHE_DIR, CheckCache, Shard
from pedrag.compiler.config import CheckConfig
from pedrag.compiler.driver import check_paths
from pedrag.compiler.reports.json_report import format_json
from pedrag.dsl.lark_parse import _parser
from tests.compiler.test_check_cache import RULES, _theory

FLIPS = 4  # single-bit flips per file (seeded positions)


def _report(path: Path, cache: CheckCache) -> str:
    analysis_module._CACHE.clear()  # a fresh process: only the disk remembers
    result = check_paths([str(path)], CheckConfig(), cache=cache)
    summary = result.summary()
    return format_json([f.path for f in result.files], result.diagnostics, summary)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes], str]:
    root = tmp_path_factory.mktemp("corrupt")
    theory = root / "cached.yaml"
    folder = root / "cache"
    theory.write_text(_theory(RULES))
    # Well-formed conditions never reach lark (`dsl/fast_parse.py`): build the grammar's
    # tables afresh where a check keeps them, as a check of a condition lark reads would.
    _parser.cache_clear()
    conditions = CheckCache(folder).parsed_conditions()
    _parser()
    conditions.save()  # seals the tables with their checksum
    _report(theory, CheckCache(folder))
    edited = [*RULES[:-1], ("worn_out", "frustration + hints > 4 and hints >= 3", "probe")]
    theory.write_text(_theory(edited))
    for _ in range(2):  # the second check of the same bytes keeps its front end whole
        cache = CheckCache(folder)
        _report(theory, cache)
        assert cache.dropped == 0
    # A one-rule edit of that: kept as the edit (`fronts/*.edit`), at its first check.
    # (Its action: a changed condition would append a record of the same length to the
    # parsed conditions' journal, and truncating that journal in half would leave it whole.)
    text = _theory(edited)
    at = text.rindex("then: probe")
    theory.write_text(text[:at] + "then: hint" + text[at + len("then: probe") :])
    cache = CheckCache(folder)
    _report(theory, cache)
    assert cache.dropped == 0
    files = {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.stat().st_size
    }
    assert any(name.endswith(".journal") for name in files), sorted(files)
    assert any(name.endswith(".lark.sum") for name in files), sorted(files)
    assert any(name.startswith("fronts/") and name.endswith(".front") for name in files)
    assert any(name.startswith("fronts/") and name.endswith(".edit") for name in files)
    assert any(name.startswith("findings/") for name in files), sorted(files)
    return theory, files, _report(theory, CheckCache.disabled())


def _restore(folder: Path, files: dict[str, bytes]) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            path.unlink()
    for name, body in files.items():
        (folder / name).write_bytes(body)


def _damages(files: dict[str, bytes]) -> list[tuple[str, str, int]]:
    trials = []
    rng = random.Random(29)
    for name, body in files.items():
        for _ in range(FLIPS):
            trials.append((name, "flip", rng.randrange(len(body) * 8)))
        trials.append((name, "truncate", len(body) // 2))
        trials.append((name, "truncate", len(body) - 1))
    return trials


def test_every_damaged_cache_file_gives_the_uncached_report_and_is_repaired(
    prepared: tuple[Path, dict[str, bytes], str],
) -> None:
    theory, files, expected = prepared
    folder = theory.parent / "cache"
    trials = _damages(files)
    assert len(trials) == (FLIPS + 2) * len(files)  # every file flipped and truncated
    for name, kind, where in trials:
        _restore(folder, files)
        target = folder / name
        body = bytearray(files[name])
        if kind == "flip":
            body[where // 8] ^= 1 << (where % 8)
        else:
            del body[where:]
        target.write_bytes(bytes(body))
        if name.endswith((".pickle", ".journal")) and not name.startswith("fronts/"):
            # Detected when read (a check reads a shard only when it asks it something).
            shard = Shard(target.with_suffix(".pickle"))
            shard.raw  # noqa: B018
            assert shard.damage.dropped == 1, (name, kind, where)
        cache = CheckCache(folder)
        assert _report(theory, cache) == expected, (name, kind, where)
        # lark's tables and a whole front end kept (`fronts/`): verified every check
        if not name.endswith((".pickle", ".journal")) or name.startswith("fronts/"):
            assert cache.dropped == 1, (name, kind, where)
        again = CheckCache(folder)
        assert _report(theory, again) == expected, (name, kind, where)
        assert again.dropped == 0, (name, kind, where)


def test_statistics_count_the_damaged_records_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(ENV_CACHE_DIR, str(tmp_path / "cache"))
    theory = tmp_path / "t.yaml"
    theory.write_text(_theory(RULES))
    analysis_module._CACHE.clear()
    main(["check", str(theory), "--statistics"])
    clean = capsys.readouterr().out
    assert CACHE_DAMAGE not in clean
    for shard in (tmp_path / "cache" / "check").glob("*.pickle"):
        body = bytearray(shard.read_bytes())
        body[len(body) // 2] ^= 0x10
        shard.write_bytes(bytes(body))
    analysis_module._CACHE.clear()
    main(["check", str(theory), "--statistics", "--format", "json"])
    rows = json.loads(capsys.readouterr().out)
    (damage,) = [row for row in rows if row["check"] == CACHE_DAMAGE]
    assert damage["count"] >= 1
    assert [r for r in rows if r["check"] != CACHE_DAMAGE] == json.loads(
        _statistics_json(theory, capsys)
    )


def _statistics_json(theory: Path, capsys: pytest.CaptureFixture[str]) -> str:
    analysis_module._CACHE.clear()
    main(["check", str(theory), "--statistics", "--format", "json", "--no-cache"])
    return capsys.readouterr().out
