"""Token prices: model name -> US dollars per 1,000 prompt and completion tokens.

Runtime stage: LLM backends. Takes a role, a model name and token counts, gives a cost — or
says that none is known. Why: the turn loop's budget stage fails closed on spending caps, and
audit records and reports show cost per role; a price made up for a model nobody priced (a
self-hosted one) would be a false figure, so such calls are reported as tokens only.

Where a price comes from, first match wins (:class:`PriceBook`):

1. ``PEDRAG_PRICE_<ROLE>`` (``"INPUT,OUTPUT"`` in USD per 1,000 tokens), for one role;
2. the pricing file ``PEDRAG_PRICES`` (YAML or JSON: ``model: {input_per_1k, output_per_1k}``);
3. ``PEDRAG_PRICE_PER_1K_INPUT`` / ``PEDRAG_PRICE_PER_1K_OUTPUT``, for every model;
4. the list prices below, for the model the server says answered — only on OpenAI's own API
   (``api.openai.com``): other servers answer to the same names with other models and prices.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


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
    """The price of ``model`` (see :func:`known_price`), free when none is known."""
    return known_price(model, table) or FREE


def known_price(model: str, table: Mapping[str, Price] = PRICES) -> Price | None:
    """The price of ``model``: an exact entry, else the longest entry it extends with ``-``
    (dated snapshots such as ``gpt-4o-mini-2024-07-18``), else ``None``. A router prefix such
    as ``openai/`` is ignored."""
    name = model.rsplit("/", 1)[-1].lower()
    if name in table:
        return table[name]
    matches = [key for key in table if name.startswith(key + "-")]
    return table[max(matches, key=len)] if matches else None


@dataclass(frozen=True)
class PriceBook:
    """Every price source in force; :meth:`resolve` picks one per call (module docstring)."""

    role_prices: Mapping[str, Price] = field(default_factory=dict)
    file_prices: Mapping[str, Price] = field(default_factory=dict)
    override: Price | None = None
    #: Whether the list prices apply: they are OpenAI's, for OpenAI's own API; another
    #: server may answer to the same model name (llama.cpp echoes whatever it was asked).
    list_prices: bool = True

    def resolve(self, role: str, answered_model: str, asked_model: str) -> Price | None:
        """The price of one call, or ``None`` when nobody priced the model.

        The list prices are looked up for the model the server says answered — a local
        server answering a request for ``gpt-4o-mini`` with its own model is not priced as
        ``gpt-4o-mini``; a user's pricing file may name either."""
        if role in self.role_prices:
            return self.role_prices[role]
        for model in dict.fromkeys((answered_model, asked_model)):
            if model and (price := known_price(model, self.file_prices)) is not None:
                return price
        if self.override is not None:
            return self.override
        return known_price(answered_model or asked_model) if self.list_prices else None

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] = os.environ,
        roles: tuple[str, ...] = (),
        *,
        list_prices: bool = True,
    ) -> PriceBook:
        """The price sources the environment configures; ``ValueError`` names a bad one."""
        role_prices = {}
        for role in roles:
            name = f"PEDRAG_PRICE_{role.upper()}"
            raw = env.get(name, "").strip()
            if raw:
                role_prices[role] = _price_pair(name, raw)
        path = env.get("PEDRAG_PRICES", "").strip()
        return cls(
            role_prices=role_prices,
            file_prices=load_price_file(path) if path else {},
            override=price_override_from_env(env),
            list_prices=list_prices,
        )


def load_price_file(path: str | Path) -> dict[str, Price]:
    """``model: {input_per_1k: X, output_per_1k: Y}`` from a YAML or JSON file; a
    ``ValueError`` names the file and the entry that is unusable."""
    import yaml

    try:
        raw: Any = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise ValueError(f"PEDRAG_PRICES={path}: cannot read it ({error.strerror})") from None
    except yaml.YAMLError as error:
        raise ValueError(f"PEDRAG_PRICES={path}: not YAML or JSON ({error})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"PEDRAG_PRICES={path}: expected a mapping of model names to prices")
    prices: dict[str, Price] = {}
    for model, entry in raw.items():
        where = f"PEDRAG_PRICES={path}: {model}"
        if not isinstance(entry, dict) or not set(entry) <= {"input_per_1k", "output_per_1k"}:
            shown = json.dumps(entry, default=str)[:80]
            raise ValueError(
                f"{where}: expected {{input_per_1k: X, output_per_1k: Y}}, got {shown}"
            )
        prices[str(model).lower()] = Price(
            _non_negative(f"{where}.input_per_1k", str(entry.get("input_per_1k", ""))),
            _non_negative(f"{where}.output_per_1k", str(entry.get("output_per_1k", ""))),
        )
    return prices


def _price_pair(name: str, raw: str) -> Price:
    parts = [part.strip() for part in raw.split(",")]
    if len(parts) != 2:
        raise ValueError(
            f"{name}={raw!r} must be INPUT,OUTPUT in USD per 1,000 tokens, e.g. 0.00015,0.0006"
        )
    return Price(_non_negative(name, parts[0]), _non_negative(name, parts[1]))


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
