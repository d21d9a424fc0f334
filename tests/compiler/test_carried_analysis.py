"""An analysis that carries the previous version's answers over (`analysis._Before`: the
language server's and the check server's re-check after a one-rule edit) gives the report a
cold `--no-cache` check gives, after every edit of a random sequence: a threshold changed, a
rule's action, priority, weight or id changed (each spliced into the previous front end, so
every other rule object is the same), a rule added, deleted or moved, a metric's range or an
invariant changed (a new front end: nothing is carried, and the next edit carries from it).
"""

from __future__ import annotations

import itertools
import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pedrag.compiler import analysis as analysis_module
from pedrag.compiler import encode
from pedrag.compiler.check_cache import CheckCache
from pedrag.compiler.config import CheckConfig
from pedrag.compiler.driver import check_paths
from pedrag.compiler.reports.json_report import report_dict
from pedrag.lsp import checking

ACTIONS = ["a0", "a1", "a2", "a3"]
ATOMS = [
    "x >= {f}",
    "x < {f}",
    "y >= {f}",
    "y < {f}",
    "n >= {i}",
    "n < {i}",
    "mood == {e}",
    "mood != {e}",
    "exam",
    "not exam",
]


def _condition(rng: random.Random) -> str:
    atoms = [
        rng.choice(ATOMS).format(
            f=rng.choice(["0.2", "0.4", "0.5", "0.7"]),
            i=rng.randint(0, 3),
            e=rng.choice(["calm", "cross", "lost"]),
        )
        for _ in range(rng.randint(1, 3))
    ]
    return " and ".join(atoms)


def _rule(rng: random.Random, rule_id: str) -> str:
    return (
        f'  - {{id: {rule_id}, when: "{_condition(rng)}", then: {rng.choice(ACTIONS)}, '
        f"priority: {rng.randint(1, 3)}, weight: {rng.randint(1, 3)}}}"
    )


class Theory:
    """A theory's parts as text, each edit changing one of them."""

    def __init__(self, rng: random.Random, selection: str) -> None:
        self.rng = rng
        self.selection = selection
        self.rules = [_rule(rng, f"r{i}") for i in range(rng.randint(6, 14))]
        self.made = len(self.rules)
        self.x_range = "[0, 1]"
        self.invariant = "x >= 0.9 and rung > H2"

    def text(self) -> str:
        return "\n".join(
            [
                "pedrag: 1",
                "theory: {id: carried, name: Carried}",
                f"selection: {self.selection}",
                "metrics:",
                f"  x: {{type: float, range: {self.x_range}, source: inferred}}",
                "  y: {type: float, range: [0, 1], source: inferred}",
                "  n: {type: int, range: [0, 3], source: trusted}",
                "  mood: {type: enum, values: [calm, cross, lost], source: inferred}",
                "  exam: {type: bool, source: trusted}",
                "actions:",
                "  a0: {rung: H0, priority: 5, description: A0., conflicts: [a1]}",
                "  a1: {rung: H1, priority: 5, description: A1.}",
                "  a2: {rung: H2, priority: 3, description: A2., conflicts: [a3]}",
                "  a3: {rung: H4, priority: 5, description: A3.}",
                "ceiling: {start: H3, steps: [{when: exam, set: H1}]}",
                "invariants:",
                f'  - {{id: calm_x, never: "{self.invariant}"}}',
                "rules:",
                *self.rules,
                "",
            ]
        )

    def edit(self, kind: str) -> None:
        rng, rules = self.rng, self.rules
        at = rng.randrange(len(rules))
        line = rules[at]
        if kind == "threshold":
            start = line.index('when: "') + 7
            end = line.index('"', start)
            rules[at] = line[:start] + _condition(rng) + line[end:]
        elif kind == "action":
            now = line[line.index("then: ") + 6 : line.index(", priority")]
            rules[at] = line.replace(f"then: {now},", f"then: {rng.choice(ACTIONS)},")
        elif kind == "priority":
            now = line[line.index("priority: ") + 10]
            rules[at] = line.replace(f"priority: {now}", f"priority: {rng.randint(1, 3)}")
        elif kind == "weight":
            now = line[line.index("weight: ") + 8]
            rules[at] = line.replace(f"weight: {now}", f"weight: {rng.randint(1, 3)}")
        elif kind == "id":
            now = line[line.index("id: ") + 4 : line.index(",")]
            self.made += 1
            rules[at] = line.replace(f"id: {now},", f"id: r{self.made},")
        elif kind == "add":
            self.made += 1
            rules.insert(at, _rule(rng, f"r{self.made}"))
        elif kind == "delete" and len(rules) > 2:
            del rules[at]
        elif kind == "move":
            rules.insert(rng.randrange(len(rules)), rules.pop(at))
        elif kind == "range":
            self.x_range = rng.choice(["[0, 1]", "[0.1, 0.95]", "[-1, 1]", "[0, 2]"])
        elif kind == "invariant":
            self.invariant = rng.choice(
                ["x >= 0.9 and rung > H2", "exam and rung > H0", "mood == lost and rung > H1"]
            )


def _cold(path: Path) -> list[dict[str, Any]]:
    """`pedrag check --no-cache`'s diagnostics, as a fresh process gives them: nothing this
    process remembers is read (its memo, its shared formulas, its kept analyses)."""
    memo, kept, sharing = dict(analysis_module._CACHE), dict(analysis_module._KEPT), encode.SHARING
    analysis_module._CACHE.clear()
    encode.SHARING = False
    try:
        result = check_paths([str(path)], CheckConfig(), cache=CheckCache.disabled())
        return report_dict([str(path)], result.diagnostics, {})["diagnostics"]  # type: ignore[no-any-return]
    finally:
        analysis_module._CACHE.clear()
        analysis_module._CACHE.update(memo)
        analysis_module._KEPT.clear()
        analysis_module._KEPT.update(kept)
        encode.SHARING = sharing


ONE_VALUE = {"threshold", "action", "priority", "weight", "id"}
EDITS = ["threshold", "action", "priority", "weight", "id", "add", "delete", "move", "range"]
EDITS += ["invariant", "threshold", "threshold", "action"]  # the editor's usual edits, more often
FOLDER = Path(tempfile.mkdtemp(prefix="pedrag-carried-"))
SESSIONS = itertools.count()


@pytest.fixture(autouse=True)
def _server(monkeypatch: pytest.MonkeyPatch) -> None:
    """A language server that has checked nothing yet and does not read the disk cache."""
    monkeypatch.setattr(checking, "DISK_CACHE", False)
    monkeypatch.setattr(checking, "RESULTS", {}, raising=False)
    monkeypatch.setattr(analysis_module, "_KEPT", {})
    monkeypatch.setattr(checking, "WARM_UP", [])


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32),
    selection=st.sampled_from(["weighted", "priority"]),
    edits=st.lists(st.sampled_from(EDITS), min_size=2, max_size=8),
    disk=st.booleans(),
)
def test_every_edit_of_a_sequence_gives_the_cold_report(
    seed: int, selection: str, edits: list[str], disk: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`disk`: the session's first check reads (and fills) an on-disk cache of its own, as a
    server's does; the analysis it makes is kept, and the first edit carries it over."""
    carried: list[int] = []
    real = analysis_module._before

    def before(analysis: Any) -> Any:
        found = real(analysis)
        if found is not None:
            carried.append(len(found.changed))
        return found

    monkeypatch.setattr(analysis_module, "_before", before)
    theory = Theory(random.Random(seed), selection)
    # A path of its own: the server's last front end and analysis of a path are not the
    # previous example's, so each example is one editing session.
    session = next(SESSIONS)
    path = FOLDER / f"{seed}-{selection}-{session}.pedrag.yaml"
    monkeypatch.setattr(checking, "DISK_CACHE", disk)
    monkeypatch.setenv("PEDRAG_CACHE_DIR", str(FOLDER / f"cache-{session}"))
    config = CheckConfig()
    one_value, text = False, ""
    for step, kind in enumerate(["open", *edits]):
        if step:
            theory.edit(kind)
        previous, text = text, theory.text()
        one_value = one_value or (kind in ONE_VALUE and text != previous)
        path.write_text(text, "utf-8")
        checking.analyse(text, str(path), False, config)  # a keystroke: the front end first
        found = checking.analyse(text, str(path), True, config)
        shown = report_dict([str(path)], found, {})["diagnostics"]
        assert shown == _cold(path), f"after {['open', *edits][: step + 1]}"
    path.unlink()
    # Edits of one value are spliced and carried: the sequence exercised the carried path.
    assert all(changed <= 1 for changed in carried)
    if one_value:
        assert carried
