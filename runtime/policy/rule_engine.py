"""Stage 5, the rule engine: compiled rules -> eligible rules under the ceiling -> one action.

Takes the metric history (current snapshot last, computed metrics filled in), the contract,
the session's seeded RNG and any adaptation plan from the behavioural monitor; gives a
:class:`Choice` — the action, the rule that chose it (or the fallback selector), the matched
and eligible rules with their probabilities, and a one-line reason for the audit.

Selection (DESIGN): ``weighted`` picks with probability proportional to weight x priority
from a per-session seeded RNG; ``priority`` takes the highest. With no eligible rule, the
fallback selector chooses among actions under the ceiling: the LLM ``selector`` role when a
model is configured, else :func:`offline_select`. The selector sees metrics and action ids,
never the student's message, and its answer is checked against the ceiling either way.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pedrag.kernel.ceiling import runtime_step
from pedrag.kernel.rungs import rung_name
from pedrag.kernel.selection import eligible_under
from pedrag.kernel.sources import DISTRESS_METRIC, DISTRESS_THRESHOLD, INTENT_METRIC
from pedrag.runtime.llm.interface import LLMBackend, LLMError, LLMRequest, parse_structured
from pedrag.runtime.policy.policy_core import ADVERSARIAL_INTENTS, EXAM_LOCKDOWN, Contract


@dataclass(frozen=True)
class Choice:
    action: str
    rung: int
    rule_id: str | None
    reason: str
    matched: tuple[str, ...] = ()
    eligible: tuple[str, ...] = ()
    probabilities: Mapping[str, float] = field(default_factory=dict)
    fallback_selector: bool = False
    adapted_from: str | None = None
    failure: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "rung": rung_name(self.rung),
            "rule": self.rule_id,
            "reason": self.reason,
            "matched": list(self.matched),
            "eligible": list(self.eligible),
            "probabilities": {key: round(value, 4) for key, value in self.probabilities.items()},
            "fallback_selector": self.fallback_selector,
            "adapted_from": self.adapted_from,
            "failure": self.failure,
        }


def offline_select(allowed: Sequence[Mapping[str, Any]], metrics: Mapping[str, Any]) -> str | None:
    """Deterministic fallback: the action under the ceiling that best fits the learner's state
    (affect support for a frustrated learner, withholding for an adversarial turn, otherwise
    the highest-priority probing action)."""
    if not allowed:
        return None
    wanted: tuple[str, ...] = ("probe", "hint", "clarify")
    # The names are the kernel's (the analyzer's distress estimate, the exam lockdown's metric,
    # the classified intent), so a theory's own declarations are what this reads.
    if float(metrics.get(DISTRESS_METRIC, 0) or 0) >= DISTRESS_THRESHOLD:
        wanted = ("affect_support",)
    elif metrics.get(runtime_step(EXAM_LOCKDOWN).metric) is True:
        wanted = ("exam",)
    elif metrics.get(INTENT_METRIC) in ADVERSARIAL_INTENTS:
        wanted = ("withhold", "conduct")

    def score(item: Mapping[str, Any]) -> tuple[int, int, int, str]:
        tags = set(item.get("tags", ()))
        return (
            int(bool(tags.intersection(wanted))),
            int(item.get("priority", 0)),
            int(item.get("rung", 0)),
            item["id"],
        )

    return str(max(allowed, key=score)["id"])


SELECTOR_PROMPT = """\
You choose the next teaching action for a tutor that follows the theory "{theory}". Choose
exactly one action id from the allowed list, the one that best fits the learner's metrics.
Reply with one JSON object: {{"action": "<id>"}}."""


class RuleEngine:
    """Stage 5 over one compiled policy. Holds nothing per request, so one engine serves
    concurrent turns; the fallback selector is passed to each `choose` call."""

    def __init__(self, policy: Any, actions: Mapping[str, Any] | None = None) -> None:
        self.policy = policy
        self.actions = actions if actions is not None else policy.actions
        self.rules = tuple(policy.rules)
        self._rule_by_id = {rule.id: index for index, rule in enumerate(self.rules)}

    def _index(self, item: Any) -> int:
        if isinstance(item, int):
            return item
        if hasattr(item, "index"):
            return int(item.index)
        return self._rule_by_id[item.id if hasattr(item, "id") else str(item)]

    def choose(
        self,
        history: Any,
        contract: Contract,
        rng: random.Random,
        plan: Mapping[str, Any] | None = None,
        selector: LLMBackend | None = None,
    ) -> Choice:
        """One action for the turn; ``selector`` (the LLM selector role, or None for the
        offline selector) chooses only when no rule is eligible."""
        matched = [self._index(item) for item in self.policy.matching(history)]
        eligible_raw = list(self.policy.eligible(history, contract.ceiling))
        eligible = [self._index(item) for item in eligible_raw]
        # The engine re-checks the ceiling itself: a wrong policy can never widen it.
        eligible = [
            i
            for i in eligible
            if eligible_under(self._rung(self.rules[i].action), contract.ceiling)
        ]
        chances = _probabilities(self.policy, eligible_raw, eligible, self._index)
        matched_ids = tuple(self.rules[i].id for i in matched)
        eligible_ids = tuple(self.rules[i].id for i in eligible)
        probabilities = {self.rules[i].id: chances.get(i, 0.0) for i in eligible}
        picked = self.policy.select(eligible, rng) if eligible else None
        if picked is not None:
            index = self._index(picked)
            rule = self.rules[index]
            choice = Choice(
                action=rule.action,
                rung=self._rung(rule.action),
                rule_id=rule.id,
                reason=(
                    f"rule {rule.id} chosen from {len(eligible)} eligible "
                    f"(p={probabilities.get(rule.id, 1.0):.2f}, {self.policy.selection} selection)"
                ),
                matched=matched_ids,
                eligible=eligible_ids,
                probabilities=probabilities,
            )
        else:
            current = self.policy.state(history) if hasattr(self.policy, "state") else history[-1]
            choice = self._fallback(current, contract, matched_ids, selector)
        return self._adapt(choice, contract, plan)

    def _rung(self, action: str) -> int:
        return int(self.actions[action].rung)

    def allowed_actions(self, contract: Contract) -> list[dict[str, Any]]:
        return [
            {
                "id": name,
                "rung": int(info.rung),
                "priority": int(info.priority),
                "tags": sorted(info.tags),
                "description": info.description,
            }
            for name, info in self.actions.items()
            if eligible_under(int(info.rung), contract.ceiling)
        ]

    def _fallback(
        self,
        metrics: Mapping[str, Any],
        contract: Contract,
        matched: tuple[str, ...],
        selector: LLMBackend | None,
    ) -> Choice:
        allowed = self.allowed_actions(contract)
        allowed_ids = {item["id"] for item in allowed}
        failure = None
        action: str | None = None
        via = "offline selector"
        if selector is not None:
            try:
                action = self._ask_selector(selector, allowed, metrics)
                via = "selector model"
            except LLMError as error:
                failure = f"{type(error).__name__}: {error}"
            if action not in allowed_ids:
                if action is not None:
                    failure = f"selector chose {action!r}, not under the ceiling"
                action = None
        if action is None:
            action = offline_select(allowed, metrics)
            via = "offline selector"
        if action is None:  # no action at or below the ceiling at all: the lowest rung
            action = min(self.actions, key=lambda name: (self._rung(name), name))
        return Choice(
            action=action,
            rung=self._rung(action),
            rule_id=None,
            reason=f"no eligible rule; {via} chose among {len(allowed)} actions under {rung_name(contract.ceiling)}",
            matched=matched,
            fallback_selector=True,
            failure=failure,
        )

    def _ask_selector(
        self, selector: LLMBackend, allowed: list[dict[str, Any]], metrics: Mapping[str, Any]
    ) -> str:
        schema = {
            "type": "object",
            "properties": {"action": {"type": "string", "enum": [item["id"] for item in allowed]}},
            "required": ["action"],
            "additionalProperties": False,
        }
        payload = json.dumps({"allowed": allowed, "metrics": dict(metrics)}, sort_keys=True)
        request = LLMRequest(
            role="selector",
            messages=(
                ("system", SELECTOR_PROMPT.format(theory=self.policy.theory_id)),
                ("user", payload),
            ),
            json_schema=schema,
            schema_name="action_choice",
            temperature=0.0,
            max_tokens=40,
        )
        response = selector.complete(request)
        parsed = response.parsed or parse_structured(response.text, schema, role="selector")
        return str(parsed["action"])

    def _adapt(self, choice: Choice, contract: Contract, plan: Mapping[str, Any] | None) -> Choice:
        """Apply the behavioural monitor's plan: replace a stale action by its escalation or
        an alternative, only when the replacement fits under this turn's ceiling."""
        if not plan or plan.get("avoid") != choice.action or contract.exam_lockdown:
            return choice
        for candidate in plan.get("prefer", ()):
            if candidate in self.actions and eligible_under(
                self._rung(candidate), contract.ceiling
            ):
                return Choice(
                    action=candidate,
                    rung=self._rung(candidate),
                    rule_id=choice.rule_id,
                    reason=f"{choice.reason}; adapted ({plan.get('level')}, monitor "
                    f"{plan.get('monitor')}): {choice.action} -> {candidate}",
                    matched=choice.matched,
                    eligible=choice.eligible,
                    probabilities=choice.probabilities,
                    fallback_selector=choice.fallback_selector,
                    adapted_from=choice.action,
                    failure=choice.failure,
                )
        return choice


def _probabilities(
    policy: Any, raw: Sequence[Any], eligible: Sequence[int], index_of: Any
) -> dict[int, float]:
    if not eligible:
        return {}
    try:
        result = policy.probabilities(raw)
    except (AttributeError, TypeError):
        return {}
    if isinstance(result, Mapping):
        return {index_of(key): float(value) for key, value in result.items()}
    return {index_of(item): float(value) for item, value in zip(raw, result, strict=False)}
