"""How `pedrag check`'s semantic analysis scales with the number of rules.

Generates theories of 50, 500 and 5,000 rules over 12 metrics (4 floats, 3 ints, 3 enums,
2 bools; conjunctions of 1-3 atoms; a 3-step ceiling; 2 invariants; a few declared
conflicts) and reports, per size: full semantic-check time (every check of the catalog plus
the coverage measure), the growth exponent between sizes, and the speed-up over the naive
method — one fresh z3 solver per rule pair. The naive method is measured in the same run on
a random sample of pairs and extrapolated to all n(n-1)/2 pairs (it cannot be run in full at
5,000 rules: 12.5 million pairs). Finally, a re-check after editing one rule of the 500-rule
file (answers are cached by rule content).

    python benchmarks/check_scaling.py           # 50, 500, 5000 rules
    python benchmarks/check_scaling.py --quick   # 50, 200 rules
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time

import z3

from pedrag.compiler.analysis import Analysis
from pedrag.compiler.checks import catalog
from pedrag.compiler.encode import Z3Encoding
from pedrag.dsl.loader import load_text

FLOATS = ["frustration", "confidence", "hedging", "engagement"]
INTS = ["attempts", "hints", "streak"]
ENUMS = {
    "affect": ["calm", "confused", "frustrated", "bored"],
    "intent": ["question", "attempt", "demand", "other"],
    "quality": ["none", "vague", "partial", "sound"],
}
BOOLS = ["exam_active", "misconception"]


def _atom(rng: random.Random) -> str:
    kind = rng.choice(["float", "float", "int", "enum", "bool"])
    if kind == "float":
        name = rng.choice(FLOATS)
        return f"{name} {rng.choice(['<', '>=', '<=', '>'])} {rng.randint(1, 9) / 10}"
    if kind == "int":
        name = rng.choice(INTS)
        return f"{name} {rng.choice(['<', '>=', '=='])} {rng.randint(0, 20)}"
    if kind == "enum":
        name = rng.choice(list(ENUMS))
        return f"{name} {rng.choice(['==', '!='])} {rng.choice(ENUMS[name])}"
    return rng.choice(BOOLS) if rng.random() < 0.5 else f"not {rng.choice(BOOLS)}"


def generate(rules: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    n_actions = max(10, rules // 10)
    lines = ["pedrag: 1", f"theory: {{id: bench_{rules}, name: Bench}}", "metrics:"]
    for name in FLOATS:
        lines.append(f"  {name}: {{type: float, range: [0, 1], source: inferred}}")
    for name in INTS:
        lines.append(f"  {name}: {{type: int, range: [0, 20], source: trusted}}")
    for name, values in ENUMS.items():
        source = "classified" if name == "intent" else "inferred"
        lines.append(f"  {name}: {{type: enum, values: [{', '.join(values)}], source: {source}}}")
    for name in BOOLS:
        lines.append(f"  {name}: {{type: bool, source: trusted}}")
    lines.append("actions:")
    for i in range(n_actions):
        conflicts = f", conflicts: [a{(i + 1) % n_actions}]" if i % 20 == 0 else ""
        tags = ", tags: [support]" if i % 3 == 0 else ""
        lines.append(
            f"  a{i}: {{rung: H{i % 6}, priority: {rng.randint(1, 10)}, description: D.{tags}{conflicts}}}"
        )
    lines.append("rules:")
    lines.append('  - {id: catch_all, when: "true", then: a0}')
    for i in range(rules - 1):
        atoms = " and ".join(_atom(rng) for _ in range(rng.randint(1, 3)))
        lines.append(f'  - {{id: r{i}, when: "{atoms}", then: a{rng.randrange(n_actions)}}}')
    lines += [
        "ceiling:",
        "  start: H4",
        "  steps:",
        '    - {when: "attempts >= 5", at_least: H5}',
        '    - {when: "intent == demand", at_most: H3}',
        '    - {when: "exam_active", set: H0}',
        "invariants:",
        '  - {id: exam_no_help, never: "exam_active and rung > H0"}',
        "  - {id: support_frustrated, always: \"frustration >= 0.95 implies 'support' in tags\"}",
    ]
    return "\n".join(lines) + "\n"


def full_check(text: str, name: str) -> tuple[float, Analysis, int]:
    started = time.perf_counter()
    loaded = load_text(text, name)
    assert loaded.ok and loaded.theory is not None, [d.message for d in loaded.diagnostics][:3]
    analysis = Analysis(loaded.theory)
    found = 0
    for check in catalog().values():
        if check.info.stage == "semantic" and check.run is not None:
            found += len(list(check.run(analysis)))
    analysis.facts()
    return time.perf_counter() - started, analysis, found


def naive_pair_seconds(analysis: Analysis, samples: int, seed: int = 3) -> float:
    """Mean time of one co-eligibility question asked of a fresh solver (no pruning, no reuse)."""
    rng = random.Random(seed)
    rules = analysis.rules
    pairs = [tuple(rng.sample(range(len(rules)), 2)) for _ in range(samples)]
    started = time.perf_counter()
    for i, j in pairs:
        encoding = Z3Encoding(analysis.domains)
        a = encoding.term(analysis.eligible[rules[i].id])
        b = encoding.term(analysis.eligible[rules[j].id])
        solver = z3.Solver()
        solver.add(*encoding.constraints, a, b)
        solver.check()
    return (time.perf_counter() - started) / samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes only (50, 200)")
    parser.add_argument(
        "--samples", type=int, default=300, help="rule pairs timed for the naive method"
    )
    args = parser.parse_args(argv)
    sizes = [50, 200] if args.quick else [50, 500, 5000]
    rows = []
    previous: tuple[int, float] | None = None
    for size in sizes:
        seconds, analysis, found = full_check(generate(size), f"bench_{size}.yaml")
        per_pair = naive_pair_seconds(analysis, args.samples)
        pairs = size * (size - 1) // 2
        naive = per_pair * pairs
        growth = (
            ""
            if previous is None
            else f"{math.log(seconds / previous[1]) / math.log(size / previous[0]):.2f}"
        )
        rows.append(
            (
                size,
                seconds,
                growth,
                analysis.queries,
                found,
                per_pair * 1e3,
                naive,
                naive / seconds,
                analysis.coverage()[0],
            )
        )
        previous = (size, seconds)
    print(
        f"{'rules':>6} {'check s':>8} {'growth':>7} {'z3 queries':>10} {'findings':>8} "
        f"{'naive ms/pair':>13} {'naive s (extrap.)':>17} {'speed-up':>9} {'coverage':>9}"
    )
    for size, seconds, growth, queries, found, ms, naive, speedup, coverage in rows:
        print(
            f"{size:>6} {seconds:>8.2f} {growth:>7} {queries:>10} {found:>8} {ms:>13.3f} {naive:>17.1f} "
            f"{speedup:>8.0f}x {coverage:>9.4f}"
        )
    print(
        "naive = one fresh z3 solver per rule pair, all n(n-1)/2 pairs, timed on "
        f"{args.samples} random pairs and extrapolated"
    )
    # Re-check after editing one rule (cache by rule content).
    size = 200 if args.quick else 500
    text = generate(size)
    full_check(text, "edit.yaml")
    marker = '  - {id: r10, when: "'
    start = text.index(marker) + len(marker)
    edited = text[:start] + "frustration >= 0.33 and " + text[start:]
    seconds, analysis, _ = full_check(edited, "edit.yaml")
    print(
        f"re-check after editing one rule of a {size}-rule file: {seconds:.3f} s ({analysis.queries} z3 queries)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
