"""Derived tags: an action whose wordings fill the exercise's help carries that help's tag
(`{hint}` -> hint, `{example}` -> example, `{outline}` -> partial_solution, `{solution}` ->
reveal) whether or not its `tags:` say so, so every proof over `'hint' in tags` covers it.
"""

from __future__ import annotations

import pytest

from pedrag.dsl.loader import load_text
from pedrag.kernel.wording import MATERIAL_PLACEHOLDERS
from pedrag.runtime.policy.theory_set import compile_theory

THEORY = """\
pedrag: 1
theory: {{id: derived, name: Derived}}
metrics:
  solved: {{type: bool, source: trusted}}
actions:
  act: {{rung: H3, priority: 5, description: Act.{tags}{variants}}}
  other: {{rung: H1, priority: 5, description: Other., tags: [probe]}}
rules:
  - {{id: go, when: "not solved", then: act}}
  - {{id: done, when: "solved", then: other}}
ceiling: {{start: H7}}
"""


def _action(tags: str = "", variants: str = "", invariant: str = ""):  # type: ignore[no-untyped-def]
    text = THEORY.format(
        tags=f", tags: [{tags}]" if tags else "",
        variants=f", variants: [{variants}]" if variants else "",
    )
    if invariant:
        text += f'invariants:\n  - {{id: inv, never: "{invariant}"}}\n'
    loaded = load_text(text, "t.yaml")
    assert loaded.ok, [d.message for d in loaded.diagnostics]
    assert loaded.theory is not None
    return loaded.theory, loaded.theory.actions["act"]


@pytest.mark.parametrize(
    ("placeholder", "tag"),
    [
        ("hint", "hint"),
        ("example", "example"),
        ("outline", "partial_solution"),
        ("solution", "reveal"),
    ],
)
def test_each_help_placeholder_gives_its_tag(placeholder: str, tag: str) -> None:
    _, action = _action(variants=f"'Here: {{{placeholder}}}'")
    assert action.tags == {tag}
    assert action.derived == ((tag, placeholder),)


@pytest.mark.parametrize(
    "placeholder",
    sorted(set(MATERIAL_PLACEHOLDERS) - {"hint", "example", "outline", "solution"}),
)
def test_the_other_placeholders_give_no_tag(placeholder: str) -> None:
    """The question, its restatement, the goal's concept, a misconception, another item, the
    learner's own working: none is help towards this exercise's answer."""
    _, action = _action(variants=f"'About: {{{placeholder}}}'")
    assert action.tags == frozenset()
    assert action.derived == ()


def test_a_declared_tag_is_kept_once_and_not_shown_as_derived() -> None:
    _, action = _action(tags="hint, probe", variants="'Try: {hint}', 'See: {example}'")
    assert action.tags == {"hint", "probe", "example"}
    assert action.derived == (("example", "example"),)


def test_an_action_without_wordings_has_only_its_declared_tags() -> None:
    _, action = _action(tags="probe")
    assert action.tags == {"probe"}
    assert action.derived == ()


def test_a_placeholder_in_several_wordings_gives_its_tag_once_in_a_fixed_order() -> None:
    _, action = _action(variants="'{outline} then {hint}', 'Again: {hint}', 'Or {example}'")
    assert action.derived == (
        ("hint", "hint"),
        ("example", "example"),
        ("partial_solution", "outline"),
    )


def test_an_invariant_may_name_a_tag_only_a_wording_gives() -> None:
    """`'partial_solution' in tags` with no action declaring it was an unknown-tag error; the
    action that fills `{outline}` carries it."""
    theory, _ = _action(variants="'Finish it: {outline}'", invariant="'partial_solution' in tags")
    assert [i.id for i in theory.invariants] == ["inv"]


def test_the_compiled_policy_the_runtime_runs_carries_the_derived_tag() -> None:
    theory, _ = _action(tags="probe", variants="'Try: {hint}'")
    policy = compile_theory(theory)
    assert policy.actions["act"].tags == {"probe", "hint"}
    assert policy.actions["other"].tags == {"probe"}
