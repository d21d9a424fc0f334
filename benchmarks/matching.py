"""Benchmark: time to find the eligible rules for one state, compiled policy vs two baselines.

Sizes: the shipped Socratic theory (its rule count, about 50) and generated theories of 500
and 5,000 rules over 12 metrics. For each, the median time per state over many random states
of three methods, measured in the same run on the same prepared states:

* compiled    -- `CompiledPolicy.eligible(turn, ceiling)`: what the compiler generates; up to
                 `codegen.STRAIGHT_LINE_MAX` rules, straight-line code specialised per ceiling,
                 above it the bitset matcher
* bitset      -- the bitset matcher forced at every size, to show the crossover
* naive       -- one generated Python function that evaluates every rule's condition in turn,
                 then keeps the rules under the ceiling
* hoisted     -- the same function with every metric read once into a local at its top (the
                 strongest simple baseline: what a careful hand-written matcher does)
* straight    -- hoisted straight-line code per ceiling: only the rules the ceiling allows,
                 each metric read once into a local (the strongest simple baseline)
* interpreter -- walking each rule's resolved condition AST (`pedrag.runtime.interpret`)

The once-per-turn history work (`CompiledPolicy.prepare`: computed metrics and history calls)
is the same for every method and is reported on its own line for the Socratic theory.
Goals (issue 3): compiled under 5 µs at ~50 rules; at 5,000 rules at least 2x the naive function.

    python benchmarks/matching.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pedrag.compiler.lower import lower
from pedrag.dsl.ir import ResolvedTheory
from pedrag.dsl.loader import load_file, load_text
from pedrag.runtime.policy import codegen
from pedrag.runtime.policy.codegen import CallTable, SourceWriter, generate_naive
from pedrag.runtime.policy.compiled import CompiledPolicy
from pedrag.runtime.policy.theory_set import compile_theory

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the AST interpreter is a test oracle (tests/oracles)
from tests.oracles.interpret import Interpreter  # noqa: E402

FLOATS = ["frustration", "confidence", "engagement", "hedging", "mastery"]
INTS = ["attempts", "hints", "streak"]
BOOLS = ["code_attempt", "misconception"]
ENUMS = {
    "affect": ["calm", "curious", "confused", "bored"],
    "intent": ["question", "attempt", "demand", "other"],
}


def generated_theory(rules: int, seed: int = 1) -> str:
    """A theory of `rules` rules over 12 metrics: conjunctions of 2-4 atoms, some `or`s.

    Thresholds come from a 0.1 grid, so rules share atoms as hand-written theories do; about
    one rule in ten holds in a random state (the Socratic theory: about one in seven).
    """
    rng = random.Random(seed)
    lines = ["pedrag: 1", "theory: {id: generated, name: Generated}", "metrics:"]
    lines += [f"  {m}: {{type: float, range: [0, 1], source: inferred}}" for m in FLOATS]
    lines += [f"  {m}: {{type: int, range: [0, 10], source: observed}}" for m in INTS]
    lines += [f"  {m}: {{type: bool, source: inferred}}" for m in BOOLS]
    lines += [
        f"  {m}: {{type: enum, values: [{', '.join(v)}], source: inferred}}"
        for m, v in ENUMS.items()
    ]
    lines.append("actions:")
    lines += [
        f"  act{i}: {{rung: H{i % 8}, priority: {1 + i % 10}, description: action {i}}}"
        for i in range(24)
    ]

    def atom() -> str:
        kind = rng.random()
        if kind < 0.5:
            return f"{rng.choice(FLOATS)} {rng.choice(['<', '>=', '<=', '>'])} {rng.randrange(1, 10) / 10}"
        if kind < 0.7:
            return f"{rng.choice(INTS)} {rng.choice(['<', '>=', '=='])} {rng.randrange(0, 8)}"
        if kind < 0.8:
            return rng.choice(["", "not "]) + rng.choice(BOOLS)
        name = rng.choice(sorted(ENUMS))
        if rng.random() < 0.5:
            return f"{name} {rng.choice(['==', '!='])} {rng.choice(ENUMS[name])}"
        return f"{name} in [{', '.join(rng.sample(ENUMS[name], 2))}]"

    lines.append("rules:")
    for index in range(rules):
        parts = [atom() for _ in range(rng.randint(2, 4))]
        if rng.random() < 0.15:
            parts[-1] = f"({parts[-1]} or {atom()})"
        lines.append(
            f"  - {{id: r{index}, when: {json.dumps(' and '.join(parts))}, then: act{rng.randrange(24)}}}"
        )
    lines.append("ceiling: {start: H5}")
    return "\n".join(lines) + "\n"


def generate_hoisted(conditions: list[Any], writer: SourceWriter) -> Callable[..., list[int]]:
    """`generate_naive`'s function with each `s['metric']` read once into a local up front."""
    tests = [writer.state(tree) for tree in conditions]
    names = sorted({m for test in tests for m in re.findall(r"s\[('[^']*')\]", test)})
    local = {name: f"m{index}" for index, name in enumerate(names)}
    lines = ["def hoisted(s, c):"]
    lines += [f"    {local[name]} = s[{name}]" for name in names]
    lines.append("    out = []")
    for index, test in enumerate(tests):
        hoisted = re.sub(r"s\[('[^']*')\]", lambda m: local[m.group(1)], test)
        lines += [f"    if {hoisted}:", f"        out.append({index})"]
    lines.append("    return out")
    namespace: dict[str, Any] = {}
    exec(compile("\n".join(lines) + "\n", "<hoisted naive>", "exec"), namespace)  # noqa: S102
    return namespace["hoisted"]  # type: ignore[no-any-return]


def random_state(theory: ResolvedTheory, rng: random.Random) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for name, metric in theory.metrics.items():
        if metric.source == "computed":
            continue
        if metric.type == "bool":
            state[name] = rng.random() < 0.5
        elif metric.type == "enum":
            state[name] = rng.choice(metric.values)
        elif metric.type == "int":
            state[name] = rng.randint(int(metric.low), int(metric.high))
        else:
            state[name] = round(rng.uniform(metric.low, metric.high), 2)
    return state


def median_time(function: Callable[[Any], Any], inputs: list[Any], number: int) -> float:
    """Median over inputs of the mean CPU time of `number` calls, in microseconds (CPU time,
    not wall clock: on a shared machine the wall clock counts other processes' work too)."""
    times = []
    for item in inputs:
        start = time.thread_time()
        for _ in range(number):
            function(item)
        times.append((time.thread_time() - start) / number * 1e6)
    return statistics.median(times)


def measure(label: str, theory: ResolvedTheory, states: int, number: int) -> dict[str, Any]:
    policy: CompiledPolicy = compile_theory(theory)
    saved, codegen.STRAIGHT_LINE_MAX = codegen.STRAIGHT_LINE_MAX, -1
    try:
        bitset = CompiledPolicy.from_json(lower(theory))
    finally:
        codegen.STRAIGHT_LINE_MAX = saved
    data = lower(theory)
    rng = random.Random(7)
    ceiling = 5
    turns = [policy.prepare([random_state(theory, rng)]) for _ in range(states)]

    calls = CallTable()
    defaults = {name: m.default for name, m in policy.metrics.items()}
    writer = SourceWriter(defaults, calls)
    for rule in data["rules"]:
        calls.collect(rule["when"])
    naive = generate_naive([rule["when"] for rule in data["rules"]], writer)
    hoisted = generate_hoisted([rule["when"] for rule in data["rules"]], writer)
    rungs = [policy.actions[r.action].rung for r in policy.rules]
    # The strongest simple baseline: hoisted straight-line code per ceiling (only the rules the
    # ceiling allows, each metric read once), without the compiler's enum specialisation.
    functions = codegen.build_straight_line(
        [rule["when"] for rule in data["rules"]], rungs, defaults, calls, 8
    )
    functions[ceiling](turns[0].state, turns[0].calls)  # generated on first use
    per_ceiling = functions[ceiling]

    def straight_eligible(turn: Any) -> tuple[int, ...]:
        return per_ceiling(turn.state, turn.calls)  # type: ignore[no-any-return]

    def naive_eligible(turn: Any) -> list[int]:
        return [i for i in naive(turn.state, turn.calls) if rungs[i] <= ceiling]

    def hoisted_eligible(turn: Any) -> list[int]:
        return [i for i in hoisted(turn.state, turn.calls) if rungs[i] <= ceiling]

    interpreter = Interpreter(theory)
    expressions = [(rule.when.expr, theory.actions[rule.action].rung) for rule in theory.rules]

    def interpreted(turn: Any) -> list[int]:
        rows = [turn.state]
        return [
            i
            for i, (expr, rung) in enumerate(expressions)
            if rung <= ceiling and interpreter.value(expr, rows)
        ]

    for turn in turns:  # all three agree before anything is timed
        expected = list(policy.eligible(turn, ceiling))
        assert naive_eligible(turn) == expected == interpreted(turn) == hoisted_eligible(turn), (
            label
        )
        assert list(bitset.eligible(turn, ceiling)) == expected, label
        assert list(straight_eligible(turn)) == expected, label
    matched = statistics.mean(len(policy.eligible(t, ceiling)) for t in turns)
    compiled_us = median_time(lambda t: policy.eligible(t, ceiling), turns, number)
    bitset_us = median_time(lambda t: bitset.eligible(t, ceiling), turns, number)
    naive_us = median_time(naive_eligible, turns, number)
    hoisted_us = median_time(hoisted_eligible, turns, number)
    straight_us = median_time(straight_eligible, turns, number)
    interpreter_us = median_time(interpreted, turns, max(1, number // 20))
    return {
        "label": label,
        "rules": len(policy.rules),
        "eligible": matched,
        "compiled": compiled_us,
        "bitset": bitset_us,
        "naive": naive_us,
        "hoisted": hoisted_us,
        "straight": straight_us,
        "interpreter": interpreter_us,
        "policy": policy,
        "turns": turns,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer states and repetitions")
    args = parser.parse_args(argv)
    states, number = (30, 50) if args.quick else (200, 200)

    socratic = load_file(ROOT / "theories" / "socratic.yaml").theory
    assert socratic is not None
    theories: list[tuple[str, ResolvedTheory]] = [("socratic", socratic)]
    for size in (500, 5000):
        started = time.perf_counter()
        loaded = load_text(generated_theory(size), f"generated-{size}.yaml")
        assert loaded.theory is not None, loaded.diagnostics[:3]
        print(
            f"generated {size} rules, loaded in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
        theories.append((f"generated-{size}", loaded.theory))

    rows = []
    for label, theory in theories:
        scale = max(1, len(theory.rules) // 100)
        rows.append(measure(label, theory, states, max(5, number // scale)))

    print(
        f"\nmedian CPU time to find the eligible rules for one state (µs), {states} states, Python {sys.version.split()[0]}\n"
    )
    header = f"{'theory':<16} {'rules':>6} {'eligible':>8} {'compiled':>9} {'bitset':>7} {'naive fn':>9} {'hoisted':>8} {'straight':>9} {'AST interp':>11} {'naive/comp':>11} {'hoisted/comp':>13} {'straight/comp':>14} {'interp/comp':>12}"
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row['label']:<16} {row['rules']:>6} {row['eligible']:>8.1f} {row['compiled']:>9.2f} {row['bitset']:>7.2f} {row['naive']:>9.2f} "
            f"{row['hoisted']:>8.2f} {row['straight']:>9.2f} {row['interpreter']:>11.1f} {row['naive'] / row['compiled']:>10.1f}x "
            f"{row['hoisted'] / row['compiled']:>12.2f}x {row['straight'] / row['compiled']:>13.2f}x "
            f"{row['interpreter'] / row['compiled']:>11.1f}x"
        )
    socratic_policy: CompiledPolicy = rows[0]["policy"]
    rng = random.Random(3)
    histories = [[random_state(socratic, rng) for _ in range(4)] for _ in range(states)]
    prepare_us = median_time(socratic_policy.prepare, histories, number)
    print(
        f"\nonce per turn (socratic, 4-turn history): prepare (computed metrics + history calls) {prepare_us:.2f} µs"
    )
    small, large = rows[0], rows[-1]
    print(
        f"goal: compiled < 5 µs at {small['rules']} rules: {'met' if small['compiled'] < 5 else 'NOT met'} ({small['compiled']:.2f} µs)"
    )
    speedup = large["naive"] / large["compiled"]
    print(
        f"goal: >= 2x the naive function at {large['rules']} rules: {'met' if speedup >= 2 else 'NOT met'} ({speedup:.1f}x)"
    )
    for baseline, name in (
        ("hoisted", "hoisted naive function"),
        ("straight", "hoisted straight-line function per ceiling"),
    ):
        lost = [f"{row['rules']} rules" for row in rows if row["compiled"] >= row[baseline]]
        verdict = "met" if not lost else f"NOT met at {', '.join(lost)}"
        print(f"goal: faster than the {name} at every size: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
