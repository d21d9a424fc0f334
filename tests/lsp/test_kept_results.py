"""The language server's last diagnostics per kind of run (`checking.RESULTS`): a text checked
again under the same path and configuration is answered without a front end or an analysis,
and anything else (another configuration, findings a solver timeout left undecided) is
checked again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pedrag.compiler import analysis as analysis_module
from pedrag.compiler import driver
from pedrag.compiler.config import CheckConfig
from pedrag.dsl.diagnostics import Severity
from pedrag.lsp import checking

THEORY = Path(__file__).resolve().parents[1] / "data" / "checks" / "dead-rule.yaml"


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many analyses and front-end-only runs the server made, in a server that has
    checked nothing yet."""
    monkeypatch.setattr(checking, "RESULTS", {}, raising=False)
    monkeypatch.setattr(checking, "DISK_CACHE", False)
    counts = {"analyses": 0, "front ends": 0}
    real_init = analysis_module.Analysis.__init__
    real_check = driver.check_loaded

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        counts["analyses"] += 1
        real_init(self, *args, **kwargs)

    def check_loaded(
        files: Any, config: Any = None, semantic: bool = True, *rest: Any, **kw: Any
    ) -> Any:
        if not semantic:
            counts["front ends"] += 1
        return real_check(files, config, semantic, *rest, **kw)

    monkeypatch.setattr(analysis_module.Analysis, "__init__", init)
    monkeypatch.setattr(driver, "check_loaded", check_loaded)
    return counts


def test_an_unchanged_text_is_answered_without_an_analysis(counted: dict[str, int]) -> None:
    text, path = THEORY.read_text("utf-8"), str(THEORY)
    first = checking.analyse(text, path, True, CheckConfig())
    assert counted["analyses"] == 1
    again = checking.analyse(text, path, True, CheckConfig())
    assert again == first and "dead-rule" in {d.check for d in again}
    assert counted["analyses"] == 1
    again.clear()  # a caller's list is its own: the kept one is not emptied
    assert checking.analyse(text, path, True, CheckConfig()) == first


def test_a_keystrokes_semantic_run_reuses_its_front_end_run(counted: dict[str, int]) -> None:
    """The server asks for the front end's findings at once and for all of them after a
    pause, on the same text: the front end is checked once."""
    text, path = THEORY.read_text("utf-8"), str(THEORY)
    front = checking.analyse(text, path, False, CheckConfig())
    found = checking.analyse(text, path, True, CheckConfig())
    assert counted["front ends"] == 1 and counted["analyses"] == 1
    assert all(d in found for d in front)


def test_another_configuration_or_text_is_checked_again(counted: dict[str, int]) -> None:
    text, path = THEORY.read_text("utf-8"), str(THEORY)
    checking.analyse(text, path, True, CheckConfig())
    louder = CheckConfig(severity={"dead-rule": Severity.ERROR})
    found = checking.analyse(text, path, True, louder)
    assert counted["analyses"] == 2
    assert {d.severity for d in found if d.check == "dead-rule"} == {Severity.ERROR}
    checking.analyse(text + "\n", path, True, louder)
    checking.analyse(text + "\n", str(THEORY.with_name("other.yaml")), True, louder)
    assert counted["analyses"] == 4


def test_findings_a_solver_timeout_left_undecided_are_checked_again(
    counted: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = analysis_module.Analysis.save_cache

    def undecided(self: Any) -> None:
        self.undecided = True  # as a question the solver ran out of time on leaves it
        real(self)

    monkeypatch.setattr(analysis_module.Analysis, "save_cache", undecided)
    text, path = THEORY.read_text("utf-8"), str(THEORY)
    checking.analyse(text, path, True, CheckConfig())
    checking.analyse(text, path, True, CheckConfig())
    assert counted["analyses"] == 2


def test_an_edit_rebuilds_only_the_findings_of_what_it_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a one-rule edit the server's redundant-rule and dead-rule findings about the
    rules it left alone are the previous check's (`diagnose.Remembered`), and every finding
    is the one a fresh check makes."""
    from pedrag.compiler.driver import check_text
    from tests.compiler.test_recheck_edits import _theory

    monkeypatch.setattr(checking, "RESULTS", {}, raising=False)
    monkeypatch.setattr(checking, "DISK_CACHE", False)
    rules = [
        '  - {id: wide, when: "frustration >= 0.5", then: a0}',
        '  - {id: narrow, when: "frustration >= 0.7", then: a0}',
        '  - {id: never, when: "hints > 3 and hints < 2", then: a1}',
        '  - {id: other, when: "confidence < 0.2", then: a2}',
    ]
    path = "remembered.yaml"
    before = checking.analyse(_theory(rules, "weighted"), path, True, CheckConfig())
    rules[3] = '  - {id: other, when: "confidence < 0.3", then: a2}'
    text = _theory(rules, "weighted")
    after = checking.analyse(text, path, True, CheckConfig())
    assert [(d.check, d.message, d.span) for d in after] == [
        (d.check, d.message, d.span) for d in check_text(text, path, CheckConfig()).diagnostics
    ]
    for check in ("redundant-rule", "dead-rule"):
        (old,) = [d for d in before if d.check == check]
        (new,) = [d for d in after if d.check == check]
        assert new is old
