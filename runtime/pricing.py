"""Token prices: model name -> US dollars per 1,000 prompt and completion tokens.

Runtime stage: LLM backends. Takes a model name and token counts, gives a cost. Why: the turn
loop's budget stage fails closed on spending caps, and audit records and evaluation reports
show cost per role, so every call needs a price. Unknown models (self-hosted endpoints) cost 0
unless ``PEDRAG_PRICE_PER_1K_INPUT`` / ``PEDRAG_PRICE_PER_1K_OUTPUT`` say otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Price:
    """US dollars per 1,000 tokens."""

    input_per_1k: float = 0.0
    output_per_1k: float = 0.0

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_1k + completion_tokens * self.output_per_1k) / 1000


FREE = Price()

# Public list prices (2025). They drift; the env override wins when set.
PRICES: Mapping[str, Price] = {
    "gpt-4o": Price(0.0025, 0.01),
    "gpt-4o-mini": Price(0.00015, 0.0006),
    "gpt-4.1": Price(0.002, 0.008),
    "gpt-4.1-mini": Price(0.0004, 0.0016),
    "gpt-4.1-nano": Price(0.0001, 0.0004),
    "gpt-5": Price(0.00125, 0.01),
    "gpt-5-mini": Price(0.00025, 0.002),
    "gpt-5-nano": Price(0.00005, 0.0004),
    "o3-mini": Price(0.0011, 0.0044),
    "o4-mini": Price(0.0011, 0.0044),
    "text-embedding-3-small": Price(0.00002, 0.0),
    "text-embedding-3-large": Price(0.00013, 0.0),
}


def price_for(model: str, table: Mapping[str, Price] = PRICES) -> Price:
    """The price of ``model``: an exact entry, else the longest entry it extends with ``-``
    (dated snapshots such as ``gpt-4o-mini-2024-07-18``), else free. A router prefix such as
    ``openai/`` is ignored."""
    name = model.rsplit("/", 1)[-1].lower()
    if name in table:
        return table[name]
    matches = [key for key in table if name.startswith(key + "-")]
    return table[max(matches, key=len)] if matches else FREE


def price_override_from_env(env: Mapping[str, str] = os.environ) -> Price | None:
    """The price set by ``PEDRAG_PRICE_PER_1K_INPUT`` / ``_OUTPUT`` (an unset half is 0), or
    ``None`` when neither is set."""
    raw_input = env.get("PEDRAG_PRICE_PER_1K_INPUT", "").strip()
    raw_output = env.get("PEDRAG_PRICE_PER_1K_OUTPUT", "").strip()
    if not raw_input and not raw_output:
        return None
    return Price(
        _non_negative("PEDRAG_PRICE_PER_1K_INPUT", raw_input),
        _non_negative("PEDRAG_PRICE_PER_1K_OUTPUT", raw_output),
    )


def _non_negative(name: str, raw: str) -> float:
    if not raw:
        return 0.0
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number") from None
    if value < 0:
        raise ValueError(f"{name}={raw!r} must not be negative")
    return value
