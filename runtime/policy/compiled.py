"""The compiled policy the runtime executes: load, match rules, compute the ceiling, select.

Runtime stage. Takes the JSON data `pedrag compile` writes (`pedrag.compiler.lower`) and gives
a `CompiledPolicy` whose matchers are generated Python, built once at load time
(`pedrag.runtime.policy.codegen`). Standard library only: the tutor runtime loads a policy without
z3, Lark or the front end, and the policy core reads no student text.

One turn uses it like this (DESIGN, "The runtime turn", stages 4 and 5)::

    turn = policy.prepare(history)            # computed metrics and history calls, once
    decision = policy.ceiling(trusted)        # trusted + classified metrics only
    eligible = policy.eligible(turn, decision.rung)
    chosen = policy.select(eligible, rng)     # None: the fallback selector chooses

Every method that takes `history` (metric snapshots, oldest first, the current turn last)
also takes the `Turn` that `prepare` returns, so the history work is done once per turn.
Missing metric keys take the metric's default.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pedrag.kernel import selection as kernel_selection
from pedrag.kernel.canonical import canonical_json, content_hash
from pedrag.kernel.ceiling import EFFECTS, StepApplied, apply_steps
from pedrag.kernel.rungs import RUNGS
from pedrag.kernel.selection import eligible_under
from pedrag.kernel.sources import CEILING_SOURCES, Writer
from pedrag.runtime.policy import codegen
from pedrag.runtime.policy.codegen import ComputedMetric, PolicyFormatError, SourceWriter

Value = int | float | bool | str
History = Sequence[Mapping[str, Value]]

FORMAT = 1

__all__ = [
    "ActionSpec",
    "CeilingDecision",
    "CompiledPolicy",
    "MetricSpec",
    "PolicyFormatError",
    "RuleSpec",
    "Turn",
    "Value",
    "canonical_json",
    "content_hash",
]


@dataclass(frozen=True)
class MetricSpec:
    name: str
    type: str  # int | float | bool | enum
    source: str  # trusted | classified | inferred | observed | computed
    low: float
    high: float
    values: tuple[str, ...]
    default: Value
    description: str = ""
    writer: Writer | None = None  # trusted metrics: the runtime events that write it

    def describe_domain(self) -> str:
        """The domain in the designer's terms: `a float in [0, 1]`, `one of calm, curious`."""
        if self.type == "bool":
            return "true or false"
        if self.type == "enum":
            return "one of " + ", ".join(self.values)
        return f"{'an' if self.type == 'int' else 'a'} {self.type} in [{self.low:g}, {self.high:g}]"


@dataclass(frozen=True)
class ActionSpec:
    name: str
    rung: int
    priority: int
    tags: frozenset[str]
    description: str
    guidance: str | None
    template: str | None
    conflicts: tuple[str, ...]
    variants: tuple[str, ...] = ()  # further wordings of the template (same rung, same move)
    # The tags in `tags` that only a wording gives, each with the placeholder that gives it
    # (`{"hint": "hint"}`), for a designer reading a decision (`pedrag why`); `tags` holds them.
    derived_tags: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class RuleSpec:
    id: str
    index: int
    action: str
    weight: float
    priority: int


@dataclass(frozen=True)
class CeilingStepSpec:
    index: int
    effect: str
    rung: int
    label: str  # the condition's text, or `runtime: <id>` for a runtime step
    runtime: str | None  # the runtime step's id (pedrag.kernel.ceiling.RUNTIME_STEPS)


@dataclass(frozen=True)
class CeilingDecision:
    """The ceiling and how it came about: every step that held, in order, as applied by
    `pedrag.kernel.ceiling` (the same function the compiler and `why` use)."""

    rung: int  # the final ceiling
    start: int
    trace: tuple[StepApplied, ...]  # `position` is the step's `index`

    @property
    def steps_applied(self) -> tuple[tuple[int, str, int], ...]:
        """(step index, effect, rung) of each step that held, in order."""
        return tuple((item.position, item.effect, item.rung) for item in self.trace)


@dataclass(frozen=True, slots=True)
class Turn:
    """The current turn's full state (every metric, computed ones filled in) and call values."""

    state: dict[str, Value]
    calls: tuple[Any, ...]


class CompiledPolicy:
    """A loaded compiled policy. Build with `from_json` or `load`."""

    theory_id: str
    theory_name: str
    selection: str
    content_hash: str
    metrics: dict[str, MetricSpec]
    actions: dict[str, ActionSpec]
    rules: tuple[RuleSpec, ...]
    escalate: dict[str, str]
    alternatives: dict[str, tuple[str, ...]]
    monitors: tuple[str, ...]
    switch_targets: tuple[str, ...]
    principles: tuple[tuple[str, str], ...]

    def __init__(self, data: Mapping[str, Any]) -> None:
        try:
            self._load(data)
        except PolicyFormatError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise PolicyFormatError(f"malformed compiled policy: {exc!r}") from exc

    # -- loading ---------------------------------------------------------------------------
    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CompiledPolicy:
        """Load policy data; raises `PolicyFormatError` on a wrong format or content hash."""
        if not isinstance(data, Mapping):
            raise PolicyFormatError("a compiled policy is a JSON object")
        if data.get("format") != FORMAT:
            raise PolicyFormatError(
                f"unsupported compiled-policy format {data.get('format')!r}; this pedrag reads {FORMAT}"
            )
        expected = content_hash(data)
        if data.get("content_hash") != expected:
            raise PolicyFormatError(
                "content hash mismatch: the policy was edited after compiling; recompile it"
            )
        return cls(data)

    @classmethod
    def load(cls, path: str | Path) -> CompiledPolicy:
        with open(path, encoding="utf-8") as handle:
            return cls.from_json(json.load(handle))

    def to_json(self) -> dict[str, Any]:
        return json.loads(self._json)  # type: ignore[no-any-return]

    def _load(self, data: Mapping[str, Any]) -> None:
        self._json = canonical_json(data)
        self.content_hash = str(data["content_hash"])
        theory = data["theory"]
        self.theory_id = str(theory["id"])
        self.theory_name = str(theory["name"])
        self.description = theory.get("description")
        self.principles = tuple((str(p[0]), str(p[1])) for p in theory.get("principles", ()))
        self.sources = tuple(str(s) for s in theory.get("sources", ()))
        self.selection = str(data["selection"])
        if self.selection not in ("weighted", "priority"):
            raise PolicyFormatError(f"unknown selection {self.selection!r}")
        metric_items = sorted(data["metrics"].items(), key=lambda item: item[1].get("order", 0))
        self.metrics = {
            name: MetricSpec(
                name,
                m["type"],
                m["source"],
                float(m["low"]),
                float(m["high"]),
                tuple(m["values"]),
                m["default"],
                str(m.get("description") or ""),
                Writer.from_json(m["writer"]) if m.get("writer") else None,
            )
            for name, m in metric_items
        }
        action_items = sorted(data["actions"].items(), key=lambda item: item[1].get("order", 0))
        self.actions = {
            name: ActionSpec(
                name,
                int(a["rung"]),
                int(a["priority"]),
                frozenset(a["tags"]),
                a["description"],
                a.get("guidance"),
                a.get("template"),
                tuple(a.get("conflicts", ())),
                tuple(a.get("variants", ())),
                tuple(dict(a.get("derived_tags", {})).items()),
            )
            for name, a in action_items
        }
        rules = data["rules"]
        self.rules = tuple(
            RuleSpec(r["id"], index, r["action"], float(r["weight"]), int(r["priority"]))
            for index, r in enumerate(rules)
        )
        for rule in self.rules:
            if rule.action not in self.actions:
                raise PolicyFormatError(f"rule {rule.id!r} names unknown action {rule.action!r}")
        self.rule_texts = tuple(str(r.get("text", "")) for r in rules)
        self.escalate = dict(data.get("escalate", {}))
        self.alternatives = {k: tuple(v) for k, v in data.get("alternatives", {}).items()}
        monitors = data.get("monitors", [])
        self.monitors = tuple(m["name"] for m in monitors)
        switches = data.get("switches", [])
        self.switch_targets = tuple(s["to"] for s in switches)
        ceiling = data["ceiling"]
        self.ceiling_start = int(ceiling["start"])
        steps = ceiling["steps"]
        self.ceiling_specs = tuple(
            CeilingStepSpec(
                int(s["index"]),
                str(s["effect"]),
                int(s["rung"]),
                str(s.get("label") or s.get("text", "")),
                s.get("runtime"),
            )
            for s in steps
        )
        self.ceiling_steps = tuple((s.index, s.effect, s.rung) for s in self.ceiling_specs)
        self.ceiling_texts = tuple(str(s.get("text", "")) for s in steps)
        for spec in self.ceiling_specs:
            if spec.effect not in EFFECTS:
                raise PolicyFormatError(f"unknown ceiling effect {spec.effect!r}")
        self._compile(data["metrics"], rules, monitors, switches, steps)

    def _compile(
        self,
        raw_metrics: Mapping[str, Any],
        rules: list[Any],
        monitors: list[Any],
        switches: list[Any],
        steps: list[Any],
    ) -> None:
        metrics = self.metrics
        self._defaults = {name: m.default for name, m in metrics.items()}
        types = {name: m.type for name, m in metrics.items()}
        values = {name: m.values for name, m in metrics.items()}
        calls = codegen.CallTable()
        writer = SourceWriter(self._defaults, calls)
        computed = [
            ComputedMetric(name, m.type, m.low, m.high, raw_metrics[name]["compute"])
            for name, m in metrics.items()
            if raw_metrics[name].get("compute") is not None
        ]
        conditions = (
            [r["when"] for r in rules]
            + [m["when"] for m in monitors]
            + [s["when"] for s in switches]
        )
        for tree in conditions:
            calls.collect(tree)
        self._history = codegen.build_history(computed, calls, writer)
        # What a preparation reads of the current row (history calls, computed formulas): a
        # change to any other metric leaves the calls and computed values as they were.
        self.preparation_reads = frozenset(
            name
            for tree in [*calls.trees, *(m.compute for m in computed)]
            for name in codegen.metrics_read(tree)
        )
        self.computed_names = frozenset(m.name for m in computed)
        self._rules = codegen.build_matcher(
            [r["when"] for r in rules], types, values, writer, "match_rules"
        )
        self._monitors = codegen.build_matcher(
            [m["when"] for m in monitors], types, values, writer, "match_monitors"
        )
        self._switches = codegen.build_matcher(
            [s["when"] for s in switches], types, values, writer, "match_switches"
        )
        # The ceiling reads trusted and classified metrics only (the trust boundary): its state
        # is built from those keys alone, whatever else the caller passes.
        self._ceiling_metrics = tuple(n for n, m in metrics.items() if m.source in CEILING_SOURCES)
        self._ceiling = codegen.build_matcher(
            [s["when"] for s in steps], types, values, writer, "match_ceiling"
        )
        for tree in (s["when"] for s in steps):
            unreadable = codegen.metrics_read(tree) - set(self._ceiling_metrics)
            if unreadable or codegen.has_calls(tree):
                raise PolicyFormatError(
                    f"a ceiling step reads {sorted(unreadable) or 'history'}: not trusted or classified"
                )
        # Eligibility under each ceiling H0..H7, as clause masks.
        rungs = [self.actions[r.action].rung for r in self.rules]
        self._under = tuple(
            self._rules.clause_mask(
                [i for i, rung in enumerate(rungs) if eligible_under(rung, ceiling)]
            )
            for ceiling in range(RUNGS)
        )
        self._straight = (
            codegen.build_straight_line(
                [r["when"] for r in rules],
                rungs,
                self._defaults,
                calls,
                RUNGS,
                {name: values[name] for name, kind in types.items() if kind == "enum"},
            )
            if len(rules) <= codegen.STRAIGHT_LINE_MAX
            else None
        )
        self._weights = tuple(kernel_selection.rule_mass(r.weight, r.priority) for r in self.rules)

    # -- the turn --------------------------------------------------------------------------
    def prepare(self, history: History | Turn) -> Turn:
        """The current turn's state and history calls, computed once; pass it to the methods below."""
        if isinstance(history, Turn):
            return history
        if not isinstance(history, list | tuple):
            history = list(history)
        current = history[-1] if history else {}
        state: dict[str, Value] = dict(self._defaults)
        state.update(current)
        keep = self._history.rows
        rows: list[Mapping[str, Value]] = [*history[-keep:-1], state] if keep > 1 else [state]
        calls = self._history.prepare(rows, state)
        return Turn(state, calls)

    def computed(self, history: History | Turn) -> dict[str, Value]:
        """The computed metrics' values for the current turn."""
        state = self.prepare(history).state
        return {name: state[name] for name, m in self.metrics.items() if m.source == "computed"}

    def state(self, history: History | Turn) -> dict[str, Value]:
        """Every metric's value in the current turn (defaults and computed values filled in)."""
        return dict(self.prepare(history).state)

    def matching(self, history: History | Turn) -> tuple[int, ...]:
        """Indices of the rules whose condition holds in the current state."""
        turn = self.prepare(history)
        return self._rules.decode(self._rules.match(turn.state, turn.calls))

    def eligible(self, history: History | Turn, ceiling: int) -> tuple[int, ...]:
        """Matching rules whose action's rung is at or below `ceiling`."""
        # The per-state path of a small theory is a microsecond: no call it can do without,
        # and the common case (a prepared turn, a ladder rung, straight-line code) goes first.
        turn = history if type(history) is Turn else self.prepare(history)
        straight = self._straight
        if straight is not None and 0 <= ceiling < RUNGS:
            return straight[ceiling](turn.state, turn.calls)  # type: ignore[no-any-return]
        if ceiling < 0:
            return ()
        if straight is not None:
            return straight[RUNGS - 1](turn.state, turn.calls)  # type: ignore[no-any-return]
        mask = self._rules.match(turn.state, turn.calls)
        if ceiling < RUNGS:
            mask &= self._under[ceiling]
        return self._rules.decode(mask)

    def ceiling(self, trusted: Mapping[str, Value]) -> CeilingDecision:
        """The help ceiling from trusted and classified metrics; steps apply in order."""
        state = dict(self._defaults)
        for name in self._ceiling_metrics:
            if name in trusted:
                state[name] = trusted[name]
        held = self._ceiling.decode(self._ceiling.match(state, ()))
        specs = self.ceiling_specs
        rung, trace = apply_steps(
            self.ceiling_start, ((specs[p].index, specs[p].effect, specs[p].rung) for p in held)
        )
        return CeilingDecision(rung, self.ceiling_start, trace)

    def probabilities(self, eligible: Sequence[int]) -> dict[int, float]:
        """Each eligible rule's chance of being selected."""
        if not eligible:
            return {}
        if self.selection == "priority":
            winner = self._priority_winner(eligible)
            return {index: 1.0 if index == winner else 0.0 for index in eligible}
        return kernel_selection.weighted_shares(eligible, self._weights)

    def select(self, eligible: Sequence[int], rng: random.Random) -> int | None:
        """One eligible rule (weighted: chance ∝ weight × priority), or None when none is eligible."""
        if not eligible:
            return None
        if self.selection == "priority":
            return self._priority_winner(eligible)
        return kernel_selection.weighted_pick(eligible, self._weights, rng.random())

    def _priority_winner(self, eligible: Sequence[int]) -> int:
        rules = self.rules
        return kernel_selection.priority_winner(
            eligible, lambda i: rules[i].priority, lambda i: rules[i].weight
        )

    def monitors_fired(self, history: History | Turn) -> tuple[str, ...]:
        turn = self.prepare(history)
        held = self._monitors.decode(self._monitors.match(turn.state, turn.calls))
        return tuple(self.monitors[i] for i in held)

    def switch_target(self, history: History | Turn) -> str | None:
        """The target theory of the first switch whose condition holds."""
        turn = self.prepare(history)
        mask = self._switches.match(turn.state, turn.calls)
        if not mask:
            return None
        held = self._switches.decode(mask)
        return self.switch_targets[held[0]]

    def __repr__(self) -> str:
        return f"<CompiledPolicy {self.theory_id} rules={len(self.rules)} hash={self.content_hash[:12]}>"
