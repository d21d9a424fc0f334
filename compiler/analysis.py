"""Analysis: one resolved theory, encoded once, queried by every semantic check.

Compiler stage. Takes a `ResolvedTheory`; gives the per-rule, per-pair and per-invariant
answers the checks in `compiler/checks/` turn into diagnostics, each with a witness state,
and `facts()` for the report summary (`coverage`).

Performance (DESIGN: benchmarks; `benchmarks/check_scaling.py`): one shared z3 solver with
push/pop and a per-query timeout, and structure before z3 everywhere it decides exactly. A
rule whose condition is a plain box is known to hold without z3, and a corner of its box is
kept as a known state; eligibility is read off such a state when the ceiling lets the rule
through there. Redundancy (`a` implies `b`, same action) is ruled out by `b` being false at
`a`'s known state or `a`'s box leaving `b`'s hull, and proved by box containment; rules are
indexed by the variables their hull narrows, so a pair whose `b` narrows a variable `a` does
not read is never formed. A shadow is ruled out by a known eligible state where nothing that
beats the rule is eligible. z3 is asked only what is left, and a witness (a model made
readable) is built only for a finding that is shown. Pairs are otherwise pruned with box
reasoning (`compiler/boxes.py`); only pairs whose actions make an overlap matter are looked
at (declared conflicts, equal priorities under priority selection, the same action); and
every answer is cached by content (the metric domains, the ceiling, the rules' condition
text and rung), so re-checking a file after editing one rule re-asks only about that rule.
A query the solver cannot decide in time is `unknown`, which checks report — never a pass.
"""

from __future__ import annotations

import hashlib
import pickle
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from itertools import chain, combinations
from math import ceil, floor
from typing import Any

from pedrag.compiler import encode
from pedrag.compiler import formula as F
from pedrag.compiler.box_measure import Box as CellBox
from pedrag.compiler.box_measure import KeptUnion, cell_boxes, covering_set
from pedrag.compiler.boxes import Box, hull
from pedrag.compiler.check_cache import MISSING, PERSISTED, CheckCache
from pedrag.compiler.encode import Translator
from pedrag.compiler.formula import Node
from pedrag.compiler.measure import Cell, Measure, cells
from pedrag.dsl import ast
from pedrag.dsl.ir import ActionInfo, Located, ResolvedTheory, RuleInfo
from pedrag.dsl.printer import to_text
from pedrag.dsl.spans import Span
from pedrag.kernel.ceiling import apply_steps
from pedrag.kernel.exact import decimal_fraction
from pedrag.kernel.rungs import rung_name

TIMEOUT_MS = 10_000
SEARCH_BUDGET = 2_000
"""Substitutions before the cell search for a first state hands over to z3. Each one rewrites
the whole residual formula, so on a theory without a catch-all the search for an uncovered
state rarely ends early: at 20,000 every gap search of a 50-rule generated theory ran out of
budget before z3 answered (4.5 of 6.7 s). With 2,000 the compiler tests' findings (goldens,
exactness, the released-algorithm comparison) are unchanged and reports stay deterministic
across processes."""
QUICK_BUDGET = 200
"""Cells the first-state search may try before a question goes to z3 (`Analysis.decide`)."""

_GROUPS = frozenset({"conflicts", "redundant", "invariant group"})
"""Answers about a group of rules, computed from answers about its members (`_MEMBERS`),
which the on-disk cache keeps as long as it keeps the group's (`Shard.keep_members`)."""
_MEMBERS = frozenset({"pair", "implies", "invariant"})

# Answers by content, shared by every Analysis in this process (see the module docstring).
_CACHE: dict[tuple[Any, ...], Any] = {}
_CONTEXTS: dict[tuple[Any, ...], int] = {}


@dataclass(frozen=True)
class Outcome:
    """A solver answer: `sat` with a witness, `unsat` with the tracked parts in its core, or
    `unknown`."""

    status: str
    witness: dict[str, Any] | None = None  # as shown to the designer (ints, short decimals)
    core: tuple[int, ...] = ()
    state: dict[str, Any] | None = None  # the same state, exactly (Fractions, enum names, bools)

    @property
    def sat(self) -> bool:
        return self.status == "sat"

    @property
    def unsat(self) -> bool:
        return self.status == "unsat"

    @property
    def unknown(self) -> bool:
        return self.status == "unknown"


_UNSET: Any = object()


class DeferredWitness(Outcome):
    """A `sat` answer decided without z3 (a non-empty box is satisfiable); its witness is made
    only when it is read, that is when a finding shows it, so the many rules that are never
    reported cost no witness search."""

    _compute: Callable[[], tuple[dict[str, Any], dict[str, Any]]]
    _value: Any

    def __init__(self, compute: Callable[[], tuple[dict[str, Any], dict[str, Any]]]) -> None:
        # One update, not four frozen-field sets: a re-check makes one per kept rule status.
        self.__dict__.update(status="sat", core=(), _compute=compute, _value=_UNSET)

    def _pair(self) -> tuple[dict[str, Any], dict[str, Any]]:
        if self._value is _UNSET:
            object.__setattr__(self, "_value", self._compute())
        return self._value  # type: ignore[no-any-return]

    @property  # type: ignore[override]
    def witness(self) -> dict[str, Any] | None:
        return self._pair()[0]

    @property  # type: ignore[override]
    def state(self) -> dict[str, Any] | None:
        return self._pair()[1]


@dataclass(frozen=True)
class Piece:
    """A conjunct of a condition (a chained comparison split into its links) and its span."""

    text: str
    span: Span
    node: Node


@dataclass
class RuleStatus:
    """A rule's answers, never changed once made. `dead`, `blocked` and `live` are worked out
    once per status: every check asks them of every rule, on every check of the language
    server, which shares the statuses of the rules an edit left alone."""

    holds: Outcome
    eligible: Outcome | None = None
    dead_core: tuple[int, ...] = ()  # indices into `Analysis.pieces(rule.when)`

    @cached_property
    def dead(self) -> bool:
        return self.holds.unsat

    @cached_property
    def blocked(self) -> bool:
        return self.holds.sat and self.eligible is not None and self.eligible.unsat

    @cached_property
    def live(self) -> bool:
        """Eligible somewhere (or not known not to be)."""
        return not self.dead and not self.blocked


@dataclass
class Finding:
    """A pairwise or per-invariant answer a check reports."""

    kind: str
    rules: tuple[RuleInfo, ...]
    outcome: Outcome
    extra: dict[str, Any] = field(default_factory=dict)


def rule_key(analysis: Analysis, rule: RuleInfo) -> tuple[str, int]:
    """A rule's content as the caches key it: its condition's text and its rung.

    The text as written determines the resolved condition, given the declarations every shard
    is keyed by, so it serves as the key without printing 5,000 conditions back to text (a
    re-spelled condition is a new key, which costs a recomputation, never a wrong answer)."""
    hit = analysis._rule_keys.get(rule.id)
    if hit is None:
        text = rule.when.text or to_text(rule.when.expr)
        hit = (text, analysis.theory.actions[rule.action].rung)
        analysis._rule_keys[rule.id] = hit
    return hit


class Analysis:
    """The encoded theory and the answers to every question the checks ask, computed lazily."""

    def __init__(
        self,
        theory: ResolvedTheory,
        timeout_ms: int = TIMEOUT_MS,
        cache: CheckCache | None = None,
    ) -> None:
        self.theory = theory
        self.translator = Translator(theory)
        tr = self.translator
        self.rules = theory.rules
        self.by_id = {rule.id: rule for rule in self.rules}
        self.domains = tr.domains
        metric_domains = tuple(self.domains[m].signature() for m in theory.metrics)
        steps = tuple((to_text(s.when.expr), s.effect, s.rung) for s in theory.ceiling_steps)
        self.context = (metric_domains, theory.ceiling_start, steps, theory.selection)
        # The in-process memo's keys carry a small number for the context, not the context: a
        # key is hashed on every question, and hashing the domains' Fractions each time was a
        # tenth of a re-check.
        self._context_id = _CONTEXTS.setdefault(self.context, len(_CONTEXTS))
        self._shard = (cache or CheckCache.disabled()).shard(self.context)
        # The analysis of this theory's previous version in this process, when this one is it
        # with a few rules replaced (`_Before`): what the others' answers are is carried over.
        self._before = _before(self) if encode.SHARING and self._shard.path is None else None
        before = self._before
        if before is None:
            self.holds = {rule.id: tr.holds(rule) for rule in self.rules}
            holds = self.holds
            self.eligible = {rule.id: tr.eligible(rule, holds[rule.id]) for rule in self.rules}
        else:
            self.holds = before.carried(before.kept.holds, lambda rule: tr.holds(rule))
            holds = self.holds
            self.eligible = before.carried(
                before.kept.eligible, lambda rule: tr.eligible(rule, holds[rule.id])
            )
        self.violations: dict[tuple[str, str], Node] = {}
        for invariant in theory.invariants:
            for name, action in theory.actions.items():
                self.violations[(invariant.id, name)] = tr.invariant(
                    invariant.condition.expr, invariant.kind, action
                )
        self.any_eligible = F.or_(self.eligible.values())
        self.timeout_ms = timeout_ms
        self._solver: Any = None  # made by the first query (`_start_solver`)
        self.queries = 0
        # Some question was left undecided (a solver timeout): the findings are not kept whole
        # (`driver.run_semantic`), so it is asked again next time, as its answer is.
        self.undecided = False
        # How many solver questions were left undecided: an answer whose computation saw one
        # more is used, never kept (`_cached`), whatever its type.
        self.unknowns = 0
        # A hull is made of its (interned) formula and the domains alone.
        self._hulls: dict[Node, tuple[Box, bool]] = (
            dict(before.kept.hulls)
            if before is not None and len(before.kept.hulls) < _HULLS_CARRIED
            else {}
        )
        # A variable's cells under a set of cuts: pair questions share their rules' constants,
        # and building the cells (Fractions, dataclasses) was a fifth of a cold check.
        self._cell_memo: dict[tuple[str, frozenset[Fraction]], tuple[Cell, ...]] = {}
        self._memo: dict[str, Any] = {}
        # Each rule's status by id, once read (`rule_status`): the checks read 21,000 at
        # 5,000 rules, most of them here.
        self._statuses: dict[str, RuleStatus] = {}
        # The member answers each group answer being computed asks (`_cached`), innermost last.
        self._members: list[list[str]] = []
        self._points: dict[str, dict[str, Any] | bytes | None] = {}  # bytes: kept packed
        self._rule_keys: dict[str, tuple[str, int]] = {}
        self._eligible_points: dict[str, dict[str, Any] | bytes] = {}
        # Each per-rule pass's findings by rule, the rules without any left out (`each_rule`).
        self._passes: dict[str, list[tuple[RuleInfo, list[Any]]]] = {}
        if before is not None:
            # A rule left alone has the status, known states and key it had: they are made of
            # its content, its action's rung and the context, all the same objects.
            kept = before.kept
            self._statuses = before.without_changed(kept.statuses)
            self._points = before.without_changed(kept.points)
            self._rule_keys = before.without_changed(kept.rule_keys)
            self._eligible_points = before.without_changed(kept.eligible_points)
        self._order = {name: index for index, name in enumerate(self.domains)}

    @property
    def cuts(self) -> dict[str, set[Fraction]]:
        """Every constant each variable is compared with anywhere in the theory. Answers do
        not read it (each uses the cuts of its own formulas, so a cached answer is what a
        fresh check gives); it is for tools that look at the whole theory."""
        if "cuts" not in self._memo:
            found: dict[str, set[Fraction]] = {}
            for node in [*self.holds.values(), *self.eligible.values(), *self.violations.values()]:
                for var, constants in F.breakpoints(node).items():
                    found.setdefault(var, set()).update(constants)
            self._memo["cuts"] = found
        return self._memo["cuts"]  # type: ignore[no-any-return]

    # -- solving ---------------------------------------------------------------------------
    def _start_solver(self) -> None:
        """The z3 context, encoding and solver, made when the first query needs them: a
        re-check answered from the cache never loads z3."""
        import z3

        from pedrag.compiler.z3_encoding import Z3Encoding

        self.z3_context = z3.Context()
        self.encoding = Z3Encoding(self.domains, self.z3_context)
        for name in self.domains:
            self.encoding.var(name)
        self._solver = z3.Solver(ctx=self.z3_context)
        self._solver.set("timeout", self.timeout_ms)
        self._solver.add(*self.encoding.constraints)
        self._synced = len(self.encoding.constraints)

    @property
    def solver(self) -> Any:
        if self._solver is None:
            self._start_solver()
        return self._solver

    @solver.setter
    def solver(self, replacement: Any) -> None:  # tests put a failing solver in its place
        if self._solver is None:
            self._start_solver()
        self._solver = replacement

    def solve(
        self,
        formulas: list[Node],
        tracked: list[Node] | tuple[Node, ...] = (),
        witness: bool = True,
    ) -> Outcome:
        """Satisfiability of the conjunction of `formulas` and `tracked` (whose indices an
        unsat core names)."""
        import z3

        self.queries += 1
        solver = self.solver
        terms = [self.encoding.term(f) for f in formulas]
        tracked_terms = [self.encoding.term(t) for t in tracked]
        if self._synced < len(self.encoding.constraints):
            solver.add(*self.encoding.constraints[self._synced :])
            self._synced = len(self.encoding.constraints)
        solver.push()
        try:
            if terms:
                solver.add(*terms)
            literals = self._part_literals(len(tracked_terms))
            if tracked_terms:
                self._assert_implications(solver, literals, tracked_terms)
            result = solver.check(*literals)
            if result == z3.sat:
                if not witness:
                    return Outcome("sat")
                shown, exact = self._witness(solver.model(), [*formulas, *tracked])
                return Outcome("sat", shown, state=exact)
            if result == z3.unsat:
                names = {str(c) for c in solver.unsat_core()}
                return Outcome(
                    "unsat", core=tuple(i for i in range(len(literals)) if f"__part_{i}" in names)
                )
            self.undecided = True
            self.unknowns += 1
            return Outcome("unknown")
        finally:
            solver.pop()

    def solve_remembered(self, kind: str, formulas: list[Node]) -> Outcome:
        """`decide(formulas)` (`solve`'s answer and witness, z3 asked only where needed),
        kept in the caches under `kind` and the formulas' text: for a question asked afresh on
        every check (`compiler/written.py`'s pinned re-ask of a shown finding), which a
        re-check should not send to z3 again."""
        key = (kind, *(F.show(f) for f in formulas))
        return self._cached(key, lambda: self.decide(formulas))  # type: ignore[no-any-return]

    def _part_literals(self, count: int) -> list[Any]:
        """The literals `__part_0` ... that name a question's tracked parts in an unsat core,
        made once per analysis (z3 shares equal terms, so these are the terms `z3.Bool` makes)."""
        import z3

        made: list[Any] = self._memo.setdefault("part literals", [])
        while len(made) < count:
            made.append(z3.Bool(f"__part_{len(made)}", self.z3_context))
        return made[:count]

    def _assert_implications(self, solver: Any, literals: list[Any], terms: list[Any]) -> None:
        """Assert `Implies(literal, term)` for each pair, in order. The same terms and asserts
        `z3.Implies` and `solver.add` make, through z3's C API: the Python wrappers' sort
        checks on every argument were three quarters of a shadow question with hundreds of
        higher rules (the solve itself a quarter)."""
        import z3
        from z3 import z3core

        context = self.z3_context.ref()
        # Each made term is held by a `BoolRef` (which takes a reference), as `z3.Implies`'s
        # is: a bare AST of a reference-counted context may be freed by the next call.
        implications = [
            z3.BoolRef(
                z3core.Z3_mk_implies(context, literal.as_ast(), term.as_ast()), self.z3_context
            )
            for literal, term in zip(literals, terms, strict=True)
        ]
        if type(solver) is not z3.Solver:  # a stand-in a test put in the solver's place
            solver.add(*implications)
            return
        for implication in implications:
            z3core.Z3_solver_assert(context, solver.solver, implication.as_ast())

    def decide(
        self,
        formulas: list[Node],
        tracked: list[Node] | tuple[Node, ...] = (),
        witness: bool = True,
    ) -> Outcome:
        """`solve`'s answer, found without z3 where it can be: a shown witness by the same
        first-state search `_witness` picks z3's witness with (within `QUICK_BUDGET`), and
        satisfiability of one-variable atoms over cells (`_by_cells`). z3 is asked only for the
        rest, and for an unsat core (`tracked`), which is z3's own. Every check asks here; the
        released algorithm the benchmarks compare with asks `solve`."""
        parts = [*formulas, *tracked]
        if witness:
            found = self._first_witness(parts)
            if found is not None:
                return found
        decided = self._by_cells(parts)
        if decided == "unsat" and not tracked or decided == "sat" and not witness:
            return Outcome(decided)
        return self.solve(formulas, tracked, witness)

    def minimal_core(
        self, formulas: list[Node], tracked: list[Node], core: tuple[int, ...]
    ) -> tuple[int, ...]:
        """Shrink an unsat core by deletion until every part is needed."""
        kept = list(core)
        for index in list(kept):
            trial = [i for i in kept if i != index]
            trial_parts = [*formulas, *(tracked[i] for i in trial)]
            if self.decide(trial_parts, witness=False).unsat:  # a trial needs no core
                kept = trial
        return tuple(kept)

    def _by_cells(self, formulas: list[Node]) -> str | None:
        """ "sat" or "unsat" for the conjunction of `formulas`, decided without z3 when they have
        one-variable atoms only: cut each variable's domain at the formulas' own constants, so
        every atom is true or false on each cell, and the conjunction is satisfiable exactly
        when its box form over those cells (`compiler/box_measure.py`) is not empty. None
        when that is not available (linear atoms, too many boxes)."""
        node = F.and_(formulas)
        if node.linear:
            return None
        cuts = F.breakpoints(node)
        values = {var: [c.value for c in self._cells(var, cuts.get(var))] for var in node.vars}
        boxes = cell_boxes(node, values)
        if boxes is None:
            return None
        return "sat" if boxes else "unsat"

    def _first_witness(self, formulas: list[Node]) -> Outcome | None:
        """`sat` with the witness `solve(formulas)` would give, when `_witness`'s first-state
        search finds it within `QUICK_BUDGET` (the same search, so the same state); None
        otherwise (unsatisfiable, or not found so soon: ask z3)."""
        ordered = self._shown_vars(formulas)
        state = self.first_state(F.and_(formulas), ordered, QUICK_BUDGET)
        if state is None:
            return None
        shown, exact = self.tidy(state, formulas)
        return Outcome("sat", shown, state=exact)

    def _witness(self, model: Any, formulas: list[Node]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The model as a state (shown, exact): each real moved to a short decimal where every
        formula keeps its truth, and the shown values re-checked as a reader parses them."""
        ordered = self._shown_vars(formulas)
        # The first cell where the formulas hold, not z3's model: a function of the question
        # alone, so a witness does not depend on what the solver was asked before (in this file,
        # or in another file whose answers the content cache shares).
        state = self.first_state(F.and_(formulas), ordered)
        if state is None:
            state = self._canonical_model(formulas, ordered)
        if state is None:
            state = {name: self.encoding.value(model, name) for name in ordered}
        return self.tidy(state, formulas)

    def _canonical_model(self, formulas: list[Node], ordered: list[str]) -> dict[str, Any] | None:
        """z3's model of `formulas` asked alone, in a context of its own: where the first-state
        search finds no witness (linear atoms over reals), a model that depends on the
        question only, and not on what the shared solver was asked before, so a report built
        from cached answers is byte-identical to one built without (None on a timeout)."""
        import z3

        from pedrag.compiler.z3_encoding import Z3Encoding

        encoding = Z3Encoding(self.domains, z3.Context())
        terms = [encoding.term(node) for node in formulas]
        for name in ordered:
            encoding.var(name)
        solver = z3.Solver(ctx=encoding.context)
        solver.set("timeout", self.timeout_ms)
        solver.add(*encoding.constraints, *terms)
        if solver.check() != z3.sat:
            self.undecided = True
            self.unknowns += 1
            return None
        model = solver.model()
        return {name: encoding.value(model, name) for name in ordered}

    def _nice(
        self, state: dict[str, Any], formulas: list[Node]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A known state (a box corner, a decided point) as a witness (shown, exact): the
        variables the formulas read, in declaration order, tidied as a solver witness is."""
        return self.tidy({name: state[name] for name in self._shown_vars(formulas)}, formulas)

    def _shown_vars(self, formulas: list[Node]) -> list[str]:
        """The variables a witness of `formulas` shows: those they read, in declaration order."""
        names: set[str] = set()
        for node in formulas:
            names |= node.vars
        return sorted(names, key=self._order.__getitem__)

    def tidy(
        self, state: dict[str, Any], formulas: list[Node]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """`state` with short decimals for its reals, keeping every formula's truth (shown, exact)."""
        truth = [F.evaluate(node, state) for node in formulas]
        # The formulas' own cuts, not the theory's: a witness is then a function of what it
        # witnesses, so an answer from the check cache shows the witness a fresh check would.
        cuts = F.breakpoints(F.and_(formulas))

        def keeps(trial: dict[str, Any]) -> bool:
            return all(
                F.evaluate(node, trial) == t for node, t in zip(formulas, truth, strict=True)
            )

        for name in state:
            domain = self.domains[name]
            if domain.kind != "real":
                continue
            nice = _nice_candidates(
                state[name], domain.low, domain.high, sorted(cuts.get(name, ()))
            )
            for candidate in chain(nice, _short_decimals(state[name], domain.low, domain.high)):
                trial = {**state, name: candidate}
                if keeps(trial):
                    state[name] = candidate
                    break
        shown = {name: present(value, self.domains[name].kind) for name, value in state.items()}
        # The shown witness is what a designer pastes into `pedrag why`: it must be the state.
        if not keeps({name: _value(value) for name, value in shown.items()}):
            for name, value in state.items():  # no short decimal will do: show the fraction
                if self.domains[name].kind == "real" and _value(shown[name]) != value:
                    shown[name] = f"{value.numerator}/{value.denominator}"
        return shown, state

    def first_state(
        self, node: Node, variables: list[str], budget: int = SEARCH_BUDGET
    ) -> dict[str, Any] | None:
        """The first state, in the domains' order of cells of positive measure, where `node` holds,
        found by substituting each cell's representative (None if none is found within budget;
        for variables in multi-variable atoms a representative stands for its cell only roughly,
        so a None there is no proof)."""
        spent = 0
        failed: set[Node] = set()
        own = F.breakpoints(node)  # the node's cuts: the answer depends on the node alone

        def search(current: Node, index: int, state: dict[str, Any]) -> dict[str, Any] | None:
            nonlocal spent
            if current is F.FALSE or current in failed:
                return None
            if current is F.TRUE or index == len(variables):
                return state if current is F.TRUE else None
            var = variables[index]
            if var not in current.vars:
                found = search(current, index + 1, state)
            else:
                found = None
                for cell in self._cells(var, own.get(var)):
                    if cell.weight <= 0:
                        continue
                    spent += 1
                    if spent > budget:
                        return None
                    found = search(
                        F.substitute(current, var, cell.value),
                        index + 1,
                        {**state, var: cell.value},
                    )
                    if found is not None:
                        break
            if found is None and spent <= budget:
                failed.add(current)
            return found

        found = search(node, 0, {})
        search = None  # type: ignore[assignment]  # it referred to itself: now freed at once
        if found is None:
            return None
        # Variables the formula no longer read when it became true: their first cell.
        for var in variables:
            if var not in found:
                first = next(c for c in self._cells(var, own.get(var)) if c.weight > 0)
                found[var] = first.value
        return {var: found[var] for var in variables}

    def _cells(self, var: str, cuts: set[Fraction] | None) -> tuple[Cell, ...]:
        """`cells` of `var`'s domain cut at `cuts`, remembered for this theory's domains."""
        key = (var, frozenset(cuts) if cuts else frozenset())
        hit = self._cell_memo.get(key)
        if hit is None:
            hit = self._cell_memo[key] = tuple(cells(self.domains[var], cuts))
        return hit

    def hull(self, node: Node) -> tuple[Box, bool]:
        hit = self._hulls.get(node)
        if hit is None:
            hit = hull(node, self.domains)
            self._hulls[node] = hit
        return hit

    def _cached(
        self,
        key: tuple[Any, ...],
        compute: Any,
        freeze: Callable[[Any], Any] | None = None,
        thaw: Callable[[Any], Any] | None = None,
    ) -> Any:
        """An answer by content: from this process, else the on-disk cache (answers whose
        kind it keeps, made plain by `freeze` and rebuilt by `thaw`), else `compute()`."""
        full = (self._context_id, *key)
        persist = key[0] in PERSISTED and self._shard.path is not None
        text = _stored_key(key) if persist else ""
        group = persist and key[0] in _GROUPS
        if persist and self._members and key[0] in _MEMBERS:
            self._members[-1].append(text)
        if persist:
            stored = self._shard.get(text)
            if stored is not MISSING:
                if group:
                    self._shard.keep_members(text)
                value = thaw(stored) if thaw else stored
                _CACHE.setdefault(full, value)
                return value
        members: list[str] = []
        if full in _CACHE:
            value = _CACHE[full]
        else:
            if group:
                self._members.append(members)
            unknowns = self.unknowns
            try:
                value = compute()
            finally:
                if group:
                    self._members.pop()
            # An answer made with a question left undecided (a timeout) may differ next
            # time: a rule status whose holding or eligibility, or a dead rule's core, a
            # timeout decided was kept, and read back as an `unknown` by every later check.
            if (
                (isinstance(value, Outcome) and value.unknown)
                or isinstance(value, _Undecided)
                or self.unknowns != unknowns
            ):
                return value
            _CACHE[full] = value
        if persist:
            self._shard.put(text, freeze(value) if freeze else value)
            if members:
                self._shard.put_members(text, members)
        return value

    def save_cache(self) -> None:
        """Write this check's answers to the on-disk cache (if it has one)."""
        self._shard.save()

    def keep(self) -> None:
        """Leave this finished analysis's answers for its theory's next version
        (`_Before`), where formulas are shared between checks. They may have been read from
        the disk cache (a server's first check), which gives the answers a check computes;
        only an analysis that reads no disk cache carries them over (the on-disk shard's fold
        keeps the answers a check reads, so a check that skipped reading them would let them
        go). Nothing is kept when a question was left undecided."""
        theory = self.theory
        key = (theory.file, theory.id)
        _KEPT.pop(key, None)
        if not encode.SHARING or self.unknowns:
            return
        while len(_KEPT) >= 4:
            _KEPT.pop(next(iter(_KEPT)))
        _KEPT[key] = _Kept(
            theory,
            self._context_id,
            self.holds,
            self.eligible,
            self._statuses,
            self._points,
            self._eligible_points,
            self._rule_keys,
            self._memo.get("redundant by action"),
            self._memo.get("live by action"),
            self._memo.get("conflict groups"),
            self._hulls,
            self._passes,
            self._memo.get("rule keys"),
        )

    def reads(self, expr: ast.Expr) -> frozenset[str]:
        """The metrics a condition reads (its `MetricRef`s), walked once per check however
        many checks ask (unused-metric, unwritten-metric)."""
        memo: dict[int, tuple[ast.Expr, frozenset[str]]] = self._memo.setdefault("reads", {})
        hit = memo.get(id(expr))
        if hit is None:
            hit = memo[id(expr)] = (
                expr,
                ast.metric_names(expr),
            )  # the expression is kept, so its id stays its own
        return hit[1]

    # -- pieces of a condition ---------------------------------------------------------------
    def pieces(self, located: Located) -> list[Piece]:
        """Top-level conjuncts, chained comparisons split into links, each with its span."""
        out: list[Piece] = []
        for part, link in self._piece_exprs(located):
            if link:
                # `part` is a temporary: translate it uncached (the translator's cache is
                # keyed by node identity, and a freed temporary's id is reused).
                ((_, node),) = self.translator.conjuncts(part)
            else:
                node = self.translator.condition(part)
            out.append(Piece(to_text(part), self._piece_span(located, part, link), node))
        return out

    def shown_pieces(self, located: Located, chosen: tuple[int, ...]) -> list[tuple[str, Span]]:
        """The text and span of the `pieces` at the positions `chosen` (a dead rule's core),
        neither printing nor translating the others: a dead rule's finding shows a few of its
        condition's pieces, and a re-check reports every dead rule again."""
        exprs = self._piece_exprs(located)
        return [
            (to_text(exprs[i][0]), self._piece_span(located, exprs[i][0], exprs[i][1]))
            for i in chosen
        ]

    def _piece_exprs(self, located: Located) -> list[tuple[ast.Expr, bool]]:
        """A condition's pieces (`pieces`) as expressions, each with whether it is a link of a
        chained comparison (a new expression)."""
        out: list[tuple[ast.Expr, bool]] = []
        expr = located.expr
        parts = expr.operands if isinstance(expr, ast.And) else (expr,)
        for part in parts:
            if isinstance(part, ast.Compare) and len(part.ops) > 1:
                for i, op in enumerate(part.ops):
                    operands = (part.operands[i], part.operands[i + 1])
                    out.append((ast.Compare(operands, (op,)), True))
            else:
                out.append((part, False))
        return out

    @staticmethod
    def _piece_span(located: Located, part: ast.Expr, link: bool) -> Span:
        if not link:
            return located.node_span(part)
        assert isinstance(part, ast.Compare)
        start, end = part.operands[0].span[0], part.operands[1].span[1]
        return located.scalar.span(start, end) if located.scalar and end > start else located.span

    # -- per rule ----------------------------------------------------------------------------
    def rule_keys(self) -> tuple[tuple[str, int], ...]:
        """Every rule's `rule_key`, in rule order (the keys of the answers about all the rules:
        the coverage share, the gap regions); after a one-rule edit the kept tuple with the
        replaced rules' keys replaced (`_Before`)."""
        found: tuple[tuple[str, int], ...] | None = self._memo.get("rule keys")
        if found is None:
            before = self._before
            kept = before.kept.all_rule_keys if before is not None else None
            if before is None or kept is None:
                found = tuple([rule_key(self, r) for r in self.rules])
            else:
                keys = list(kept)
                for i in before.changed:
                    keys[i] = rule_key(self, self.rules[i])
                found = tuple(keys)
            self._memo["rule keys"] = found
        return found

    def each_rule(self, name: str, findings: Callable[[RuleInfo], list[Any]]) -> list[Any]:
        """`findings(rule)` of every rule, in rule order, for a pass whose findings about a
        rule are made of that rule alone (its content, status and action) and of the parts of
        the theory `_Before` requires to be the same objects. After a one-rule edit the kept
        pass's findings of the rules left alone are carried over and only the replaced
        rules' are made, so the pass does not visit 5,000 rules to find the few with a
        finding."""
        before = self._before
        kept = before.kept.passes.get(name) if before is not None else None
        if before is None or kept is None:
            found = [(rule, made) for rule in self.rules if (made := findings(rule))]
        else:
            gone = {id(before.kept.theory.rules[i]) for i in before.changed}
            found = [(rule, made) for rule, made in kept if id(rule) not in gone]
            for i in before.changed:
                rule = self.rules[i]
                made = findings(rule)
                if made:
                    found.insert(bisect_left([r.index for r, _ in found], rule.index), (rule, made))
        self._passes[name] = found
        return [finding for _, made in found for finding in made]

    def rule_status(self, rule: RuleInfo) -> RuleStatus:
        statuses = self._statuses
        hit = statuses.get(rule.id)
        if hit is not None:
            return hit
        key = ("rule", *rule_key(self, rule))
        # A status kept on disk is read here as `_cached` reads it (the shard first), without
        # its general path: every rule's status is read on every re-check.
        stored = self._shard.get(_stored_key(key)) if self._shard.path is not None else MISSING
        if stored is not MISSING:
            found = self._thaw_status(rule, stored)
            _CACHE.setdefault((self._context_id, *key), found)
        elif self._shard.path is None and (self._context_id, *key) in _CACHE:
            # This process's answer, without `_cached`'s general path (nothing to store):
            # the language server reads every rule's status again after each edit.
            found = _CACHE[(self._context_id, *key)]
        else:

            def compute() -> tuple[RuleStatus, Any, Any]:
                status = self._rule_status(rule)
                return status, self._points.get(rule.id), self._eligible_points.get(rule.id)

            found = self._cached(key, compute, _freeze_status, lambda v: self._thaw_status(rule, v))
        status, point, eligible_point = found
        # A kept state stays packed (`_freeze_status`), and is completed to this analysis'
        # variables, only when a pair question reads it (`_known`): an edit's re-check reads
        # 5,000 statuses, and unpickling their states' Fractions was most of that.
        self._points[rule.id] = point
        if eligible_point is not None:
            self._eligible_points[rule.id] = eligible_point
        statuses[rule.id] = status
        return status

    def _known(self, table: dict[str, Any], rule_id: str) -> dict[str, Any] | None:
        """A rule's known state from `table` (`_points`, `_eligible_points`), unpacked and
        completed the first time it is read (`rule_status`)."""
        state = table.get(rule_id)
        if state is None:
            return None
        if type(state) is bytes:
            state = pickle.loads(state)
        elif state.keys() == self.domains.keys():
            return state  # type: ignore[no-any-return]
        state = table[rule_id] = self._complete(state)
        return state  # type: ignore[no-any-return]

    def _rule_status(self, rule: RuleInfo) -> RuleStatus:
        holds = self.holds[rule.id]
        box, exact = self.hull(holds)
        pieces = self.pieces(rule.when)
        if exact and not box.empty() and holds is not F.FALSE:
            # A non-empty box holds somewhere, and its corner is the witness if one is shown.
            corner = self._box_point(box)
            point: dict[str, Any] | None = corner
            holds_outcome: Outcome = DeferredWitness(lambda: self._box_witness(rule, corner))
        else:
            # A dead rule's unsat core starts from z3's core, as the released search's does:
            # of several minimal cores, the one reported stays the same.
            holds_outcome = self.decide([], [p.node for p in pieces])
            point = self._point_from(holds_outcome.witness, holds)
        if holds_outcome.unsat:
            tracked = [p.node for p in pieces]
            core = self.minimal_core([], tracked, holds_outcome.core) if holds_outcome.core else ()
            return RuleStatus(holds_outcome, None, core)
        if not holds_outcome.sat:
            return RuleStatus(holds_outcome)
        self._points[rule.id] = point
        eligible = self.eligible[rule.id]
        if eligible is holds:
            return RuleStatus(holds_outcome, holds_outcome)
        trials = [point] if point is not None else []
        if exact:
            trials.extend(self._corners(box))
        for trial in trials:
            if F.evaluate(eligible, trial):
                self._eligible_points[rule.id] = trial
                return RuleStatus(holds_outcome, Outcome("sat"))
        return RuleStatus(holds_outcome, self.decide([eligible], witness=False))

    def _box_witness(
        self, rule: RuleInfo, corner: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The shown witness of a rule that holds on a box (from its corner), kept by content:
        a rule that is reported on every check (ceiling-blocked) is not tidied again each time."""
        return self._cached(  # type: ignore[no-any-return]
            ("box witness", *rule_key(self, rule)),
            lambda: self._nice(corner, [self.holds[rule.id]]),
        )

    def _thaw_status(self, rule: RuleInfo, frozen: Any) -> tuple[RuleStatus, Any, Any]:
        holds, eligible, core, point, eligible_point = frozen
        if type(holds) is str:
            if holds == "box":
                holds = DeferredWitness(lambda: self._box_witness(rule, _unpack(point)))
            else:
                holds = _BARE[holds]
        if type(eligible) is str:
            eligible = holds if eligible == "same" else _BARE[eligible]
        return RuleStatus(holds, eligible, core), point, eligible_point

    # -- known points (to rule out implications without z3) -----------------------------------
    def _box_point(
        self, box: Box, numbers_high: bool = False, sets_last: bool = False
    ) -> dict[str, Any]:
        """A complete state inside a non-empty box: a corner (lowest by default; numbers at
        their highest and enum or bool values at their last with the flags)."""
        state: dict[str, Any] = {}
        for name, domain in self.domains.items():
            part = box.get(name)
            if isinstance(part, frozenset):
                values = reversed(domain.values) if sets_last else domain.values
                state[name] = next(v for v in values if v in part)
            elif domain.kind == "int":
                state[name] = part.high if numbers_high else part.low
            elif part.low_closed and not (numbers_high and part.high_closed):
                state[name] = part.low
            elif part.high_closed:
                state[name] = part.high
            else:
                state[name] = (part.low + part.high) / 2
        return state

    def _complete(self, state: dict[str, Any]) -> dict[str, Any]:
        """A rule's known state, kept by the rule's content, over this analysis' variables:
        an answer made by an analysis of the same semantics whose rules read other history
        calls (each its own variable) lacks this one's, or has one it does not; the missing
        ones take the value a state made here gives a variable the rule does not read (the
        corner of its whole domain, `_box_point`). A state a rule's status kept was missing a
        history call another rule added since: implications read it and failed (KeyError)."""
        if state.keys() == self.domains.keys():
            return state
        base = self._box_point(Box(self.domains))
        return {name: state.get(name, base[name]) for name in self.domains}

    def _corners(self, box: Box) -> Iterator[dict[str, Any]]:
        """A few corners of a box, to find one where the ceiling also lets a rule through."""
        for numbers_high, sets_last in ((True, False), (False, True), (True, True)):
            yield self._box_point(box, numbers_high, sets_last)

    def _point_from(self, witness: dict[str, Any] | None, node: Node) -> dict[str, Any] | None:
        """A witness completed to a full state, if it still satisfies `node` read exactly."""
        if witness is None:
            return None
        state = self._box_point(Box(self.domains))
        state.update({k: _value(v) for k, v in witness.items()})
        return state if F.evaluate(node, state) else None

    def point(self, rule: RuleInfo) -> dict[str, Any] | None:
        """A complete state where the rule holds (None if unknown or none was kept)."""
        self.rule_status(rule)
        return self._known(self._points, rule.id)

    def eligible_point(self, rule: RuleInfo) -> dict[str, Any] | None:
        """A complete state where the rule is eligible (None if none was kept)."""
        self.rule_status(rule)
        if self.eligible[rule.id] is self.holds[rule.id]:
            return self._known(self._points, rule.id)
        return self._known(self._eligible_points, rule.id)

    def ceiling_at(self, state: dict[str, Any]) -> int:
        """The ceiling in a (witness) state: the steps that hold there, applied in order by
        `pedrag.kernel.ceiling`, as the runtime applies them."""
        values = {k: _value(v) for k, v in state.items()}
        held = []
        for step in self.theory.ceiling_steps:
            node = self.translator.condition(step.when.expr)
            if node.vars <= values.keys() and F.evaluate(node, values):
                held.append((step.index, step.effect, step.rung))
        return apply_steps(self.theory.ceiling_start, held)[0]

    # -- pairs -------------------------------------------------------------------------------
    def co_eligible(self, a: RuleInfo, b: RuleInfo) -> Outcome:
        """Can both rules be eligible in one state?"""
        ea, eb = self.eligible[a.id], self.eligible[b.id]
        box_a, _ = self.hull(ea)
        box_b, _ = self.hull(eb)
        if not box_a.intersects(box_b):
            return Outcome("unsat")
        key = ("pair", rule_key(self, a), rule_key(self, b))

        def compute() -> Outcome:
            # A known state where one rule is eligible and the other is too answers without
            # z3, and is the witness the finding shows.
            for point in (self.eligible_point(a), self.eligible_point(b)):
                if point is not None and F.evaluate(ea, point) and F.evaluate(eb, point):
                    shown, exact = self._nice(point, [ea, eb])
                    return Outcome("sat", shown, state=exact)
            return self.decide([ea, eb])

        return self._cached(key, compute)

    def implies(self, a: RuleInfo, b: RuleInfo) -> Outcome:
        """Does rule a's condition imply rule b's? (`unsat` = yes; no witness either way.)

        Structure first: b false at a known state of a rules it out; a box for a that is not
        inside b's hull (which contains b) rules it out; a box inside a box proves it. Only
        what is left is asked of z3."""
        ha, hb = self.holds[a.id], self.holds[b.id]
        point = self.point(a)
        if point is not None and not F.evaluate(hb, point):
            return Outcome("sat")
        box_a, exact_a = self.hull(ha)
        box_b, exact_b = self.hull(hb)
        if exact_a and not box_a.empty():
            if not box_a.within(box_b):
                return Outcome("sat")
            if exact_b:
                return Outcome("unsat")
        key = ("implies", rule_key(self, a)[0], rule_key(self, b)[0])

        return self._cached(key, lambda: self.decide([ha, F.not_(hb)], witness=False))

    def _narrowed_vars(self, box: Box) -> frozenset[str]:
        """Variables a box confines to less than their whole domain."""
        whole = Box(self.domains)
        return frozenset(
            name
            for name, part in box.ranges.items()
            if not Box(self.domains, {name: whole.full(name)}).within(
                Box(self.domains, {name: part})
            )
        )

    def _implication_candidates(self, rules: list[RuleInfo]) -> dict[str, list[RuleInfo]]:
        """For each rule a, the rules b (same list, in order) that a might imply.

        a can imply b only if b's hull narrows no variable that a's condition does not read
        (a leaves such a variable free, so some state of a lies outside b). Rules are indexed
        by the set of variables their hull narrows, so a meets only the groups whose set is
        inside its own variables; every other pair is never formed."""
        groups: dict[frozenset[str], list[RuleInfo]] = defaultdict(list)
        for rule in rules:
            groups[self._narrowed_vars(self.hull(self.holds[rule.id])[0])].append(rule)
        out: dict[str, list[RuleInfo]] = {}
        for a in rules:
            reads = self.holds[a.id].vars
            if len(reads) <= 10:
                keys = [
                    frozenset(c)
                    for size in range(len(reads) + 1)
                    for c in combinations(sorted(reads), size)
                ]
                found = [b for key in keys for b in groups.get(key, ())]
            else:
                found = [b for key, group in groups.items() if key <= reads for b in group]
            found.sort(key=lambda r: r.index)
            out[a.id] = [b for b in found if b is not a]
        return out

    def _live_by_action(self) -> dict[str, list[RuleInfo]]:
        """The live rules of each action, in order (actions by their first live rule): the
        conflicts and the invariants each walked every rule's status for it."""
        found = self._memo.get("live by action")
        if found is None:
            before = self._before
            kept = before.kept.live_by_action if before is not None else None
            by_action: dict[str, list[RuleInfo]] = defaultdict(list)
            if before is None or kept is None:
                for rule in self.rules:
                    if self.rule_status(rule).live:
                        by_action[rule.action].append(rule)
                found = dict(by_action)
            else:  # the actions no replaced rule had or has keep their lists (`_Before`)
                affected = before.affected_actions
                for rule in self.rules:
                    if rule.action in affected and self.rule_status(rule).live:
                        by_action[rule.action].append(rule)
                for action, rules in kept.items():
                    if action not in affected:
                        by_action[action] = rules
                found = dict(sorted(by_action.items(), key=lambda item: item[1][0].index))
            self._memo["live by action"] = found
        return found  # type: ignore[no-any-return]

    def conflicts(self) -> list[Finding]:
        if "conflicts" in self._memo:
            return self._memo["conflicts"]
        actions = self.theory.actions
        clashing = {(a, b) for a, info in actions.items() for b in info.conflicts}
        clashing |= {(b, a) for a, b in clashing}
        by_action = self._live_by_action()
        # Candidate pairs come in groups: the rules of two actions declared to conflict, and
        # the rules of one priority under priority selection. Each group's answer is kept by
        # its rules' content in order, so an edit to one rule re-asks only about its groups;
        # the 38,000 pairs of a 5,000-rule theory are not walked again on every re-check.
        groups: list[tuple[str, list[RuleInfo], list[RuleInfo] | None]] = []
        for a, b in sorted(clashing):
            if a == b and by_action.get(a):  # an action declared to conflict with itself
                groups.append(("declared", by_action[a], None))
            elif a < b and by_action.get(a) and by_action.get(b):
                groups.append(("declared", by_action[a], by_action[b]))
        if self.theory.selection == "priority":
            by_priority: dict[int, list[RuleInfo]] = defaultdict(list)
            for rules in by_action.values():
                for rule in rules:
                    by_priority[rule.priority].append(rule)
            for _, group in sorted(by_priority.items()):
                group.sort(key=lambda r: r.index)
                groups.append(("priority", group, None))
        candidates: dict[tuple[int, int], tuple[str, Outcome]] = {}
        for why, first, second in groups:
            differ = why == "priority"
            name: tuple[Any, ...] = (
                (why, first[0].priority, None)
                if why == "priority"
                else (why, first[0].action, None if second is None else second[0].action)
            )
            for ra, rb, outcome in self._conflict_group(first, second, differ, name):
                pair = (ra.index, rb.index) if ra.index < rb.index else (rb.index, ra.index)
                if why == "declared" or pair not in candidates:
                    candidates[pair] = (why, outcome)
        rules_by_index = {rule.index: rule for rule in self.rules}
        found = [
            Finding("conflict", (rules_by_index[ia], rules_by_index[ib]), outcome, {"why": why})
            for (ia, ib), (why, outcome) in sorted(candidates.items())
        ]
        self._memo["conflicts"] = found
        return found

    def _conflict_group(
        self,
        first: list[RuleInfo],
        second: list[RuleInfo] | None,
        differ: bool,
        name: tuple[Any, ...],
    ) -> list[tuple[RuleInfo, RuleInfo, Outcome]]:
        """The pairs that may be eligible together: one rule of `first` with one of `second`
        (two conflicting actions' rules), or with `second` None two rules of `first` (one
        priority's, whose actions must `differ`; or one self-conflicting action's). `name`
        says which group it is (its actions, or its priority): after a one-rule edit
        (`_Before`) the same group before it gives the answers of the rules both have."""

        def content(rules: list[RuleInfo]) -> tuple[Any, ...]:
            return tuple((rule_key(self, r), r.action) for r in rules)

        def compute() -> Any:
            pairs: list[tuple[int, int, Outcome]] = []
            unknown = False
            others = first if second is None else second
            meeting = self._finite_meeting(first, others)
            if second is None:
                candidates = [
                    (i, j)
                    for i, ra in enumerate(first)
                    for j in meeting(i)
                    if j > i and (not differ or ra.action != first[j].action)
                ]
            else:
                candidates = [(i, j) for i in range(len(first)) for j in meeting(i)]
            for i, j in candidates:
                outcome = self.co_eligible(first[i], others[j])
                if not outcome.unsat:
                    pairs.append((i, j, outcome))
                    unknown = unknown or outcome.unknown
            return _Undecided(pairs) if unknown else pairs

        before = self._before
        kept = before.kept.conflict_groups if before is not None else None
        was = kept.get(name) if kept is not None else None
        if was is not None and _same(was[0], first) and _same(was[1], second):
            pairs = was[2]  # the same rules: a group the edit left alone
        else:
            key = (
                "conflicts",
                differ,
                content(first),
                None if second is None else content(second),
            )
            if was is not None:
                old_first, old_second, old_pairs = was
                pairs = self._cached(
                    key,
                    lambda: self._conflict_group_after(
                        first, second, differ, old_first, old_second, old_pairs
                    ),
                    _freeze_shown,
                )
            else:
                pairs = self._cached(key, compute, _freeze_shown)
        self._memo.setdefault("conflict groups", {})[name] = (first, second, pairs)
        others = first if second is None else second
        return [(first[i], others[j], outcome) for i, j, outcome in pairs]

    def _conflict_group_after(
        self,
        first: list[RuleInfo],
        second: list[RuleInfo] | None,
        differ: bool,
        old_first: list[RuleInfo],
        old_second: list[RuleInfo] | None,
        old_pairs: list[tuple[int, int, Outcome]],
    ) -> Any:
        """`_conflict_group`'s compute, from the same group before an edit: a pair of rules
        both versions have is a pair of the same objects, so it is a candidate and meets as it
        did; only the pairs with a rule the edit added are asked about. In the order the whole
        search gives (by position of the first rule, then of the second)."""
        others = first if second is None else second
        old_others = old_first if old_second is None else old_second
        old = {id(rule) for rule in old_first} | {id(rule) for rule in old_others}
        at_first = {id(rule): i for i, rule in enumerate(first)}
        at_others = {id(rule): j for j, rule in enumerate(others)}
        pairs: list[tuple[int, int, Outcome]] = []
        for i, j, outcome in old_pairs:
            a = at_first.get(id(old_first[i]))
            b = at_others.get(id(old_others[j]))
            if a is not None and b is not None:
                pairs.append((a, b, outcome))
        asked: set[tuple[int, int]] = set()
        added_first = [i for i, rule in enumerate(first) if id(rule) not in old]
        if second is None:
            meeting = self._finite_meeting(first, first)
            for k in added_first:
                for j in meeting(k):
                    pair = (k, j) if k < j else (j, k)
                    if j != k and (not differ or first[k].action != first[j].action):
                        asked.add(pair)
        else:
            forward = self._finite_meeting(first, others)
            backward = self._finite_meeting(others, first)
            for i in added_first:
                asked.update((i, j) for j in forward(i))
            for j, rule in enumerate(others):
                if id(rule) not in old:
                    asked.update((i, j) for i in backward(j))
        unknown = False
        for i, j in asked:
            outcome = self.co_eligible(first[i], others[j])
            if not outcome.unsat:
                pairs.append((i, j, outcome))
                unknown = unknown or outcome.unknown
        pairs.sort(key=lambda pair: pair[:2])
        return _Undecided(pairs) if unknown else pairs

    def _finite_meeting(
        self, first: list[RuleInfo], others: list[RuleInfo]
    ) -> Callable[[int], list[int]]:
        """For rule `first[i]`, the indexes (ascending) of the rules in `others` whose
        eligibility hulls share a value of every bool and enum variable with its own: the only
        pairs `co_eligible` does not answer `unsat` at once (disjoint hulls). Rules are grouped
        by their hulls' value masks, so a rule meets a few dozen groups, not thousands of
        rules: two conflicting actions' rules at 20,000 rules are 440,000 pairs."""
        finite = [name for name, d in self.domains.items() if d.kind in ("bool", "enum")]
        bit = {
            name: {v: 1 << k for k, v in enumerate(self.domains[name].values)} for name in finite
        }

        def masks(rule: RuleInfo) -> tuple[int, ...]:
            ranges = self.hull(self.eligible[rule.id])[0].ranges
            out = []
            for name in finite:
                part = ranges.get(name)
                if part is None:
                    out.append(-1)  # the whole domain
                else:
                    assert isinstance(part, frozenset)  # a bool's or enum's hull is a value set
                    values = bit[name]
                    out.append(sum(values[v] for v in part))
            return tuple(out)

        groups: dict[tuple[int, ...], list[int]] = defaultdict(list)
        for j, rule in enumerate(others):
            groups[masks(rule)].append(j)

        def meeting(i: int) -> list[int]:
            mine = masks(first[i])
            found = [
                j
                for key, members in groups.items()
                if all(a & b for a, b in zip(mine, key, strict=True))
                for j in members
            ]
            found.sort()
            return found

        return meeting

    def redundant(self) -> list[Finding]:
        if "redundant" not in self._memo:
            self._memo["redundant"] = [
                finding for _, found in self.redundant_by_action().values() for finding in found
            ]
        return self._memo["redundant"]  # type: ignore[no-any-return]

    def redundant_by_action(self) -> dict[str, tuple[list[RuleInfo], list[Finding]]]:
        """Per action (in the order of its first rule that can hold), those rules in order and
        their redundant findings. After an edit of a few rules (`_Before`), the actions none
        of them had or has keep their rules, findings and list objects: the same rule objects
        in the same order are the same group, whose answer is the same."""
        found: dict[str, tuple[list[RuleInfo], list[Finding]]] | None = self._memo.get(
            "redundant by action"
        )
        if found is not None:
            return found
        before = self._before
        kept = before.kept.redundant if before is not None else None
        by_action: dict[str, list[RuleInfo]] = defaultdict(list)
        if kept is None or before is None:
            affected = None
            for rule in self.rules:
                if self.rule_status(rule).holds.sat:  # not dead: a dead rule's is unsat
                    by_action[rule.action].append(rule)
        else:
            affected = before.affected_actions
            for rule in self.rules:
                if rule.action in affected and self.rule_status(rule).holds.sat:
                    by_action[rule.action].append(rule)
            for action, (rules, _) in kept.items():
                if action not in affected:
                    by_action[action] = rules
            # The order a pass over the rules finds the actions in.
            by_action = dict(sorted(by_action.items(), key=lambda item: item[1][0].index))
        found = {}
        for action, rules in by_action.items():
            if affected is not None and kept is not None and action not in affected:
                found[action] = kept[action]
                continue
            # One answer per same-action group, by its rules' content in order: an edit to
            # one rule re-searches its own group only (the others come from the cache).
            key = ("redundant", tuple(rule_key(self, r) for r in rules))
            was = kept.get(action) if kept is not None else None
            pairs = self._cached(
                key,
                lambda rules=rules, was=was: (
                    self._redundant_group(rules)
                    if was is None
                    else self._redundant_group_after(rules, *was)
                ),
                _freeze_pairs,
            )
            found[action] = (
                rules,
                [Finding("redundant", (rules[i], rules[j]), o) for i, j, o in pairs],
            )
        self._memo["redundant by action"] = found
        return found

    def _redundant_group(self, rules: list[RuleInfo]) -> Any:
        """(position of a, position of b, outcome) for each redundant rule a of one group."""
        position = {rule.id: index for index, rule in enumerate(rules)}
        candidates = self._implication_candidates(rules)
        pairs: list[tuple[int, int, Outcome]] = []
        unknown = False
        for a in rules:
            first = self._first_redundant(a, candidates[a.id])
            if first is not None:
                b, outcome, undecided = first
                pairs.append((position[a.id], position[b.id], outcome))
                unknown = unknown or undecided
        return _Undecided(pairs) if unknown else pairs

    def _first_redundant(
        self, a: RuleInfo, asked: Iterable[RuleInfo]
    ) -> tuple[RuleInfo, Outcome, bool] | None:
        """The first rule b of ``asked`` that makes a redundant (a implies b, and b is before
        a or does not imply a), with the finding's outcome; or the first b whose implication
        the solver left undecided, with its outcome and True; None when no b of ``asked``
        decides. The one reading of redundancy, for a cold search and one after an edit."""
        for b in asked:
            forward = self.implies(a, b)
            if forward.unknown:
                return b, forward, True
            if not forward.unsat:
                continue
            if b.index < a.index or not self.implies(b, a).unsat:
                return b, self.rule_status(a).holds, False
        return None

    def _redundant_group_after(
        self, rules: list[RuleInfo], old_rules: list[RuleInfo], old_found: list[Finding]
    ) -> Any:
        """`_redundant_group(rules)`, from the same action's group before an edit
        (`old_rules`, whose search found `old_found` with no question left undecided): the
        rules both have are the same objects, so a question about two of them has the answer
        it had. A rule a's finding is the first b of its candidates (`_implication_candidates`,
        in rule order) that a implies and that is before a or does not imply a; every
        candidate before a's old b failed that, so only the rules the edit added are asked
        about, before a's old b, unless the edit removed that b (then a's candidates after it
        are asked about too), and an added rule's candidates all."""
        old = {id(rule) for rule in old_rules}
        now = {id(rule) for rule in rules}
        removed = old - now
        added = [rule for rule in rules if id(rule) not in old]
        answer = {id(f.rules[0]): f.rules[1] for f in old_found}
        position = {rule.id: index for index, rule in enumerate(rules)}
        narrowed: dict[str, frozenset[str]] = {}

        def narrows(rule: RuleInfo) -> frozenset[str]:
            hit = narrowed.get(rule.id)
            if hit is None:
                hit = narrowed[rule.id] = self._narrowed_vars(self.hull(self.holds[rule.id])[0])
            return hit

        def candidates(a: RuleInfo, among: list[RuleInfo]) -> Iterator[RuleInfo]:
            reads = self.holds[a.id].vars
            return (b for b in among if b is not a and narrows(b) <= reads)

        pairs: list[tuple[int, int, Outcome]] = []
        unknown = False
        for a in rules:
            if id(a) not in old:
                asked: Iterator[RuleInfo] = candidates(a, rules)
                last = None
            else:
                last = answer.get(id(a))
                if last is not None and id(last) in removed:
                    bound = last.index
                    asked = (b for b in candidates(a, rules) if b.index > bound or id(b) not in old)
                    last = None
                else:
                    asked = (
                        b for b in candidates(a, added) if last is None or b.index < last.index
                    )
            first = self._first_redundant(a, asked)
            if first is not None:
                b, outcome, undecided = first
                pairs.append((position[a.id], position[b.id], outcome))
                unknown = unknown or undecided
            elif last is not None:
                pairs.append((position[a.id], position[last.id], self.rule_status(a).holds))
        return _Undecided(pairs) if unknown else pairs

    def beats(self, high: RuleInfo, low: RuleInfo) -> bool:
        """Under priority selection, `high` wins over `low` when both are eligible."""
        return (high.priority, high.weight) > (low.priority, low.weight)

    def shadowed(self) -> list[Finding]:
        if "shadowed" in self._memo:
            return self._memo["shadowed"]
        found: list[Finding] = []
        if self.theory.selection != "priority":
            self._memo["shadowed"] = found
            return found
        live = [r for r in self.rules if self.rule_status(r).live]
        keys = {r.id: rule_key(self, r) for r in live}
        for rule, higher in zip(live, self._higher_meeting(live), strict=True):
            if not higher:
                continue
            # "cut": the shadowing set is chosen by cutting boxes; an on-disk answer kept by a
            # tree that named z3's core (same kind, same rules) must not be read as this one.
            key = ("shadow", "cut", keys[rule.id], tuple([keys[h.id] for h in higher]))
            result = self._cached(key, lambda rule=rule, higher=higher: self._shadow(rule, higher))
            if result is None:
                continue
            outcome, core = result
            found.append(Finding("shadowed", (rule, *(higher[i] for i in core)), outcome))
        self._memo["shadowed"] = found
        return found

    def _higher_meeting(self, live: list[RuleInfo]) -> list[list[RuleInfo]]:
        """For each rule of `live`, the rules of `live` (in order) that beat it and may be
        eligible in a state where it is: their eligibility hulls meet. Each rule's hull over
        the theory's cells (the masks of its eligible boxes, joined) is filed in one set of
        rules (an int's bits) per variable and cell, so a rule's meeting rules are a few
        ORs and ANDs of those sets, not a hull test against every other rule (a million at
        1,000 rules, the largest part of a keystroke's shadow work). A rule with linear
        atoms has no cell boxes: it is tested against every other rule's hull as before."""
        cell_hulls: list[dict[str, int] | None] = []
        for rule in live:
            boxes = self._eligible_boxes(rule)
            if boxes is None:
                cell_hulls.append(None)
                continue
            if not boxes:  # eligible nowhere: it meets no rule
                cell_hulls.append({var: 0 for var in self.domains})
                continue
            joined: dict[str, int] = dict(boxes[0])
            for box in boxes[1:]:
                joined = {v: m | box[v] for v, m in joined.items() if v in box}
            cell_hulls.append(joined)
        full = self._theory_cells()[1]
        cells_of: dict[str, list[int]] = {v: [0] * mask.bit_length() for v, mask in full.items()}
        free = dict.fromkeys(full, 0)  # rules whose hull leaves the variable whole
        boxed = 0
        for position, hull_masks in enumerate(cell_hulls):
            if hull_masks is None:
                continue
            bit = 1 << position
            boxed |= bit
            for var in full:
                if var not in hull_masks:
                    free[var] |= bit
                    continue
                mask = hull_masks[var]
                row = cells_of[var]
                while mask:
                    low = mask & -mask
                    row[low.bit_length() - 1] |= bit
                    mask ^= low
        # The rules that beat each one: a prefix of them ranked by (priority, weight).
        ranked = sorted(range(len(live)), key=lambda i: (live[i].priority, live[i].weight))
        above = [0] * len(live)
        beating = 0
        k = len(ranked)
        while k > 0:
            j = k
            level = (live[ranked[k - 1]].priority, live[ranked[k - 1]].weight)
            while j > 0 and (live[ranked[j - 1]].priority, live[ranked[j - 1]].weight) == level:
                j -= 1
            for i in ranked[j:k]:
                above[i] = beating
            for i in ranked[j:k]:
                beating |= 1 << i
            k = j
        out: list[list[RuleInfo]] = []
        for position, rule in enumerate(live):
            own = cell_hulls[position]
            hull_box = self.hull(self.eligible[rule.id])[0]
            if own is None:
                out.append(
                    [
                        h
                        for h in live
                        if h is not rule
                        and self.beats(h, rule)
                        and hull_box.intersects(self.hull(self.eligible[h.id])[0])
                    ]
                )
                continue
            meeting = above[position] & boxed
            for var, mask in own.items():
                if not mask:  # eligible nowhere
                    meeting = 0
                    break
                row = cells_of[var]
                reach = free[var]
                while mask:
                    low = mask & -mask
                    reach |= row[low.bit_length() - 1]
                    mask ^= low
                meeting &= reach
            found = [live[i] for i in _bits(meeting)]
            linear = above[position] & ~boxed
            if linear:  # a rule with linear atoms: by its hull
                found += [
                    live[i]
                    for i in _bits(linear)
                    if hull_box.intersects(self.hull(self.eligible[live[i].id])[0])
                ]
                found.sort(key=lambda r: r.index)
            out.append(found)
        return out

    def _shadow(
        self, rule: RuleInfo, higher: list[RuleInfo]
    ) -> tuple[Outcome, tuple[int, ...]] | None:
        """Whether the rules `higher` together are eligible wherever `rule` is, and a minimal
        set of them that is (positions in `higher`), with a state where `rule` and the first
        of them are eligible. Decided by cutting their cell boxes out of `rule`'s
        (`box_measure.covering_set`); z3 is asked (for an unsat core it shrinks) only where a
        condition has linear atoms or the pieces grow too many. The cells are the theory's
        (cut at every constant, `cuts`), so each rule's boxes are made once per check; the
        answer does not depend on the cells chosen, as long as every atom is constant on
        each of them. The formula form this replaced (`rule` and not each higher rule) grew
        to thousands of boxes at a few hundred higher rules, and z3's cores over hundreds of
        tracked rules were most of a priority theory's check."""
        point = self.eligible_point(rule)
        if point is not None and not any(F.evaluate(self.eligible[h.id], point) for h in higher):
            return None  # eligible there and nothing that beats it is: not shadowed
        base = [self.eligible[rule.id]]
        core = self._covering(rule, higher)
        if core is None:
            tracked = [F.not_(self.eligible[h.id]) for h in higher]
            outcome = self.decide(base, tracked, witness=False)
            if outcome.sat:
                return None
            if outcome.unknown:
                return outcome, ()
            core = self.minimal_core(base, tracked, outcome.core)
        elif not core:
            return None
        witness = self.decide([*base, *(self.eligible[higher[i].id] for i in core[:1])])
        return witness, core

    def _covering(self, rule: RuleInfo, higher: list[RuleInfo]) -> tuple[int, ...] | None:
        """`box_measure.covering_set` of `rule`'s eligible boxes by the rules `higher`
        (owners are positions in `higher`): `()` when not covered, None when boxes cannot
        tell (a linear atom, too many pieces)."""
        region = self._eligible_boxes(rule)
        if region is None:
            return None
        boxes = [self._eligible_boxes(h) for h in higher]  # each made once per check
        if any(found is None for found in boxes):
            return None
        owned = [
            (position, box)
            for position, found in enumerate(boxes)
            for box in found  # type: ignore[union-attr]
        ]
        return covering_set(region, owned, self._theory_cells()[1])

    def _theory_cells(self) -> tuple[dict[str, list[Any]], dict[str, int]]:
        """Each variable's cell representatives under the theory's cuts, and their full masks."""
        hit = self._memo.get("theory cells")
        if hit is None:
            cuts = self.cuts
            values = {
                var: [c.value for c in self._cells(var, cuts.get(var))] for var in self.domains
            }
            full = {var: (1 << len(found)) - 1 for var, found in values.items()}
            hit = self._memo["theory cells"] = (values, full)
        return hit  # type: ignore[no-any-return]

    def _eligible_boxes(self, rule: RuleInfo) -> list[CellBox] | None:
        """`rule`'s eligibility as boxes over the theory's cells (`_theory_cells`)."""
        memo: dict[str, list[CellBox] | None] = self._memo.setdefault("eligible boxes", {})
        found = memo.get(rule.id, _UNSET)
        if found is _UNSET:
            node = self.eligible[rule.id]
            values = self._theory_cells()[0]
            found = memo[rule.id] = cell_boxes(node, {var: values[var] for var in node.vars})
        return found  # type: ignore[no-any-return]

    def invariant_violations(self) -> list[Finding]:
        if "invariants" in self._memo:
            return self._memo["invariants"]
        by_action = self._live_by_action()
        found: list[tuple[int, Finding]] = []
        contents: dict[str, tuple[Any, ...]] = {}  # each action's, made once for all invariants
        for order, invariant in enumerate(self.theory.invariants):
            written = to_text(invariant.condition.expr)
            for action, rules in by_action.items():
                # One answer per invariant and action, by that action's live rules in order: an
                # edit re-asks about its own action's rules only, and the others' hulls are
                # not even built.
                if self.violations[(invariant.id, action)] is F.FALSE:
                    continue
                content = contents.get(action)
                if content is None:
                    content = contents[action] = tuple([rule_key(self, r) for r in rules])
                about = (invariant.id, invariant.kind, written, action, self._action_key(action))
                violated = self._cached(
                    ("invariant group", *about, content),
                    lambda about=about, rules=rules: self._invariant_group(about, rules),
                    _freeze_shown,
                )
                found += [
                    (order, Finding("invariant", (rules[i],), outcome, {"invariant": invariant}))
                    for i, _, outcome in violated
                ]
        found.sort(key=lambda item: (item[0], item[1].rules[0].index))
        self._memo["invariants"] = [finding for _, finding in found]
        return self._memo["invariants"]  # type: ignore[no-any-return]

    def _action_key(self, name: str) -> tuple[Any, ...]:
        """What an invariant reads of the selected action besides its name: an invariant's
        answer must change when an action's tags or priority do."""
        action = self.theory.actions[name]
        return (action.rung, action.priority, tuple(sorted(action.tags)))

    def _invariant_group(self, about: tuple[Any, ...], rules: list[RuleInfo]) -> Any:
        """(position of the rule, 0, outcome) for each of one action's live rules that may
        violate the invariant; `about` is (invariant id, kind, text, action, `_action_key`)."""
        pairs: list[tuple[int, int, Outcome]] = []
        unknown = False
        violation = self.violations[(about[0], about[3])]
        reach = self.hull(violation)[0]
        for index, rule in enumerate(rules):
            eligible = self.eligible[rule.id]
            if not self.hull(eligible)[0].intersects(reach):
                continue
            key = ("invariant", rule_key(self, rule), *about)
            outcome = self._cached(key, lambda e=eligible, v=violation: self.decide([e, v]))
            if not outcome.unsat:
                pairs.append((index, 0, outcome))
                unknown = unknown or outcome.unknown
        return _Undecided(pairs) if unknown else pairs

    def pieces_for_action(self, located: Located, action: ActionInfo) -> list[tuple[Span, Node]]:
        """Top-level conjuncts of an invariant condition, read with `action` selected."""
        expr = located.expr
        parts = expr.operands if isinstance(expr, ast.And) else (expr,)
        return [(located.node_span(p), self.translator.condition(p, action)) for p in parts]

    # -- coverage ----------------------------------------------------------------------------
    def coverage(self) -> tuple[float, bool]:
        """Share of the state space where some rule is eligible, and whether it is exact."""
        share, error = self.coverage_bounds()
        return share, error == 0

    def coverage_bounds(self) -> tuple[float, float]:
        """The covered share and a bound on its error (0.0 when exact, `compiler/measure.py`)."""
        if "coverage" not in self._memo:
            key = ("coverage", self.rule_keys())

            def compute() -> tuple[float, float]:
                measure = Measure(self.domains, [self.any_eligible], self._atoms)
                cells_of, boxes = self.eligible_cell_boxes() or ({}, None)
                if boxes is not None:
                    share = measure.share_of_boxes(self.any_eligible, cells_of, boxes)
                else:
                    share = measure.share(self.any_eligible)
                return share, float(measure.error)

            self._memo["coverage"] = self._cached(key, compute)
        return self._memo["coverage"]

    @property
    def eligible_cuts(self) -> dict[str, set[Fraction]]:
        """Where eligibility changes (`F.breakpoints` of `any_eligible`), read by the shared box
        form and the gap search alike: made once."""
        if "eligible cuts" not in self._memo:
            self._memo["eligible cuts"] = F.breakpoints_of(self._atoms(self.any_eligible))
        return self._memo["eligible cuts"]  # type: ignore[no-any-return]

    def _atoms(self, node: Node) -> list[Node]:
        """`F.atoms(node)`, walked once per analysis for "some rule is eligible" (the gap
        search's cuts and the coverage share's both read it). Where formulas are shared
        between checks (the language server, `encode.SHARING`), each rule's part of it is
        walked once per process: an edit walks the edited rule's, where walking every rule's
        twice was a twentieth of the server's re-check. The same atoms, in another order
        (their readers take a set of cuts and a count of reads)."""
        if node is not self.any_eligible:
            return F.atoms(node)
        if "eligible atoms" not in self._memo:
            if not encode.SHARING or node.kind != "or":
                found = F.atoms(node)
            else:
                if len(_ATOMS) > 200_000:
                    _ATOMS.clear()
                seen: dict[Node, None] = {}
                for part in node.children:
                    hit = _ATOMS.get(part)
                    if hit is None:
                        hit = _ATOMS[part] = F.atoms(part)
                    seen.update(dict.fromkeys(hit))
                found = list(seen)
            self._memo["eligible atoms"] = found
        return self._memo["eligible atoms"]  # type: ignore[no-any-return]

    def eligible_cell_boxes(self) -> tuple[dict[str, list[Cell]], list[CellBox] | None] | None:
        """Each variable's cells cut where eligibility changes (`F.breakpoints` of
        `any_eligible`, zero-share cells included) and `any_eligible` as boxes over them (None
        when there are too many), made once for the gap search (`regions._Grower`) and the
        coverage share (`Measure.share_of_boxes`): each made the same box form, a tenth of a
        one-rule edit's re-check at 5,000 rules. None with linear atoms (the gap search then
        splits their variables value by value)."""
        if "eligible cell boxes" not in self._memo:
            node = self.any_eligible
            made = None
            if not node.linear:
                cuts = self.eligible_cuts
                found = {var: cells(domain, cuts.get(var)) for var, domain in self.domains.items()}
                made = (found, _kept_union(self.domains).boxes(node, found))
            self._memo["eligible cell boxes"] = made
        return self._memo["eligible cell boxes"]  # type: ignore[no-any-return]

    def gaps(self) -> list[Any]:
        if "gaps" not in self._memo:
            from pedrag.compiler.regions import gap_regions

            key = ("gaps", self.rule_keys())
            self._memo["gaps"] = self._cached(key, lambda: gap_regions(self))
        return self._memo["gaps"]

    def facts(self) -> dict[str, Any]:
        share, error = self.coverage_bounds()
        facts: dict[str, Any] = {"coverage": share, "coverage_exact": error == 0}
        if error:
            facts["coverage_error"] = error  # |coverage - true share| <= this
        return facts


_ATOMS: dict[Node, list[Node]] = {}
"""Each rule's eligibility's atoms (`Analysis._atoms`), while formulas are shared."""


@dataclass
class _Kept:
    """What a finished analysis leaves for the analysis of its theory's next version in this
    process (`_Before`): the theory's parts the answers are made of, by identity, and the
    answers. Its dictionaries are never changed once kept (the next analysis copies them)."""

    theory: ResolvedTheory
    context_id: int
    holds: dict[str, Node]
    eligible: dict[str, Node]
    statuses: dict[str, RuleStatus]
    points: dict[str, dict[str, Any] | bytes | None]
    eligible_points: dict[str, dict[str, Any] | bytes]
    rule_keys: dict[str, tuple[str, int]]
    # Per action, its rules that can hold (in order) and their redundant findings; None when
    # the redundant-rule pass did not run.
    redundant: dict[str, tuple[list[RuleInfo], list[Finding]]] | None
    # Per action, its live rules in order; and each conflict group's rules and answer
    # (`Analysis._conflict_group`); None when no check read them.
    live_by_action: dict[str, list[RuleInfo]] | None
    conflict_groups: dict[tuple[Any, ...], tuple[Any, Any, Any]] | None
    hulls: dict[Node, tuple[Box, bool]]
    passes: dict[str, list[tuple[RuleInfo, list[Any]]]]
    all_rule_keys: tuple[tuple[str, int], ...] | None


def _same(old: list[RuleInfo] | None, new: list[RuleInfo] | None) -> bool:
    """The same rule objects in the same order (or both None)."""
    if old is None or new is None:
        return old is new
    return len(old) == len(new) and all(a is b for a, b in zip(old, new, strict=True))


_HULLS_CARRIED = 200_000
"""Hulls carried from one analysis to the next at most (each edit adds the edited rule's)."""


_KEPT: dict[tuple[str, str], _Kept] = {}
"""The last few finished analyses (`Analysis.keep`), by the theory's file and id, while
formulas are shared (the language server, the check server)."""

CARRIED_CHANGES = 16
"""At most this many rules replaced for an analysis to carry the others' answers over (a
one-rule edit replaces one; a front end made again replaces every rule)."""


class _Before:
    """The kept analysis of a theory's previous version, and which rules differ from it: the
    positions whose rule objects are not the same. Carried over only when everything else an
    answer reads is the same object (actions and their rungs, metrics, ceiling, invariants,
    selection), the context is the same, and the rules are as many: a one-value edit spliced
    into the previous front end (`pedrag.dsl.incremental`) keeps every other rule object, and
    a rule object is frozen, so a rule left alone has the answers it had."""

    def __init__(self, kept: _Kept, changed: list[int], theory: ResolvedTheory) -> None:
        self.kept = kept
        self.changed = changed
        old, new = kept.theory.rules, theory.rules
        self.changed_ids = {old[i].id for i in changed} | {new[i].id for i in changed}
        self.same_ids = all(old[i].id == new[i].id for i in changed)
        self.rules = new
        self.affected_actions = {old[i].action for i in changed} | {new[i].action for i in changed}

    def carried(self, kept: dict[str, Any], make: Callable[[RuleInfo], Any]) -> dict[str, Any]:
        """A per-rule dictionary in rule order: the kept value for each rule left alone, `make`'s
        for each replaced one."""
        if self.same_ids:  # the same keys in the same order: only the replaced values change
            out = dict(kept)
            for i in self.changed:
                out[self.rules[i].id] = make(self.rules[i])
            return out
        changed = self.changed_ids
        return {r.id: make(r) if r.id in changed else kept[r.id] for r in self.rules}

    def without_changed(self, kept: dict[str, Any]) -> dict[str, Any]:
        out = dict(kept)
        for rule_id in self.changed_ids:
            out.pop(rule_id, None)
        return out


def _before(analysis: Analysis) -> _Before | None:
    theory = analysis.theory
    kept = _KEPT.get((theory.file, theory.id))
    if kept is None:
        return None
    was = kept.theory
    if not (
        kept.context_id == analysis._context_id
        and was.actions is theory.actions
        and was.metrics is theory.metrics
        and was.invariants is theory.invariants
        and was.ceiling_steps is theory.ceiling_steps
        and was.ceiling_start == theory.ceiling_start
        and was.selection == theory.selection
        and len(was.rules) == len(theory.rules)
    ):
        return None
    changed = [
        i for i, (a, b) in enumerate(zip(was.rules, theory.rules, strict=True)) if a is not b
    ]
    if len(changed) > CARRIED_CHANGES or len(changed) == len(theory.rules):
        return None  # a front end made again: no rule is the same
    return _Before(kept, changed, theory)


_KEPT_UNIONS: dict[tuple[Any, ...], KeptUnion] = {}


def _kept_union(domains: dict[str, Any]) -> KeptUnion:
    """The box form of "some rule is eligible" kept for these domains (`KeptUnion`): the
    last few kinds of theory checked in this process, each reused by its next check."""
    key = tuple(domain.signature() for domain in domains.values())
    found = _KEPT_UNIONS.pop(key, None)
    if found is None:
        found = KeptUnion()
        while len(_KEPT_UNIONS) >= 4:
            _KEPT_UNIONS.pop(next(iter(_KEPT_UNIONS)))
    _KEPT_UNIONS[key] = found  # the most recent last
    return found


def _stored_key(key: tuple[Any, ...]) -> str:
    """The text an answer's key is stored under in a shard: its `repr`, or for a long one (a
    group's key names every rule in it) its kind and digest."""
    text = repr(key)
    if len(text) > 400:
        return f"{key[0]} {hashlib.sha256(text.encode('utf-8')).hexdigest()}"
    return text


def _bits(value: int) -> list[int]:
    """The positions of the set bits of `value`, ascending."""
    text = bin(value)[:1:-1]
    return [i for i, bit in enumerate(text) if bit == "1"]


class _Undecided(list):  # type: ignore[type-arg]
    """A group answer with a solver timeout in it: used, never cached (asked again next time)."""


def _freeze_pairs(pairs: list[tuple[int, int, Outcome]]) -> list[tuple[int, int, Outcome]]:
    # The findings are shown, so their witnesses are made now and stored with them.
    return [(i, j, Outcome(o.status, o.witness, o.core)) for i, j, o in pairs]


def _freeze_shown(pairs: list[tuple[int, int, Outcome]]) -> list[tuple[int, int, Outcome]]:
    # Conflicts show their witness and `pedrag why` reads the exact state: both are kept.
    return [(i, j, Outcome(o.status, o.witness, o.core, o.state)) for i, j, o in pairs]


def _freeze_status(entry: tuple[RuleStatus, Any, Any]) -> tuple[Any, ...]:
    """A rule status as plain data for the on-disk cache (a box's deferred witness is made
    again from its corner, which is the kept point)."""
    status, point, eligible_point = entry
    holds: Any = "box" if isinstance(status.holds, DeferredWitness) else _bare(status.holds)
    eligible: Any = "same" if status.eligible is status.holds else _bare(status.eligible)
    return holds, eligible, status.dead_core, _pack(point), _pack(eligible_point)


_BARE = {status: Outcome(status) for status in ("sat", "unsat")}
"""The answers without a witness, core or state, stored by their status alone and shared
when read back (`Analysis._thaw_status`): unpickling an `Outcome` for each of 5,000 statuses
was a third of reading them."""


def _bare(outcome: Outcome | None) -> Outcome | str | None:
    """`outcome` as stored: its status when it carries nothing else (`_BARE`)."""
    if (
        type(outcome) is Outcome
        and outcome.status in _BARE
        and outcome.witness is None
        and outcome.state is None
        and not outcome.core
    ):
        return outcome.status
    return outcome


def _pack(state: dict[str, Any] | bytes | None) -> bytes | None:
    """A known state as stored: pickled on its own, so reading a status builds none of its
    Fractions (`Analysis._known` unpacks it when a pair question reads it)."""
    if state is None or type(state) is bytes:
        return state
    return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)


def _unpack(state: dict[str, Any] | bytes) -> dict[str, Any]:
    if isinstance(state, bytes):
        return pickle.loads(state)  # type: ignore[no-any-return]
    return state


def present(value: Any, kind: str) -> Any:
    """A witness value as a designer reads it: whole numbers for ints, short decimals."""
    if kind == "int":
        return int(value)
    if kind == "real":
        # Witnesses are moved to short decimals first (`Analysis.tidy`), so the float's repr
        # is that decimal; never rounded here, or it could leave the region it witnesses.
        number = float(value)
        return int(number) if number.is_integer() else number
    return value


def _value(value: Any) -> Any:
    if isinstance(value, bool) or isinstance(value, str):
        return value
    return decimal_fraction(value)


def _nice_candidates(
    value: Fraction, low: Fraction, high: Fraction, cuts: list[Fraction]
) -> Iterator[Fraction]:
    """Short decimals in the same cell as `value` (same truth for every one-variable atom),
    with fewest digits first and, among those, nearest the cell's middle; `cuts` sorted.
    Made one at a time (`Analysis.tidy` stops at the first that keeps every formula's truth),
    and ordered in integers: k / 10^d is nearer the middle m = p / q than k' / 10^d exactly
    when |k q - p 10^d| is smaller."""
    at = bisect_left(cuts, value)
    if (at < len(cuts) and cuts[at] == value) or value in (low, high):
        return
    below = max(low, cuts[at - 1]) if at > 0 else low
    above = min(high, cuts[at]) if at < len(cuts) else high
    middle = (below + above) / 2
    p, q = middle.numerator, middle.denominator
    made = 0
    for digits in range(0, 4):
        scale = 10**digits
        first = floor(below * scale) + 1
        last = ceil(above * scale) - 1
        if not first <= last or last - first >= 50:
            continue
        for k in sorted(range(first, last + 1), key=lambda k: (abs(k * q - p * scale), k)):
            yield Fraction(k, scale)
        made += last - first + 1
        if made > 4:
            return


def _short_decimals(value: Fraction, low: Fraction, high: Fraction) -> Iterator[Fraction]:
    """Decimals near `value` with ever more digits, nearest first, within [low, high]; made
    one at a time, as `Analysis.tidy` stops at the first that keeps every formula's truth
    (building all 54 up front, with a list's equality test for repeats, was a quarter of a
    cold 5,000-rule check)."""
    seen: set[Fraction] = set()
    for digits in range(0, 18):
        scale = 10**digits
        nearest = round(value * scale)
        for k in (nearest, nearest - 1, nearest + 1):
            candidate = Fraction(k, scale)
            if low <= candidate <= high and candidate not in seen:
                seen.add(candidate)
                yield candidate


__all__ = ["Analysis", "Finding", "Outcome", "Piece", "RuleStatus", "cells", "present", "rung_name"]
