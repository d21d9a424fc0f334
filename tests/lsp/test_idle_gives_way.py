"""The idle re-check (`checking.warm_up`) gives way to a keystroke: the language server runs
its checks one at a time, so a keystroke's check queued behind a re-check of the file's
first version waited for all of it (seconds at 5,000 rules). The re-check stops at its next
check once `interrupted()` is true, goes back to the queue, and is dropped when it comes
round again for a text the document no longer has."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_a_keystroke_stops_the_idle_re_check_and_is_checked_as_a_fresh_check_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pedrag.compiler import analysis as analysis_module
    from pedrag.compiler.check_cache import CheckCache
    from pedrag.compiler.config import CheckConfig
    from pedrag.compiler.driver import check_paths, check_text
    from pedrag.lsp import checking as lsp

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from theory_gen import generate

    theory = tmp_path / "gen.yaml"
    text = generate(60, 3, "weighted")
    theory.write_text(text, "utf-8")
    monkeypatch.setenv("PEDRAG_CACHE_DIR", str(tmp_path / "cache"))
    for _ in range(2):  # the second check keeps the findings whole
        check_paths([str(theory)], cache=CheckCache.default())
    analysis_module._CACHE.clear()  # a server just started
    monkeypatch.setattr(analysis_module, "_KEPT", {})
    for name, value in (("WARMED", set()), ("RESULTS", {}), ("LOADED", {}), ("WARM_UP", [])):
        monkeypatch.setattr(lsp, name, value)
    monkeypatch.setattr(lsp, "DISK_CACHE", True)
    lsp.analyse(text, str(theory), True, CheckConfig())  # the open: from the disk cache
    (job,) = lsp.WARM_UP
    asked: list[int] = []

    def keystroke_after_the_first_check() -> bool:
        asked.append(1)
        return len(asked) > 1

    assert lsp.warm_up(keystroke_after_the_first_check)
    assert len(asked) == 2  # asked before the first check and the second, not after
    assert lsp.WARM_UP == [job]  # back in the queue, for the next idle time
    at = text.index('when: "', text.index("\nrules:")) + len('when: "')
    edited = text[:at] + "frustration >= 0.31 and " + text[at:]
    found = lsp.analyse(edited, str(theory), True, CheckConfig())
    fresh = check_text(edited, str(theory), CheckConfig()).diagnostics
    assert [(d.check, d.message, d.span) for d in found] == [
        (d.check, d.message, d.span) for d in fresh
    ]
    # Its turn again: the document has changed since, so it neither checks nor loads the
    # old text (the next keystroke is spliced into the edited text's front end).
    assert lsp.warm_up() and lsp.WARM_UP == []
    assert [t for t, p in lsp.LOADED if p == str(theory)] == [edited]
