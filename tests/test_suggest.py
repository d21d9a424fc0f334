"""Did you mean: one rule and one wording for every suggestion (pedrag.kernel.suggest)."""

from __future__ import annotations

import re
from pathlib import Path

from pedrag.kernel.suggest import closest, did_you_mean, phrase, suggested

ROOT = Path(__file__).resolve().parent.parent


def test_the_closest_known_name_alike_enough_is_suggested() -> None:
    assert closest("frustated", ["calm", "frustrated", "anxious"]) == "frustrated"
    assert closest("xyz", ["calm", "frustrated"]) is None
    assert closest("anything", []) is None


def test_the_best_match_wins_whatever_the_order_of_the_known_names() -> None:
    names = ["dead-rule", "redundant-rule", "shadowed-rule", "dead-rules"]
    assert {closest("dead-rul", order) for order in (names, sorted(names), names[::-1])} == {
        "dead-rule"
    }


def test_the_wording_quotes_as_code_or_as_python() -> None:
    assert phrase("priority") == "did you mean `priority`?"
    assert phrase("socratic", quote="repr") == "did you mean 'socratic'?"
    assert did_you_mean("priorty", {"priority": 1, "rung": 2}) == "did you mean `priority`?"
    assert did_you_mean("socratik", ("socratic",), quote="repr", lead="; ") == (
        "; did you mean 'socratic'?"
    )
    assert did_you_mean("zzz", ("socratic",), lead="; ") == ""


def test_the_language_server_reads_back_exactly_the_suggestion() -> None:
    assert suggested(phrase("frustrated")) == "frustrated"
    assert suggested(f"{phrase('frustrated')} and more") is None
    assert suggested("allowed keys: a, b") is None


def test_no_module_matches_names_by_hand() -> None:
    """difflib's close matching and the phrase's regular expression live only in the kernel."""
    by_hand = re.compile(r"get_close_matches|did you mean `\(")
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("dsl", "compiler", "runtime", "kernel", "extract", "evaluate", "pedrag")
        for path in sorted((ROOT / folder).glob("**/*.py"))
        if path.name != "suggest.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if by_hand.search(line)
    ]
    assert not offenders, offenders
