"""Differential test: `pedrag check`, `pedrag why` and the compiled policy against an oracle.

Hypothesis builds small theories (ints, enums, bools, floats with close thresholds, chained
comparisons, linear atoms over mixed types, ceilings, both selections, invariants) as data;
`tests/compiler/oracle.py`, which shares no code with the compiler, answers every check by
enumerating representative states. `pedrag check` must report exactly the oracle's findings
and its coverage to 1e-9, and the compiled policy (what `pedrag why` and the runtime run)
must find the oracle's eligible rules in every representative state.

Each theory is checked twice: as is, and with `measure.ENUMERATE` at 1, so that even small int
ranges in linear atoms go through the arrangement (the path wide ranges take) and are
compared with an oracle that enumerates them.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pedrag.commands.why import explain
from pedrag.compiler import analysis, measure
from pedrag.compiler.config import CheckConfig
from pedrag.compiler.driver import check_paths
from pedrag.dsl.loader import load_file
from pedrag.runtime.policy.theory_set import compile_theory
from tests.compiler import oracle as O

EXAMPLES = 320  # theories per run: half as written, half with ENUMERATE at 1

# Float thresholds a hair apart, as designers write them (and as rounding used to merge them).
CLOSE = [Fraction(t) for t in ("0.1", "0.100000001", "0.3", "0.5", "0.699999999", "0.7", "0.25")]
OPS = ["<", "<=", ">", ">=", "==", "!="]


@st.composite
def metrics(draw: st.DrawFn) -> tuple[O.Metric, ...]:
    kinds = draw(
        st.lists(st.sampled_from(["int", "float", "enum", "bool"]), min_size=1, max_size=3)
    )
    out = []
    for index, kind in enumerate(kinds):
        name = f"m{index}"
        if kind == "int":
            low = draw(st.integers(-1, 1))
            out.append(
                O.Metric(name, "int", Fraction(low), Fraction(low + draw(st.integers(1, 4))))
            )
        elif kind == "float":
            out.append(O.Metric(name, "float", Fraction(0), Fraction(1)))
        elif kind == "enum":
            out.append(
                O.Metric(
                    name, "enum", values=("calm", "eager", "anxious")[: draw(st.integers(2, 3))]
                )
            )
        else:
            out.append(O.Metric(name, "bool"))
    return tuple(out)


def _constant(draw: st.DrawFn, metric: O.Metric) -> Fraction:
    if metric.type == "float":
        return draw(st.sampled_from(CLOSE + [Fraction(0), Fraction(1)]))
    return Fraction(draw(st.integers(int(metric.low), int(metric.high))))


@st.composite
def atoms(draw: st.DrawFn, ms: tuple[O.Metric, ...]) -> Any:
    metric = draw(st.sampled_from(ms))
    numeric = [m for m in ms if m.type in ("int", "float")]
    if metric.type == "bool":
        return ("flag", metric.name)
    if metric.type == "enum":
        if draw(st.booleans()):
            return (
                "eq",
                metric.name,
                draw(st.sampled_from(["==", "!="])),
                draw(st.sampled_from(metric.values)),
            )
        chosen = draw(st.lists(st.sampled_from(metric.values), min_size=1, max_size=2, unique=True))
        return ("in", metric.name, tuple(chosen), draw(st.booleans()))
    shape = draw(st.sampled_from(["cmp", "chain", "lin"]))
    if shape == "lin" and len(numeric) >= 2:
        pair = draw(st.lists(st.sampled_from(numeric), min_size=2, max_size=2, unique=True))
        if sum(m.type == "float" for m in pair) <= 1:  # what the oracle measures exactly
            coefs = [
                draw(st.sampled_from([Fraction(1), Fraction(-1), Fraction(2), Fraction(1, 2)]))
                for _ in pair
            ]
            const = draw(
                st.sampled_from(
                    [Fraction(0), Fraction(1, 2), Fraction(1), Fraction("0.3"), Fraction(2)]
                )
            )
            return (
                "lin",
                tuple(zip(coefs, (m.name for m in pair), strict=True)),
                draw(st.sampled_from(OPS)),
                const,
            )
    if shape == "chain":
        low, high = sorted((_constant(draw, metric), _constant(draw, metric)))
        return (
            "chain",
            low,
            draw(st.sampled_from(["<", "<="])),
            metric.name,
            draw(st.sampled_from(["<", "<="])),
            high,
        )
    return ("cmp", metric.name, draw(st.sampled_from(OPS)), _constant(draw, metric))


@st.composite
def conditions(draw: st.DrawFn, ms: tuple[O.Metric, ...]) -> Any:
    shape = draw(st.sampled_from(["atom", "atom", "and", "or", "not"]))
    if shape == "atom":
        return draw(atoms(ms))
    if shape == "not":
        return ("not", draw(atoms(ms)))
    return (shape, tuple(draw(st.lists(atoms(ms), min_size=2, max_size=3))))


# Wordings an action may have: each help placeholder, the same tag declared too, and none.
WORDINGS = [
    "Try this: {hint}",
    "Like this one: {example}",
    "Fill it in: {outline}",
    "Here it is: {solution}",
    "What about {topic}?",
]


@st.composite
def theories(draw: st.DrawFn) -> O.Theory:
    ms = draw(metrics())
    count = draw(st.integers(2, 3))
    names = [f"a{i}" for i in range(count)]
    conflicts = draw(st.booleans())
    actions = tuple(
        O.Action(
            name,
            rung=draw(st.integers(0, 7)),
            priority=draw(st.integers(1, 2)),
            tags=("support",) if index == 0 or draw(st.booleans()) else (),
            conflicts=(names[1],) if conflicts and index == 0 else (),
            variants=tuple(draw(st.lists(st.sampled_from(WORDINGS), max_size=2, unique=True))),
        )
        for index, name in enumerate(names)
    )
    rules = tuple(
        O.Rule(f"r{i}", draw(conditions(ms)), draw(st.sampled_from(names)))
        for i in range(draw(st.integers(1, 4)))
    )
    steps = tuple(
        O.Step(
            draw(atoms(ms)),
            draw(st.sampled_from(["at_most", "at_least", "set"])),
            draw(st.integers(0, 7)),
        )
        for _ in range(draw(st.integers(0, 2)))
    )
    invariants: list[O.Invariant] = []
    if draw(st.booleans()):
        if draw(st.booleans()):
            invariants.append(
                O.Invariant("inv", "never", draw(atoms(ms)), rung_above=draw(st.integers(0, 6)))
            )
        else:
            # a tag some action carries (an unknown tag is an error), declared or only derived
            tag = draw(st.sampled_from(sorted(set().union(*map(O.carried, actions)))))
            kind = draw(st.sampled_from(["never", "always"]))
            invariants.append(O.Invariant("inv", kind, draw(atoms(ms)), tag=tag))
    return O.Theory(
        ms,
        actions,
        rules,
        selection=draw(st.sampled_from(["weighted", "priority"])),
        start=draw(st.integers(0, 7)),
        steps=steps,
        invariants=tuple(invariants),
    )


def _ids(diagnostics: list[Any], check: str) -> set[str]:
    return {d.items[0].removeprefix("rule:") for d in diagnostics if d.check == check}


def _runtime_value(metric: O.Metric, value: Any) -> Any:
    if metric.type == "float":
        return float(value)
    if metric.type == "int":
        return int(value)
    return value


def assert_agrees(theory: O.Theory, path: Path) -> None:
    path.write_text(O.render(theory), "utf-8")
    result = check_paths([str(path)], CheckConfig())
    diagnostics = result.diagnostics
    assert not [
        d
        for d in diagnostics
        if d.severity.value == "error"
        and d.check in ("syntax-error", "type-error", "unknown-name", "internal-error")
    ], O.render(theory) + "\n" + "\n".join(d.message for d in diagnostics)
    assert not [d for d in diagnostics if (d.data or {}).get("result") == "unknown"]
    truth = O.answer(theory)
    found = {
        "dead": _ids(diagnostics, "dead-rule"),
        "blocked": _ids(diagnostics, "ceiling-blocked"),
        "shadowed": _ids(diagnostics, "shadowed-rule"),
        "redundant": _ids(diagnostics, "redundant-rule"),
        "conflicts": {
            frozenset(i.removeprefix("rule:") for i in d.items)
            for d in diagnostics
            if d.check == "conflict"
        },
        "invariant": {
            (d.items[0].removeprefix("rule:"), d.items[1].removeprefix("invariant:"))
            for d in diagnostics
            if d.check == "invariant-violation"
        },
        "gap": any(d.check == "coverage-gap" for d in diagnostics),
    }
    expected = {key: getattr(truth, key) for key in found}
    assert found == expected, O.render(theory)
    (facts,) = result.theories
    assert facts["coverage_exact"] is True, O.render(theory)
    assert abs(facts["coverage"] - float(truth.coverage)) <= 1e-9, O.render(theory)
    loaded = load_file(str(path))
    assert loaded.theory is not None
    policy = compile_theory(loaded.theory)
    by_name = {m.name: m for m in theory.metrics}
    for state, _ in truth.eligible_at[:200]:
        given_state = {k: _runtime_value(by_name[k], v) for k, v in state.items()}
        # The oracle again at the state the runtime receives (a float, read as its decimal).
        exact = {
            k: Fraction(repr(v)) if isinstance(v, float) else v for k, v in given_state.items()
        }
        exact = {
            k: Fraction(v) if isinstance(v, int) and not isinstance(v, bool) else v
            for k, v in exact.items()
        }
        level = O.ceiling(theory, exact)
        actions = {a.name: a for a in theory.actions}
        want = [
            r.id for r in theory.rules if O.holds(r.when, exact) and actions[r.action].rung <= level
        ]
        assert explain(policy, given_state)["eligible"] == want, (O.render(theory), given_state)


@pytest.mark.parametrize("enumerate_limit", [measure.ENUMERATE, 1])
@settings(
    max_examples=EXAMPLES // 2,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(theory=theories())
def test_check_and_the_compiled_policy_agree_with_the_oracle(
    theory: O.Theory, enumerate_limit: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(measure, "ENUMERATE", enumerate_limit)
    monkeypatch.setattr(analysis, "_CACHE", {})  # answers by content must not hide the path
    assert_agrees(theory, tmp_path / "generated.yaml")
