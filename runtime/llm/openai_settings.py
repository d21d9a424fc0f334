"""Settings of the ``openai`` backend: endpoint, models per role, timeouts, retries, caps, prices.

Runtime stage: LLM backends (configuration). Takes the environment (``OPENAI_BASE_URL``,
``OPENAI_API_KEY``, ``PEDRAG_MODEL`` and ``PEDRAG_MODEL_<ROLE>``, ``PEDRAG_LLM_TIMEOUT``,
``PEDRAG_LLM_RETRIES``, ``PEDRAG_MAX_TOKENS[_<ROLE>]``, prices; docs/llm.md); gives a frozen
:class:`OpenAISettings`, refusing unusable values with the variable's name. Also
:func:`display_url`, the one way a URL is shown (never with credentials).
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field

from pedrag.runtime.llm.interface import (
    ROLES,
)
from pedrag.runtime.llm.pricing import PriceBook

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_RETRIES = 2
DEFAULT_BACKOFF_S = 0.5
DEFAULT_MAX_WAIT_S = 60.0
EMBEDDING_BATCH_SIZE = 128


def display_url(url: str) -> str:
    """``url`` without user, password or query, so messages never show credentials."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "(an unparsable URL)"
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


@dataclass(frozen=True)
class OpenAISettings:
    """Everything the backend needs; :meth:`from_env` reads it from environment variables."""

    base_url: str = DEFAULT_BASE_URL
    api_key: str = "unused"
    default_model: str = DEFAULT_MODEL
    role_models: Mapping[str, str] = field(default_factory=dict)
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    timeout_s: float = DEFAULT_TIMEOUT_S
    retries: int = DEFAULT_RETRIES
    backoff_s: float = DEFAULT_BACKOFF_S
    max_wait_s: float = DEFAULT_MAX_WAIT_S
    context_tokens: int | None = None
    max_tokens: Mapping[str, int] = field(default_factory=dict)
    prices: PriceBook = field(default_factory=PriceBook)

    def max_tokens_for(self, role: str, asked: int | None) -> int | None:
        """The reply budget of a ``role`` request asking for ``asked``: capped by
        ``PEDRAG_MAX_TOKENS_<ROLE>``, else ``PEDRAG_MAX_TOKENS`` (slow local models)."""
        cap = self.max_tokens.get(role, self.max_tokens.get("*"))
        if cap is None:
            return asked
        return cap if asked is None else min(asked, cap)

    def model_for(self, role: str) -> str:
        return self.role_models.get(role, self.default_model)

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> OpenAISettings:
        """Read ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``PEDRAG_MODEL``,
        ``PEDRAG_MODEL_<ROLE>``, ``PEDRAG_EMBEDDING_MODEL``, ``PEDRAG_LLM_TIMEOUT`` (seconds),
        ``PEDRAG_LLM_RETRIES``, ``PEDRAG_LLM_BACKOFF`` (seconds), ``PEDRAG_LLM_MAX_WAIT``
        (seconds: the longest ``Retry-After`` honoured), ``PEDRAG_CONTEXT_TOKENS`` and the
        prices (:class:`~pedrag.runtime.llm.pricing.PriceBook`). Raises ``ValueError`` naming the
        variable when a value is unusable."""

        def text(name: str, default: str) -> str:
            return env.get(name, "").strip() or default

        default_model = text("PEDRAG_MODEL", DEFAULT_MODEL)
        role_models: dict[str, str] = {
            role: env[f"PEDRAG_MODEL_{role.upper()}"].strip()
            for role in ROLES
            if env.get(f"PEDRAG_MODEL_{role.upper()}", "").strip()
        }
        base_url = text("OPENAI_BASE_URL", DEFAULT_BASE_URL)
        return cls(
            base_url=base_url,
            # Local servers often need no key, but the client insists on one.
            api_key=text("OPENAI_API_KEY", "unused"),
            default_model=default_model,
            role_models=role_models,
            embedding_model=text("PEDRAG_EMBEDDING_MODEL", DEFAULT_EMBEDDING_MODEL),
            timeout_s=_number(env, "PEDRAG_LLM_TIMEOUT", DEFAULT_TIMEOUT_S, minimum=0.001),
            retries=int(_number(env, "PEDRAG_LLM_RETRIES", DEFAULT_RETRIES, minimum=0, whole=True)),
            backoff_s=_number(env, "PEDRAG_LLM_BACKOFF", DEFAULT_BACKOFF_S, minimum=0),
            max_wait_s=_number(env, "PEDRAG_LLM_MAX_WAIT", DEFAULT_MAX_WAIT_S, minimum=0),
            context_tokens=(
                int(_number(env, "PEDRAG_CONTEXT_TOKENS", 0, minimum=64, whole=True)) or None
                if env.get("PEDRAG_CONTEXT_TOKENS", "").strip()
                else None
            ),
            max_tokens=_token_caps(env),
            prices=PriceBook.from_env(env, ROLES, list_prices=_is_openai(base_url)),
        )


def _token_caps(env: Mapping[str, str]) -> dict[str, int]:
    caps: dict[str, int] = {}
    for role in ("*", *ROLES):
        name = "PEDRAG_MAX_TOKENS" if role == "*" else f"PEDRAG_MAX_TOKENS_{role.upper()}"
        if env.get(name, "").strip():
            caps[role] = int(_number(env, name, 0, minimum=1, whole=True))
    return caps


def _is_openai(base_url: str) -> bool:
    """Whether ``base_url`` is OpenAI's own API, the only one its list prices are for."""
    return (urllib.parse.urlsplit(base_url).hostname or "").lower() == "api.openai.com"


def _number(
    env: Mapping[str, str], name: str, default: float, *, minimum: float, whole: bool = False
) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number") from None
    if value < minimum or (whole and not value.is_integer()):
        kind = "a whole number" if whole else "a number"
        raise ValueError(f"{name}={raw!r} must be {kind} of at least {minimum:g}")
    return value
