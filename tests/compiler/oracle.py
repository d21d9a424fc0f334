"""An exact brute-force oracle for `pedrag check`, written independently of the compiler.

It never imports `pedrag.compiler` (nor the front end): theories are built here as plain
Python data (`Theory`), rendered to a theory file for `pedrag check`, and answered here by
enumerating states. Every int value is enumerated; each float is cut at every constant it is
compared with (for linear atoms, after the ints in them are fixed, which is why each linear
atom holds at most one float), and one state is taken at each cut and in each open interval
between cuts, weighted by the interval's length. So every truth pattern a theory can show is
visited and the covered share is exact.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

# -- theories as data ----------------------------------------------------------------------------
#
# Conditions are tuples:
#   ("cmp", metric, op, const)                  numeric metric against a constant
#   ("chain", low, op1, metric, op2, high)      low op1 metric op2 high
#   ("lin", ((coef, metric), ...), op, const)   sum of coef * metric op const (>= 2 metrics)
#   ("eq", metric, op, value)                   enum metric == / != value
#   ("in", metric, (values...), negated)
#   ("flag", metric)                            a bool metric
#   ("not", cond) | ("and", (cond, ...)) | ("or", (cond, ...))


@dataclass(frozen=True)
class Metric:
    name: str
    type: str  # int | float | enum | bool
    low: Fraction = Fraction(0)
    high: Fraction = Fraction(0)
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class Action:
    name: str
    rung: int
    priority: int
    tags: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()  # wordings; those that fill help carry its tag (`carried`)


# What DESIGN's "Actions" says a wording that fills the exercise's help makes its action carry,
# whatever its `tags:` say: written here from the docs, not read from the front end.
HELP = {"{hint}": "hint", "{example}": "example", "{outline}": "partial_solution"}
HELP["{solution}"] = "reveal"


def carried(action: Action) -> set[str]:
    """The tags an invariant reads on `action`: declared, and given by its wordings."""
    given = {tag for mark, tag in HELP.items() for wording in action.variants if mark in wording}
    return set(action.tags) | given


@dataclass(frozen=True)
class Rule:
    id: str
    when: Any
    action: str


@dataclass(frozen=True)
class Step:
    when: Any
    effect: str  # at_most | at_least | set
    rung: int


@dataclass(frozen=True)
class Invariant:
    id: str
    kind: str  # never | always
    when: Any  # the state part
    rung_above: int | None = None  # never: `when and rung > H{k}`
    tag: str | None = None  # always: `when implies 'tag' in tags`; never: `when and 'tag' in tags`


@dataclass(frozen=True)
class Theory:
    metrics: tuple[Metric, ...]
    actions: tuple[Action, ...]
    rules: tuple[Rule, ...]
    selection: str = "weighted"
    start: int = 7
    steps: tuple[Step, ...] = ()
    invariants: tuple[Invariant, ...] = field(default_factory=tuple)


# -- rendering ---------------------------------------------------------------------------------


def number(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    text = f"{float(value):.12f}".rstrip("0")
    assert Fraction(text) == value, value
    return text


def text(cond: Any) -> str:
    kind = cond[0]
    if kind == "cmp":
        return f"{cond[1]} {cond[2]} {number(cond[3])}"
    if kind == "chain":
        return f"{number(cond[1])} {cond[2]} {cond[3]} {cond[4]} {number(cond[5])}"
    if kind == "lin":
        parts = []
        for position, (coef, name) in enumerate(cond[1]):
            size = abs(coef)
            term = name if size == 1 else f"{number(size)} * {name}"
            if position == 0:
                parts.append(term if coef > 0 else f"-{term}")
            else:
                parts.append(f"{'+' if coef > 0 else '-'} {term}")
        return f"{' '.join(parts)} {cond[2]} {number(cond[3])}"
    if kind == "eq":
        return f"{cond[1]} {cond[2]} {cond[3]}"
    if kind == "in":
        return f"{cond[1]} {'not in' if cond[3] else 'in'} [{', '.join(cond[2])}]"
    if kind == "flag":
        return cond[1]
    if kind == "not":
        return f"not ({text(cond[1])})"
    joiner = f" {kind} "
    return "(" + joiner.join(text(c) for c in cond[1]) + ")"


def render(theory: Theory) -> str:
    lines = ["pedrag: 1", "theory: {id: generated, name: Generated}"]
    lines.append(f"selection: {theory.selection}")
    lines.append("metrics:")
    # Every metric is written (and may be read by a ceiling step): the oracle ranges over every
    # state, and a metric nothing writes would pin its witnesses to its default.
    for m in theory.metrics:
        if m.type == "bool":
            lines.append(f"  {m.name}: {{type: bool, source: classified}}")
        elif m.type == "enum":
            lines.append(
                f"  {m.name}: {{type: enum, values: [{', '.join(m.values)}], source: classified}}"
            )
        else:
            writer = "{count: turn}" if m.type == "int" else "mastery"
            lines.append(
                f"  {m.name}: {{type: {m.type}, range: [{number(m.low)}, {number(m.high)}], "
                f"source: trusted, writer: {writer}}}"
            )
    lines.append("actions:")
    for a in theory.actions:
        extra = ""
        if a.tags:
            extra += f", tags: [{', '.join(a.tags)}]"
        if a.conflicts:
            extra += f", conflicts: [{', '.join(a.conflicts)}]"
        if a.variants:
            extra += ", variants: [" + ", ".join(f"'{v}'" for v in a.variants) + "]"
        lines.append(
            f"  {a.name}: {{rung: H{a.rung}, priority: {a.priority}, description: Do {a.name}.{extra}}}"
        )
    lines.append("rules:")
    for r in theory.rules:
        lines.append(f'  - {{id: {r.id}, when: "{text(r.when)}", then: {r.action}}}')
    lines.append("ceiling:")
    lines.append(f"  start: H{theory.start}")
    lines.append("  steps:" + ("" if theory.steps else " []"))
    for s in theory.steps:
        lines.append(f'    - {{when: "{text(s.when)}", {s.effect}: H{s.rung}}}')
    if theory.invariants:
        lines.append("invariants:")
        for inv in theory.invariants:
            if inv.kind == "never" and inv.tag is not None:
                body = f"{text(inv.when)} and '{inv.tag}' in tags"
            elif inv.kind == "never":
                body = f"{text(inv.when)} and rung > H{inv.rung_above}"
            else:
                body = f"{text(inv.when)} implies '{inv.tag}' in tags"
            lines.append(f'  - {{id: {inv.id}, {inv.kind}: "{body}"}}')
    return "\n".join(lines) + "\n"


# -- evaluation ---------------------------------------------------------------------------------

_OPS = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


def holds(cond: Any, state: dict[str, Any]) -> bool:
    kind = cond[0]
    if kind == "cmp":
        return _OPS[cond[2]](state[cond[1]], cond[3])
    if kind == "chain":
        value = state[cond[3]]
        return _OPS[cond[2]](cond[1], value) and _OPS[cond[4]](value, cond[5])
    if kind == "lin":
        total = sum((coef * state[name] for coef, name in cond[1]), Fraction(0))
        return _OPS[cond[2]](total, cond[3])
    if kind == "eq":
        return _OPS[cond[2]](state[cond[1]], cond[3])
    if kind == "in":
        return (state[cond[1]] in cond[2]) != cond[3]
    if kind == "flag":
        return state[cond[1]] is True
    if kind == "not":
        return not holds(cond[1], state)
    if kind == "and":
        return all(holds(c, state) for c in cond[1])
    return any(holds(c, state) for c in cond[1])


def _walk(cond: Any) -> list[Any]:
    if cond[0] == "not":
        return _walk(cond[1])
    if cond[0] in ("and", "or"):
        return [atom for c in cond[1] for atom in _walk(c)]
    return [cond]


def _float_cuts(theory: Theory, finite: dict[str, Any]) -> dict[str, set[Fraction]]:
    """Every constant each float is compared with, linear atoms solved at the fixed ints."""
    conditions = [r.when for r in theory.rules] + [s.when for s in theory.steps]
    conditions += [inv.when for inv in theory.invariants]
    floats = {m.name for m in theory.metrics if m.type == "float"}
    cuts: dict[str, set[Fraction]] = {name: set() for name in floats}
    for cond in conditions:
        for atom in _walk(cond):
            if atom[0] == "cmp" and atom[1] in floats:
                cuts[atom[1]].add(atom[3])
            elif atom[0] == "chain" and atom[3] in floats:
                cuts[atom[3]].update((atom[1], atom[5]))
            elif atom[0] == "lin":
                inside = [(c, n) for c, n in atom[1] if n in floats]
                assert len(inside) <= 1, "the oracle takes at most one float per linear atom"
                if inside:
                    (coef, name), rest = inside[0], [(c, n) for c, n in atom[1] if n not in floats]
                    fixed = sum((c * finite[n] for c, n in rest), Fraction(0))
                    cuts[name].add((atom[3] - fixed) / coef)
    return cuts


def states(theory: Theory) -> list[tuple[dict[str, Any], Fraction]]:
    """Representative states with their probability (0 for the cuts themselves)."""
    finite_names = [m.name for m in theory.metrics if m.type != "float"]
    choices = []
    for m in theory.metrics:
        if m.type == "bool":
            choices.append([False, True])
        elif m.type == "enum":
            choices.append(list(m.values))
        elif m.type == "int":
            choices.append([Fraction(k) for k in range(int(m.low), int(m.high) + 1)])
    finite_total = 1
    for c in choices:
        finite_total *= len(c)
    floats = [m for m in theory.metrics if m.type == "float"]
    out = []
    for combo in itertools.product(*choices):
        finite = dict(zip(finite_names, combo, strict=True))
        cuts = _float_cuts(theory, finite)
        per_float = []
        for m in floats:
            points = sorted({m.low, m.high, *(c for c in cuts[m.name] if m.low < c < m.high)})
            cells: list[tuple[Fraction, Fraction]] = []
            for index, p in enumerate(points):
                cells.append((p, Fraction(0)))
                if index + 1 < len(points):
                    q = points[index + 1]
                    cells.append(((p + q) / 2, (q - p) / (m.high - m.low)))
            per_float.append(cells)
        for picked in itertools.product(*per_float):
            weight = Fraction(1, finite_total)
            state = dict(finite)
            for m, (value, share) in zip(floats, picked, strict=True):
                state[m.name] = value
                weight *= share
            out.append((state, weight))
    return out


def ceiling(theory: Theory, state: dict[str, Any]) -> int:
    level = theory.start
    for step in theory.steps:
        if holds(step.when, state):
            if step.effect == "at_most":
                level = min(level, step.rung)
            elif step.effect == "at_least":
                level = max(level, step.rung)
            else:
                level = step.rung
    return level


@dataclass
class Answers:
    dead: set[str] = field(default_factory=set)
    blocked: set[str] = field(default_factory=set)
    conflicts: set[frozenset[str]] = field(default_factory=set)
    shadowed: set[str] = field(default_factory=set)
    redundant: set[str] = field(default_factory=set)
    invariant: set[tuple[str, str]] = field(default_factory=set)
    gap: bool = False
    coverage: Fraction = Fraction(0)
    eligible_at: list[tuple[dict[str, Any], set[str]]] = field(default_factory=list)


def answer(theory: Theory) -> Answers:
    actions = {a.name: a for a in theory.actions}
    rules = theory.rules
    all_states = states(theory)
    hold: dict[str, set[int]] = {r.id: set() for r in rules}
    elig: dict[str, set[int]] = {r.id: set() for r in rules}
    result = Answers()
    for index, (state, weight) in enumerate(all_states):
        level = ceiling(theory, state)
        here = set()
        for rule in rules:
            if holds(rule.when, state):
                hold[rule.id].add(index)
                if actions[rule.action].rung <= level:
                    elig[rule.id].add(index)
                    here.add(rule.id)
        if here:
            result.coverage += weight
        else:
            result.gap = True
        result.eligible_at.append((state, here))
    result.dead = {r.id for r in rules if not hold[r.id]}
    result.blocked = {r.id for r in rules if hold[r.id] and not elig[r.id]}
    live = [r for r in rules if elig[r.id]]
    for a, b in itertools.combinations(live, 2):
        declared = (
            b.action in actions[a.action].conflicts or a.action in actions[b.action].conflicts
        )
        priority_a, priority_b = actions[a.action].priority, actions[b.action].priority
        tied = theory.selection == "priority" and priority_a == priority_b and a.action != b.action
        if (declared or tied) and elig[a.id] & elig[b.id]:
            result.conflicts.add(frozenset((a.id, b.id)))
    if theory.selection == "priority":
        for rule in live:
            higher: set[int] = set()
            for other in live:
                if actions[other.action].priority > actions[rule.action].priority:
                    higher |= elig[other.id]
            if elig[rule.id] <= higher:
                result.shadowed.add(rule.id)
    order = {r.id: i for i, r in enumerate(rules)}
    for rule in rules:
        if not hold[rule.id]:
            continue
        for other in rules:
            if other is rule or other.action != rule.action or not hold[other.id]:
                continue
            if hold[rule.id] <= hold[other.id] and (
                order[other.id] < order[rule.id] or not hold[other.id] <= hold[rule.id]
            ):
                result.redundant.add(rule.id)
    for invariant in theory.invariants:
        for rule in live:
            action = actions[rule.action]
            for index in elig[rule.id]:
                state = all_states[index][0]
                if invariant.kind == "never" and invariant.tag is not None:
                    broken = holds(invariant.when, state) and invariant.tag in carried(action)
                elif invariant.kind == "never":
                    broken = holds(invariant.when, state) and action.rung > (
                        invariant.rung_above or 0
                    )
                else:
                    broken = holds(invariant.when, state) and invariant.tag not in carried(action)
                if broken:
                    result.invariant.add((rule.id, invariant.id))
                    break
    return result
