"""History calls are linked to their arguments: states no run can produce are no witnesses.

The links (`compiler/encode.py`) must hold in every run: a property test computes each call
with the history functions the runtime calls (`pedrag.kernel.history`) over random histories
and evaluates the link at the resulting state. And a theory whose rules only impossible
states satisfied gets dead rules, not conflicts witnessed by `streak(...)=0`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pedrag.compiler import formula as F
from pedrag.compiler.config import CheckConfig
from pedrag.compiler.driver import check_text
from pedrag.compiler.encode import Translator
from pedrag.dsl.loader import load_text
from pedrag.kernel import history

THEORY = """\
pedrag: 1
theory: {id: h, name: H}
metrics:
  f: {type: float, range: [0, 1], source: inferred}
  n: {type: int, range: [0, 4], source: trusted}
actions:
  probe: {rung: H0, priority: 5, description: P., conflicts: [hint]}
  hint: {rung: H0, priority: 5, description: H.}
ceiling: {start: H4, steps: []}
rules:
  - {id: calm, when: "f <= 0.5", then: probe}
  - {id: high, when: "f > 0.5", then: hint}
RULES"""

IMPOSSIBLE = """\
  - {id: never_streak, when: "f > 0.5 and streak(f > 0.5, 3) == 0", then: probe}
  - {id: jump, when: "delta(f, 2) > 0.5 and f < 0.3", then: hint}
  - {id: mean_low, when: "mean(f, 2) > 0.9 and f < 0.5", then: hint}
  - {id: counted, when: "count(n >= 2, 3) == 3 and n < 2", then: hint}
"""


def test_rules_only_impossible_states_satisfy_are_dead_not_conflicting() -> None:
    result = check_text(THEORY.replace("RULES", IMPOSSIBLE), "h.yaml", CheckConfig())
    found = {(d.check, d.items[0].removeprefix("rule:")) for d in result.diagnostics}
    dead = {rule for check, rule in found if check == "dead-rule"}
    assert dead == {"never_streak", "jump", "mean_low", "counted"}
    assert not [d for d in result.diagnostics if d.check == "conflict"]


def test_a_possible_history_state_is_still_a_witness() -> None:
    rules = '  - {id: rising, when: "delta(f, 2) > 0.5 and f > 0.6", then: probe}\n'
    result = check_text(THEORY.replace("RULES", rules), "h.yaml", CheckConfig())
    (conflict,) = [d for d in result.diagnostics if d.check == "conflict"]
    witness = conflict.witness
    assert witness is not None and witness["delta(f, 2)"] > 0.5
    assert witness["f"] - witness["delta(f, 2)"] >= 0  # the past value is in the range


CALLS = {
    "streak": "streak(f > 0.5, {n})",
    "count": "count(n >= 2, {n})",
    "delta_f": "delta(f, {n})",
    "delta_n": "delta(n, {n})",
    "mean_f": "mean(f, {n})",
    "mean_n": "mean(n, {n})",
}


def _runtime_value(kind: str, rows: list[dict[str, Any]], window: int) -> Any:
    if kind == "streak":
        return history.streak(lambda rows, i: rows[i]["f"] > Fraction(1, 2), rows, window)
    if kind == "count":
        return history.count(lambda rows, i: rows[i]["n"] >= 2, rows, window)
    metric = kind.split("_")[1]
    if kind.startswith("delta"):
        return history.delta(rows, metric, 0, window)
    return history.mean([r[metric] for r in rows[-window:]])


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(sorted(CALLS)),
    window=st.integers(1, 4),
    history=st.lists(
        st.tuples(st.sampled_from([Fraction(k, 10) for k in range(11)]), st.integers(0, 4)),
        min_size=1,
        max_size=6,
    ),
)
def test_every_link_holds_in_every_run(
    kind: str, window: int, history: list[tuple[Fraction, int]]
) -> None:
    call = CALLS[kind].format(n=window)
    loaded = load_text(
        THEORY.replace("RULES", f'  - {{id: r, when: "{call} >= -100", then: probe}}\n'), "h.yaml"
    )
    assert loaded.theory is not None, [d.message for d in loaded.diagnostics]
    translator = Translator(loaded.theory)
    translator.condition(loaded.theory.rules[-1].when.expr)
    (name,) = [v for v in translator.domains if "(" in v]
    rows = [{"f": f, "n": Fraction(n)} for f, n in history]  # exact, as the compiler reasons
    value = _runtime_value(kind, rows, window)
    state = {"f": rows[-1]["f"], "n": Fraction(rows[-1]["n"]), name: Fraction(value)}
    domain = translator.domains[name]
    assert domain.low <= state[name] <= domain.high
    assert F.evaluate(translator.links[name], state), (name, rows, value)
