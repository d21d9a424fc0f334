"""The on-disk check cache: a second check reuses answers, an edit re-asks only what changed,
and a damaged or disabled cache changes nothing but time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from pedrag.compiler import analysis as analysis_module
from pedrag.compiler.analysis import Analysis
from pedrag.compiler.check_cache import ENV_CACHE_DIR, MISSING, CheckCache, Shard, default_folder
from pedrag.compiler.checks import catalog
from pedrag.dsl.loader import load_text

ROOT = Path(__file__).resolve().parents[2]
SOCRATIC = ROOT / "theories" / "socratic.yaml"

RULES = [
    ("calm", "frustration < 0.3 and hints <= 2", "probe"),
    ("tense", "frustration >= 0.6", "encourage"),
    ("very_tense", "frustration >= 0.8 and hints >= 1", "encourage"),
    ("stuck", "hints >= 3 and (affect == confused or frustration > 0.5)", "hint"),
    ("bored", "affect == bored and not exam", "probe"),
    ("exam", "exam", "encourage"),
    # Linear atoms: only z3 decides these rules' pairs (one-variable atoms are decided over
    # cells without it), so the cache has z3's answers to keep.
    ("worn", "frustration + hints > 3", "hint"),
    ("worn_out", "frustration + hints > 4 and hints >= 4", "probe"),
]


def _theory(rules: list[tuple[str, str, str]], high: int = 5) -> str:
    lines = [
        "pedrag: 1",
        "theory: {id: cached, name: Cached}",
        "metrics:",
        "  frustration: {type: float, range: [0, 1], source: inferred}",
        f"  hints: {{type: int, range: [0, {high}], source: trusted}}",
        "  affect: {type: enum, values: [calm, confused, bored], source: inferred}",
        "  exam: {type: bool, source: trusted}",
        "actions:",
        "  probe: {rung: H3, priority: 5, description: Probe.}",
        "  encourage: {rung: H0, priority: 5, description: Encourage., conflicts: [hint]}",
        "  hint: {rung: H5, priority: 5, description: Hint.}",
        "ceiling: {start: H4, steps: [{when: exam, set: H0}]}",
        "rules:",
    ]
    lines += [f'  - {{id: {i}, when: "{w}", then: {a}}}' for i, w, a in rules]
    return "\n".join(lines) + "\n"


def _check(text: str, cache: CheckCache) -> tuple[list[Any], int]:
    analysis_module._CACHE.clear()  # a fresh process: only the disk remembers
    loaded = load_text(text, "cached.yaml")
    assert loaded.theory is not None, [d.message for d in loaded.diagnostics]
    analysis = Analysis(loaded.theory, cache=cache)
    found = []
    for check in catalog().values():
        if check.info.stage == "semantic" and check.run is not None:
            for d in check.run(analysis):
                # Gap regions are grown from z3 models, which depend on what the solver was
                # asked before; their total share is the answer, their cut is not.
                shown = d.data["uncovered"] if d.check == "coverage-gap" else d.message
                found.append((d.check, shown, d.items))
    analysis.save_cache()
    return found, analysis.queries


def test_a_second_check_asks_z3_nothing_and_finds_the_same(tmp_path: Path) -> None:
    cache = CheckCache(tmp_path)
    text = _theory(RULES)
    first, asked = _check(text, cache)
    assert asked > 0 and list(tmp_path.glob("*.pickle"))
    second, asked_again = _check(text, cache)
    assert second == first
    without, _ = _check(text, CheckCache.disabled())
    assert without == first
    # Only coverage and gap regions (not kept on disk) may still ask z3.
    assert asked_again < asked


def test_after_a_one_rule_edit_only_that_rule_is_asked_again(tmp_path: Path) -> None:
    cache = CheckCache(tmp_path)
    _check(_theory(RULES), cache)
    edited = list(RULES)
    edited[2] = ("very_tense", "frustration >= 0.9 and hints >= 2", "encourage")
    text = _theory(edited)
    found, asked = _check(text, cache)
    fresh, fresh_asked = _check(text, CheckCache.disabled())
    assert found == fresh
    assert asked < fresh_asked


def test_a_folded_shard_keeps_the_pairs_of_the_groups_it_answered(tmp_path: Path) -> None:
    # An unchanged re-check finds each group's answer and asks none of its pairs; folding the
    # shard then must not drop those pairs, or an edit re-asks its whole group's.
    rules = [*RULES, ("late", "hints >= 5", "hint")]
    edited = [*RULES, ("late", "hints >= 4", "hint")]
    direct = CheckCache(tmp_path / "direct")
    _check(_theory(rules), direct)
    _, asked_direct = _check(_theory(edited), direct)
    folded = CheckCache(tmp_path / "folded")
    _check(_theory(rules), folded)
    (path,) = (tmp_path / "folded").glob("*.pickle")
    stale = Shard(path)
    for key in list(stale.raw):
        stale.get(key)  # kept by the fold below, as a check that used them would keep them
    for index in range(200):  # answers no check uses any more: the next check folds them out
        stale.put(f"stale {index}", index)
    stale.save()
    _check(_theory(rules), folded)
    assert Shard(path).get("stale 0") is MISSING  # the re-check folded the shard
    found, asked = _check(_theory(edited), folded)
    assert found == _check(_theory(edited), CheckCache.disabled())[0]
    assert asked == asked_direct


def test_an_unchanged_file_checked_a_third_time_gets_its_findings_whole(tmp_path: Path) -> None:
    # The first check of a text marks it seen, the second keeps its findings whole
    # (`CheckCache.kept_findings`), the third reads them back and asks the analysis nothing:
    # the in-process answers stay empty. An edit is analysed again.
    from pedrag.compiler.config import CheckConfig
    from pedrag.compiler.driver import check_paths
    from pedrag.compiler.reports.json_report import format_json

    path = tmp_path / "cached.yaml"

    def report(cache: CheckCache) -> str:
        analysis_module._CACHE.clear()  # a fresh process: only the disk remembers
        result = check_paths([str(path)], CheckConfig(), cache=cache)
        return format_json([f.path for f in result.files], result.diagnostics, result.summary())

    path.write_text(_theory(RULES))
    fresh = report(CheckCache.disabled())
    assert [report(CheckCache(tmp_path / "c")) for _ in range(2)] == [fresh, fresh]
    assert analysis_module._CACHE
    assert report(CheckCache(tmp_path / "c")) == fresh
    assert not analysis_module._CACHE
    assert len(list((tmp_path / "c" / "findings").glob("*.pickle"))) == 1
    path.write_text(_theory([*RULES[:-1], ("worn_out", "hints >= 4", "probe")]))
    edited = report(CheckCache(tmp_path / "c"))
    assert analysis_module._CACHE
    assert edited == report(CheckCache.disabled()) != fresh


def test_a_change_of_semantics_uses_another_shard(tmp_path: Path) -> None:
    cache = CheckCache(tmp_path)
    _check(_theory(RULES), cache)
    _check(_theory(RULES, high=9), cache)  # a metric's range changed: every answer may differ
    assert len(list(tmp_path.glob("*.pickle"))) == 2


def test_a_damaged_shard_is_ignored_and_rewritten(tmp_path: Path) -> None:
    cache = CheckCache(tmp_path)
    text = _theory(RULES)
    first, _ = _check(text, cache)
    (shard,) = tmp_path.glob("*.pickle")
    shard.write_bytes(b"\x80\x05not a pickle at all")
    again, asked = _check(text, cache)
    assert again == first and asked > 0
    assert _check(text, cache)[0] == first  # rewritten, readable again


def test_the_cache_folder_follows_the_environment_then_the_platform(monkeypatch: Any) -> None:
    monkeypatch.setenv(ENV_CACHE_DIR, "/somewhere/else")
    assert default_folder() == Path("/somewhere/else")
    monkeypatch.delenv(ENV_CACHE_DIR)
    folder = default_folder()
    assert folder.name == "pedrag" and folder.is_absolute()


def _cli(*args: str, cache_dir: Path) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "pedrag.cli", "check", *args, "--format", "json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, ENV_CACHE_DIR: str(cache_dir)},
    )
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def test_pedrag_check_fills_the_cache_and_no_cache_leaves_it_alone(tmp_path: Path) -> None:
    untouched = tmp_path / "untouched"
    plain = _cli(str(SOCRATIC), "--no-cache", cache_dir=untouched)
    assert not untouched.exists()
    used = tmp_path / "used"
    cold = _cli(str(SOCRATIC), cache_dir=used)
    warm = _cli(str(SOCRATIC), cache_dir=used)
    assert list((used / "check").glob("*.pickle"))
    for report in (cold, warm):
        assert [(d["check"], d["message"]) for d in report["diagnostics"]] == [
            (d["check"], d["message"]) for d in plain["diagnostics"]
        ]  # socratic.yaml has no coverage gap
        assert report["summary"]["coverage"] == plain["summary"]["coverage"]


def test_an_edit_reparses_only_its_own_condition_and_reports_the_same(
    tmp_path: Path, monkeypatch: Any
) -> None:
    from pedrag.compiler.driver import check_paths
    from pedrag.dsl import parser

    parsed: list[str] = []
    real = parser._parse_condition

    def counting(text: str) -> Any:
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(parser, "_parse_condition", counting)
    theory = tmp_path / "t.yaml"
    cache = CheckCache(tmp_path / "cache")

    def check(rules: list[tuple[str, str, str]]) -> list[tuple[str, str, int, int]]:
        theory.write_text(_theory(rules))
        analysis_module._CACHE.clear()
        parsed.clear()
        found = check_paths([str(theory)], cache=cache).diagnostics
        return [(d.check, d.message, d.span.line, d.span.column) for d in found]

    check(RULES)
    assert len(parsed) >= len(RULES)
    edited = [
        *RULES[:2],
        ("very_tense", "frustration >= 0.9 and hints >= 1", "encourage"),
        *RULES[3:],
    ]
    after_edit = check(edited)
    assert parsed == ["frustration >= 0.9 and hints >= 1"]
    parsed.clear()
    fresh = check_paths([str(theory)], cache=CheckCache.disabled()).diagnostics
    assert after_edit == [(d.check, d.message, d.span.line, d.span.column) for d in fresh]
    # A syntax error is never remembered: its diagnostic (with its column) is made afresh.
    broken = [*RULES[:1], ("tense", "frustration >= ", "encourage"), *RULES[2:]]
    for _ in range(2):
        errors = [f for f in check(broken) if f[0] == "syntax-error"]
        assert len(errors) == 1 and "frustration >= " in parsed


def test_a_damaged_parse_memo_is_ignored(tmp_path: Path) -> None:
    from pedrag.compiler.driver import check_paths

    theory = tmp_path / "t.yaml"
    theory.write_text(_theory(RULES))
    cache = CheckCache(tmp_path / "cache")
    expected = [d.message for d in check_paths([str(theory)], cache=cache).diagnostics]
    shard = cache.parsed_conditions().path
    assert shard is not None and shard.exists()
    shard.write_bytes(b"\x80\x05not a pickle")
    analysis_module._CACHE.clear()
    assert [d.message for d in check_paths([str(theory)], cache=cache).diagnostics] == expected


_SWITCHING = (
    "pedrag: 1\ntheory: {{id: {id}, name: T}}\nmetrics:\n"
    "  frustration: {{type: float, range: [0, 1], source: inferred}}\n"
    'actions:\n  a: {{rung: H0, priority: 5, description: D.}}\nrules:\n  - {{id: r, when: "true", then: a}}\n'
    'adaptation:\n  switch:\n    - {{when: "{when}", to: {to}}}\n'
)


def test_a_remembered_switch_cycle_answer_follows_the_switch_conditions(tmp_path: Path) -> None:
    """The set-level answers are kept by content: the same graph with another condition on a
    switch is asked again, never answered from the cache."""
    from pedrag.compiler.driver import check_paths

    cache = CheckCache(tmp_path / "cache")
    (tmp_path / "a.yaml").write_text(
        _SWITCHING.format(id="one", when="frustration >= 0.8", to="two")
    )

    def cycle_findings(when: str) -> list[tuple[str, Any]]:
        (tmp_path / "b.yaml").write_text(_SWITCHING.format(id="two", when=when, to="one"))
        found = check_paths([str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")], cache=cache)
        return [(d.message, d.witness) for d in found.diagnostics if d.check == "switch-graph"]

    for _ in range(2):  # asked, then answered from the cache: the same finding
        (finding,) = cycle_findings("frustration >= 0.5")
        assert "one -> two -> one" in finding[0] and finding[1] == {"frustration": 0.8}
    assert cycle_findings("frustration < 0.5") == []  # exclusive now: no finding
    (finding,) = cycle_findings("frustration >= 0.5")
    assert finding[1] == {"frustration": 0.8}


_LOADED = (
    "import sys; from pedrag.cli import main; code = main(sys.argv[1:]); "
    "heavy = ('z3', 'networkx', 'pedrag.runtime.detect.answer', 'lark'); "
    "print('LOADED', *[m for m in heavy if m in sys.modules], file=sys.stderr); sys.exit(code)"
)


def test_a_cached_recheck_of_the_shipped_set_loads_neither_z3_nor_networkx_nor_the_detector(
    tmp_path: Path,
) -> None:
    """What a re-check of unchanged theories needs comes from the cache (analysis answers,
    the switch graph's and the curriculum's graph answers, the material check's findings),
    so it does not import what only a cache miss needs; a damaged parser-table file is
    dropped; the report is the same every time."""

    def run(path: str = "theories") -> tuple[str, str]:
        result = subprocess.run(
            [sys.executable, "-c", _LOADED, "check", path, "--format", "json"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, ENV_CACHE_DIR: str(tmp_path / "cache")},
        )
        assert result.returncode in (0, 1), result.stderr
        loaded = next(line for line in result.stderr.splitlines() if line.startswith("LOADED"))
        report = json.loads(result.stdout)
        report["summary"].pop("seconds", None)
        return json.dumps(report, sort_keys=True), loaded

    cold, cold_loaded = run()
    assert "z3" in cold_loaded and "pedrag.runtime.detect.answer" in cold_loaded
    warm, warm_loaded = run()
    assert warm == cold
    assert warm_loaded == "LOADED"
    whole, whole_loaded = run()  # each file's front end read back whole (`LoadedFiles`)
    assert whole == cold
    assert whole_loaded == "LOADED"
    # Well-formed conditions never reach lark (`dsl/fast_parse.py`), so no check may have
    # written its tables yet: a damaged table file is there all the same.
    tables = tmp_path / "cache" / "check" / "condition-grammar.lark"
    tables.write_bytes(b"damaged")
    edited = tmp_path / "socratic.yaml"
    text = SOCRATIC.read_text("utf-8")
    edited.write_text(text.replace('when: "frustration >= 0.8"', 'when: "frustration >= 0.85"', 1))
    assert edited.read_text("utf-8") != text
    report, edited_loaded = run(str(edited))  # a new condition, well formed: read without lark
    assert "lark" not in edited_loaded.split()
    import yaml

    assert json.loads(report)["summary"]["rules"] == len(yaml.safe_load(text)["rules"])
    assert not tables.exists() or tables.read_bytes() != b"damaged"  # dropped or rebuilt


def test_after_an_edit_the_cached_report_is_the_fresh_one_witnesses_included(
    tmp_path: Path,
) -> None:
    """An edit that adds a new constant changes the theory's cuts; answers kept from before it
    must still show the witness a fresh check shows (each witness depends on its own
    formulas only), or the report would depend on the cache's history."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from theory_gen import generate

    from pedrag.compiler.driver import check_paths

    theory = tmp_path / "t.yaml"
    text = generate(500, 7, "weighted")
    cache = CheckCache(tmp_path / "cache")

    def report(use: CheckCache) -> list[dict[str, Any]]:
        analysis_module._CACHE.clear()
        return [d.to_json() for d in check_paths([str(theory)], cache=use).diagnostics]

    theory.write_text(text)
    report(cache)
    start = text.index('when: "', text.index("rules:")) + len('when: "')
    theory.write_text(text[:start] + "frustration >= 0.001 and " + text[start:])
    cached = report(cache)
    fresh = report(CheckCache.disabled())
    assert any(d.get("witness") for d in fresh)
    assert cached == fresh


def test_a_fold_keeps_a_found_group_answers_members_unread(tmp_path: Path) -> None:
    path = tmp_path / "shard.pickle"
    first = Shard(path)
    first.put("group", [(0, 1, "sat")])
    first.put_members("group", ["pair a", "pair b"])
    for key in ("pair a", "pair b", *(f"other {i}" for i in range(20))):
        first.put(key, key.upper())
    first.save()
    second = Shard(path)
    assert second.get("group") == [(0, 1, "sat")]
    second.keep_members("group")
    second.save()  # most answers went unused: folded, keeping the group and its members
    third = Shard(path)
    assert third.get("pair a") == "PAIR A" and third.get("pair b") == "PAIR B"
    assert third.get("other 0") is MISSING


def test_a_shard_journals_an_edit_folds_when_grown_and_ignores_a_torn_record(
    tmp_path: Path,
) -> None:
    from pedrag.compiler.check_cache import JOURNAL_SHARE, Shard

    path = tmp_path / "s.pickle"
    first = Shard(path)
    for k in range(40):
        first.put(f"k{k}", {"answer": k})
    first.save()  # nothing stored yet: the whole shard is written
    assert path.exists() and not path.with_suffix(".journal").exists()

    edit = Shard(path)
    assert [edit.get(f"k{k}") for k in range(40)] == [{"answer": k} for k in range(40)]
    edit.put("new", "edited")
    edit.save()  # one answer added: appended, the shard itself untouched
    journal = path.with_suffix(".journal")
    assert journal.exists() and journal.stat().st_size < path.stat().st_size
    with journal.open("ab") as out:  # a process killed mid-append
        out.write((10_000).to_bytes(8, "little") + b"half a rec")
    again = Shard(path)
    assert again.get("new") == "edited" and again.get("k3") == {"answer": 3}

    grown = Shard(path)
    for k in range(40):
        grown.get(f"k{k}")
    for k in range(40 // JOURNAL_SHARE + 1):
        grown.put(f"more{k}", k)
    grown.save()  # the journal would pass a quarter of the shard: folded in
    assert not journal.exists()
    folded = Shard(path)
    assert folded.get("more0") == 0 and folded.get("k39") == {"answer": 39}
    assert folded.get("new") is MISSING  # the folding check did not use it: not kept


def test_a_shard_nobody_asks_is_never_read(tmp_path: Path, monkeypatch: Any) -> None:
    from pedrag.compiler import check_cache

    path = tmp_path / "s.pickle"
    shard = check_cache.Shard(path)
    shard.put("a", 1)
    shard.save()
    read: list[Path] = []
    real = check_cache._safe_read
    monkeypatch.setattr(check_cache, "_safe_read", lambda p: read.append(p) or real(p))
    check_cache.Shard(path).save()
    assert read == []
    assert check_cache.Shard(path).get("a") == 1
    assert read == [path, path.with_suffix(".journal")]


def _declared(hints: str, ceiling_when: str = "exam") -> str:
    return (
        "pedrag: 1\ntheory: {id: declared, name: D}\nmetrics:\n"
        f"  hints: {hints}\n"
        "  frustration: {type: float, range: [0, 1], source: inferred}\n"
        "  exam: {type: bool, source: trusted}\n"
        "actions:\n  a: {rung: H0, priority: 5, description: A.}\n"
        f'ceiling: {{start: H4, steps: [{{when: "{ceiling_when}", set: H0}}]}}\n'
        'rules:\n  - {id: r, when: "hints >= 2", then: a}\n'
        '  - {id: s, when: "frustration > 0.5", then: a}\n'
    )


def test_a_remembered_resolution_never_hides_an_error_a_declaration_change_makes(
    tmp_path: Path,
) -> None:
    """Resolved conditions are kept by the declarations they read: after `hints` becomes an
    enum, `hints >= 2` is type-checked again and its error reported; the same text in a
    ceiling step is checked for the trust boundary there, not taken from a rule."""
    from pedrag.compiler.driver import check_paths

    theory = tmp_path / "t.yaml"
    cache = CheckCache(tmp_path / "cache")

    def errors(text: str) -> list[tuple[str, bool]]:
        theory.write_text(text)
        analysis_module._CACHE.clear()
        found = check_paths([str(theory)], cache=cache).diagnostics
        fresh = check_paths([str(theory)], cache=CheckCache.disabled()).diagnostics
        assert [d.message for d in found] == [d.message for d in fresh]
        resolving = {"type-error", "trust-boundary", "unknown-name", "syntax-error"}
        return [(d.check, d.span.line) for d in found if d.check in resolving]

    number = "{type: int, range: [0, 5], source: trusted}"
    assert errors(_declared(number)) == []
    assert errors(_declared(number)) == []  # answered from the memo
    assert ("type-error", 11) in errors(
        _declared("{type: enum, values: [few, many], source: trusted}")
    )
    assert errors(_declared(number)) == []
    # `frustration > 0.5` was resolved for a rule; in a ceiling step it crosses the boundary.
    assert ("trust-boundary", 9) in errors(_declared(number, ceiling_when="frustration > 0.5"))


def test_an_invariant_answer_follows_the_tags_of_the_action(tmp_path: Path) -> None:
    """An invariant reads the selected action's tags and priority, which no rule key holds:
    tagging an action must re-ask, not reuse the untagged answer."""
    from pedrag.compiler.driver import check_paths

    theory = tmp_path / "t.yaml"
    cache = CheckCache(tmp_path / "cache")

    def violations(tags: str) -> list[str]:
        lines = [
            "pedrag: 1",
            "theory: {id: tagged, name: T}",
            "metrics:",
            "  frustration: {type: float, range: [0, 1], source: inferred}",
            "actions:",
            f"  tell: {{rung: H2, priority: 5, description: Tell., tags: {tags}}}",
            "  show: {rung: H1, priority: 5, description: Show., tags: [explain]}",
            "rules:",
            '  - {id: r, when: "frustration > 0.2 and frustration < 0.8", then: tell}',
            "invariants:",
            "  - id: no_telling",
            "    never: \"('explain' in tags and frustration > 0.5) or frustration > 0.9\"",
        ]
        theory.write_text("\n".join(lines) + "\n")
        analysis_module._CACHE.clear()
        found = check_paths([str(theory)], cache=cache).diagnostics
        assert not [
            d.message
            for d in found
            if d.severity.value == "error"
            and d.check in ("syntax-error", "type-error", "unknown-name")
        ]
        return [
            d.message for d in found if d.check == "invariant-violation" and "rule:r" in d.items
        ]

    assert violations("[]") == []
    assert len(violations("[explain]")) == 1
    assert violations("[]") == []


def test_a_file_checked_twice_unchanged_is_read_back_whole_and_a_damaged_copy_is_dropped(
    tmp_path: Path,
) -> None:
    from pedrag.compiler.driver import check_paths
    from pedrag.compiler.reports.json_report import format_json

    theory = tmp_path / "t.yaml"
    theory.write_text(_theory(RULES))
    folder = tmp_path / "cache"

    def report(cache: CheckCache) -> str:
        analysis_module._CACHE.clear()  # a fresh process: only the disk remembers
        result = check_paths([str(theory)], cache=cache)
        files = [f.path for f in result.files]
        return format_json(files, result.diagnostics, result.summary())

    expected = report(CheckCache.disabled())
    loaded = folder / "fronts"
    assert report(CheckCache(folder)) == expected
    assert [p.suffix for p in loaded.iterdir()] == [".seen"]  # seen once: nothing kept yet
    assert report(CheckCache(folder)) == expected
    (kept,) = loaded.glob("*.front")
    assert sorted(p.suffix for p in loaded.iterdir()) == [".front", ".latest"]  # and its name
    assert report(CheckCache(folder)) == expected  # the front end read back
    body = bytearray(kept.read_bytes())
    body[len(body) // 2] ^= 0x01
    kept.write_bytes(bytes(body))
    damaged = CheckCache(folder)
    assert report(damaged) == expected
    assert damaged.dropped == 1
    assert report(CheckCache(folder)) == expected  # kept again
    repaired = CheckCache(folder)
    assert report(repaired) == expected
    assert repaired.dropped == 0
    theory.write_text(_theory(RULES[:-1]))  # new content: marked seen, nothing else written
    report(CheckCache(folder))
    assert sorted(p.suffix for p in loaded.iterdir()) == [".front", ".latest", ".seen"]


def test_a_repository_of_many_small_theories_keeps_every_front_end(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # Kept front ends are bounded by bytes, not by a count a repository of a dozen small
    # theories would overrun (each evicting another's, so none was ever read back).
    from pedrag.compiler import check_cache
    from pedrag.compiler.check_cache import Damage, LoadedFiles

    files = LoadedFiles(tmp_path, Damage())
    loads: list[str] = []

    def load(raw: bytes, shown: str) -> str:
        loads.append(shown)
        return raw.decode() * 200

    names = [f"theory_{n}.yaml" for n in range(12)]
    for _ in range(2):  # the second check of the same bytes keeps the result
        for name in names:
            files.load(name.encode(), name, load)
    loads.clear()
    for name in names:
        assert files.load(name.encode(), name, load) == name * 200
    assert loads == []
    # Over the byte budget, the oldest go first and the newest always stays.
    monkeypatch.setattr(check_cache, "LOADED_BYTES", 1)
    files.load(b"another", "another.yaml", load)
    files.load(b"another", "another.yaml", load)
    kept = list((tmp_path / "loaded").glob("*.pickle"))
    assert len(kept) == 1
    loads.clear()
    assert files.load(b"another", "another.yaml", load) == "another" * 200
    assert loads == []


def test_findings_with_an_undecided_question_are_never_kept_whole(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # A solver timeout leaves a question undecided (`Analysis.undecided`): its findings hold
    # for this run only, so the next check of the same text asks again instead of reading them.
    from pedrag.compiler.config import CheckConfig
    from pedrag.compiler.driver import check_paths

    path = tmp_path / "cached.yaml"
    path.write_text(_theory(RULES))
    analyses: list[Analysis] = []
    built = Analysis.__init__

    def undecided(self: Analysis, *args: Any, **kwargs: Any) -> None:
        built(self, *args, **kwargs)
        self.undecided = True  # as `_decide` sets it when z3 answers unknown
        analyses.append(self)

    monkeypatch.setattr(Analysis, "__init__", undecided)
    for _ in range(3):
        analysis_module._CACHE.clear()
        check_paths([str(path)], CheckConfig(), cache=CheckCache(tmp_path / "c"))
    assert len(analyses) == 3
    assert not list((tmp_path / "c" / "findings").glob("*.pickle"))


def test_a_conflict_finding_is_built_again_only_for_the_edited_rule(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # A conflict finding's words, witness and guard (a search of up to 16 guards, two
    # questions each) are kept on disk by the two rules' content: a one-rule edit's re-check
    # in a fresh process builds only the findings of the edited rule.
    from pedrag.compiler.checks import conflict

    built: list[tuple[str, str]] = []
    real = conflict._shown

    def counting(analysis: Any, found: Any, search: bool) -> Any:
        built.append((found.rules[0].id, found.rules[1].id))
        return real(analysis, found, search)

    def theory(rules: list[tuple[str, str, str]]) -> str:  # hints under the ceiling
        return _theory(rules).replace("hint: {rung: H5", "hint: {rung: H2")

    monkeypatch.setattr(conflict, "_shown", counting)
    cache = CheckCache(tmp_path)
    _check(theory(RULES), cache)
    assert len(built) >= 3  # the theory has several conflicts to keep
    edited = list(RULES)
    edited[2] = ("very_tense", "frustration >= 0.9 and hints >= 2", "encourage")
    text = theory(edited)
    built.clear()
    found, _ = _check(text, cache)
    assert built and all("very_tense" in pair for pair in built)
    assert found == _check(text, CheckCache.disabled())[0]


class _TimingOutSolver:
    """Stands in for a z3 solver that hits its timeout on every query."""

    def push(self) -> None: ...
    def pop(self) -> None: ...
    def add(self, *terms: object) -> None: ...

    def check(self, *assumptions: object) -> object:
        import z3

        return z3.unknown


def test_an_answer_a_solver_timeout_decided_is_never_kept(tmp_path: Path) -> None:
    # A rule whose status only z3 decides (a linear atom no state satisfies): under a timeout
    # its status is `unknown`, a finding for this check alone. The next check, whose solver
    # answers, must find what a check without the cache finds, not read the `unknown` back.
    rules = [*RULES, ("never", "frustration + hints > 7", "probe")]
    text = _theory(rules)
    cache = CheckCache(tmp_path)
    analysis_module._CACHE.clear()
    loaded = load_text(text, "cached.yaml")
    assert loaded.theory is not None
    analysis = Analysis(loaded.theory, cache=cache)
    analysis.solver = _TimingOutSolver()
    timed_out = [
        (d.check, d.message)
        for check in catalog().values()
        if check.info.stage == "semantic" and check.run is not None
        for d in check.run(analysis)
    ]
    analysis.save_cache()
    assert (
        "dead-rule",
        "unknown: could not decide whether rule `never` can ever hold (solver "
        "timeout); not proved either way",
    ) in timed_out
    found, _ = _check(text, cache)
    fresh, _ = _check(text, CheckCache.disabled())
    assert found == fresh
    assert (
        "dead-rule",
        "rule `never` can never fire: `frustration + hints > 7` is impossible "
        "within the metric domains",
        ("rule:never",),
    ) in fresh


def _installed_solver(monkeypatch: Any, version: str) -> None:
    """As if z3-solver `version` were installed in place (`code_version.library_versions`)."""
    from pedrag.compiler import code_version

    real = code_version._installed_version
    monkeypatch.setattr(
        code_version,
        "_installed_version",
        lambda name: f"z3_solver-{version}.dist-info" if name == "z3" else real(name),
    )
    code_version.library_versions.cache_clear()


def test_answers_another_solver_version_computed_are_not_read_back(
    tmp_path: Path, monkeypatch: Any
) -> None:
    from pedrag.compiler import code_version

    cache = CheckCache(tmp_path)
    text = _theory(RULES)
    try:
        _installed_solver(monkeypatch, "4.12.0.0")
        first, asked = _check(text, cache)
        assert asked > 0 and _check(text, cache)[1] < asked  # read back under the same solver
        monkeypatch.undo()
        _installed_solver(monkeypatch, "4.13.0.0")
        again, asked_again = _check(text, cache)
        assert asked_again == asked and again == first  # every question asked the new solver
        assert len(list(tmp_path.glob("*.pickle"))) == 2
    finally:
        monkeypatch.undo()
        code_version.library_versions.cache_clear()
