"""Formulas -> z3 terms, with the domains' constraints (see `compiler/encode.py`).

Compiler stage helper, imported only where z3 is asked something: an `Analysis` whose answers
all come from the check cache never loads z3.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import z3

from pedrag.compiler.encode import Domain
from pedrag.compiler.formula import Node


class Z3Encoding:
    """Formulas -> z3 terms over one set of variables, with their domain constraints."""

    def __init__(self, domains: dict[str, Domain], context: Any = None) -> None:
        self.domains = domains
        # A context of its own (the `Analysis` of each file passes one) keeps z3's internal
        # state, and so the models it returns, independent of what else the process checked.
        self.context = context
        self.vars: dict[str, Any] = {}
        self.constraints: list[Any] = []
        self._memo: dict[Node, Any] = {}  # interned nodes: keyed by the node itself

    def var(self, name: str) -> Any:
        hit = self.vars.get(name)
        if hit is not None:
            return hit
        domain = self.domains[name]
        ctx = self.context
        if domain.kind == "bool":
            term = z3.Bool(name, ctx)
        elif domain.kind == "enum":
            term = z3.Int(name, ctx)
            self.constraints.append(z3.And(term >= 0, term < len(domain.values)))
        else:
            term = z3.Int(name, ctx) if domain.kind == "int" else z3.Real(name, ctx)
            low, high = _num(domain.low, ctx), _num(domain.high, ctx)
            self.constraints.append(z3.And(term >= low, term <= high))
        self.vars[name] = term
        return term

    def term(self, node: Node) -> Any:
        hit = self._memo.get(node)
        if hit is not None:
            return hit
        kind = node.kind
        ctx = self.context
        if kind == "true":
            out = z3.BoolVal(True, ctx)
        elif kind == "false":
            out = z3.BoolVal(False, ctx)
        elif kind == "cmp":
            v = self.var(node.var)  # type: ignore[arg-type]
            c = _num(node.const, ctx)  # type: ignore[arg-type]
            out = v < c if node.op == "<" else v <= c if node.op == "<=" else v == c
        elif kind == "lin":
            total = z3.Sum([_num(c, ctx) * self.var(v) for v, c in node.terms])  # type: ignore[union-attr]
            c = _num(node.const, ctx)  # type: ignore[arg-type]
            out = total < c if node.op == "<" else total <= c if node.op == "<=" else total == c
        elif kind == "in":
            assert node.var is not None and node.values is not None
            chosen = node.values
            domain = self.domains[node.var]
            v = self.var(node.var)
            if domain.kind == "bool":
                out = v if True in chosen else z3.Not(v)
            else:
                out = z3.Or([v == domain.values.index(x) for x in domain.values if x in chosen])
        elif kind == "not":
            out = z3.Not(self.term(node.children[0]))
        elif kind == "and":
            out = z3.And([self.term(c) for c in node.children])
        else:
            out = z3.Or([self.term(c) for c in node.children])
        self._memo[node] = out
        return out

    def value(self, model: Any, name: str) -> Any:
        """A variable's value in a z3 model, in designer terms (Fraction, enum name, bool)."""
        domain = self.domains[name]
        term = self.var(name)
        raw = model.eval(term, model_completion=True)
        if domain.kind == "bool":
            return z3.is_true(raw)
        if domain.kind == "enum":
            return domain.values[raw.as_long()]
        if domain.kind == "int":
            return Fraction(raw.as_long())
        return Fraction(raw.numerator_as_long(), raw.denominator_as_long())


def _num(value: Fraction, context: Any = None) -> Any:
    if value.denominator == 1:
        return value.numerator
    return z3.Q(value.numerator, value.denominator, context)
