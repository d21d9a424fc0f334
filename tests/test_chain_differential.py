"""Differential test of the whole chain: for generated theories (with the runtime steps' metrics
or without) and every state, the z3 encoding, the compiler's witness ceiling, `pedrag why`, the
compiled policy and the runtime's rule engine give the same ceiling and the same eligible rules
as an oracle written here from DESIGN's words, independently of the kernel.
"""

from __future__ import annotations

import os
import random
from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pedrag.commands.why import explain
from pedrag.compiler import formula as F
from pedrag.compiler.analysis import Analysis
from pedrag.dsl.loader import load_text
from pedrag.runtime.policy.policy_core import PolicyInput, compute_contract
from pedrag.runtime.policy.rule_engine import RuleEngine
from pedrag.runtime.policy.theory_set import compile_theory
from tests.compiler.test_cross_check import theories
from tests.oracles.brute import evaluate, states

RUNTIME_METRICS = ("exam_active", "conduct_restricted", "explain_mode")


@st.composite
def chain_theories(draw: st.DrawFn) -> str:
    text = draw(theories())
    chosen = draw(st.lists(st.sampled_from(RUNTIME_METRICS), unique=True, max_size=3))
    lines = text.splitlines()
    at = lines.index("metrics:") + 1
    for name in chosen:
        lines.insert(at, f"  {name}: {{type: bool, source: trusted}}")
    if "explain_mode" in chosen and draw(st.booleans()):
        if "  steps: []" in lines:
            lines[lines.index("  steps: []")] = "  steps:"
        lines.append('    - {when: "explain_mode", set: H7}')
        # The ceiling block is last before the invariants; keep the step inside it.
        lines = _ceiling_last(lines)
    return "\n".join(lines) + "\n"


def _ceiling_last(lines: list[str]) -> list[str]:
    if "invariants:" not in lines:
        return lines
    start = lines.index("invariants:")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("    - {when"))
    return lines[:start] + lines[end:] + lines[start:end]


def oracle_ceiling(theory: Any, state: dict[str, Any]) -> int:
    """DESIGN: the theory's steps in order (min / max / replace), then the runtime's: an exam
    lockdown sets H0, then a conduct restriction caps at H1 (applied last)."""
    level = theory.ceiling_start
    for step in theory.ceiling_steps:
        if step.runtime is not None:
            continue
        if evaluate(step.when.expr, state):
            level = {"at_most": min(level, step.rung), "at_least": max(level, step.rung)}.get(
                step.effect, step.rung
            )
    if "exam_active" in theory.metrics and state.get("exam_active") is True:
        level = 0
    if "conduct_restricted" in theory.metrics and state.get("conduct_restricted") is True:
        level = min(level, 1)
    return level


def _exact(state: dict[str, Any]) -> dict[str, Any]:
    return {k: v if isinstance(v, bool | str) else Fraction(v) for k, v in state.items()}


@settings(
    max_examples=int(os.environ.get("PEDRAG_CHAIN_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(chain_theories())
def test_every_layer_agrees_on_ceiling_and_eligibility(text: str) -> None:
    loaded = load_text(text, "gen.yaml")
    assert loaded.ok, [d.message for d in loaded.diagnostics]
    theory = loaded.theory
    assert theory is not None
    analysis = Analysis(theory)
    policy = compile_theory(theory)
    engine = RuleEngine(policy)
    fits = {rung: analysis.translator.fits(rung) for rung in range(8)}
    for state in states(theory):
        expected = oracle_ceiling(theory, state)
        values = _exact(state)
        z3_ceiling = max(r for r, node in fits.items() if r == 0 or F.evaluate(node, values))
        assert z3_ceiling == expected, (state, "z3 encoding")
        assert analysis.ceiling_at(state) == expected, (state, "witness ceiling")
        assert policy.ceiling(state).rung == expected, (state, "compiled policy")
        assert explain(policy, dict(state))["ceiling"]["rung"] == expected, (state, "why")
        trusted = {k: v for k, v in state.items() if theory.metrics[k].source == "trusted"}
        contract = compute_contract(PolicyInput.of(trusted, {}), policy)
        assert contract.ceiling == expected, (state, "policy core")

        want = {
            rule.id
            for rule in theory.rules
            if evaluate(rule.when.expr, state) and theory.actions[rule.action].rung <= expected
        }
        compiled = {policy.rules[i].id for i in policy.eligible([state], expected)}
        assert compiled == want, (state, "compiled eligible")
        z3_eligible = {
            rule.id for rule in theory.rules if F.evaluate(analysis.eligible[rule.id], values)
        }
        assert z3_eligible == want, (state, "z3 eligible")
        choice = engine.choose([state], contract, random.Random(0))
        assert set(choice.eligible) == want, (state, "rule engine")
        if want:
            assert choice.rule_id in want
        if choice.rung > expected:  # only when the theory has no action that low at all
            assert all(a.rung > expected for a in theory.actions.values())
