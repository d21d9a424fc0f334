"""One semantics: the compiler's witness, `pedrag why`, the compiled policy and a real
`Tutor.turn` give the same ceiling, including the runtime's own steps (exam lockdown,
conduct restriction), which the kernel declares and the compiler reads like any other step.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pedrag.commands.why import explain
from pedrag.compiler.config import CheckConfig
from pedrag.compiler.driver import check_paths
from pedrag.compiler.lower import lower
from pedrag.dsl.loader import load_file
from pedrag.runtime.compiled import CompiledPolicy
from pedrag.runtime.memory_store import MemoryStore
from pedrag.runtime.theory_set import TheorySet
from pedrag.runtime.tutor import Tutor

OVERRIDES = Path(__file__).parent / "data" / "semantics" / "overrides.yaml"

CASES = [
    # (trusted state, the ceiling every layer must agree on)
    ({"conduct_restricted": True}, 1),
    ({"exam_active": True}, 0),
    ({"explain_mode": True}, 7),
    ({"explain_mode": True, "exam_active": True}, 0),  # explain mode never passes a lockdown
    ({"explain_mode": True, "conduct_restricted": True}, 1),  # the restriction comes last
    ({}, 7),
]


def _policy() -> CompiledPolicy:
    return CompiledPolicy.from_json(lower(_resolved()))


def _resolved():  # type: ignore[no-untyped-def]
    loaded = load_file(str(OVERRIDES))
    assert loaded.theory is not None, loaded.diagnostics
    return loaded.theory


def test_check_reports_the_restricted_rule_as_ceiling_blocked_with_a_restricted_witness() -> None:
    result = check_paths([str(OVERRIDES)], CheckConfig())
    blocked = [d for d in result.diagnostics if d.check == "ceiling-blocked"]
    assert [d.items[0] for d in blocked] == ["rule:solve_when_restricted"]
    witness = blocked[0].witness
    assert witness is not None and witness["conduct_restricted"] is True
    # The witness state, through the runtime's own ceiling, is indeed below the action's H7.
    assert _policy().ceiling(witness).rung == 1


@pytest.mark.parametrize(("trusted", "ceiling"), CASES)
def test_why_compiled_policy_and_tutor_agree_on_the_ceiling(
    trusted: dict[str, bool], ceiling: int
) -> None:
    policy = _policy()
    assert policy.ceiling(trusted).rung == ceiling
    assert explain(policy, dict(trusted))["ceiling"]["rung"] == ceiling
    tutor = Tutor(TheorySet.from_paths([OVERRIDES]), store=MemoryStore())
    session = tutor.start("overrides", seed=3, trusted=trusted)
    result = tutor.turn(session, "could you help me with the next step?")
    assert result.contract.ceiling == ceiling
    assert result.rung <= ceiling
    assert result.contract.exam_lockdown == bool(trusted.get("exam_active"))


def test_the_runtime_steps_are_in_the_compiled_policy_after_the_theorys_own() -> None:
    steps = lower(_resolved())["ceiling"]["steps"]
    assert [(s["runtime"], s["effect"], s["rung"]) for s in steps] == [
        (None, "set", 7),
        ("exam_lockdown", "set", 0),
        ("conduct_restriction", "at_most", 1),
    ]
    json.dumps(steps)
