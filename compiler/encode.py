"""Encoding: a resolved theory -> formulas over bounded variables -> z3.

Compiler stage. Takes a `ResolvedTheory`; gives one `Domain` per variable (a metric, or a
history call such as `trend(frustration, 3)` standing for its unknown value), every rule's
condition and eligibility as a `formula.Node` and the ceiling as its ordered steps; the z3
translation of a formula with the domain constraints is `compiler/z3_encoding.py`, so that
what needs no solver (a re-check answered from the cache) never imports z3.

Variables and their domains (linear arithmetic only, so every z3 answer is exact):

- int / float metrics: z3 Int / Real bounded by the range; bools: z3 Bool; enums: a bounded
  Int indexing the values (reported back as the value's name).
- computed metrics: their own bounded variable (their history is not modelled).
- history calls in conditions: a fresh bounded variable per distinct call text:
  `mean` in the metric's range, `delta` and `trend` in [-(high-low), high-low] (`delta` of an
  int metric is an int), `count` and `streak` ints in [0, n]. Each is linked to its argument
  where the link is exact (the definitions in `pedrag.kernel.history`, whose ranges and
  links this module encodes, the current turn being the last of the window): `streak(c, n) >= 1` exactly when `c` holds now,
  `count(c, n) >= 1` when it does and `<= n - 1` when it does not, `delta(m, n) = m - past`
  with the past value in the range (`m - high <= delta <= m - low`), and `mean(m, n)` between
  the means of `m` with `n - 1` values at the range's low and high ends. A condition that
  reads a call carries its link (`Translator.links`), so a state no run can produce is never
  a witness, and a rule that only such a state satisfies is dead. `trend` is bounded only.
- the ceiling: `ceiling >= k` for each rung k, unfolded over the steps in order
  (`at_most` = min, `at_least` = max, `set` = replace), so no ceiling variable is needed.
- the selected action (invariants only): a fixed action's rung, priority, tags and name are
  constants; `any_action_invariant` is the finite choice over all actions.

A rule is eligible when its condition holds and its action's rung is at or below the ceiling.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from pedrag.compiler import formula as F
from pedrag.compiler.formula import Node
from pedrag.dsl import ast
from pedrag.dsl.ir import ActionInfo, ResolvedTheory, RuleInfo
from pedrag.dsl.printer import to_text
from pedrag.kernel import history
from pedrag.kernel.errors import PedragError
from pedrag.kernel.exact import decimal_fraction

DomainKind = Literal["int", "real", "bool", "enum"]


@dataclass(frozen=True)
class Domain:
    """One variable of the state space, and the uniform distribution coverage is measured in."""

    name: str
    kind: DomainKind
    low: Fraction = Fraction(0)
    high: Fraction = Fraction(0)
    values: tuple[Any, ...] = ()
    metric: str | None = None

    @property
    def finite(self) -> bool:
        return self.kind != "real"

    def size(self) -> int:
        if self.kind == "int":
            return int(self.high - self.low) + 1
        if self.kind in ("enum", "bool"):
            return len(self.values)
        raise ValueError("a real domain has no size")

    def signature(self) -> tuple[Any, ...]:
        return (self.name, self.kind, self.low, self.high, self.values)


# Decimal text, not binary: 0.7 means 7/10 to a designer (`kernel.exact`). Remembered: a theory
# repeats a few hundred constants thousands of times, and parsing the text is most of the cost.
_frac = functools.lru_cache(maxsize=4096)(decimal_fraction)
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
"""`a op b` is `b _FLIPPED[op] a`."""


class TranslationError(PedragError):
    """A resolved expression this encoding cannot express (should not happen after resolve)."""


_SHARED: dict[tuple[int, int], tuple[ast.Expr, Node]] = {}
"""Conditions' formulas across translators: (the metrics' domains, by `_DECLARED`'s number,
the expression object's id) -> (the expression, kept so its id stays its own; its formula).
A long-running process (the language server) checks the same rules' expression objects again
after every edit (spliced into the new front end, or from its resolved-condition memo), and
translating 5,000 of them was a fifth of a one-rule edit's re-check. Only a condition that
reads metrics alone and calls no history function is kept: its formula is then a function of
the expression and the metrics' domains, and translating it adds nothing to the
translator's variables or links, so taking it from here leaves the translator as a fresh
translation would. Interned formulas make it the same object too."""
_DECLARED: dict[tuple[Any, ...], int] = {}
_ELIGIBLE: dict[tuple[Node, Node], Node] = {}
"""A rule's eligibility (`Translator.eligible`) by its condition's and its rung's ceiling
formulas, kept while `SHARING`."""
SHARED_LIMIT = 100_000  # expressions kept, all dropped when reached (every edit makes some)
SHARING = False
"""Whether translators keep formulas in `_SHARED`: only a process that checks again (the
language server turns it on); a `pedrag check` process would pay the walk below for nothing."""


class Translator:
    """Resolved condition ASTs -> `formula.Node`, collecting the variables they read."""

    def __init__(self, theory: ResolvedTheory) -> None:
        self.theory = theory
        self.domains: dict[str, Domain] = {}
        for name, metric in theory.metrics.items():
            if metric.type == "bool":
                self.domains[name] = Domain(name, "bool", values=(False, True), metric=name)
            elif metric.type == "enum":
                self.domains[name] = Domain(name, "enum", values=metric.values, metric=name)
            else:
                kind: DomainKind = "int" if metric.type == "int" else "real"
                self.domains[name] = Domain(
                    name, kind, _frac(metric.low), _frac(metric.high), metric=name
                )
        self._ceiling_cache: dict[int, Node] = {}
        # Keyed by the expression object's `id()`, the expression kept beside its formula so
        # its address stays its own (callers translate temporaries, a chained comparison's
        # links, whose addresses CPython reuses once they are dropped). Keying by the value
        # hashed the whole tree on every lookup (frozen dataclasses cache no hash): a tenth
        # of a 5,000-rule re-check. Equal expressions in two objects give the same interned
        # formula either way.
        self._conditions: dict[int, tuple[ast.Expr, Node]] = {}
        # `metric op number` atoms by (metric, op, number): a theory repeats a few hundred.
        self._atoms: dict[tuple[str, str, int | float], Node] = {}
        # A history call's variable -> what every run makes true of it (see the docstring).
        self.links: dict[str, Node] = {}
        metrics = tuple(domain.signature() for domain in self.domains.values())
        self._declared = _DECLARED.setdefault(metrics, len(_DECLARED))

    # -- conditions ------------------------------------------------------------------------
    def condition(self, expr: ast.Expr, action: ActionInfo | None = None) -> Node:
        if action is None:
            hit = self._conditions.get(id(expr))
            if hit is None:
                hit = self._conditions[id(expr)] = self._translated(expr)
            return hit[1]
        return self.linked(self._bool(expr, action))

    def _translated(self, expr: ast.Expr) -> tuple[ast.Expr, Node]:
        """(expr, its formula), from `_SHARED` where another translator of the same metrics
        translated the same expression object."""
        if not SHARING:
            return expr, self.linked(self._bool(expr, None))
        key = (self._declared, id(expr))
        hit = _SHARED.get(key)
        if hit is not None:
            return hit
        variables = len(self.domains)
        found = (expr, self.linked(self._bool(expr, None)))
        if len(self.domains) == variables and not any(
            isinstance(node, ast.Call) for node in ast.walk(expr)
        ):
            if len(_SHARED) >= SHARED_LIMIT:
                _SHARED.clear()
            _SHARED[key] = found
        return found

    def conjuncts(self, expr: ast.Expr) -> list[tuple[ast.Expr, Node]]:
        """Top-level conjuncts of a condition, each with its formula (for unsat cores)."""
        parts = expr.operands if isinstance(expr, ast.And) else (expr,)
        return [(part, self.linked(self._bool(part, None))) for part in parts]

    def linked(self, node: Node) -> Node:
        """`node` and the links of the history calls it reads (and of the calls they read)."""
        pending = [var for var in node.vars if var in self.links]
        if not pending:
            return node
        found: set[str] = set()
        while pending:
            var = pending.pop()
            if var not in found:
                found.add(var)
                pending.extend(v for v in self.links[var].vars if v in self.links)
        return F.and_([node, *(self.links[var] for var in sorted(found))])

    def holds(self, rule: RuleInfo) -> Node:
        return self.condition(rule.when.expr)

    def fits(self, rung: int) -> Node:
        """`rung <= ceiling`, as a formula over the ceiling steps' metrics."""
        hit = self._ceiling_cache.get(rung)
        if hit is not None:
            return hit
        at_least = F.const(self.theory.ceiling_start >= rung)
        for step in self.theory.ceiling_steps:
            when = self.condition(step.when.expr)
            reaches = step.rung >= rung
            if step.effect == "at_most":
                at_least = at_least if reaches else F.and_([at_least, F.not_(when)])
            elif step.effect == "at_least":
                at_least = F.or_([when, at_least]) if reaches else at_least
            else:  # set
                at_least = F.or_([when, at_least]) if reaches else F.and_([F.not_(when), at_least])
        self._ceiling_cache[rung] = at_least
        return at_least

    def eligible(self, rule: RuleInfo, holds: Node | None = None) -> Node:
        """`holds and fits the ceiling`; `holds`: the rule's `holds` formula, when the caller
        has it (`Analysis` makes both for 5,000 rules, and looking it up again was a tenth
        of encoding them)."""
        if holds is None:
            holds = self.holds(rule)
        fits = self.fits(self.theory.actions[rule.action].rung)
        if not SHARING:
            return F.and_([holds, fits])
        # Both are interned, so the pair is the conjunction's value: kept for the next check,
        # which asks it again of every rule an edit left alone (flattening and interning
        # 5,000 conjunctions was half of encoding a 5,000-rule theory in the server).
        hit = _ELIGIBLE.get((holds, fits))
        if hit is None:
            if len(_ELIGIBLE) >= SHARED_LIMIT:
                _ELIGIBLE.clear()
            hit = _ELIGIBLE[(holds, fits)] = F.and_([holds, fits])
        return hit

    def invariant(self, condition: ast.Expr, kind: str, action: ActionInfo) -> Node:
        """The formula that holds exactly where `action` violates the invariant."""
        body = self._bool(condition, action)
        return self.linked(body if kind == "never" else F.not_(body))

    # -- variables -------------------------------------------------------------------------
    def _call_var(self, call: ast.Call) -> str:
        name = to_text(call)
        if name in self.domains:
            return name
        func = call.func
        window_node = call.args[1]
        window = int(window_node.value) if isinstance(window_node, ast.Number) else 1
        if history.reads_condition(func):
            low, high, integer = history.value_range(func, window)
        else:
            target = call.args[0]
            assert isinstance(target, ast.MetricRef)
            base = self.domains[target.name]
            low, high, integer = history.value_range(
                func, window, base.low, base.high, base.kind == "int"
            )
        kind: DomainKind = "int" if integer else "real"
        domain = Domain(name, kind, Fraction(low), Fraction(high))
        self.domains[name] = domain
        link = self._link(call, name, window)
        if link is not F.TRUE:
            self.links[name] = link
        return name

    def _link(self, call: ast.Call, name: str, window: int) -> Node:
        """What every run makes true of the call's value (`kernel.history.link`)."""
        func = call.func
        if history.reads_condition(func):
            split = history.link(func, window)
            if not isinstance(split, history.Split):
                return F.TRUE
            now = self._bool(call.args[0], None)
            if_now = F.cmp(name, split.if_now[0], Fraction(split.if_now[1]))
            if_not_now = F.cmp(name, split.if_not_now[0], Fraction(split.if_not_now[1]))
            return F.or_([F.and_([now, if_now]), F.and_([F.not_(now), if_not_now])])
        target = call.args[0]
        assert isinstance(target, ast.MetricRef)
        base = self.domains[target.name]
        band = history.link(func, window, base.low, base.high)
        if not isinstance(band, history.Band):
            return F.TRUE
        terms = {
            target.name: Fraction(band.now_coefficient),
            name: Fraction(band.value_coefficient),
        }
        return F.and_([F.lin(terms, ">=", band.low), F.lin(terms, "<=", band.high)])

    # -- expressions -----------------------------------------------------------------------
    def _bool(self, node: ast.Expr, action: ActionInfo | None) -> Node:
        match node:
            case ast.Bool(value=value):
                return F.const(value)
            case ast.MetricRef(name=name):
                domain = self.domains[name]
                if domain.kind != "bool":
                    raise TranslationError(f"`{name}` is not a bool metric")
                return F.member(name, (True,), domain.values)
            case ast.Not(operand=operand):
                return F.not_(self._bool(operand, action))
            case ast.And(operands=operands):
                return F.and_(self._bool(o, action) for o in operands)
            case ast.Or(operands=operands):
                return F.or_(self._bool(o, action) for o in operands)
            case ast.Implies(left=left, right=right):
                return F.implies(self._bool(left, action), self._bool(right, action))
            case ast.Compare(operands=operands, ops=ops):
                if len(ops) == 1:  # most comparisons: the atom itself, which `and_` returns
                    return self._pair(operands[0], ops[0], operands[1], action)
                return F.and_(
                    self._pair(operands[i], op, operands[i + 1], action) for i, op in enumerate(ops)
                )
            case ast.In():
                return self._in(node, action)
            case ast.Call():
                raise TranslationError("a history call is a number, not a condition")
        raise TranslationError(f"cannot encode {type(node).__name__} as a condition")

    def _kind(self, node: ast.Expr) -> str:
        match node:
            case ast.MetricRef(name=name):
                kind = self.domains[name].kind
                return "num" if kind in ("int", "real") else kind
            case ast.EnumConst():
                return "enum"
            case (
                ast.Bool()
                | ast.Not()
                | ast.And()
                | ast.Or()
                | ast.Implies()
                | ast.Compare()
                | ast.In()
            ):
                return "bool"
            case ast.ActionConst():
                return "action"
            case ast.InvariantVar(name=name):
                return {"action": "action", "tags": "tags"}.get(name, "num")
            case ast.String():
                return "string"
        return "num"

    def _pair(self, left: ast.Expr, op: str, right: ast.Expr, action: ActionInfo | None) -> Node:
        if type(left) is ast.MetricRef and type(right) is ast.Number:
            # Most comparisons are `metric op number`: the atom directly, as the linear path
            # below would normalise it (one term, coefficient 1), without its arithmetic.
            key = (left.name, op, right.value)
            atom = self._atoms.get(key)
            if atom is not None:
                return atom
            if self.domains[left.name].kind in ("int", "real"):
                atom = self._atoms[key] = F.cmp(left.name, op, _frac(right.value))
                return atom
        elif type(left) is ast.Number and type(right) is ast.MetricRef:
            # `number op metric` (a chained range's first link) is `metric op' number`, the
            # atom the linear path gives it (one term, coefficient -1, the relation flipped).
            return self._pair(right, _FLIPPED[op], left, action)
        lkind, rkind = self._kind(left), self._kind(right)
        if lkind == "enum" or rkind == "enum":
            node = self._enum_eq(left, right)
            return node if op == "==" else F.not_(node)
        if lkind == "bool" or rkind == "bool":
            a, b = self._bool(left, action), self._bool(right, action)
            same = F.or_([F.and_([a, b]), F.and_([F.not_(a), F.not_(b)])])
            return same if op == "==" else F.not_(same)
        if lkind == "action" or rkind == "action":
            names = [self._action_name(x, action) for x in (left, right)]
            return F.const((names[0] == names[1]) == (op == "=="))
        if lkind == "string" or rkind == "string":
            values = [x.value if isinstance(x, ast.String) else None for x in (left, right)]
            return F.const((values[0] == values[1]) == (op == "=="))
        lterms, lconst = self._linear(left, action)
        rterms, rconst = self._linear(right, action)
        terms = dict(lterms)
        for var, coef in rterms.items():
            terms[var] = terms.get(var, Fraction(0)) - coef
        return F.lin(terms, op, rconst - lconst)

    def _enum_eq(self, left: ast.Expr, right: ast.Expr) -> Node:
        if isinstance(right, ast.MetricRef) and not isinstance(left, ast.MetricRef):
            left, right = right, left
        if not isinstance(left, ast.MetricRef):
            assert isinstance(left, ast.EnumConst) and isinstance(right, ast.EnumConst)
            return F.const(left.value == right.value)
        domain = self.domains[left.name]
        if isinstance(right, ast.EnumConst):
            return F.member(left.name, (right.value,), domain.values)
        assert isinstance(right, ast.MetricRef)
        other = self.domains[right.name]
        shared = [v for v in domain.values if v in other.values]
        return F.or_(
            F.and_(
                [F.member(left.name, (v,), domain.values), F.member(right.name, (v,), other.values)]
            )
            for v in shared
        )

    def _action_name(self, node: ast.Expr, action: ActionInfo | None) -> str:
        if isinstance(node, ast.ActionConst):
            return node.name
        if isinstance(node, ast.InvariantVar) and action is not None:
            return action.name
        raise TranslationError("`action` is readable only in invariants")

    def _in(self, node: ast.In, action: ActionInfo | None) -> Node:
        container = node.container
        if isinstance(container, ast.InvariantVar) and container.name == "tags":
            if action is None:
                raise TranslationError("`tags` is readable only in invariants")
            element = node.element
            tag = element.value if isinstance(element, ast.String) else getattr(element, "id", "")
            result = F.const(tag in action.tags)
        else:
            assert isinstance(container, ast.ListExpr)
            element = node.element
            kind = self._kind(element)
            if kind == "enum" and isinstance(element, ast.MetricRef):
                domain = self.domains[element.name]
                names = [item.value for item in container.items if isinstance(item, ast.EnumConst)]
                result = F.member(element.name, names, domain.values)
            else:
                result = F.or_(self._pair(element, "==", item, action) for item in container.items)
        return F.not_(result) if node.negated else result

    def _linear(
        self, node: ast.Expr, action: ActionInfo | None
    ) -> tuple[dict[str, Fraction], Fraction]:
        match node:
            case ast.Number(value=value):
                return {}, _frac(value)
            case ast.Rung(level=level):
                return {}, Fraction(level)
            case ast.MetricRef(name=name):
                return {name: Fraction(1)}, Fraction(0)
            case ast.Call():
                return {self._call_var(node): Fraction(1)}, Fraction(0)
            case ast.InvariantVar(name=name):
                if action is None:
                    raise TranslationError(f"`{name}` is readable only in invariants")
                return {}, Fraction(action.rung if name == "rung" else action.priority)
            case ast.Neg(operand=operand):
                terms, constant = self._linear(operand, action)
                return {v: -c for v, c in terms.items()}, -constant
            case ast.Arith(left=left, op=op, right=right):
                lt, lc = self._linear(left, action)
                rt, rc = self._linear(right, action)
                sign = 1 if op == "+" else -1
                out = dict(lt)
                for var, coef in rt.items():
                    out[var] = out.get(var, Fraction(0)) + sign * coef
                return out, lc + sign * rc
            case ast.Mul(left=left, right=right):
                lt, lc = self._linear(left, action)
                rt, rc = self._linear(right, action)
                if lt and rt:
                    raise TranslationError("multiplication of two variables is not linear")
                if not lt:
                    return {v: c * lc for v, c in rt.items()}, rc * lc
                return {v: c * rc for v, c in lt.items()}, lc * rc
        raise TranslationError(f"cannot encode {type(node).__name__} as a number")
