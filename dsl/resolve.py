"""Name and type resolution: a validated theory -> `ResolvedTheory` plus diagnostics.

This is the front end's semantic pass. It parses every condition (syntax-error), resolves
every name (unknown-name, with "did you mean"), type-checks comparisons and constants
against metric domains (type-error), and enforces the trust boundary on ceiling steps
(trust-boundary): a help ceiling computed from text a student can influence is no ceiling.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Any, Literal, Protocol

from pedrag.dsl import ast
from pedrag.dsl import types as T
from pedrag.dsl.diagnostics import Diagnostic, error
from pedrag.dsl.ir import (
    ActionInfo,
    CeilingStepInfo,
    InvariantInfo,
    Located,
    MetricInfo,
    ResolvedCurriculum,
    ResolvedTheory,
    RuleInfo,
    SwitchInfo,
)
from pedrag.dsl.model import Action, Curriculum, Metric, Rule, Theory
from pedrag.dsl.parser import ConditionSyntaxError, parse_condition
from pedrag.dsl.yaml_source import Path, Positions
from pedrag.kernel import history
from pedrag.kernel.ceiling import runtime_steps_for
from pedrag.kernel.rungs import FULL_SOLUTION
from pedrag.kernel.sources import CEILING_SOURCES, WriterError, default_writer, parse_writer
from pedrag.kernel.suggest import did_you_mean
from pedrag.kernel.wording import MATERIAL_PLACEHOLDERS, TEMPLATE_PLACEHOLDERS, derived_tags

Context = Literal["rule", "ceiling", "invariant", "monitor", "switch", "compute"]
CEILING_READABLE = CEILING_SOURCES
_ORDERING = ("<", "<=", ">", ">=")

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def rung_number(name: str) -> int:
    return int(name[1])


def action_tags(action: Action) -> tuple[frozenset[str], tuple[tuple[str, str], ...]]:
    """An action's tags: those it declares and those its wordings give it (a wording that fills
    `{hint}` gives a hint, whatever `tags:` says: `kernel.wording.derived_tags`); and the
    derived ones it does not declare, each with its placeholder, for the designer. Why derived:
    a proof over `'hint' in tags` that missed an undeclared hint would pass while the tutor
    hints at a finished exercise."""
    derived = derived_tags((action.template, *action.variants))
    declared = frozenset(action.tags)
    only = tuple((tag, name) for tag, name in derived.items() if tag not in declared)
    return declared | derived.keys(), only


def rule_priority(rule: Rule, theory: Theory) -> int:
    """A rule's priority under priority selection: its own, else its action's (DESIGN, the
    theory file format); the one place for that default (the resolver and the incremental
    front end's splice both ask it)."""
    return rule.priority if rule.priority is not None else theory.actions[rule.then].priority


class _ConditionResolver:
    """Resolves one condition in one context, collecting diagnostics."""

    def __init__(
        self, owner: TheoryResolver, located: Located, context: Context, path: Path
    ) -> None:
        self.owner = owner
        self.located = located
        self.context = context
        self.path = path

    # -- helpers ---------------------------------------------------------------------------
    def _report(self, check: str, message: str, node: ast.Expr, help: str | None = None) -> None:
        self.owner.diagnostics.append(
            error(check, message, self.located.node_span(node), help=help)
        )

    def _unknown_word(self, node: ast.Name) -> None:
        owner = self.owner
        candidates = list(owner.metrics)
        if self.context == "invariant":
            candidates += list(ast.INVARIANT_VARS)
        hint = did_you_mean(node.id, candidates)
        help = hint or f"declare `{node.id}` under `metrics:`, or compare it with an enum metric"
        if node.id in ast.INVARIANT_VARS:
            help = f"`{node.id}` (the selected action's {node.id}) is readable only in invariants"
        self._report("unknown-name", f"unknown name `{node.id}`", node, help)

    # -- entry -----------------------------------------------------------------------------
    def condition(self) -> ast.Expr:
        node, ty = self.expr(self.located.expr)
        if ty.kind == "word" and isinstance(node, ast.Name):
            self._unknown_word(node)
        elif ty.kind not in ("bool", "error"):
            self._report(
                "type-error",
                f"a condition must be true or false, but this is {_a(ty.describe())}",
                node,
                f"compare it with something, e.g. {_example(ty)}",
            )
        return node

    def expr(self, node: ast.Expr) -> tuple[ast.Expr, T.Ty]:
        owner = self.owner
        match node:
            case ast.Number(value=v):
                return node, T.number(v, v, isinstance(v, int))
            case ast.Bool():
                return node, T.BOOL
            case ast.String():
                return node, T.STRING
            case ast.Rung():
                return node, T.RUNG
            case ast.Name(id=name):
                if name in owner.metrics:
                    metric = owner.metrics[name]
                    ref = ast.MetricRef(name, span=node.span)
                    self._check_trust(ref, metric)
                    return ref, self._metric_type(metric)
                if name in ast.INVARIANT_VARS and self.context == "invariant":
                    var = ast.InvariantVar(name, span=node.span)
                    return var, {
                        "action": T.ACTION,
                        "rung": T.RUNG,
                        "tags": T.TAGS,
                        "priority": T.number(1, 10, True),
                    }[name]
                return node, T.WORD
            case ast.Call():
                return self._call(node)
            case ast.Neg(operand=operand):
                inner, ty = self._numeric(operand, "`-`")
                return replace(node, operand=inner), T.number(-ty.high, -ty.low, ty.integer)
            case ast.Arith(left=left, op=op, right=right):
                lnode, lty = self._numeric(left, f"`{op}`")
                rnode, rty = self._numeric(right, f"`{op}`")
                if op == "+":
                    bounds = (lty.low + rty.low, lty.high + rty.high)
                else:
                    bounds = (lty.low - rty.high, lty.high - rty.low)
                return replace(node, left=lnode, right=rnode), T.number(
                    *bounds, lty.integer and rty.integer
                )
            case ast.Mul(left=left, right=right):
                lnode, lty = self._numeric(left, "`*`")
                rnode, rty = self._numeric(right, "`*`")
                if not (_constant(lnode) is not None or _constant(rnode) is not None):
                    self._report(
                        "type-error",
                        "multiply only by a constant: conditions stay linear so the compiler can decide them exactly",
                        node,
                        "write a number on one side, e.g. `2 * frustration`",
                    )
                    return replace(node, left=lnode, right=rnode), T.ERROR
                corners = [
                    a * b
                    for a in (lty.low, lty.high)
                    for b in (rty.low, rty.high)
                    if abs(a) != float("inf") and abs(b) != float("inf")
                ]
                ty = (
                    T.number(min(corners), max(corners), lty.integer and rty.integer)
                    if len(corners) == 4
                    else T.number()
                )
                return replace(node, left=lnode, right=rnode), ty
            case ast.Compare():
                return self._compare(node)
            case ast.In():
                return self._in(node)
            case ast.ListExpr():
                self._report(
                    "type-error",
                    "a list may only follow `in`",
                    node,
                    "test membership with `in`, e.g. `affect in [calm, confused]`",
                )
                return node, T.ERROR
            case ast.Not(operand=operand):
                inner = self._boolean(operand, "`not`")
                return replace(node, operand=inner), T.BOOL
            case ast.And(operands=operands):
                return replace(
                    node, operands=tuple(self._boolean(o, "`and`") for o in operands)
                ), T.BOOL
            case ast.Or(operands=operands):
                return replace(
                    node, operands=tuple(self._boolean(o, "`or`") for o in operands)
                ), T.BOOL
            case ast.Implies(left=left, right=right):
                return replace(
                    node,
                    left=self._boolean(left, "`implies`"),
                    right=self._boolean(right, "`implies`"),
                ), T.BOOL
        return node, T.ERROR  # pragma: no cover - resolved nodes do not come back here

    # -- pieces ----------------------------------------------------------------------------
    def _metric_type(self, metric: MetricInfo) -> T.Ty:
        if metric.type == "bool":
            return T.Ty("bool", metric=metric.name)
        if metric.type == "enum":
            return T.Ty("enum", values=metric.values, metric=metric.name)
        return T.Ty("num", metric.low, metric.high, metric.type == "int", metric=metric.name)

    def _check_trust(self, ref: ast.Expr, metric: MetricInfo) -> None:
        if self.context == "ceiling" and metric.source not in CEILING_READABLE:
            self.owner.diagnostics.append(
                error(
                    "trust-boundary",
                    f"ceiling step reads `{metric.name}`, {_article(metric.source)} {metric.source} metric; the help ceiling may "
                    "depend only on trusted and classified metrics",
                    self.located.node_span(ref),
                    items=(f"metric:{metric.name}",),
                    help="move this condition into a rule, or derive a trusted metric the system writes",
                )
            )

    def _boolean(self, node: ast.Expr, where: str) -> ast.Expr:
        new, ty = self.expr(node)
        if ty.kind == "word" and isinstance(new, ast.Name):
            self._unknown_word(new)
        elif ty.kind not in ("bool", "error"):
            self._report(
                "type-error",
                f"{where} needs true/false operands, but this is {_a(ty.describe())}",
                new,
                f"compare it with something, e.g. {_example(ty)}",
            )
        return new

    def _numeric(self, node: ast.Expr, where: str) -> tuple[ast.Expr, T.Ty]:
        new, ty = self.expr(node)
        if ty.kind == "word" and isinstance(new, ast.Name):
            self._unknown_word(new)
            return new, T.number()
        if ty.kind == "error":
            return new, T.number()
        if ty.kind != "num":
            help = {
                "bool": "a true/false metric is a condition by itself: write it alone or with `not`",
                "enum": "an enum takes `==`, `!=` and `in [...]`, not arithmetic",
                "rung": "rungs compare with rungs (`rung > H2`), they do not add up",
            }.get(ty.kind, "arithmetic takes numeric metrics and numbers")
            self._report(
                "type-error", f"{where} needs numbers, but this is {_a(ty.describe())}", new, help
            )
            return new, T.number()
        return new, ty

    def _call(self, node: ast.Call) -> tuple[ast.Expr, T.Ty]:
        function = history.FUNCTIONS.get(node.func)
        if function is None:
            hint = did_you_mean(node.func, history.NAMES)
            self._report(
                "unknown-name",
                f"unknown function `{node.func}`",
                node,
                hint or "history functions are " + ", ".join(history.NAMES),
            )
            return node, T.ERROR
        if self.context == "ceiling":
            self.owner.diagnostics.append(
                error(
                    "trust-boundary",
                    f"ceiling step reads `{node.func}(...)`, a computed value; the help "
                    "ceiling may depend only on trusted and classified metrics",
                    self.located.node_span(node),
                    help="move this condition into a rule",
                )
            )
        if len(node.args) != history.ARITY:
            self._report(
                "type-error",
                f"`{node.func}` takes two arguments: `{function.signature()}`",
                node,
                f"e.g. `{function.example()}` for the last 3 turns",
            )
            return node, T.ERROR
        first, window = node.args
        window_value = _constant(window)
        if not (isinstance(window_value, int) and window_value >= 1) or not isinstance(
            window, ast.Number
        ):
            self._report(
                "type-error",
                "the window must be a whole number of turns, at least 1",
                window,
                f"e.g. `{node.func}(..., 3)` for the last 3 turns",
            )
            window_value = 1
        if function.reads_condition:
            inner = self._boolean(first, f"`{node.func}`")
            return replace(node, args=(inner, window)), T.number(
                *history.value_range(node.func, window_value)
            )
        new_first, ty = self.expr(first)
        if not isinstance(new_first, ast.MetricRef) or ty.kind != "num":
            if isinstance(new_first, ast.Name):
                self._unknown_word(new_first)
            else:
                self._report(
                    "type-error",
                    f"`{node.func}` reads a numeric metric, e.g. `{node.func}(frustration, 3)`",
                    first,
                    "its first argument is the name of an int or float metric",
                )
            return replace(node, args=(new_first, window)), T.number()
        return replace(node, args=(new_first, window)), T.number(
            *history.value_range(node.func, window_value, ty.low, ty.high, ty.integer)
        )

    def _compare(self, node: ast.Compare) -> tuple[ast.Expr, T.Ty]:
        typed = [self.expr(o) for o in node.operands]
        operands = [n for n, _ in typed]
        types = [t for _, t in typed]
        for index, op in enumerate(node.ops):
            left, right = index, index + 1
            operands[left], operands[right], types[left], types[right] = self._pair(
                op, operands[left], types[left], operands[right], types[right]
            )
        return replace(node, operands=tuple(operands)), T.BOOL

    def _pair(
        self, op: str, lnode: ast.Expr, lty: T.Ty, rnode: ast.Expr, rty: T.Ty
    ) -> tuple[ast.Expr, ast.Expr, T.Ty, T.Ty]:
        # Bare words take their meaning from the other side.
        if lty.kind == "word" and rty.kind != "word":
            lnode, lty = self._word_against(lnode, rty)
        elif rty.kind == "word" and lty.kind != "word":
            rnode, rty = self._word_against(rnode, lty)
        elif lty.kind == "word" and rty.kind == "word":
            assert isinstance(lnode, ast.Name)
            self._unknown_word(lnode)
            return lnode, rnode, T.ERROR, T.ERROR
        if T.ERROR in (lty, rty) or "error" in (lty.kind, rty.kind):
            return lnode, rnode, lty, rty
        node_for_error = lnode
        if lty.kind != rty.kind:
            self._report(
                "type-error",
                f"cannot compare {_a(lty.describe())} with {_a(rty.describe())}",
                node_for_error,
                self._mismatch_help(op, lnode, lty, rnode, rty),
            )
            return lnode, rnode, T.ERROR, T.ERROR
        kind = lty.kind
        if kind in ("enum", "bool", "action", "string", "tags") and op in _ORDERING:
            self._report(
                "type-error",
                f"`{op}` orders numbers and rungs; {_a(lty.describe())} takes only `==` and `!=`",
                lnode,
                "a true/false metric is a condition by itself: write it alone or with `not`"
                if kind == "bool"
                else f"use `==`, `!=` or `in [...]`, e.g. {_example(lty)}",
            )
        if kind == "enum" and lty.metric != rty.metric and set(lty.values) != set(rty.values):
            self._report(
                "type-error",
                f"cannot compare enum `{lty.metric}` with enum `{rty.metric}`: they have different values",
                lnode,
                f"compare each with one of its own values, e.g. {_example(lty)}",
            )
        if kind == "num":
            self._range_check(lnode, lty, rnode, rty)
            self._range_check(rnode, rty, lnode, lty)
        return lnode, rnode, lty, rty

    def _mismatch_help(
        self, op: str, lnode: ast.Expr, lty: T.Ty, rnode: ast.Expr, rty: T.Ty
    ) -> str:
        """A help line for comparing two different kinds of thing: the slips designers make."""
        kinds = {lty.kind, rty.kind}
        pairs = [(lnode, lty, rnode, rty), (rnode, rty, lnode, lty)]
        for node, ty, other, other_ty in pairs:
            if ty.kind == "bool" and isinstance(node, ast.MetricRef):
                negated = (op == "!=") != (isinstance(other, ast.Number) and other.value == 0)
                written = f"not {node.name}" if negated else node.name
                return (
                    f"`{node.name}` is true/false: did you mean `{written}`? (or compare with "
                    "`true` / `false`)"
                )
            if ty.kind == "num" and isinstance(other, ast.String):
                number = _number_text(other.value)
                if number is not None:
                    return f"did you mean the number `{other.value.strip()}`? remove the quotes"
            if ty.kind == "enum" and isinstance(other, ast.String) and other.value in ty.values:
                return f"did you mean `{ty.metric} {op} {other.value}`? enum values are written without quotes"
            if ty.kind == "enum" and other_ty.kind == "num":
                return f"compare `{ty.metric}` with one of its values: {', '.join(ty.values)}"
        if "rung" in kinds:
            return "rungs compare only with rungs: `rung > H2`"
        return f"both sides of `{op}` must be the same kind of thing, e.g. {_example(lty)}"

    def _range_check(
        self, metric_node: ast.Expr, metric_ty: T.Ty, const_node: ast.Expr, const_ty: T.Ty
    ) -> None:
        if not isinstance(metric_node, ast.MetricRef):
            return
        value = _constant(const_node)
        if value is None:
            return
        if not (metric_ty.low <= value <= metric_ty.high):
            self._report(
                "type-error",
                f"{value:g} is outside the range of `{metric_node.name}` [{metric_ty.low:g}, {metric_ty.high:g}]",
                const_node,
                "use a value inside the metric's range, or widen the range",
            )

    def _word_against(self, node: ast.Expr, other: T.Ty) -> tuple[ast.Expr, T.Ty]:
        assert isinstance(node, ast.Name)
        if other.kind == "enum":
            if node.id in other.values:
                return ast.EnumConst(node.id, span=node.span), other
            hint = did_you_mean(node.id, other.values)
            self._report(
                "unknown-name",
                f"`{node.id}` is not a value of enum `{other.metric}`",
                node,
                hint or f"values are: {', '.join(other.values)}",
            )
            return node, T.ERROR
        if other.kind == "action":
            if node.id in self.owner.actions:
                return ast.ActionConst(node.id, span=node.span), T.ACTION
            self._report(
                "unknown-name",
                f"unknown action `{node.id}`",
                node,
                did_you_mean(node.id, self.owner.actions) or None,
            )
            return node, T.ERROR
        self._unknown_word(node)
        return node, T.ERROR

    def _in(self, node: ast.In) -> tuple[ast.Expr, T.Ty]:
        element, ety = self.expr(node.element)
        container, cty = (
            self.expr(node.container)
            if not isinstance(node.container, ast.ListExpr)
            else (node.container, T.Ty("list"))
        )
        if cty.kind == "tags":
            if isinstance(element, ast.Name):
                element, ety = ast.String(element.id, span=element.span), T.STRING
            if ety.kind != "string":
                self._report(
                    "type-error",
                    f"`in tags` takes a tag name, but this is {_a(ety.describe())}",
                    element,
                    "e.g. `'affect_support' in tags`",
                )
            elif isinstance(element, ast.String) and element.value not in self.owner.all_tags:
                hint = did_you_mean(element.value, self.owner.all_tags)
                self._report(
                    "unknown-name",
                    f"no action has the tag `{element.value}`",
                    element,
                    hint or None,
                )
            return replace(node, element=element, container=container), T.BOOL
        if not isinstance(container, ast.ListExpr):
            self._report(
                "type-error",
                f"`in` takes a list `[a, b]` or `tags`, but this is {_a(cty.describe())}",
                container,
                "e.g. `affect in [calm, confused]`",
            )
            return replace(node, element=element, container=container), T.BOOL
        items = []
        for item in container.items:
            item_node, item_ty = self.expr(item)
            element, item_node, ety2, _ = self._pair("==", element, ety, item_node, item_ty)
            if ety.kind == "word" and ety2.kind != "error":
                ety = ety2
            items.append(item_node)
        return replace(
            node, element=element, container=replace(container, items=tuple(items))
        ), T.BOOL


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _a(described: str) -> str:
    """`enum ...` -> `an enum ...`: a type's description with its article."""
    return f"{_article(described)} {described}"


def _example(ty: T.Ty) -> str:
    """A comparison that turns an expression of type `ty` into a condition."""
    if ty.kind == "num" and ty.metric:
        middle = (ty.low + ty.high) / 2 if ty.high != float("inf") else ty.low
        return f"`{ty.metric} >= {middle:g}`"
    if ty.kind == "enum" and ty.metric and ty.values:
        return f"`{ty.metric} == {ty.values[0]}`"
    if ty.kind == "rung":
        return "`rung > H2`"
    return "`x > 0`"


def _number_text(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:
        return None


def _constant(node: ast.Expr) -> float | int | None:
    if isinstance(node, ast.Number):
        return node.value
    if isinstance(node, ast.Neg):
        inner = _constant(node.operand)
        return None if inner is None else -inner
    return None


class ResolvedMemo(Protocol):
    """Resolved conditions by (context, text), for one set of declarations."""

    def get(self, key: str, default: Any = None, /) -> Any: ...
    def __setitem__(self, key: str, expr: ast.Expr, /) -> None: ...


class ResolvedShelves(Protocol):
    """Where resolved conditions are remembered: one memo per set of declarations (an on-disk
    cache shard each, `CheckCache.resolved_conditions`)."""

    def shelf(self, declarations: str) -> ResolvedMemo: ...


_SHELVES: ContextVar[ResolvedShelves | None] = ContextVar("resolved_conditions", default=None)


@contextmanager
def remembering_resolved(shelves: ResolvedShelves) -> Iterator[None]:
    """Resolve with `shelves` as a memo. A condition that resolves without a diagnostic is a
    function of its text, its context and the declarations it may read (each metric's name,
    type, range, values and source; the action names; the tags), so a re-check after a
    one-rule edit parses and type-checks only that rule's condition: at 5,000 rules the
    rest cost 0.1 s. A condition with any diagnostic is never remembered."""
    token = _SHELVES.set(shelves)
    try:
        yield
    finally:
        _SHELVES.reset(token)


class TheoryResolver:
    """Resolves one validated theory file."""

    def __init__(self, theory: Theory, positions: Positions, file: str) -> None:
        self.theory = theory
        self.positions = positions
        self.file = file
        self.diagnostics: list[Diagnostic] = []
        self.metrics: dict[str, MetricInfo] = {}
        self.actions = theory.actions
        # Each action's tags with those its wordings give it (`action_tags`): an invariant's
        # `'hint' in tags` names a tag an action may carry without declaring it.
        self.tags = {name: action_tags(action) for name, action in theory.actions.items()}
        self.all_tags = sorted({tag for tags, _ in self.tags.values() for tag in tags})
        self._resolved: ResolvedMemo | None = None  # set once the declarations are complete

    def _remember_resolved(self) -> None:
        """Open the memo for this theory's declarations (everything `_ConditionResolver` reads
        besides the condition: see `remembering_resolved`)."""
        shelves = _SHELVES.get()
        if shelves is None:
            return
        metrics = tuple(
            (m.name, m.type, m.source, m.low, m.high, m.values) for m in self.metrics.values()
        )
        declarations = repr((metrics, tuple(self.actions), tuple(self.all_tags)))
        self._resolved = shelves.shelf(hashlib.sha256(declarations.encode("utf-8")).hexdigest())

    def _span(self, path: Path):  # type: ignore[no-untyped-def]
        return self.positions.span(path)

    def _located(self, path: Path, text: str) -> Located | None:
        scalar = self.positions.scalar_map(path)
        span = self.positions.span(path)
        try:
            expr = parse_condition(text)
        except ConditionSyntaxError as exc:
            where = scalar.span(exc.offset, exc.offset + exc.length) if scalar else span
            expected = ""
            if exc.expected:
                shown = list(exc.expected)[:8]
                expected = "expected " + (
                    shown[0] if len(shown) == 1 else "one of " + ", ".join(shown)
                )
            self.diagnostics.append(
                error(
                    "syntax-error",
                    f"invalid condition: {exc.message}",
                    where,
                    help=exc.suggestion or expected or None,
                )
            )
            return None
        return Located(expr, text, span, scalar)

    def condition(self, path: Path, text: str, context: Context) -> Located | None:
        memo, key = self._resolved, f"{context}\n{text}"
        if memo is not None:
            known = memo.get(key)
            if known is not None:
                return Located(known, text, self._span(path), self.positions.scalar_map(path))
        located = self._located(path, text)
        if located is None:
            return None
        before = len(self.diagnostics)
        expr = _ConditionResolver(self, located, context, path).condition()
        if len(self.diagnostics) != before:
            return None
        if memo is not None:
            memo[key] = expr
        return replace(located, expr=expr)

    def _tag_since(self, before: int, item: str) -> None:
        """Name the item that owns diagnostics reported since `before` (for ignores, repair)."""
        for index in range(before, len(self.diagnostics)):
            if not self.diagnostics[index].items:
                self.diagnostics[index] = replace(self.diagnostics[index], items=(item,))

    def _reserved(self, name: str, path: Path, what: str) -> None:
        if name in ast.RESERVED:
            self.diagnostics.append(
                error(
                    "syntax-error",
                    f"`{name}` is a reserved word and cannot name a {what}",
                    self.positions.key_span(path),
                    help="choose another name",
                )
            )

    def _placeholders(
        self, action: str, text: str | None, path: Path, allowed: tuple[str, ...]
    ) -> None:
        """A wording's `{name}` placeholders must be ones the runtime fills there."""
        for found in _PLACEHOLDER.findall(text or ""):
            if found not in allowed:
                where = "a template" if allowed == TEMPLATE_PLACEHOLDERS else "a variant"
                self.diagnostics.append(
                    error(
                        "unknown-name",
                        f"action `{action}`: {where} cannot use `{{{found}}}`",
                        self.positions.span(path),
                        items=(f"action:{action}",),
                        help=(
                            "the template is also the fail-closed reply and takes only `{topic}`; "
                            "put material in `variants:`"
                            if found in MATERIAL_PLACEHOLDERS
                            else "known: " + ", ".join(f"{{{n}}}" for n in allowed)
                        ),
                    )
                )

    def _action_ref(self, name: str, path: Path, what: str) -> bool:
        if name in self.actions:
            return True
        hint = did_you_mean(name, self.actions)
        self.diagnostics.append(
            error(
                "unknown-name",
                f"{what} names unknown action `{name}`",
                self._span(path),
                items=(f"action:{name}",),
                help=hint or "declare it under `actions:`",
            )
        )
        return False

    def _source_refs(self, value: str | list[str] | None, path: Path) -> None:
        known = {s.id for s in self.theory.theory.sources}
        names = [value] if isinstance(value, str) else list(value or [])
        for index, name in enumerate(names):
            if name not in known:
                sub = path if isinstance(value, str) else (*path, index)
                self.diagnostics.append(
                    error(
                        "unknown-name",
                        f"unknown source `{name}`",
                        self._span(sub),
                        help=did_you_mean(name, known) or "declare it under `theory.sources`",
                    )
                )

    def _duplicates(self, ids: list[str], path: tuple[str, ...], what: str) -> None:
        seen: dict[str, int] = {}
        for index, name in enumerate(ids):
            if name in seen:
                first_line = self._span((*path, seen[name], "id")).line
                self.diagnostics.append(
                    error(
                        "duplicate-id",
                        f"duplicate {what} id `{name}` (first on line {first_line})",
                        self._span((*path, index, "id")),
                        help="ids must be unique within a file",
                    )
                )
            else:
                seen[name] = index

    def _metric(self, name: str, metric: Metric) -> MetricInfo:
        path = ("metrics", name)
        self._reserved(name, path, "metric")
        low, high = metric.range if metric.range else (0.0, 0.0)
        default = metric.default_value
        if metric.default is not None:
            bad = None
            fix = "the default is the value a session starts with; omit it for the lowest"
            if metric.type in ("int", "float") and (
                isinstance(metric.default, (bool, str)) or not low <= float(metric.default) <= high
            ):
                bad = f"default {metric.default!r} is outside the range [{low:g}, {high:g}]"
            elif (
                metric.type == "int"
                and isinstance(metric.default, float)
                and not metric.default.is_integer()
            ):
                bad = "an int metric's default must be a whole number"
            elif metric.type == "bool" and not isinstance(metric.default, bool):
                bad = f"default {metric.default!r} is not true or false"
            elif metric.type == "enum" and metric.default not in (metric.values or []):
                bad = f"default {metric.default!r} is not one of the values {', '.join(metric.values or [])}"
                hint = did_you_mean(str(metric.default), metric.values or [])
                fix = hint or f"use one of: {', '.join(metric.values or [])}"
            if bad:
                self.diagnostics.append(
                    error("type-error", bad, self._span((*path, "default")), help=fix)
                )
        if metric.source == "classified" and metric.type not in ("enum", "bool"):
            self.diagnostics.append(
                error(
                    "type-error",
                    f"classified metric `{name}` is a {metric.type}; the pre-classifier outputs only narrow enums and bools",
                    self._span((*path, "type")),
                    help="make it an enum of labels, or an inferred metric",
                )
            )
        if metric.compute is not None and metric.source != "computed":
            self.diagnostics.append(
                error(
                    "type-error",
                    "`compute:` is only allowed on computed metrics",
                    self.positions.key_span((*path, "compute")),
                    help="set `source: computed`, or drop `compute:`",
                )
            )
        if metric.source == "computed" and metric.compute is None:
            self.diagnostics.append(
                error(
                    "type-error",
                    f"computed metric `{name}` needs `compute:` (a history expression)",
                    self._span(path),
                    help='e.g. compute: "trend(frustration, 3)"',
                )
            )
        return MetricInfo(
            name=name,
            type=metric.type,
            source=metric.source,
            low=float(low),
            high=float(high),
            values=tuple(metric.values or ()),
            default=default,
            span=self.positions.key_span(path),
        )

    def resolve(self) -> ResolvedTheory | None:
        t = self.theory
        for name, metric in t.metrics.items():
            before = len(self.diagnostics)
            self.metrics[name] = self._metric(name, metric)
            self._source_refs(metric.provenance, ("metrics", name, "provenance"))
            self._tag_since(before, f"metric:{name}")
        # Computed metrics' expressions, resolved once every metric is known.
        for name, metric in t.metrics.items():
            if metric.compute is not None and metric.source == "computed":
                path: Path = ("metrics", name, "compute")
                before = len(self.diagnostics)
                located = self.condition_numeric(path, metric.compute, name)
                self._tag_since(before, f"metric:{name}")
                if located is not None:
                    self.metrics[name] = replace(self.metrics[name], compute=located.expr)
        self._remember_resolved()
        self._duplicates([p.id for p in t.theory.principles], ("theory", "principles"), "principle")
        self._duplicates([s.id for s in t.theory.sources], ("theory", "sources"), "source")
        self._duplicates([r.id for r in t.rules], ("rules",), "rule")
        self._duplicates([i.id for i in t.invariants], ("invariants",), "invariant")
        for index, principle in enumerate(t.theory.principles):
            self._source_refs(principle.source, ("theory", "principles", index, "source"))
        actions: dict[str, ActionInfo] = {}
        for name, action in t.actions.items():
            path = ("actions", name)
            before = len(self.diagnostics)
            self._reserved(name, path, "action")
            self._source_refs(action.source, (*path, "source"))
            for index, other in enumerate(action.conflicts):
                self._action_ref(other, (*path, "conflicts", index), f"`{name}` conflicts")
            self._placeholders(name, action.template, (*path, "template"), TEMPLATE_PLACEHOLDERS)
            for index, wording in enumerate(action.variants):
                self._placeholders(name, wording, (*path, "variants", index), MATERIAL_PLACEHOLDERS)
            self._tag_since(before, f"action:{name}")
            tags, derived = self.tags[name]
            actions[name] = ActionInfo(
                name=name,
                rung=rung_number(action.rung),
                priority=action.priority,
                description=action.description,
                tags=tags,
                derived=derived,
                conflicts=tuple(action.conflicts),
                guidance=action.guidance,
                template=action.template,
                variants=tuple(action.variants),
                span=self.positions.key_span(path),
                ignore=frozenset(action.ignore),
            )
        rules: list[RuleInfo] = []
        for index, rule in enumerate(t.rules):
            path = ("rules", index)
            self._source_refs(rule.source, (*path, "source"))
            before = len(self.diagnostics)
            known = self._action_ref(rule.then, (*path, "then"), f"rule `{rule.id}`")
            self._tag_since(before, f"rule:{rule.id}")
            before = len(self.diagnostics)
            when = self.condition((*path, "when"), rule.when, "rule")
            self._tag_since(before, f"rule:{rule.id}")
            if when is None or not known:
                continue
            when.reads  # noqa: B018 (walked now, so a kept front end carries it: `Located.reads`)
            rules.append(
                RuleInfo(
                    id=rule.id,
                    index=index,
                    when=when,
                    action=rule.then,
                    weight=float(rule.weight),
                    priority=rule_priority(rule, t),
                    span=self._span((*path, "id")),
                    ignore=frozenset(rule.ignore),
                )
            )
        steps: list[CeilingStepInfo] = []
        for index, step in enumerate(t.ceiling.steps):
            path = ("ceiling", "steps", index)
            before = len(self.diagnostics)
            when = self.condition((*path, "when"), step.when, "ceiling")
            self._tag_since(before, f"ceiling:{index}")
            effect, rung = step.effect
            if when is not None:
                steps.append(
                    CeilingStepInfo(index, when, effect, rung_number(rung), self._span(path))  # type: ignore[arg-type]
                )
        invariants: list[InvariantInfo] = []
        for index, invariant in enumerate(t.invariants):
            kind = "never" if invariant.never is not None else "always"
            path = ("invariants", index, kind)
            text = invariant.never if invariant.never is not None else invariant.always
            assert text is not None
            before = len(self.diagnostics)
            located = self.condition(path, text, "invariant")
            self._tag_since(before, f"invariant:{invariant.id}")
            if located is not None:
                invariants.append(
                    InvariantInfo(
                        invariant.id,
                        kind,  # type: ignore[arg-type]
                        located,
                        self._span(("invariants", index, "id")),
                    )
                )
        monitors: dict[str, Located] = {}
        for name, text in t.monitors.items():
            before = len(self.diagnostics)
            located = self.condition(("monitors", name), text, "monitor")
            self._tag_since(before, f"monitor:{name}")
            if located is not None:
                monitors[name] = located
        for source_action, target in t.adaptation.escalate.items():
            self._action_ref(source_action, ("adaptation", "escalate"), "`escalate`")
            self._action_ref(target, ("adaptation", "escalate", source_action), "`escalate`")
        for source_action, targets in t.adaptation.alternatives.items():
            self._action_ref(source_action, ("adaptation", "alternatives"), "`alternatives`")
            for index, target in enumerate(targets):
                self._action_ref(
                    target, ("adaptation", "alternatives", source_action, index), "`alternatives`"
                )
        switches: list[SwitchInfo] = []
        for index, switch in enumerate(t.adaptation.switch):
            path = ("adaptation", "switch", index)
            before = len(self.diagnostics)
            located = self.condition((*path, "when"), switch.when, "switch")
            self._tag_since(before, f"switch:{index}")
            if located is not None:
                switches.append(SwitchInfo(index, located, switch.to, self._span((*path, "to"))))
        self._writers(frozenset(actions))
        steps.extend(self._runtime_steps(len(t.ceiling.steps)))
        if any(d.severity.value == "error" for d in self.diagnostics):
            return None
        return ResolvedTheory(
            id=t.theory.id,
            name=t.theory.name,
            file=self.file,
            selection=t.selection,
            metrics=self.metrics,
            actions=actions,
            rules=tuple(rules),
            ceiling_start=rung_number(t.ceiling.start),
            ceiling_steps=tuple(steps),
            invariants=tuple(invariants),
            monitors=monitors,
            escalate=dict(t.adaptation.escalate),
            alternatives={k: tuple(v) for k, v in t.adaptation.alternatives.items()},
            switches=tuple(switches),
            model=t,
            span=self._span(("theory", "id")),
            ignore=frozenset(t.ignore),
        )

    def _writers(self, actions: frozenset[str]) -> None:
        """Each trusted metric's writer: declared, or the kernel's default for its name."""
        for name, metric in self.theory.metrics.items():
            path: Path = ("metrics", name, "writer")
            if metric.writer is not None and metric.source != "trusted":
                self.diagnostics.append(
                    error(
                        "type-error",
                        f"`writer:` is only for trusted metrics; a {metric.source} metric is "
                        "written by its stage",
                        self.positions.key_span(path),
                        items=[f"metric:{name}"],
                        help="drop `writer:`, or make the metric `source: trusted`",
                    )
                )
                continue
            spec = metric.writer if metric.writer is not None else default_writer(name)
            if metric.source != "trusted" or spec is None:
                continue
            info = self.metrics[name]
            try:
                writer = parse_writer(spec, info.type, info.values, actions)
            except WriterError as exc:
                self.diagnostics.append(
                    error(
                        "type-error",
                        f"metric `{name}`: {exc}",
                        self._span(path)
                        if metric.writer is not None
                        else self._span(("metrics", name)),
                        items=[f"metric:{name}"],
                        help="see docs/theory-format.md, `writer:`",
                    )
                )
                continue
            if writer.kind == "highest_rung" and (info.low > 0 or info.high < FULL_SOLUTION):
                self.diagnostics.append(
                    error(
                        "type-error",
                        f"metric `{name}`: writer `highest_rung` writes a rung, 0 to "
                        f"{FULL_SOLUTION}, but the range is [{info.low:g}, {info.high:g}]",
                        self._span(path),
                        items=[f"metric:{name}"],
                        help=f"declare `range: [0, {FULL_SOLUTION}]`",
                    )
                )
                continue
            self.metrics[name] = replace(info, writer=writer)

    def _runtime_steps(self, first_index: int) -> list[CeilingStepInfo]:
        """The kernel's runtime steps (exam lockdown, conduct restriction) that apply to this
        theory, after its own steps, so every check proves over the ceiling the runtime applies."""
        declared = {name: (m.type, m.source) for name, m in self.metrics.items()}
        steps = []
        for offset, step in enumerate(runtime_steps_for(declared)):
            span = self.metrics[step.metric].span or self._span(("metrics", step.metric))
            when = Located(ast.MetricRef(step.metric), step.metric, span)
            steps.append(
                CeilingStepInfo(first_index + offset, when, step.effect, step.rung, span, step.id)
            )
        return steps

    def condition_numeric(self, path: Path, text: str, metric_name: str) -> Located | None:
        located = self._located(path, text)
        if located is None:
            return None
        before = len(self.diagnostics)
        resolver = _ConditionResolver(self, located, "compute", path)
        expr, ty = resolver.expr(located.expr)
        metric = self.metrics[metric_name]
        if any(isinstance(n, ast.MetricRef) and n.name == metric_name for n in ast.walk(expr)):
            self.diagnostics.append(
                error(
                    "type-error",
                    f"computed metric `{metric_name}` refers to itself",
                    located.span,
                    help="compute it from the history of other metrics, e.g. `trend(frustration, 3)`",
                )
            )
        elif isinstance(expr, ast.Name):
            resolver._unknown_word(expr)
        elif metric.type == "bool" and ty.kind != "bool":
            self.diagnostics.append(
                error(
                    "type-error",
                    f"`{metric_name}` is a bool metric but its compute is {_a(ty.describe())}",
                    located.span,
                    help="compute a condition, e.g. `count(frustration > 0.7, 3) >= 2`",
                )
            )
        elif metric.numeric and ty.kind != "num" and ty.kind != "error":
            self.diagnostics.append(
                error(
                    "type-error",
                    f"`{metric_name}` is numeric but its compute is {_a(ty.describe())}",
                    located.span,
                    help="compute a number, e.g. `trend(frustration, 3)` or `count(x > 1, 5)`",
                )
            )
        elif metric.numeric and ty.kind == "num" and (ty.low < metric.low or ty.high > metric.high):
            self.diagnostics.append(
                error(
                    "type-error",
                    f"`{metric_name}`'s compute can take values in [{ty.low:g}, {ty.high:g}], outside its range [{metric.low:g}, {metric.high:g}]",
                    located.span,
                    help=f"widen the range to [{ty.low:g}, {ty.high:g}]",
                )
            )
        elif metric.type == "enum":
            self.diagnostics.append(
                error(
                    "type-error",
                    "an enum metric cannot be computed",
                    located.span,
                    help="compute a number or a bool, or make the metric inferred or classified",
                )
            )
        if len(self.diagnostics) != before:
            return None
        return replace(located, expr=expr)


def resolve_theory(
    theory: Theory, positions: Positions, file: str
) -> tuple[ResolvedTheory | None, list[Diagnostic]]:
    resolver = TheoryResolver(theory, positions, file)
    resolved = resolver.resolve()
    return resolved, resolver.diagnostics


def resolve_curriculum(
    curriculum: Curriculum, positions: Positions, file: str
) -> tuple[ResolvedCurriculum | None, list[Diagnostic]]:
    diagnostics: list[Diagnostic] = []
    goal_index: dict[str, int] = {}
    goal_spans = {}
    requires_spans = {}
    for index, goal in enumerate(curriculum.goals):
        if goal.id in goal_index:
            diagnostics.append(
                error(
                    "duplicate-id",
                    f"duplicate goal id `{goal.id}`",
                    positions.span(("goals", index, "id")),
                )
            )
        goal_index.setdefault(goal.id, index)
        goal_spans[goal.id] = positions.span(("goals", index, "id"))
    for index, goal in enumerate(curriculum.goals):
        for r_index, required in enumerate(goal.requires):
            span = positions.span(("goals", index, "requires", r_index))
            requires_spans[(goal.id, required)] = span
            if required not in goal_index:
                diagnostics.append(
                    error(
                        "unknown-name",
                        f"goal `{goal.id}` requires unknown goal `{required}`",
                        span,
                        help=did_you_mean(required, goal_index) or None,
                    )
                )
    seen: set[str] = set()
    for index, exercise in enumerate(curriculum.exercises):
        if exercise.id in seen:
            diagnostics.append(
                error(
                    "duplicate-id",
                    f"duplicate exercise id `{exercise.id}`",
                    positions.span(("exercises", index, "id")),
                )
            )
        seen.add(exercise.id)
        if exercise.goal not in goal_index:
            diagnostics.append(
                error(
                    "unknown-name",
                    f"exercise `{exercise.id}` names unknown goal `{exercise.goal}`",
                    positions.span(("exercises", index, "goal")),
                    help=did_you_mean(exercise.goal, goal_index) or None,
                )
            )
        for p_index, practised in enumerate(exercise.practises):
            if practised not in goal_index:
                diagnostics.append(
                    error(
                        "unknown-name",
                        f"exercise `{exercise.id}` practises unknown goal `{practised}`",
                        positions.span(("exercises", index, "practises", p_index)),
                        help=did_you_mean(practised, goal_index) or None,
                    )
                )
    if diagnostics:
        return None, diagnostics
    return ResolvedCurriculum(
        curriculum.id,
        file,
        curriculum,
        goal_spans,
        requires_spans,
        frozenset(curriculum.ignore),
        positions.span(("id",)),
    ), diagnostics
