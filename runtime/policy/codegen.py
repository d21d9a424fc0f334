"""Runtime code generation: compiled-policy expression trees -> Python functions, built once.

Takes the JSON expression trees of a compiled policy (see `pedrag.compiler.lower`) and gives
plain Python callables, generated as source and `exec`'d once at load time, the way template
engines compile templates. Standard library only: this module sits inside the runtime's trust
boundary and must not import z3, Lark or the front end.

Two kinds of function come out:

* `build_history`: one `prepare(rows, state)` function that fills in the computed metrics of the
  current turn and evaluates every distinct history call (`trend`, `mean`, `delta`, `count`,
  `streak`, whose values `pedrag.kernel.history` defines) exactly once per turn.
* `build_matcher`: for a list of conditions (the rules, the monitors, the switches, the ceiling
  steps), one `match(state, calls) -> int` whose set bits are the conditions that hold.

The matcher is a bitset machine. Each condition is put in disjunctive normal form over atoms;
each clause gets one bit. Atoms are shared across all conditions and each is evaluated at most
once per state. Atoms over one variable are folded into an *index*: a numeric metric's
thresholds cut its line into regions and the generated code finds the state's region with a
few comparisons (a binary search written out as `if`s), then clears, with one `&=`, the bits of
every clause some atom on that metric rules out; an enum metric does the same with one dict
lookup. So the cost grows with the number of metrics a theory reads, not with its rules.
Atoms that do not fit an index (arithmetic over two metrics, enum against enum) are evaluated
only while some clause that needs them is still alive.

Arithmetic is exact, as the compiler proves it: a comparison with arithmetic in it (lowering
leaves only those over two or more metrics) is evaluated in rationals, each number read as
the decimal it prints as (`pedrag.kernel.exact`), so `f + g <= 0.3` holds at f = 0.1, g = 0.2 here as in
the compiler's witness. Comparisons of one metric with a constant stay plain float compares.
"""

from __future__ import annotations

import bisect
import itertools
import json
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pedrag.kernel import history
from pedrag.kernel.errors import PedragError
from pedrag.kernel.exact import exact
from pedrag.kernel.rungs import rung_name
from pedrag.kernel.selection import eligible_under

Tree = list[Any]
Literal = tuple[int, bool]  # (atom id, required truth)
Clause = frozenset[Literal]

# A condition whose disjunctive normal form would exceed this many clauses is evaluated as
# one opaque atom instead: the index then cannot see inside it, but it is still evaluated once.
MAX_CLAUSES = 64

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_BINARY = {"add": "+", "sub": "-", "mul": "*"}


class PolicyFormatError(PedragError, ValueError):
    """A compiled policy's data is malformed (unknown node, wrong arity, ...)."""


_ARITHMETIC = ("add", "sub", "mul", "neg")


def has_arithmetic(tree: Tree) -> bool:
    return any(node[0] in _ARITHMETIC for node in _walk(tree))


# -- expression source ------------------------------------------------------------------------


def tree_key(tree: Tree) -> str:
    """A canonical string for a tree: equal trees, equal keys (used to share calls and atoms)."""
    return json.dumps(tree, separators=(",", ":"), sort_keys=True)


@dataclass
class CallTable:
    """Every distinct history call in a policy, numbered in the order first seen."""

    keys: dict[str, int] = field(default_factory=dict)
    trees: list[Tree] = field(default_factory=list)

    def index(self, tree: Tree) -> int:
        key = tree_key(tree)
        if key not in self.keys:
            # Nested calls (inside a count/streak condition) are numbered first.
            for node in _walk(tree)[1:]:
                if node[0] == "call":
                    self.index(node)
            self.keys[key] = len(self.trees)
            self.trees.append(tree)
        return self.keys[key]

    def collect(self, tree: Tree) -> None:
        for node in _walk(tree):
            if node[0] == "call":
                self.index(node)


def _walk(tree: Tree) -> list[Tree]:
    out = [tree]
    for child in _children(tree):
        out.extend(_walk(child))
    return out


def _children(tree: Tree) -> list[Tree]:
    kind = tree[0]
    if kind in ("number", "bool", "string", "rung", "metric", "enum", "action", "var"):
        return []
    if kind == "call":
        return list(tree[2])
    if kind in ("neg", "not"):
        return [tree[1]]
    if kind in ("add", "sub", "mul", "implies"):
        return [tree[1], tree[2]]
    if kind == "compare":
        return list(tree[2])
    if kind == "list":
        return list(tree[1])
    if kind == "in":
        return [tree[1], tree[2]]
    if kind in ("and", "or"):
        return list(tree[1])
    raise PolicyFormatError(f"unknown expression node {kind!r}")


def metrics_read(tree: Tree) -> set[str]:
    return {node[1] for node in _walk(tree) if node[0] == "metric"}


class SourceWriter:
    """Expression trees -> Python expression source.

    In the *state* context a metric is `s['name']` (the state holds every metric) and a call is
    `c[k]` (evaluated once per turn). In the *row* context, used inside `count`/`streak`, a
    metric is read from history row `R[i]` with its default, and a nested call is evaluated on
    the history up to that row.
    """

    def __init__(
        self,
        defaults: Mapping[str, Any],
        calls: CallTable,
        local: Mapping[str, str] | None = None,
    ) -> None:
        self.defaults = defaults
        self.calls = calls
        # `local`: metric -> the name of a local it was read into once, for straight-line code.
        self.local = local or {}

    def state(self, tree: Tree) -> str:
        return self._source(tree, row=False)

    def row(self, tree: Tree) -> str:
        return self._source(tree, row=True)

    def _source(self, tree: Tree, row: bool, rational: bool = False) -> str:
        """`rational`: inside a comparison with arithmetic, every number is read by `exact`."""
        kind = tree[0]
        go = self._source
        if kind in ("number", "bool", "string", "enum"):
            if rational and kind == "number":
                return f"_exact({tree[1]!r})"
            return repr(tree[1])
        if kind == "metric":
            name = tree[1]
            if name not in self.defaults:
                raise PolicyFormatError(f"condition reads undeclared metric {name!r}")
            if row:
                text = f"R[i].get({name!r}, {self.defaults[name]!r})"
            elif name in self.local:
                text = self.local[name]
            else:
                text = f"s[{name!r}]"
            return f"_exact({text})" if rational else text
        if kind == "call":
            k = self.calls.index(tree)
            text = f"_call{k}(R[:i + 1])" if row else f"c[{k}]"
            return f"_exact({text})" if rational else text
        if kind == "neg":
            return f"(-{go(tree[1], row, rational)})"
        if kind in _BINARY:
            return f"({go(tree[1], row, rational)} {_BINARY[kind]} {go(tree[2], row, rational)})"
        if kind == "compare":
            ops, operands = tree[1], tree[2]
            if len(operands) != len(ops) + 1 or any(op not in _FLIP for op in ops):
                raise PolicyFormatError(f"malformed comparison {tree!r}")
            exactly = any(has_arithmetic(operand) for operand in operands)
            parts = [go(operands[0], row, exactly)]
            for op, operand in zip(ops, operands[1:], strict=True):
                parts.append(f"{op} {go(operand, row, exactly)}")
            return "(" + " ".join(parts) + ")"
        if kind == "in":
            container = tree[2]
            if container[0] != "list":
                raise PolicyFormatError("`in` outside invariants takes a list")
            items = ", ".join(go(item, row) for item in container[1])
            keyword = "not in" if tree[3] else "in"
            return f"({go(tree[1], row)} {keyword} ({items},))"
        if kind == "not":
            return f"(not {go(tree[1], row)})"
        if kind in ("and", "or"):
            if not tree[1]:
                return "True" if kind == "and" else "False"
            return "(" + f" {kind} ".join(go(o, row) for o in tree[1]) + ")"
        if kind == "implies":
            return f"((not {go(tree[1], row)}) or {go(tree[2], row)})"
        raise PolicyFormatError(f"{kind!r} is not allowed in this condition")


# -- history: computed metrics and calls, once per turn -------------------------------------------


@dataclass(frozen=True)
class ComputedMetric:
    name: str
    type: str
    low: float
    high: float
    compute: Tree


def computation_order(computed: Sequence[ComputedMetric]) -> list[ComputedMetric]:
    """Computed metrics in dependency order; ties, and the members of a cycle, in declaration order."""
    names = {m.name for m in computed}
    needs = {m.name: metrics_read(m.compute) & names - {m.name} for m in computed}
    done: set[str] = set()
    order: list[ComputedMetric] = []
    remaining = list(computed)
    while remaining:
        ready = next((m for m in remaining if needs[m.name] <= done), remaining[0])
        order.append(ready)
        done.add(ready.name)
        remaining.remove(ready)
    return order


def rows_needed(tree: Tree) -> int:
    """History rows (current turn included) a call needs to give its full-history value."""
    func, args = tree[1], tree[2]
    nested = [rows_needed(node) for node in _walk(args[0]) if node[0] == "call"]
    return history.rows_needed(func, int(args[1][1]), max([1, *nested]))


def _call_source(tree: Tree, writer: SourceWriter, k: int) -> str:
    func, args = tree[1], tree[2]
    if len(args) != history.ARITY or args[1][0] != "number":
        raise PolicyFormatError(f"malformed history call {tree!r}")
    turns = int(args[1][1])
    if func not in history.FUNCTIONS:
        raise PolicyFormatError(f"unknown history function {func!r}")
    if not history.reads_condition(func):
        if args[0][0] != "metric":
            raise PolicyFormatError(f"`{func}` reads a metric, got {args[0]!r}")
        name = args[0][1]
        default = writer.defaults[name]
        return f"def _call{k}(R):\n    return _{func}(R, {name!r}, {default!r}, {turns})\n"
    condition = writer.row(args[0])
    return f"def _call{k}(R):\n    return _{func}(lambda R, i: {condition}, R, {turns})\n"


def _clamp_source(metric: ComputedMetric, value: str) -> str:
    if metric.type == "bool":
        return f"bool({value})"
    if metric.type == "int":
        return f"min(max({value}, {int(metric.low)!r}), {int(metric.high)!r})"
    if metric.type == "float":
        return f"min(max({value}, {metric.low!r}), {metric.high!r})"
    return value


_HELPERS: dict[str, Any] = {
    **{f"_{name}": function.value for name, function in history.FUNCTIONS.items()},
    "_exact": exact,
}


@dataclass(frozen=True)
class History:
    """The generated once-per-turn history step."""

    prepare: Callable[[list[Mapping[str, Any]], dict[str, Any]], tuple[Any, ...]]
    rows: int  # history rows to keep (current turn included)
    source: str


def build_history(
    computed: Sequence[ComputedMetric], calls: CallTable, writer: SourceWriter
) -> History:
    """`prepare(rows, state) -> calls`: fills computed metrics into `state` (the current row)."""
    for metric in computed:
        calls.collect(metric.compute)
    defs = [_call_source(tree, writer, k) for k, tree in enumerate(calls.trees)]
    body = [f"    c = [None] * {len(calls.trees)}"]
    emitted: set[int] = set()

    def emit(k: int) -> None:
        if k not in emitted:
            emitted.add(k)
            body.append(f"    c[{k}] = _call{k}(R)")

    for metric in computation_order(computed):
        for node in _walk(metric.compute):
            if node[0] == "call":
                emit(calls.index(node))
        body.append(
            f"    s[{metric.name!r}] = {_clamp_source(metric, writer.state(metric.compute))}"
        )
    for k in range(len(calls.trees)):
        emit(k)
    body.append("    return tuple(c)")
    source = "".join(defs) + "def prepare(R, s):\n" + "\n".join(body) + "\n"
    namespace: dict[str, Any] = dict(_HELPERS)
    exec(compile(source, "<pedrag history>", "exec"), namespace)  # noqa: S102 - our own generated source
    rows = max([1, *(rows_needed(tree) for tree in calls.trees)])
    return History(namespace["prepare"], rows, source)


# -- matching: conditions -> one bitset function ------------------------------------------------


@dataclass(frozen=True)
class Variable:
    """What an indexed atom reads: a metric (`s['name']`) or a history call (`c[k]`)."""

    kind: str  # "metric" | "call"
    name: str | int

    def source(self) -> str:
        return f"s[{self.name!r}]" if self.kind == "metric" else f"c[{self.name}]"


@dataclass(frozen=True)
class Threshold:
    """`variable op constant` over a number."""

    variable: Variable
    op: str
    constant: float | int


@dataclass(frozen=True)
class Member:
    """`metric in values` over an enum or bool metric."""

    variable: Variable
    values: frozenset[Any]


@dataclass(frozen=True)
class General:
    """Any other atom: a Python expression evaluated on its own."""

    source: str


Atom = Threshold | Member | General


class _TooBig(Exception):
    pass


@dataclass
class _Normaliser:
    """Conditions -> clauses over shared atoms."""

    metric_types: Mapping[str, str]
    metric_values: Mapping[str, tuple[Any, ...]]
    writer: SourceWriter
    atoms: list[Atom] = field(default_factory=list)
    index: dict[Atom, int] = field(default_factory=dict)

    def atom(self, atom: Atom) -> int:
        if atom not in self.index:
            self.index[atom] = len(self.atoms)
            self.atoms.append(atom)
        return self.index[atom]

    def clauses(self, tree: Tree) -> list[Clause]:
        try:
            return self._dnf(tree, True)
        except _TooBig:
            return [frozenset({(self.atom(General(self.writer.state(tree))), True)})]

    def _dnf(self, tree: Tree, positive: bool) -> list[Clause]:
        kind = tree[0]
        if kind == "not":
            return self._dnf(tree[1], not positive)
        if kind in ("and", "or"):
            parts = [self._dnf(o, positive) for o in tree[1]]
            conjunctive = (kind == "and") == positive
            return _product(parts) if conjunctive else _union(parts)
        if kind == "implies":
            left, right = self._dnf(tree[1], not positive), self._dnf(tree[2], positive)
            return _union([left, right]) if positive else _product([left, right])
        if kind == "compare" and len(tree[1]) > 1:
            pairs = [
                ["compare", [op], [tree[2][i], tree[2][i + 1]]] for i, op in enumerate(tree[1])
            ]
            parts = [self._dnf(p, positive) for p in pairs]
            return _product(parts) if positive else _union(parts)
        literal = self._literal(tree)
        if isinstance(literal, bool):
            return [frozenset()] if literal == positive else []
        atom_id, truth = literal
        return [frozenset({(atom_id, truth == positive)})]

    def _literal(self, tree: Tree) -> Literal | bool:
        """An atomic condition -> (atom, required truth), or a constant."""
        if not any(node[0] in ("metric", "call") for node in _walk(tree)):
            return bool(eval(self.writer.state(tree), {"__builtins__": {}, "_exact": exact}))  # noqa: S307 - constants only
        kind = tree[0]
        if kind == "metric" and self.metric_types.get(tree[1]) == "bool":
            return self.atom(Member(Variable("metric", tree[1]), frozenset({True}))), True
        if kind == "compare":
            op, (left, right) = tree[1][0], tree[2]
            found = self._threshold(left, op, right) or self._threshold(right, _FLIP[op], left)
            if found is not None:
                return self.atom(found), True
            member = self._member(left, right) or self._member(right, left)
            if member is not None and op in ("==", "!="):
                return self.atom(member), op == "=="
        if kind == "in" and tree[2][0] == "list" and tree[1][0] == "metric":
            name = tree[1][1]
            items = tree[2][1]
            if self.metric_types.get(name) in ("enum", "bool") and all(
                i[0] in ("enum", "bool") for i in items
            ):
                values = frozenset(i[1] for i in items)
                return self.atom(Member(Variable("metric", name), values)), not tree[3]
        return self.atom(General(self.writer.state(tree))), True

    def _threshold(self, variable: Tree, op: str, constant: Tree) -> Threshold | None:
        if op not in _FLIP or _has_variables(constant):
            return None
        if variable[0] == "metric" and self.metric_types.get(variable[1]) in ("int", "float"):
            target = Variable("metric", variable[1])
        elif variable[0] == "call":
            target = Variable("call", self.writer.calls.index(variable))
        else:
            return None
        value = eval(self.writer.state(constant), {"__builtins__": {}, "_exact": exact})  # noqa: S307 - constants only
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
            return None
        return Threshold(target, op, value)

    def _member(self, variable: Tree, constant: Tree) -> Member | None:
        if variable[0] != "metric" or self.metric_types.get(variable[1]) not in ("enum", "bool"):
            return None
        if constant[0] not in ("enum", "bool"):
            return None
        return Member(Variable("metric", variable[1]), frozenset({constant[1]}))


def has_calls(tree: Tree) -> bool:
    return any(node[0] == "call" for node in _walk(tree))


def _has_variables(tree: Tree) -> bool:
    return any(node[0] in ("metric", "call") for node in _walk(tree))


def _union(parts: list[list[Clause]]) -> list[Clause]:
    out: list[Clause] = []
    seen: set[Clause] = set()
    for part in parts:
        for clause in part:
            if clause not in seen:
                seen.add(clause)
                out.append(clause)
    if len(out) > MAX_CLAUSES:
        raise _TooBig
    return out


def _product(parts: list[list[Clause]]) -> list[Clause]:
    out: list[Clause] = [frozenset()]
    for part in parts:
        combined: list[Clause] = []
        seen: set[Clause] = set()
        for left in out:
            for right in part:
                clause = left | right
                if clause in seen or any((atom, not truth) in clause for atom, truth in clause):
                    continue
                seen.add(clause)
                combined.append(clause)
        if len(combined) > MAX_CLAUSES:
            raise _TooBig
        out = combined
    return out


def _truth(op: str, relation: int) -> bool:
    """Whether `x op c` holds when x is below (-1), at (0) or above (1) c."""
    return {
        "<": relation < 0,
        "<=": relation <= 0,
        ">": relation > 0,
        ">=": relation >= 0,
        "==": relation == 0,
        "!=": relation != 0,
    }[op]


# A condition's first LAYERS clauses get bits in layers of `count` bits each (clause p of condition
# i is bit p * count + i), so folding the layers onto layer 0 takes a few shifts; any further
# clauses (rare: conditions with more than LAYERS disjuncts) get bits above, with an owner list.
LAYERS = 4


@dataclass
class Matcher:
    """One compiled condition set: `match(state, calls)` -> bitset over clauses."""

    match: Callable[[Mapping[str, Any], tuple[Any, ...]], int]
    count: int  # conditions; bit i (i < count) is condition i's first clause
    layers: int  # clause layers in use (1 when every condition is one conjunction)
    overflow: tuple[int, ...]  # owning condition of each bit above the layers
    clause_bits: tuple[tuple[int, ...], ...]  # every clause bit of each condition
    everything: int  # all clause bits
    source: str
    atoms: int

    def __post_init__(self) -> None:
        self._low = (1 << self.count) - 1
        self._bits = BitDecoder(self.count)

    def clause_mask(self, conditions: Sequence[int]) -> int:
        """The clause bits that belong to the given conditions."""
        return sum(1 << bit for i in set(conditions) for bit in self.clause_bits[i])

    def decode(self, mask: int) -> tuple[int, ...]:
        """A clause bitset -> the indices of the conditions it holds, ascending."""
        count, low = self.count, self._low
        held = mask & low
        for layer in range(1, self.layers):
            held |= (mask >> (layer * count)) & low
        found = self._bits(held)
        if self.overflow:
            high = mask >> (self.layers * count)
            if high:
                extra = {self.overflow[bit] for bit in BitDecoder(high.bit_length())(high)}
                return tuple(sorted(extra.union(found)))
        return found


_HEX_DIGITS = bytes.maketrans(b"0123456789abcdef", bytes(range(16)))


class BitDecoder:
    """Positions of the set bits of masks below 2**width, ascending.

    Small masks: clear the lowest bit until none is left. Wide masks: one table per hex digit
    maps the digit to the bit positions it stands for, so the per-bit work happens in C
    (`format`, `translate`, `map`, `chain`) instead of in a Python loop over every bit.
    """

    def __init__(self, width: int) -> None:
        self.width = width
        self.digits = max(1, (width + 3) // 4)
        self.format = f"0{self.digits}x"
        self.tables: list[tuple[tuple[int, ...], ...]] = []
        if width > 128:
            self.tables = [
                tuple(tuple(4 * k + b for b in range(4) if value >> b & 1) for value in range(16))
                for k in range(self.digits)
            ]

    def __call__(self, mask: int) -> tuple[int, ...]:
        if not self.tables or mask.bit_length() <= 64:
            out = []
            while mask:
                lowest = mask & -mask
                out.append(lowest.bit_length() - 1)
                mask ^= lowest
            return tuple(out)
        digits = format(mask, self.format)[::-1].encode("ascii").translate(_HEX_DIGITS)
        return tuple(itertools.chain.from_iterable(map(operator.getitem, self.tables, digits)))


def build_matcher(
    conditions: Sequence[Tree],
    metric_types: Mapping[str, str],
    metric_values: Mapping[str, tuple[Any, ...]],
    writer: SourceWriter,
    name: str = "match",
) -> Matcher:
    normaliser = _Normaliser(metric_types, metric_values, writer)
    per_condition = [normaliser.clauses(tree) for tree in conditions]
    count_ = len(conditions)
    layers = max(1, min(LAYERS, max((len(c) for c in per_condition), default=1)))
    overflow: list[int] = []
    clause_bits: list[tuple[int, Clause]] = []
    bits_of: list[list[int]] = [[] for _ in per_condition]
    for index, clauses in enumerate(per_condition):
        for position, clause in enumerate(clauses):
            if position < layers:
                bit = position * count_ + index
            else:
                bit = layers * count_ + len(overflow)
                overflow.append(index)
            clause_bits.append((bit, clause))
            bits_of[index].append(bit)
    everything = 0
    need_true = [0] * len(normaliser.atoms)
    need_false = [0] * len(normaliser.atoms)
    for bit, clause in clause_bits:
        everything |= 1 << bit
        for atom_id, truth in clause:
            if truth:
                need_true[atom_id] |= 1 << bit
            else:
                need_false[atom_id] |= 1 << bit

    constants: dict[str, Any] = {}

    def constant(value: Any) -> str:
        key = f"K{len(constants)}"
        constants[key] = value
        return key

    def keep(atom_values: Mapping[int, bool]) -> int:
        """Clause bits not ruled out when the given atoms take the given truth values."""
        killed = 0
        for atom_id, value in atom_values.items():
            killed |= need_false[atom_id] if value else need_true[atom_id]
        return everything & ~killed

    lines = [f"def {name}(s, c):", "    alive = ALL"]
    # Indexed variables first: they are cheap and clear most bits.
    by_variable: dict[Variable, list[int]] = {}
    general: list[int] = []
    for atom_id, atom in enumerate(normaliser.atoms):
        if isinstance(atom, General):
            general.append(atom_id)
        else:
            by_variable.setdefault(atom.variable, []).append(atom_id)
    for variable, atom_ids in by_variable.items():
        atoms = [normaliser.atoms[a] for a in atom_ids]
        thresholds = [a for a in atoms if isinstance(a, Threshold)]
        members = [a for a in atoms if isinstance(a, Member)]
        if thresholds:
            lines.extend(_threshold_code(variable, atom_ids, thresholds, keep, constant))
        else:
            lines.extend(
                _member_code(
                    variable, atom_ids, members, metric_types, metric_values, keep, constant
                )
            )
    for atom_id in general:
        atom = normaliser.atoms[atom_id]
        assert isinstance(atom, General)
        used = need_true[atom_id] | need_false[atom_id]
        if_true, if_false = keep({atom_id: True}), keep({atom_id: False})
        lines.append(f"    if alive & {constant(used)}:")
        lines.append(f"        if {atom.source}:")
        lines.append(
            f"            alive &= {constant(if_true)}"
            if if_true != everything
            else "            pass"
        )
        if if_false != everything:
            lines.append("        else:")
            lines.append(f"            alive &= {constant(if_false)}")
    lines.append("    return alive")
    source = "\n".join(lines) + "\n"
    namespace: dict[str, Any] = {"ALL": everything, "_exact": exact, **constants}
    exec(compile(source, f"<pedrag {name}>", "exec"), namespace)  # noqa: S102 - our own generated source
    return Matcher(
        namespace[name],
        count_,
        layers,
        tuple(overflow),
        tuple(tuple(b) for b in bits_of),
        everything,
        source,
        len(normaliser.atoms),
    )


def _threshold_code(
    variable: Variable,
    atom_ids: list[int],
    atoms: list[Threshold],
    keep: Callable[[Mapping[int, bool]], int],
    constant: Callable[[Any], str],
) -> list[str]:
    cuts = sorted({a.constant for a in atoms})
    # Regions, left to right: below cuts[0], at cuts[0], between cuts[0] and cuts[1], ...
    regions: list[int] = []
    for position in range(2 * len(cuts) + 1):
        at = position // 2
        values: dict[int, bool] = {}
        for atom_id, atom in zip(atom_ids, atoms, strict=True):
            j = bisect.bisect_left(cuts, atom.constant)
            if position % 2:  # exactly at cuts[at]
                relation = (at > j) - (at < j)
            else:  # strictly between cuts[at - 1] and cuts[at]
                relation = -1 if j >= at else 1
            values[atom_id] = _truth(atom.op, relation)
        regions.append(keep(values))
    # Boundaries between regions: (test, constant) meaning "left of here iff x test constant".
    merged = [regions[0]]
    boundaries: list[tuple[str, Any]] = []
    for position in range(1, len(regions)):
        if regions[position] != merged[-1]:
            cut = cuts[(position - 1) // 2]
            boundaries.append(("<" if position % 2 else "<=", cut))
            merged.append(regions[position])
    if all(mask == merged[0] for mask in merged) and merged[0] == keep({}):
        return []
    lines = [f"    x = {variable.source()}"]

    def tree(low: int, high: int, indent: str) -> None:
        if low == high:
            mask = merged[low]
            lines.append(
                f"{indent}alive &= {constant(mask)}" if mask != keep({}) else f"{indent}pass"
            )
            return
        middle = (low + high) // 2
        test, cut = boundaries[middle]
        lines.append(f"{indent}if x {test} {cut!r}:")
        tree(low, middle, indent + "    ")
        lines.append(f"{indent}else:")
        tree(middle + 1, high, indent + "    ")

    tree(0, len(merged) - 1, "    ")
    return lines


def _member_code(
    variable: Variable,
    atom_ids: list[int],
    atoms: list[Member],
    metric_types: Mapping[str, str],
    metric_values: Mapping[str, tuple[Any, ...]],
    keep: Callable[[Mapping[int, bool]], int],
    constant: Callable[[Any], str],
) -> list[str]:
    name = variable.name
    assert isinstance(name, str)

    def mask_for(value: Any) -> int:
        return keep({a: value in atom.values for a, atom in zip(atom_ids, atoms, strict=True)})

    if metric_types[name] == "bool":
        when_true, when_false = mask_for(True), mask_for(False)
        return [
            f"    if {variable.source()}:",
            f"        alive &= {constant(when_true)}",
            "    else:",
            f"        alive &= {constant(when_false)}",
        ]
    table = {value: mask_for(value) for value in metric_values[name]}
    other = mask_for(_NoValue())
    return [f"    alive &= {constant(table)}.get({variable.source()}, {constant(other)})"]


class _NoValue:
    """A value outside every enum: equal to nothing, so every membership atom is false."""


STRAIGHT_LINE_MAX = 1024
"""Up to this many rules, eligibility is straight-line code per ceiling (see build_straight_line)."""


def build_straight_line(
    conditions: Sequence[Tree],
    rungs: Sequence[int],
    defaults: Mapping[str, Any],
    calls: CallTable,
    rung_count: int,
    enum_values: Mapping[str, Sequence[Any]] | None = None,
) -> list[Callable[[Mapping[str, Any], tuple[Any, ...]], tuple[int, ...]]]:
    """One function per ceiling H0..H(rung_count-1): the rules under that ceiling, in order.

    For a small rule set the bitset matcher's fixed cost (folding clause layers, decoding the
    bits) is more than evaluating the few conditions outright, so the compiler specialises
    eligibility on the ceiling instead: each function reads every metric it needs once into a
    local and tests only the rules whose rung the ceiling allows, returning their indices
    ascending, as `Matcher.decode` does. `benchmarks/matching.py` measures the crossover.

    It also specialises on the enum metric most conditions test (`enum_values`: each enum
    metric's values), as a template engine folds constants: one branch per value, in which
    every comparison of that metric with a constant is decided at compile time, so a rule that
    cannot hold for the value is not tested at all (the intent or affect label usually rules
    out most rules that name it). A value outside the declared ones takes the general branch.
    """
    functions: list[Callable[[Mapping[str, Any], tuple[Any, ...]], tuple[int, ...]]] = []
    values = dict(enum_values or {})

    def build(ceiling: int) -> Callable[[Mapping[str, Any], tuple[Any, ...]], tuple[int, ...]]:
        kept = {i: conditions[i] for i, rung in enumerate(rungs) if eligible_under(rung, ceiling)}
        lines = [f"def eligible_h{ceiling}(s, c):", "    out = []", "    add = out.append"]
        lines += _straight_code(kept, defaults, calls, values, "    ")
        lines.append("    return tuple(out)")
        namespace: dict[str, Any] = {"_exact": exact}
        source = "\n".join(lines) + "\n"
        exec(compile(source, f"<pedrag eligible {rung_name(ceiling)}>", "exec"), namespace)  # noqa: S102 - our own generated source
        return namespace[f"eligible_h{ceiling}"]  # type: ignore[no-any-return]

    def first_use(ceiling: int) -> Callable[[Mapping[str, Any], tuple[Any, ...]], tuple[int, ...]]:
        # Generated when a ceiling is first asked for (a deployment meets few of them), then
        # put in the list in the stub's place, so later calls go straight to it. Two threads
        # building the same function at once build equal functions: no lock is needed.
        def stub(s: Mapping[str, Any], c: tuple[Any, ...]) -> tuple[int, ...]:
            built = build(ceiling)
            functions[ceiling] = built
            return built(s, c)

        return stub

    functions.extend(first_use(ceiling) for ceiling in range(rung_count))
    return functions


SPLIT_DEPTH = 1
"""How many enum metrics straight-line eligibility branches on, one inside the other."""


def _straight_code(
    conditions: Mapping[int, Tree | bool],
    defaults: Mapping[str, Any],
    calls: CallTable,
    enum_values: dict[str, Sequence[Any]],
    indent: str,
    depth: int = SPLIT_DEPTH,
) -> list[str]:
    """Straight-line tests of `conditions`, branched on up to `depth` enum metrics."""
    trees = [tree for tree in conditions.values() if not isinstance(tree, bool)]
    split = _split_metric(trees, enum_values) if depth > 0 else None
    if split is None:
        return _straight_body(conditions, defaults, calls, indent)
    rest = {name: values for name, values in enum_values.items() if name != split}
    lines = [f"{indent}v{depth} = s[{split!r}]"]
    keyword = "if"
    for value in enum_values[split]:
        lines.append(f"{indent}{keyword} v{depth} == {value!r}:")
        keyword = "elif"
        specialised = {
            i: tree if isinstance(tree, bool) else _specialise(tree, split, value)
            for i, tree in conditions.items()
        }
        lines += _straight_code(specialised, defaults, calls, rest, indent + "    ", depth - 1)
    lines.append(f"{indent}else:")  # a value outside the declared ones
    lines += _straight_body(conditions, defaults, calls, indent + "    ")
    return lines


def _straight_body(
    conditions: Mapping[int, Tree | bool],
    defaults: Mapping[str, Any],
    calls: CallTable,
    indent: str,
) -> list[str]:
    """Straight-line tests of `conditions` (index -> tree, or a truth decided at compile time),
    every metric they read first read once into a local."""
    trees = {i: tree for i, tree in conditions.items() if not isinstance(tree, bool)}
    read = sorted({m for tree in trees.values() for m in metrics_read(tree)})
    local = {name: f"m{k}" for k, name in enumerate(read)}
    writer = SourceWriter(defaults, calls, local)
    lines = [f"{indent}{local[name]} = s[{name!r}]" for name in read]
    for i, tree in conditions.items():
        if tree is True:
            lines.append(f"{indent}add({i})")
        elif tree is not False:
            lines += [f"{indent}if {writer.state(tree)}:", f"{indent}    add({i})"]
    return lines or [f"{indent}pass"]


_CONSTANTS = ("enum", "string", "bool")


def _fixed(tree: Tree, name: str) -> tuple[str, list[Any]] | None:
    """(op, constants) when `tree` compares metric `name` with constants by ==, != or `in`."""
    kind = tree[0]
    if kind == "compare" and len(tree[1]) == 1 and tree[1][0] in ("==", "!="):
        left, right = tree[2]
        if left[0] == "metric" and left[1] == name and right[0] in _CONSTANTS:
            return tree[1][0], [right[1]]
        if right[0] == "metric" and right[1] == name and left[0] in _CONSTANTS:
            return tree[1][0], [left[1]]
    if kind == "in" and tree[1][0] == "metric" and tree[1][1] == name and tree[2][0] == "list":
        items = tree[2][1]
        if all(item[0] in _CONSTANTS for item in items):
            return ("not in" if tree[3] else "in"), [item[1] for item in items]
    return None


def _specialise(tree: Tree, name: str, value: Any) -> Tree | bool:
    """`tree` with metric `name` known to equal `value`: decided comparisons folded away."""
    fixed = _fixed(tree, name)
    if fixed is not None:
        op, constants = fixed
        return (value in constants) == (op in ("==", "in"))
    kind = tree[0]
    if kind == "not":
        inner = _specialise(tree[1], name, value)
        return (not inner) if isinstance(inner, bool) else ["not", inner]
    if kind in ("and", "or"):
        deciding = kind == "or"  # the truth that decides the whole: True for `or`
        parts: list[Tree] = []
        for operand in tree[1]:
            part = _specialise(operand, name, value)
            if isinstance(part, bool):
                if part is deciding:
                    return deciding
                continue
            parts.append(part)
        if not parts:
            return not deciding
        return parts[0] if len(parts) == 1 else [kind, parts]
    return tree


def _split_metric(
    conditions: Sequence[Tree], enum_values: Mapping[str, Sequence[Any]]
) -> str | None:
    """The enum metric the most conditions compare with constants, if any does."""
    uses: dict[str, int] = {}
    for tree in conditions:
        named = {n for n in enum_values for node in _walk(tree) if _fixed(node, n) is not None}
        for n in named:
            uses[n] = uses.get(n, 0) + 1
    if not uses:
        return None
    return max(sorted(uses), key=lambda n: uses[n])


def generate_naive(
    conditions: Sequence[Tree], writer: SourceWriter
) -> Callable[[Mapping[str, Any], tuple[Any, ...]], list[int]]:
    """One plain function that evaluates every condition in turn (the benchmark's baseline)."""
    lines = ["def naive(s, c):", "    out = []"]
    for index, tree in enumerate(conditions):
        lines.append(f"    if {writer.state(tree)}:")
        lines.append(f"        out.append({index})")
    lines.append("    return out")
    namespace: dict[str, Any] = {"_exact": exact}
    exec(compile("\n".join(lines) + "\n", "<pedrag naive>", "exec"), namespace)  # noqa: S102
    return namespace["naive"]  # type: ignore[no-any-return]
