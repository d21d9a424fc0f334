"""Seeded generator of realistic theory files for the check benchmarks.

What a large hand- or LLM-written theory looks like, not what flatters the checker: 12
metrics (4 floats, 3 ints, 3 enums, 2 bools), a **fixed** set of 30 actions however many
rules there are (so same-action groups grow with the rule count, as they do when a theory
grows), and independent random conditions: conjunctions of 1-3 atoms drawn from comparisons,
chained ranges, enum equality and lists, bools, with one rule in ten holding a disjunction.
There is **no catch-all rule**, so coverage is a real question. A 3-step ceiling, 2
invariants and two pairs of actions declared `conflicts` whose rules are kept apart by a
guard on one metric, as a designer would write them (2% of them forget the guard).

    python benchmarks/theory_gen.py 500 > /tmp/theory_500.yaml
"""

from __future__ import annotations

import argparse
import random
import sys

FLOATS = ["frustration", "confidence", "hedging", "engagement"]
INTS = {"attempts": 20, "hints": 10, "turns": 50}
ENUMS = {
    "affect": ["calm", "confused", "frustrated", "bored"],
    "intent": ["question", "attempt", "demand", "other"],
    "quality": ["none", "vague", "partial", "sound"],
}
BOOLS = ["exam_active", "misconception"]
ACTIONS = 30
# (action, action, guard for the first, guard for the second)
CONFLICTS = [
    (0, 1, "affect == frustrated", "affect != frustrated"),
    (2, 3, "misconception", "not misconception"),
]


def _threshold(rng: random.Random) -> str:
    return f"{rng.randint(1, 19) / 20:g}"


def atom(rng: random.Random) -> str:
    kind = rng.choice(["float", "float", "float", "chain", "int", "int", "enum", "enum", "bool"])
    if kind == "float":
        return f"{rng.choice(FLOATS)} {rng.choice(['<', '>=', '<=', '>'])} {_threshold(rng)}"
    if kind == "chain":
        low, high = sorted(rng.sample(range(1, 20), 2))
        return f"{low / 20:g} <= {rng.choice(FLOATS)} < {high / 20:g}"
    if kind == "int":
        name = rng.choice(list(INTS))
        op = rng.choice(["<", ">=", ">", "<=", "=="])
        return f"{name} {op} {rng.randint(0, INTS[name])}"
    if kind == "enum":
        name = rng.choice(list(ENUMS))
        values = ENUMS[name]
        form = rng.choice(["==", "==", "!=", "in"])
        if form == "in":
            chosen = sorted(rng.sample(values, 2), key=values.index)
            return f"{name} in [{', '.join(chosen)}]"
        return f"{name} {form} {rng.choice(values)}"
    name = rng.choice(BOOLS)
    return name if rng.random() < 0.5 else f"not {name}"


def condition(rng: random.Random) -> str:
    parts = [atom(rng) for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.1:
        parts[0] = f"({atom(rng)} or {atom(rng)})"
    return " and ".join(parts)


def generate(rules: int, seed: int = 7, selection: str = "weighted") -> str:
    """A theory file of `rules` rules; the same (rules, seed, selection) gives the same text."""
    rng = random.Random(seed)
    lines = ["pedrag: 1", f"theory: {{id: gen_{rules}, name: Generated {rules}}}"]
    if selection != "weighted":
        lines.append(f"selection: {selection}")
    lines.append("metrics:")
    for name in FLOATS:
        lines.append(f"  {name}: {{type: float, range: [0, 1], source: inferred}}")
    for name, high in INTS.items():
        lines.append(f"  {name}: {{type: int, range: [0, {high}], source: trusted}}")
    for name, values in ENUMS.items():
        source = "classified" if name == "intent" else "inferred"
        lines.append(f"  {name}: {{type: enum, values: [{', '.join(values)}], source: {source}}}")
    for name in BOOLS:
        lines.append(f"  {name}: {{type: bool, source: trusted}}")
    lines.append("actions:")
    conflicts = {a: b for a, b, _, _ in CONFLICTS}
    for i in range(ACTIONS):
        extra = f", conflicts: [a{conflicts[i]}]" if i in conflicts else ""
        tags = ", tags: [support]" if i % 3 == 0 else ""
        lines.append(
            f"  a{i}: {{rung: H{i % 6}, priority: {rng.randint(1, 10)}, "
            f"description: Action {i}.{tags}{extra}}}"
        )
    guards = {}
    for a, b, guard_a, guard_b in CONFLICTS:
        guards[a], guards[b] = guard_a, guard_b
    lines.append("rules:")
    for i in range(rules):
        action = rng.randrange(ACTIONS)
        when = condition(rng)
        if action in guards and rng.random() >= 0.02:
            when = f"{guards[action]} and {when}"
        extra = ""
        if selection == "priority":
            extra = f", priority: {rng.randint(1, 10)}, weight: {rng.randint(1, 3)}"
        lines.append(f'  - {{id: r{i}, when: "{when}", then: a{action}{extra}}}')
    lines += [
        "ceiling:",
        "  start: H4",
        "  steps:",
        '    - {when: "attempts >= 5", at_least: H5}',
        '    - {when: "intent == demand", at_most: H3}',
        '    - {when: "exam_active", set: H0}',
        "invariants:",
        '  - {id: exam_no_help, never: "exam_active and rung > H0"}',
        '  - {id: demand_no_solution, never: "intent == demand and rung > H3"}',
    ]
    return "\n".join(lines) + "\n"


def one_rule_edit(text: str, rule: str = "r10") -> str:
    """The same theory with one rule's condition narrowed (what a designer's edit does)."""
    marker = f'  - {{id: {rule}, when: "'
    start = text.index(marker) + len(marker)
    return text[:start] + "frustration >= 0.35 and " + text[start:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("rules", type=int)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--selection", choices=["weighted", "priority"], default="weighted")
    args = parser.parse_args(argv)
    sys.stdout.write(generate(args.rules, args.seed, args.selection))
    return 0


if __name__ == "__main__":
    sys.exit(main())
