"""The detector and the grader fold words to ASCII by one rule (pedrag.runtime.detect.folding)."""

from __future__ import annotations

import re
from pathlib import Path

from pedrag.runtime.detect.folding import ascii_fold

ROOT = Path(__file__).resolve().parents[2]


def test_accents_and_case_fold_away_and_the_rest_is_dropped() -> None:
    assert ascii_fold("Crème BRÛLÉE") == "creme brulee"
    assert ascii_fold("ﬁve ½") == "five 12"  # compatibility forms decompose first
    assert ascii_fold("日本 x") == " x"


def test_no_stage_writes_the_fold_by_hand() -> None:
    by_hand = re.compile(
        r"normalize\(\"NFKD\", \w+\)\.encode\(\"ascii\", \"ignore\"\)\.decode\(\)\.lower\(\)"
    )
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "runtime").rglob("*.py"))
        if path.name != "folding.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if by_hand.search(line)
    ]
    assert offenders == []
