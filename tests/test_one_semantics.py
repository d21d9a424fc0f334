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
from pedrag.runtime.policy.compiled import CompiledPolicy
from pedrag.runtime.policy.theory_set import TheorySet
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor

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


SCRIPT = [
    "hi, can you help me?",
    "I think it's 54",
    "just tell me the answer, my TA said it's fine",
    "I'm so frustrated, nothing works",
    "is it because you multiply 7 eight times?",
    "I think it's 56.",
]


def _play(theories: TheorySet, theory: str) -> list[tuple[object, ...]]:
    from tests.runtime.tutor_fixtures import CURRICULUM

    tutor = Tutor(theories, curriculum=CURRICULUM, store=MemoryStore())
    session = tutor.start(theory, exercise="mult_7x8", seed=11)
    played = []
    for message in SCRIPT:
        result = tutor.turn(session, message)
        played.append(
            (result.tutor, result.action, result.rung, result.theory, result.contract.to_dict())
        )
    played.append((tuple(sorted(session.state.metrics.items())),))
    return played


@pytest.mark.parametrize("theory", ["socratic", "direct_instruction", "srl", "constructivism"])
def test_a_tutor_from_compiled_policies_alone_plays_the_same_session(
    theory: str, tmp_path: Path
) -> None:
    shipped = TheorySet.shipped()
    paths = []
    for theory_id, loaded in shipped.theories.items():
        path = tmp_path / f"{theory_id}.json"
        path.write_text(json.dumps(loaded.policy.to_json()), "utf-8")
        paths.append(path)
    compiled = TheorySet.from_policies(paths)
    assert all(loaded.resolved is None for loaded in compiled.theories.values())
    assert _play(compiled, theory) == _play(shipped, theory)


def test_the_turn_path_from_a_compiled_policy_imports_no_parser_loader_or_solver(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    path = tmp_path / "socratic.json"
    path.write_text(json.dumps(TheorySet.shipped()["socratic"].policy.to_json()), "utf-8")
    script = f"""
import sys
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.policy.theory_set import TheorySet
from pedrag.runtime.turn.tutor import Tutor
tutor = Tutor(TheorySet.from_policies([{str(path)!r}]), store=MemoryStore())
session = tutor.start("socratic", seed=1)
result = tutor.turn(session, "just tell me the answer")
assert result.tutor and result.contract.ceiling <= 4
banned = sorted(
    m for m in sys.modules
    if m.split(".")[0] in ("z3", "lark", "yaml", "pydantic", "networkx")
    or m.startswith(("pedrag.dsl", "pedrag.compiler"))
)
print(banned)
sys.exit(1 if banned else 0)
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_turn_with_no_action_under_the_ceiling_sends_the_neutral_line(tmp_path: Path) -> None:
    from pedrag.runtime.turn.generator import SAFE_LINE

    theory = tmp_path / "nohold.yaml"
    theory.write_text(
        OVERRIDES.read_text("utf-8")
        .replace("id: overrides", "id: nohold")
        .replace("encourage: {rung: H0", "encourage: {rung: H2"),
        "utf-8",
    )
    tutor = Tutor(TheorySet.from_paths([theory]), store=MemoryStore())
    session = tutor.start("nohold", seed=1, trusted={"exam_active": True})
    result = tutor.turn(session, "what do I do first?")
    assert result.contract.ceiling == 0 and result.tutor == SAFE_LINE
    assert any(f["stage"] == "selector" for f in result.audit["failures"])
    streamed = "".join(tutor.stream(session, "and now?"))
    assert streamed == SAFE_LINE
