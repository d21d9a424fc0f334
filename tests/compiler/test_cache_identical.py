"""A report built from cached answers is byte-identical to `--no-cache`'s, along random edit
sequences of theories whose witnesses come from z3 (linear atoms over two floats, where the
first-state search finds none): the witness is z3's model of the question asked alone, not
of whatever the shared solver was asked before.

`PEDRAG_CACHE_SEQUENCES` sets how many sequences run (the issue's figure is 500).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from pedrag.compiler import analysis as analysis_module
from pedrag.compiler.check_cache import CheckCache
from pedrag.compiler.config import CheckConfig
from pedrag.compiler.driver import check_paths
from pedrag.compiler.reports.json_report import format_json

SEQUENCES = int(os.environ.get("PEDRAG_CACHE_SEQUENCES", "8"))
EDITS = 3
ATOMS = [
    "a - b > C",
    "a + b < C",
    "2 * a - b >= C",
    "a - 3 * b <= C",
    "a > C",
    "b < C",
    "n + a > C",
]
CONSTANTS = ["0.1", "0.3", "0.5", "0.9", "0.99", "1.2"]


def _report(path: Path, cache: CheckCache) -> str:
    analysis_module._CACHE.clear()  # a fresh process: only the disk remembers
    result = check_paths([str(path)], CheckConfig(), cache=cache)
    return format_json([f.path for f in result.files], result.diagnostics, result.summary())


def _condition(rng: random.Random) -> str:
    atoms = [
        rng.choice(ATOMS).replace("C", rng.choice(CONSTANTS)) for _ in range(rng.randint(1, 3))
    ]
    return f" {rng.choice(['and', 'or'])} ".join(atoms)


def _theory(rules: list[tuple[str, str]]) -> str:
    lines = [
        "pedrag: 1",
        "theory: {id: t, name: T}",
        "metrics:",
        "  a: {type: float, range: [0, 1], source: inferred}",
        "  b: {type: float, range: [0, 1], source: inferred}",
        "  n: {type: int, range: [0, 3], source: trusted}",
        "actions:",
        "  p: {rung: H0, priority: 5, description: P., conflicts: [q]}",
        "  q: {rung: H0, priority: 5, description: Q.}",
        "  r: {rung: H1, priority: 4, description: R.}",
        "rules:",
    ]
    lines += [f'  - {{id: r{i}, when: "{w}", then: {a}}}' for i, (w, a) in enumerate(rules)]
    return "\n".join(lines) + "\n"


def test_cached_reports_equal_uncached_ones_along_random_edit_sequences(tmp_path: Path) -> None:
    different = []
    for sequence in range(SEQUENCES):
        rng = random.Random(sequence)
        rules = [(_condition(rng), rng.choice("pqr")) for _ in range(rng.randint(2, 6))]
        path = tmp_path / f"t{sequence}.yaml"
        folder = tmp_path / f"cache{sequence}"
        for _ in range(EDITS + 1):
            path.write_text(_theory(rules))
            if _report(path, CheckCache(folder)) != _report(path, CheckCache.disabled()):
                different.append(_theory(rules))
            index = rng.randrange(len(rules))
            rules[index] = (_condition(rng), rules[index][1])
    assert different == []
