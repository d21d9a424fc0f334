"""Behavioural diff of two versions of a theory: where does the chosen action change?

Compiler stage helper for `pedrag diff`. Takes two resolved theories over the same metrics;
gives the regions of state space where the action the runtime would choose — its selection
distribution, for weighted selection — differs, grouped by (old choice, new choice), each with
its share of the state space and example regions.

Method: split the state space cell by cell (as `compiler/measure.py` does), variables read by
the rules that changed first (within a leaf and time budget; beyond it the result is marked
incomplete); a branch stops as soon as both versions have the same rules
left with the same residual eligibility (nothing below can differ), or when every rule's
eligibility is decided, where the two choice distributions are compared.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from pedrag.compiler import formula as F
from pedrag.compiler.encode import Domain, Translator
from pedrag.compiler.formula import Node
from pedrag.compiler.measure import Cell, Measure
from pedrag.dsl.ir import ResolvedTheory

MAX_LEAVES = 50_000
TIME_BUDGET_S = 20.0
FALLBACK = "(fallback selector)"


class DiffError(Exception):
    pass


@dataclass
class Change:
    old: str
    new: str
    share: float = 0.0
    examples: list[tuple[float, str]] = field(default_factory=list)


@dataclass
class DiffResult:
    changes: list[Change]
    changed_share: float
    complete: bool


def _choice(theory: ResolvedTheory, eligible: list[int]) -> str:
    rules = theory.rules
    if not eligible:
        return FALLBACK
    if theory.selection == "priority":
        best = max((rules[i].priority, rules[i].weight) for i in eligible)
        actions = sorted(
            {rules[i].action for i in eligible if (rules[i].priority, rules[i].weight) == best}
        )
        return " | ".join(actions)
    weights: Counter[str] = Counter()
    for i in eligible:
        weights[rules[i].action] += Fraction(str(rules[i].weight)) * rules[i].priority  # type: ignore[assignment]
    total = sum(weights.values())
    if len(weights) == 1:
        return next(iter(weights))
    return ", ".join(f"{a} {float(w / total):.0%}" for a, w in sorted(weights.items()))


def _describe(path: list[tuple[str, Cell]], domains: dict[str, Domain]) -> str:
    parts = []
    for var, cell in sorted(path, key=lambda p: list(domains).index(p[0])):
        domain = domains[var]
        if domain.kind == "bool":
            parts.append(var if cell.value else f"not {var}")
        elif domain.kind == "enum":
            parts.append(f"{var} == {cell.value}")
        elif cell.low == cell.high:
            parts.append(f"{var} == {_num(cell.low)}")
        else:
            lo = "<=" if cell.low_closed else "<"
            hi = "<=" if cell.high_closed else "<"
            parts.append(f"{_num(cell.low)} {lo} {var} {hi} {_num(cell.high)}")
    return " and ".join(parts) or "everywhere"


def _num(value: Fraction | None) -> str:
    assert value is not None
    return str(value.numerator) if value.denominator == 1 else f"{float(value):.10g}"


def diff(old: ResolvedTheory, new: ResolvedTheory) -> DiffResult:
    old_t, new_t = Translator(old), Translator(new)
    old_nodes = [old_t.eligible(r) for r in old.rules]
    new_nodes = [new_t.eligible(r) for r in new.rules]
    domains: dict[str, Domain] = dict(old_t.domains)
    for name, domain in new_t.domains.items():
        if name in domains and domains[name].signature() != domain.signature():
            raise DiffError(f"metric `{name}` has a different type or range in the two versions")
        domains.setdefault(name, domain)
    measure = Measure(domains, [*old_nodes, *new_nodes])
    old_keys = [(r.action, r.weight, r.priority) for r in old.rules]
    new_keys = [(r.action, r.weight, r.priority) for r in new.rules]
    same_selection = old.selection == new.selection
    changes: dict[tuple[str, str], Change] = {}
    leaves = 0
    complete = True

    def signature(keys: list[Any], nodes: list[Node]) -> Counter[Any]:
        return Counter((k, id(n)) for k, n in zip(keys, nodes, strict=True) if n is not F.FALSE)

    def walk(
        olds: list[Node], news: list[Node], weight: float, path: list[tuple[str, Cell]]
    ) -> None:
        nonlocal leaves, complete
        if weight == 0 or not complete:
            return
        old_sig, new_sig = signature(old_keys, olds), signature(new_keys, news)
        if same_selection and old_sig == new_sig:
            return
        differing = [n for n in [*olds, *news] if n.vars]
        changed_ids = set((old_sig - new_sig) | (new_sig - old_sig))
        preferred = [n for n in differing if any(id(n) == key[1] for key in changed_ids)]
        pool = preferred or differing
        if not pool:
            leaves += 1
            if leaves > MAX_LEAVES or time.perf_counter() > deadline:
                complete = False
                return
            before = _choice(old, [i for i, n in enumerate(olds) if n is F.TRUE])
            after = _choice(new, [i for i, n in enumerate(news) if n is F.TRUE])
            if before != after:
                change = changes.setdefault((before, after), Change(before, after))
                change.share += weight
                change.examples.append((weight, _describe(path, domains)))
                change.examples.sort(key=lambda e: -e[0])
                del change.examples[3:]
            return
        var = min((v for n in pool for v in n.vars), key=lambda v: measure.rank.get(v, (0, v)))
        for cell in measure.split_cells(var):
            memo: dict[int, Node] = {}
            walk(
                [F.substitute(n, var, cell.value, memo) for n in olds],
                [F.substitute(n, var, cell.value, memo) for n in news],
                weight * cell.weight,
                [*path, (var, cell)],
            )

    deadline = time.perf_counter() + TIME_BUDGET_S
    walk(old_nodes, new_nodes, 1.0, [])
    found = sorted(changes.values(), key=lambda c: -c.share)
    return DiffResult(found, sum(c.share for c in found), complete and measure.exact)
