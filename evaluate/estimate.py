"""What a grid will cost against an endpoint, before it starts: model calls, tokens, dollars.

Evaluation, planning. Takes the grid, the theory set and curriculum, which roles will call the
endpoint (the tutors always; the learner's voice and the evaluator when chosen), the per-role
completion caps and a price book; gives an :class:`Estimate`.

How: the same grid is run offline first (seconds), every model request counted by role — the
supervised runtime's classifier, analyzer, actor, judge and revisions, the chat arms' actor, the
learner's voice, the evaluator — with its prompt size (characters / 4, the usual token rule of
thumb) and its completion cap. A real model's sessions end at other turns than the offline
model's, so the estimate also gives the ceiling: every session running to the turn limit at
the dry run's calls per turn. The dollar figure is the price book's (``PEDRAG_PRICES``,
``PEDRAG_PRICE_*``); a model nobody priced (a local server) is reported as tokens only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

CHARS_PER_TOKEN = 4
DEFAULT_COMPLETION = 300


class CountingBackend:
    """Counts every request by role, then answers it with ``inner``."""

    def __init__(self, inner: Any, cap: int | None = None) -> None:
        self.inner = inner
        self.cap = cap
        self.calls: Counter[str] = Counter()
        self.prompt_tokens: Counter[str] = Counter()
        self.completion_caps: Counter[str] = Counter()

    def complete(self, request: Any) -> Any:
        self.calls[request.role] += 1
        self.prompt_tokens[request.role] += (
            sum(len(content) for _, content in request.messages) // CHARS_PER_TOKEN
        )
        asked = request.max_tokens or DEFAULT_COMPLETION
        self.completion_caps[request.role] += min(asked, self.cap) if self.cap else asked
        return self.inner.complete(request)


@dataclass(frozen=True)
class Estimate:
    sessions: int
    turns: int
    calls: Mapping[str, int]
    prompt_tokens: int
    completion_tokens: int
    max_calls: int
    cost_usd: float | None
    max_cost_usd: float | None
    unpriced: tuple[str, ...] = field(default=())

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    def lines(self) -> list[str]:
        roles = ", ".join(f"{role} {count}" for role, count in sorted(self.calls.items()))
        found = [
            f"estimate (an offline dry run of this grid): {self.sessions} sessions, "
            f"{self.turns} turns, about {self.total_calls} model calls ({roles}), "
            f"~{self.prompt_tokens:,} prompt and <= {self.completion_tokens:,} completion tokens",
            f"at most {self.max_calls} calls if every session runs to the turn limit",
        ]
        if self.cost_usd is not None:
            found.append(f"cost: about ${self.cost_usd:.2f}, at most ${self.max_cost_usd or 0:.2f}")
        else:
            found.append(
                "cost: unknown — no price for "
                + ", ".join(self.unpriced)
                + " (set PEDRAG_PRICES or PEDRAG_PRICE_PER_1K_INPUT/_OUTPUT to price it)"
            )
        return found


def estimate_grid(
    grid: Any,
    theories: Any,
    curriculum: Any,
    *,
    student_llm: bool,
    evaluator_llm: bool,
    prices: Any = None,
    model: str = "",
    student_max_tokens: int = 120,
    completion_cap: int | None = None,
) -> Estimate:
    """Run ``grid`` offline with every role counted (module docstring)."""
    from pedrag import OfflineBackend
    from pedrag.evaluate.run import run_grid

    # Every role answered by the runtime's offline backend (public API): the dry run counts
    # requests, it does not judge them.
    tutor = CountingBackend(OfflineBackend(), completion_cap)
    student = CountingBackend(tutor.inner, completion_cap) if student_llm else None
    evaluator = CountingBackend(tutor.inner, completion_cap) if evaluator_llm else None
    result = run_grid(
        replace(grid),
        theories,
        curriculum,
        backend=tutor,
        student_backend=student,
        evaluator_backend=evaluator,
        student_max_tokens=student_max_tokens,
    )
    calls: Counter[str] = Counter()
    prompt = completion = 0
    for counter in (tutor, student, evaluator):
        if counter is None:
            continue
        calls.update(counter.calls)
        prompt += sum(counter.prompt_tokens.values())
        completion += sum(counter.completion_caps.values())
    turns = sum(len(session.turns) for session in result.sessions)
    per_turn = sum(calls.values()) / max(1, turns)
    limit_turns = sum(
        job_turns
        for job_turns in (
            min(grid.turns, 6) if session.exam else grid.turns for session in result.sessions
        )
    )
    max_calls = round(per_turn * limit_turns) + len(result.sessions)
    cost = max_cost = None
    unpriced: tuple[str, ...] = ()
    if prices is not None:
        total = 0.0
        missing = []
        for role in calls:
            price = prices.resolve(role, model, model)
            if price is None:
                missing.append(f"{model or 'the model'} ({role})")
                continue
            share = calls[role] / max(1, sum(calls.values()))
            total += price.cost(int(prompt * share), int(completion * share))
        if missing:
            unpriced = tuple(dict.fromkeys(item.split(" (")[0] for item in missing))
        else:
            cost = total
            max_cost = total * max_calls / max(1, sum(calls.values()))
    else:
        unpriced = (model or "the model",)
    return Estimate(
        sessions=len(result.sessions),
        turns=turns,
        calls=dict(calls),
        prompt_tokens=prompt,
        completion_tokens=completion,
        max_calls=max_calls,
        cost_usd=cost,
        max_cost_usd=max_cost,
        unpriced=unpriced,
    )
