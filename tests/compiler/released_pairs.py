"""The released (0.x) pair search for redundant and shadowed rules, kept as a reference.

A verbatim copy of `Analysis.rule_status`, `implies`, `redundant`, `shadowed`, `_shadow` and
the witness search (`_witness`, `_nice_candidates`) as they were before the structural pair
search: every same-action pair is asked of z3 (boxes only decide pairs that are both plain
boxes), every answer builds a witness, and each rule's status asks z3 twice. `tests/compiler/test_pair_search.py` compares the new search with it
finding for finding, and `benchmarks/check_scaling.py` times it as the baseline. It keeps its
own answer cache so the two never share answers.
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction
from math import ceil, floor
from typing import Any

from pedrag.compiler import formula as F
from pedrag.compiler.analysis import Analysis, Finding, Outcome, RuleStatus, present, rule_key
from pedrag.compiler.formula import Node
from pedrag.dsl.ir import RuleInfo
from pedrag.dsl.printer import to_text


class ReleasedAnalysis(Analysis):
    """`Analysis` with the released rule-status and pair search."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._own_cache: dict[tuple[Any, ...], Any] = {}

    def _cached(self, key: tuple[Any, ...], compute: Any, *_: Any) -> Any:  # kept in memory only
        full = (self.context, *key)
        if full in self._own_cache:
            return self._own_cache[full]
        value = compute()
        if not (isinstance(value, Outcome) and value.unknown):
            self._own_cache[full] = value
        return value

    def _witness(self, model: Any, formulas: list[Node]) -> tuple[dict[str, Any], dict[str, Any]]:
        names: set[str] = set()
        for node in formulas:
            names |= node.vars
        order = list(self.domains)
        ordered = sorted(names, key=order.index)
        state = {name: self.encoding.value(model, name) for name in ordered}
        truth = [F.evaluate(node, state) for node in formulas]
        for name in ordered:
            domain = self.domains[name]
            if domain.kind != "real":
                continue
            for candidate in _nice_candidates(
                state[name], domain.low, domain.high, self.cuts.get(name, set())
            ):
                trial = {**state, name: candidate}
                if all(
                    F.evaluate(node, trial) == t for node, t in zip(formulas, truth, strict=True)
                ):
                    state[name] = candidate
                    break
        shown = {name: present(state[name], self.domains[name].kind) for name in ordered}
        return shown, state  # (shown, exact), as `Analysis.solve` now reads a witness

    def rule_status(self, rule: RuleInfo) -> RuleStatus:
        statuses = self._memo.setdefault("status", {})
        if rule.id in statuses:
            return statuses[rule.id]
        key = rule_key(self, rule)
        status = self._cached(("rule", *key), lambda: self._released_rule_status(rule))
        statuses[rule.id] = status
        return status

    def _released_rule_status(self, rule: RuleInfo) -> RuleStatus:
        holds = self.holds[rule.id]
        box, exact = self.hull(holds)
        pieces = self.pieces(rule.when)
        if exact and not box.empty() and holds is not F.FALSE:
            holds_outcome = self.solve([holds])
        else:
            holds_outcome = self.solve([], [p.node for p in pieces])
        if holds_outcome.unsat:
            tracked = [p.node for p in pieces]
            core = self.minimal_core([], tracked, holds_outcome.core) if holds_outcome.core else ()
            return RuleStatus(holds_outcome, None, core)
        if not holds_outcome.sat:
            return RuleStatus(holds_outcome)
        eligible = self.eligible[rule.id]
        if eligible is holds:
            return RuleStatus(holds_outcome, holds_outcome)
        return RuleStatus(holds_outcome, self.solve([eligible]))

    def implies(self, a: RuleInfo, b: RuleInfo) -> Outcome:
        ha, hb = self.holds[a.id], self.holds[b.id]
        box_a, exact_a = self.hull(ha)
        box_b, exact_b = self.hull(hb)
        if exact_a and not box_a.empty():
            if not box_a.intersects(box_b) or (exact_b and not box_a.within(box_b)):
                return Outcome("sat")
            if exact_b and box_a.within(box_b):
                return Outcome("unsat")
        key = ("implies", to_text(a.when.expr), to_text(b.when.expr))
        return self._cached(key, lambda: self.solve([ha, F.not_(hb)]))

    def redundant(self) -> list[Finding]:
        if "redundant" in self._memo:
            return self._memo["redundant"]
        by_action: dict[str, list[RuleInfo]] = defaultdict(list)
        for rule in self.rules:
            if not self.rule_status(rule).dead and self.rule_status(rule).holds.sat:
                by_action[rule.action].append(rule)
        found = []
        for rules in by_action.values():
            for a in rules:
                for b in rules:
                    if a is b:
                        continue
                    forward = self.implies(a, b)
                    if forward.unknown:
                        found.append(Finding("redundant", (a, b), forward))
                        break
                    if not forward.unsat:
                        continue
                    if b.index < a.index or not self.implies(b, a).unsat:
                        found.append(Finding("redundant", (a, b), self.rule_status(a).holds))
                        break
        self._memo["redundant"] = found
        return found

    def shadowed(self) -> list[Finding]:
        if "shadowed" in self._memo:
            return self._memo["shadowed"]
        found: list[Finding] = []
        if self.theory.selection != "priority":
            self._memo["shadowed"] = found
            return found
        live = [r for r in self.rules if self.rule_status(r).live]
        for rule in live:
            box, _ = self.hull(self.eligible[rule.id])
            higher = [
                h
                for h in live
                if h is not rule
                and self.beats(h, rule)
                and box.intersects(self.hull(self.eligible[h.id])[0])
            ]
            if not higher:
                continue
            key = ("shadow", rule_key(self, rule), tuple(rule_key(self, h) for h in higher))
            result = self._cached(
                key, lambda rule=rule, higher=higher: self._released_shadow(rule, higher)
            )
            if result is None:
                continue
            outcome, core = result
            found.append(Finding("shadowed", (rule, *(higher[i] for i in core)), outcome))
        self._memo["shadowed"] = found
        return found

    def _released_shadow(
        self, rule: RuleInfo, higher: list[RuleInfo]
    ) -> tuple[Outcome, tuple[int, ...]] | None:
        base = [self.eligible[rule.id]]
        tracked = [F.not_(self.eligible[h.id]) for h in higher]
        outcome = self.solve(base, tracked, witness=False)
        if outcome.sat:
            return None
        if outcome.unknown:
            return outcome, ()
        core = self.minimal_core(base, tracked, outcome.core)
        witness = self.solve([*base, *(self.eligible[higher[i].id] for i in core[:1])])
        return witness, core


def _nice_candidates(
    value: Fraction, low: Fraction, high: Fraction, cuts: set[Fraction]
) -> list[Fraction]:
    """Short decimals in the same cell as `value` (same truth for every one-variable atom)."""
    if value in cuts or value in (low, high):
        return []
    points = sorted({low, high, *(c for c in cuts if low < c < high)})
    below = max((p for p in points if p < value), default=low)
    above = min((p for p in points if p > value), default=high)
    out = []
    for digits in range(0, 4):
        scale = 10**digits
        first = floor(below * scale) + 1
        last = ceil(above * scale) - 1
        options = [Fraction(k, scale) for k in range(first, last + 1)] if last - first < 50 else []
        if options:
            middle = (below + above) / 2
            out.extend(sorted(options, key=lambda x: (abs(x - middle), x)))
            if len(out) > 4:
                break
    return out
