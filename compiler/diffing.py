"""Behavioural diff of two versions of a theory: where does the chosen action change?

Compiler stage helper for `pedrag diff`. Takes two resolved theories over the same metrics;
gives the rules that were added, removed, renamed or edited, and the regions of state space
where the action the runtime would choose — its selection distribution, for weighted
selection — differs: disjoint boxes merged into maximal ones, each with its exact share of
the state space, a witness state, the old and new choice there, and the rules whose
eligibility or action changes throughout the box.

Method. Rules are matched by id (a removed and an added rule with the same condition,
action, weight and priority are a rename). A matched rule whose action, weight and
priority are unchanged (and, under priority selection, whose place in the rule order is)
and whose eligibility formula is the same formula contributes identically to both versions,
so only states where some *other* rule is eligible can change: the search splits the state
space cell by cell (as `compiler/measure.py` does) on the variables of those changed rules
first, substituting into every rule's eligibility, and drops a box as soon as no changed
rule is left in it. A box is decided without splitting further when

- priority selection: the winning rule of both versions is known (the first eligible rule
  in (priority, weight, order) order, as `runtime/policy/compiled.py` picks it);
- weighted selection, with an *anchor* — an unchanged rule eligible throughout the box
  whose action no changed rule can choose (a catch-all rule is one): then the distributions
  are equal exactly where each action's total weight from the changed rules is equal in the
  two versions (the anchor's share must stay the same, so the totals are equal, so every
  action's weight is), and the box is decided once, for every action, that difference is
  known to be zero everywhere or known to be non-zero for some action;
- otherwise, when every rule's eligibility is known and the distributions are compared.

A search that outruns its time budget stops and marks the answer incomplete.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from pedrag.compiler import diff_boxes as B
from pedrag.compiler import formula as F
from pedrag.compiler.diff_boxes import Box
from pedrag.compiler.diff_cover import Cover
from pedrag.compiler.encode import Domain, Translator
from pedrag.compiler.formula import Node
from pedrag.dsl.ir import ResolvedTheory, RuleInfo
from pedrag.dsl.printer import to_text
from pedrag.kernel import selection as kernel_selection
from pedrag.kernel.errors import PedragError
from pedrag.kernel.exact import decimal_fraction
from pedrag.kernel.rungs import rung_name

TIME_BUDGET_S = 60.0
FALLBACK = "(fallback selector)"

# An outcome: the chosen action's probability per action (one action at 1 for priority
# selection), or {FALLBACK: 1} when no rule is eligible.
Outcome = dict[str, Fraction]


class DiffError(PedragError):
    pass


@dataclass(frozen=True)
class RuleChange:
    """One rule-level edit: added, removed, renamed, or which fields changed."""

    kind: str  # "added" | "removed" | "renamed" | "changed"
    rule: str
    details: tuple[str, ...] = ()  # for "changed": condition, action, weight, priority, order;
    # for "renamed": the old id


@dataclass
class Region:
    """A box of state space where the choice changes everywhere."""

    condition: str
    share: Fraction
    witness: dict[str, Any]
    old: Outcome  # at the witness
    new: Outcome  # at the witness
    uniform: bool  # the old and new outcomes are the same everywhere in the box
    no_longer_eligible: list[str] = field(default_factory=list)
    newly_eligible: list[str] = field(default_factory=list)
    edited_eligible: list[str] = field(default_factory=list)  # eligible in both, edited
    box: Box = field(default_factory=dict, repr=False)


@dataclass
class DiffResult:
    regions: list[Region]
    changed_share: Fraction
    complete: bool
    exact: bool
    listed_all: bool  # `regions` is every region, not just the largest
    rules: list[RuleChange]
    other_changes: list[str]
    seconds: float = 0.0

    approximate: list[str] = field(default_factory=list)  # variables sliced, not cut exactly
    # What the runtime does differently with the same choice: an action's tags, conflicts or
    # wording, a metric's default or writer (`runtime_changes`). The search proves nothing
    # about these; a review must still see them, and `--exit-code` counts them.
    runtime: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """A change was found (in some region)."""
        return bool(self.regions)

    @property
    def unchanged(self) -> bool:
        """No state changes, proved: the search was complete and exact and found nothing."""
        return not self.regions and self.complete and self.exact

    @property
    def verdict(self) -> str:
        """ "changed", "unchanged" (proved), or "not ruled out" (approximate or incomplete)."""
        if self.regions:
            return "changed"
        return "unchanged" if self.unchanged else "not ruled out"

    @property
    def same_behaviour(self) -> bool:
        """The same choice in every state (proved) and nothing changed in what the runtime does
        with a choice: `--exit-code`'s 0."""
        return self.unchanged and not self.runtime

    @property
    def unlisted_share(self) -> Fraction:
        return self.changed_share - sum((r.share for r in self.regions), Fraction(0))


# -- matching ------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Slot:
    """One rule as it is in the old and the new version (either may be missing)."""

    old: RuleInfo | None
    new: RuleInfo | None
    same_key: bool  # both present, same action, weight, priority (and place, for priority)


@dataclass(eq=False)
class _DDNode:
    """A node of the diff's decision diagram: a split on `var`, or a terminal."""

    var: str | None = None
    parts: list[B.Part] = field(default_factory=list)
    children: list[_DDNode] = field(default_factory=list)
    label: Any = None  # terminals: the (old, new) actions under priority selection
    changed: bool = False  # some state below changes
    share: Fraction = Fraction(0)  # of the states below (their variables), the changed share
    lookup: dict[int, int] = field(default_factory=dict)  # grid cell -> child
    full: tuple[Any] | None = None  # (label,) when every state below changes with that label


_SAME = _DDNode()


def _content(rule: RuleInfo) -> tuple[Any, ...]:
    return (to_text(rule.when.expr), rule.action, rule.weight, rule.priority)


def _longest_common(first: list[str], second: list[str]) -> set[str]:
    """The ids in a longest common subsequence of two orders (those kept in place)."""
    rows = [[0] * (len(second) + 1) for _ in range(len(first) + 1)]
    for i in range(len(first) - 1, -1, -1):
        for j in range(len(second) - 1, -1, -1):
            rows[i][j] = (
                rows[i + 1][j + 1] + 1
                if first[i] == second[j]
                else max(rows[i + 1][j], rows[i][j + 1])
            )
    kept: set[str] = set()
    i = j = 0
    while i < len(first) and j < len(second):
        if first[i] == second[j]:
            kept.add(first[i])
            i, j = i + 1, j + 1
        elif rows[i + 1][j] >= rows[i][j + 1]:
            i += 1
        else:
            j += 1
    return kept


def match_rules(
    old: ResolvedTheory, new: ResolvedTheory
) -> tuple[list[tuple[RuleInfo | None, RuleInfo | None]], list[RuleChange]]:
    """Pairs of (old rule, new rule) by id, renames paired by content; and the edits."""
    new_by_id = {r.id: r for r in new.rules}
    old_ids = {r.id for r in old.rules}
    pairs: list[tuple[RuleInfo | None, RuleInfo | None]] = []
    removed = [r for r in old.rules if r.id not in new_by_id]
    added = [r for r in new.rules if r.id not in old_ids]
    renamed: dict[str, RuleInfo] = {}
    unclaimed = list(added)
    for rule in removed:
        twin = next((a for a in unclaimed if _content(a) == _content(rule)), None)
        if twin is not None:
            unclaimed.remove(twin)
            renamed[rule.id] = twin
    changes: list[RuleChange] = []
    for rule in old.rules:
        partner = new_by_id.get(rule.id) or renamed.get(rule.id)
        pairs.append((rule, partner))
        if partner is None:
            changes.append(RuleChange("removed", rule.id))
        elif partner.id != rule.id:
            changes.append(RuleChange("renamed", partner.id, (rule.id,)))
    for rule in unclaimed:
        pairs.append((None, rule))
        changes.append(RuleChange("added", rule.id))
    return pairs, changes


# -- outcomes ------------------------------------------------------------------------------
def _mass(rule: RuleInfo) -> Fraction:
    return kernel_selection.rule_mass(decimal_fraction(rule.weight), rule.priority)


def _order_key(rule: RuleInfo) -> tuple[Any, ...]:
    return kernel_selection.priority_key(rule.priority, decimal_fraction(rule.weight), rule.index)


def _weighted_outcome(rules: list[RuleInfo]) -> Outcome:
    if not rules:
        return {FALLBACK: Fraction(1)}
    positions = list(range(len(rules)))
    shares = kernel_selection.weighted_shares(positions, [_mass(rule) for rule in rules])
    masses: Counter[str] = Counter()
    for position, share in shares.items():
        masses[rules[position].action] += share  # type: ignore[assignment]
    return {action: Fraction(share) for action, share in masses.items() if share}


def _priority_outcome(rules: list[RuleInfo]) -> Outcome:
    if not rules:
        return {FALLBACK: Fraction(1)}
    winner = kernel_selection.priority_winner(
        range(len(rules)), lambda i: rules[i].priority, lambda i: decimal_fraction(rules[i].weight)
    )
    return {rules[winner].action: Fraction(1)}


def outcome(theory: ResolvedTheory, eligible: list[RuleInfo]) -> Outcome:
    """The runtime's choice among the eligible rules (in rule order)."""
    if theory.selection == "priority":
        return _priority_outcome(eligible)
    return _weighted_outcome(eligible)


# -- the search ----------------------------------------------------------------------------
class _Search:
    def __init__(self, old: ResolvedTheory, new: ResolvedTheory, budget_s: float) -> None:
        self.old, self.new = old, new
        old_t, new_t = Translator(old), Translator(new)
        pairs, self.rule_changes = match_rules(old, new)
        moved: set[str] = set()
        if old.selection == new.selection == "priority":
            common = [(o.id, n.id) for o, n in pairs if o is not None and n is not None]
            old_order = [o for o, _ in common]
            new_by_old = {o: n for o, n in common}
            new_index = {r.id: r.index for r in new.rules}
            new_order = sorted(old_order, key=lambda o: new_index[new_by_old[o]])
            moved = set(old_order) - _longest_common(old_order, new_order)
        slots: list[_Slot] = []
        edited: list[RuleChange] = []
        for o, n in pairs:
            details: list[str] = []
            if o is not None and n is not None:
                if to_text(o.when.expr) != to_text(n.when.expr):
                    details.append("condition")
                for name in ("action", "weight", "priority"):
                    if getattr(o, name) != getattr(n, name):
                        details.append(name)
                if o.id in moved:
                    details.append("order")
                if details:
                    edited.append(RuleChange("changed", n.id, tuple(details)))
            same_key = (
                o is not None
                and n is not None
                and old.selection == new.selection
                and not ({"action", "weight", "priority", "order"} & set(details))
            )
            slots.append(_Slot(o, n, same_key))
        self.rule_changes = edited + self.rule_changes
        self.slots = slots
        self.old_nodes = [old_t.eligible(s.old) if s.old else F.FALSE for s in slots]
        self.new_nodes = [new_t.eligible(s.new) if s.new else F.FALSE for s in slots]
        domains: dict[str, Domain] = dict(old_t.domains)
        for name, domain in new_t.domains.items():
            if name in domains and domains[name].signature() != domain.signature():
                raise DiffError(
                    f"metric `{name}` has a different type or range in the two versions"
                )
            domains.setdefault(name, domain)
        self.domains = domains
        self.defaults: dict[str, Any] = {}
        for theory in (new, old):
            for name, metric in theory.metrics.items():
                self.defaults.setdefault(name, metric.default)
        self.rank = {var: index for index, var in enumerate(domains)}
        self.old_order = sorted(
            (i for i, s in enumerate(slots) if s.old),
            key=lambda i: _order_key(slots[i].old),  # type: ignore[arg-type]
        )
        self.new_order = sorted(
            (i for i, s in enumerate(slots) if s.new),
            key=lambda i: _order_key(slots[i].new),  # type: ignore[arg-type]
        )
        self.diagram: dict[tuple[int, ...], _DDNode] = {}
        self.terminals: dict[Any, _DDNode] = {}
        everything = [*self.old_nodes, *self.new_nodes]
        self.linear: set[str] = set()
        for node in everything:
            self.linear |= F.linear_vars(node)
        # The grid every region is drawn on: each variable cut at every constant it meets,
        # a linear atom's constants solved for each of its variables (see `B.linear_cuts`).
        all_cuts = B.reads(everything)
        solved, self.approximate = B.linear_cuts(everything, domains)
        self.grid: dict[str, list[B.Cell]] = {}
        for var, domain in domains.items():
            self.grid[var], _ = B.split_cells(
                domain,
                all_cuts.get(var, set()) | solved.get(var, set()),
                enumerate_all=(var in self.linear and var not in solved) or var in self.approximate,
            )
        self.complete = True
        self.exact = True
        self.deadline = time.perf_counter() + budget_s

    # -- deciding a box --------------------------------------------------------------------
    def _changed(self, olds: list[Node], news: list[Node]) -> list[int]:
        out = []
        for i, slot in enumerate(self.slots):
            o, n = olds[i], news[i]
            if o is F.FALSE and n is F.FALSE:
                continue
            if slot.same_key and o is n:
                continue
            out.append(i)
        return out

    def _winner(self, order: list[int], nodes: list[Node]) -> tuple[int | None, Node | None]:
        """The slot that wins under priority selection (-1: none eligible), or the first
        undecided eligibility in the way."""
        for i in order:
            node = nodes[i]
            if node is F.TRUE:
                return i, None
            if node is not F.FALSE:
                return None, node
        return -1, None

    def _exact(self, theory: ResolvedTheory, side: str, nodes: list[Node]) -> Outcome:
        rules = [
            getattr(slot, side)
            for slot, node in sorted(
                zip(self.slots, nodes, strict=True),
                key=lambda p: getattr(p[0], side).index if getattr(p[0], side) else -1,
            )
            if node is F.TRUE
        ]
        return outcome(theory, rules)

    def _delta_verdict(self, changed: list[int], olds: list[Node], news: list[Node]) -> str | None:
        """Under an anchor: "same" when every action's weight from the changed rules is equal
        in the two versions everywhere in the box, "differs" when some action's is different
        everywhere, None when that depends on the state."""
        terms: dict[str, list[tuple[Fraction, Node]]] = defaultdict(list)
        for i in changed:
            slot = self.slots[i]
            if slot.old is not None and olds[i] is not F.FALSE:
                terms[slot.old.action].append((_mass(slot.old), olds[i]))
            if slot.new is not None and news[i] is not F.FALSE:
                terms[slot.new.action].append((-_mass(slot.new), news[i]))
        undecided = False
        for parts in terms.values():
            fixed = sum((m for m, node in parts if node is F.TRUE), Fraction(0))
            sums = {fixed}
            for m, node in parts:
                if node is not F.TRUE:
                    sums |= {s + m for s in sums}
                    if len(sums) > 4096:
                        break
            if len(sums) > 4096:
                undecided = True
                continue
            if 0 not in sums:
                return "differs"
            if sums != {0}:
                undecided = True
        return None if undecided else "same"

    def _anchored(self, changed: list[int], olds: list[Node], news: list[Node]) -> bool:
        actions = set()
        for i in changed:
            slot = self.slots[i]
            if slot.old is not None and olds[i] is not F.FALSE:
                actions.add(slot.old.action)
            if slot.new is not None and news[i] is not F.FALSE:
                actions.add(slot.new.action)
        changed_set = set(changed)
        for i, slot in enumerate(self.slots):
            if i in changed_set or olds[i] is not F.TRUE or slot.old is None:
                continue
            if slot.old.action not in actions and _mass(slot.old) > 0:
                return True
        return False

    def decide(self, olds: list[Node], news: list[Node]) -> tuple[str, Any]:
        """("same", None), ("differs", label) or ("split", formulas to split on)."""
        changed = self._changed(olds, news)
        if not changed:
            return "same", None
        old_sel, new_sel = self.old.selection, self.new.selection
        if old_sel == new_sel == "priority":
            ow, oblock = self._winner(self.old_order, olds)
            nw, nblock = self._winner(self.new_order, news)
            if ow is not None and nw is not None:
                before = self.slots[ow].old.action if ow >= 0 else FALLBACK  # type: ignore[union-attr]
                after = self.slots[nw].new.action if nw >= 0 else FALLBACK  # type: ignore[union-attr]
                return ("same", None) if before == after else ("differs", (before, after))
            return "split", [b for b in (oblock, nblock) if b is not None]
        if old_sel == new_sel == "weighted" and self._anchored(changed, olds, news):
            verdict = self._delta_verdict(changed, olds, news)
            if verdict == "same":
                return "same", None
            if verdict == "differs":
                return "differs", None
            return "split", [
                n for i in changed for n in (olds[i], news[i]) if n is not F.TRUE and n.vars
            ]
        undecided = [n for n in (*olds, *news) if n.vars]
        if not undecided:
            before = self._exact(self.old, "old", olds)
            after = self._exact(self.new, "new", news)
            if before == after:
                return "same", None
            label = (
                None
                if "weighted" in (old_sel, new_sel)
                else (next(iter(before)), next(iter(after)))
            )
            return "differs", label
        preferred = [n for i in changed for n in (olds[i], news[i]) if n.vars]
        return "split", preferred or undecided

    # -- splitting ---------------------------------------------------------------------------
    def _pick(self, formulas: list[Node], live: list[Node]) -> str:
        counts: Counter[str] = Counter()
        for node in formulas:
            counts.update(node.vars)
        linear: set[str] = set()
        for node in live:
            linear |= F.linear_vars(node)

        # A real inside a multi-variable linear atom can only be sliced approximately:
        # split everything else first, so the atom usually becomes a one-variable one.
        def badness(var: str) -> tuple[Any, ...]:
            awkward = var in linear and var in self.approximate
            return (awkward, -counts[var], self.rank.get(var, 0))

        return min(counts, key=badness)

    def build(self, olds: list[Node], news: list[Node]) -> _DDNode:
        """The decision diagram of "does the choice change?" below these residuals, shared
        between every path that leaves the same residuals (so it stays small)."""
        key = (*map(id, olds), *map(id, news))
        hit = self.diagram.get(key)
        if hit is not None:
            return hit
        verdict, detail = self.decide(olds, news)
        if verdict == "same":
            node = _SAME
        elif verdict == "differs":
            node = self.terminals.setdefault(
                detail, _DDNode(label=detail, changed=True, share=Fraction(1), full=(detail,))
            )
        elif time.perf_counter() > self.deadline:
            self.complete = False
            node = _SAME
        else:
            live = [n for n in (*olds, *news) if n.vars]
            var = self._pick(detail, live)
            readers = [n for n in live if var in n.vars]
            domain = self.domains[var]
            if var in self.linear:
                cells = self.grid[var]
                self.exact &= var not in self.approximate
            else:
                cells, _ = B.split_cells(domain, B.reads(readers).get(var, set()), False)
            children = []
            for cell in cells:
                memo: dict[Node, Node] = {}
                children.append(
                    self.build(
                        [F.substitute(n, var, cell.value, memo) for n in olds],
                        [F.substitute(n, var, cell.value, memo) for n in news],
                    )
                )
            node = _DDNode(var=var, parts=[c.part for c in cells], children=children)
            node.share = sum(
                (
                    B.share({var: c.part}, self.domains) * child.share
                    for c, child in zip(cells, children, strict=True)
                ),
                Fraction(0),
            )
            node.changed = any(child.changed for child in children)
            fulls = {child.full for child in children}
            node.full = fulls.pop() if len(fulls) == 1 else None
        self.diagram[key] = node
        return node

    # -- reporting ---------------------------------------------------------------------------
    def at(self, state: dict[str, Any]) -> tuple[Outcome, Outcome]:
        olds = [F.const(F.evaluate(n, state)) for n in self.old_nodes]
        news = [F.const(F.evaluate(n, state)) for n in self.new_nodes]
        return self._exact(self.old, "old", olds), self._exact(self.new, "new", news)

    def region(self, box: Box, label: Any) -> Region:
        domains = self.domains
        state = B.witness(box, domains, self.defaults)
        before, after = self.at(state)
        if before == after:
            # Only on an approximate grid: the box's cells were judged at their middles.
            for var in self.approximate:
                cell = next(c for c in self.grid[var] if B.contains(c.part, state[var]))
                state[var] = cell.value
            before, after = self.at(state)
        shown = {
            var: B.present(value, domains[var].kind)
            for var, value in state.items()
            if var in box or var in self.old.metrics or var in self.new.metrics
        }
        region = Region(
            condition=B.describe(box, domains),
            share=B.share(box, domains),
            witness=shown,
            old=before,
            new=after,
            uniform=label is not None,
            box=box,
        )
        for i, slot in enumerate(self.slots):
            was = B.restrict(self.old_nodes[i], box, domains)
            now = B.restrict(self.new_nodes[i], box, domains)
            name = (slot.new or slot.old).id  # type: ignore[union-attr]
            if slot.same_key and self.old_nodes[i] is self.new_nodes[i]:
                continue
            if was and now is False:
                region.no_longer_eligible.append(name)
            elif was is False and now:
                region.newly_eligible.append(name)
            elif was and now and not slot.same_key:
                region.edited_eligible.append(name)
        return region


def _other_changes(old: ResolvedTheory, new: ResolvedTheory) -> list[str]:
    out: list[str] = []
    if old.selection != new.selection:
        out.append(f"selection: {old.selection} -> {new.selection}")
    for name in sorted(old.actions.keys() & new.actions.keys()):
        a, b = old.actions[name], new.actions[name]
        if a.rung != b.rung:
            out.append(f"action {name}: rung {rung_name(a.rung)} -> {rung_name(b.rung)}")
        if a.priority != b.priority:
            out.append(f"action {name}: priority {a.priority} -> {b.priority}")
    if old.ceiling_start != new.ceiling_start:
        out.append(
            f"ceiling start: {rung_name(old.ceiling_start)} -> {rung_name(new.ceiling_start)}"
        )

    def step_text(theory: ResolvedTheory) -> list[str]:
        return [
            f"{{when: {to_text(s.when.expr)!r}, {s.effect}: {rung_name(s.rung)}}}"
            for s in theory.ceiling_steps
        ]

    old_steps, new_steps = step_text(old), step_text(new)
    if old_steps != new_steps:
        for text in old_steps:
            if text not in new_steps:
                out.append(f"ceiling step removed: {text}")
        for text in new_steps:
            if text not in old_steps:
                out.append(f"ceiling step added: {text}")
        if sorted(old_steps) == sorted(new_steps):
            out.append("ceiling steps reordered")
    return out


def _set_change(label: str, old: frozenset[str] | tuple[str, ...], new: Any) -> str | None:
    gone, added = sorted(set(old) - set(new)), sorted(set(new) - set(old))
    if not gone and not added:
        return None
    return f"{label} " + ", ".join([*(f"+{t}" for t in added), *(f"-{t}" for t in gone)])


def runtime_changes(old: ResolvedTheory, new: ResolvedTheory) -> list[str]:
    """What the runtime does differently with the same choice, which no region can show: the
    actions added or removed, an action's tags (declared or derived from its wording: the
    runtime and the invariants read them), conflicts and wording (what the actor is told and
    the templated reply), and a metric's default, writer or history function."""
    out: list[str] = []
    for name in sorted(new.actions.keys() - old.actions.keys()):
        out.append(f"action added: {name}")
    for name in sorted(old.actions.keys() - new.actions.keys()):
        out.append(f"action removed: {name}")
    for name in sorted(old.actions.keys() & new.actions.keys()):
        a, b = old.actions[name], new.actions[name]
        details = [
            change
            for change in (
                _set_change("tags", a.tags, b.tags),
                _set_change("conflicts", a.conflicts, b.conflicts),
            )
            if change
        ]
        details.extend(
            f"{part} edited"
            for part in ("description", "guidance", "template", "variants")
            if getattr(a, part) != getattr(b, part)
        )
        if details:
            out.append(f"action {name}: {'; '.join(details)}")
    for name in sorted(new.metrics.keys() - old.metrics.keys()):
        out.append(f"metric added: {name} ({new.metrics[name].source})")
    for name in sorted(old.metrics.keys() - new.metrics.keys()):
        out.append(f"metric removed: {name} ({old.metrics[name].source})")
    for name in sorted(old.metrics.keys() & new.metrics.keys()):
        a_m, b_m = old.metrics[name], new.metrics[name]
        details = []
        if a_m.default != b_m.default:
            details.append(f"default {a_m.default} -> {b_m.default}")
        if a_m.writer != b_m.writer:
            details.append(
                "writer " + " -> ".join(_writer_text(w) for w in (a_m.writer, b_m.writer))
            )
        if (a_m.compute and to_text(a_m.compute)) != (b_m.compute and to_text(b_m.compute)):
            details.append("compute edited")
        if details:
            out.append(f"metric {name}: {'; '.join(details)}")
    return out


def _writer_text(writer: Any) -> str:
    if writer is None:
        return "none"
    if writer.kind in ("count", "set_on"):
        return f"{{{writer.kind}: {', '.join(writer.events)}}}"
    if writer.kind == "advance":
        return "{advance: " + ", ".join(f"{v}: {e}" for v, e in writer.advance) + "}"
    return str(writer.kind)


def diff(
    old: ResolvedTheory,
    new: ResolvedTheory,
    limit: int | None = None,
    budget_s: float = TIME_BUDGET_S,
) -> DiffResult:
    """Where the runtime's choice differs between `old` and `new`: the exact changed share
    and the `limit` largest regions (every region when None), largest first."""
    started = time.perf_counter()
    search = _Search(old, new, budget_s)
    root = search.build(search.old_nodes, search.new_nodes)
    cover = Cover(root, search.grid, search.domains)
    found, listed_all = cover.regions(limit, search.deadline)
    regions = [search.region(cover.to_box(box), label) for box, label in found]
    regions.sort(key=lambda r: (-r.share, r.condition))
    return DiffResult(
        regions=regions,
        changed_share=root.share,
        complete=search.complete,
        exact=search.exact and search.complete,
        listed_all=listed_all and search.complete and search.exact,
        rules=search.rule_changes,
        other_changes=_other_changes(old, new),
        runtime=runtime_changes(old, new),
        seconds=time.perf_counter() - started,
        approximate=[] if search.exact else sorted(search.approximate, key=search.rank.get),  # type: ignore[arg-type]
    )
