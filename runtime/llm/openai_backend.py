"""The ``openai`` LLM backend: any OpenAI-compatible endpoint through the official client.

Runtime stage: LLM backends. Takes an :class:`~pedrag.runtime.llm.interface.LLMRequest`, gives an
:class:`~pedrag.runtime.llm.interface.LLMResponse`; configured from the environment (see
``docs/llm.md``): ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``PEDRAG_MODEL`` and
``PEDRAG_MODEL_<ROLE>``, ``PEDRAG_LLM_TIMEOUT``, ``PEDRAG_LLM_RETRIES``, prices.

Why it is more than a thin wrapper: the turn loop fails closed, so every failure must arrive as
one of the ``LLMError`` classes — never as an ``openai`` or ``httpx`` exception — after a bounded
number of retries that this module owns (the client's own retries are switched off so the
count is predictable; a ``Retry-After`` on 429/503 is honoured). And "OpenAI-compatible"
servers differ. A structured request is tried in three conventions, in order — ``json_schema``
structured output; ``json_object`` with the schema in the prompt; plain text with the schema in
the prompt — moving on only when the server's error (HTTP 400, 404, 422 or 500) names the
parameter, never on the status alone; in the last two, where the server does not hold the
reply to the schema, a reply that does not validate is asked for once more with the
validation errors. Some reasoning models reject ``max_tokens`` or ``temperature``. What
an endpoint and model showed is remembered for the process (:class:`EndpointProfile`), so
callers write one request for all of them. ``<think>`` blocks are removed from replies; a
context window (``PEDRAG_CONTEXT_TOKENS`` or the ``/v1/models`` metadata) is kept by dropping
the oldest history, never the system prompt that carries the contract.

:meth:`OpenAIBackend.check` is the health check the commands run before their first turn:
``/v1/models`` and one tiny request, failing with :class:`EndpointProblem` whose message names
the URL (without credentials) and the fix.

``stream`` sends the same request with ``stream=True`` and yields the text deltas as the server
sends them. Retries happen only before the first delta (opening the stream); an error after it
— an error event in the stream, a dropped connection, a read timeout — ends the stream with the
mapped ``LLMError``, since text already handed out cannot be taken back. Usage comes from the
final chunk (``stream_options={"include_usage": True}``) and is estimated when a server omits
it or the stream ends early.
"""

from __future__ import annotations

import email.utils
import functools
import json
import logging
import math
import os
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import openai

from pedrag.runtime.llm.interface import (
    ROLES,
    LLMError,
    LLMMalformedOutput,
    LLMRefusal,
    LLMRequest,
    LLMResponse,
    LLMStream,
    LLMTimeout,
    LLMUnavailable,
    ReasoningFilter,
    Role,
    Usage,
    parse_structured,
    strip_reasoning,
)
from pedrag.runtime.llm.pricing import Price, PriceBook

__all__ = [
    "CONVENTIONS",
    "DEFAULT_MODEL",
    "ROLE_HEADER",
    "EndpointProblem",
    "EndpointProfile",
    "EndpointReport",
    "OpenAIBackend",
    "OpenAISettings",
    "backend_from_env",
    "display_url",
    "forget_endpoint",
]

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_RETRIES = 2
DEFAULT_BACKOFF_S = 0.5
DEFAULT_MAX_WAIT_S = 60.0
EMBEDDING_BATCH_SIZE = 128
#: Tokens kept free for the reply when a request sets no ``max_tokens``.
REPLY_RESERVE_TOKENS = 512
#: Below this many tokens left for the reply, a request does not fit the context window.
MIN_REPLY_TOKENS = 16

#: Sent with every request so logs and the test server can tell the roles apart; real
#: endpoints ignore unknown headers.
ROLE_HEADER = "X-Pedrag-Role"
#: The role header of the health check's one-token request.
HEALTH_ROLE = "health"

_T = TypeVar("_T")

#: The structured-output conventions, in the order they are tried.
JSON_SCHEMA, JSON_OBJECT, PROMPTED = "json_schema", "json_object", "prompted"
CONVENTIONS = (JSON_SCHEMA, JSON_OBJECT, PROMPTED)

# Server quirks learned from error answers that name a parameter, each applied once.
_MAX_COMPLETION_TOKENS = "max_completion_tokens"
_NO_TEMPERATURE = "no_temperature"
_NO_STREAM_OPTIONS = "no_stream_options"
# A chat template that wants user/assistant turns to alternate after one leading system
# message (Gemma's, Mistral's) rejects the actor's per-turn system message after the history:
# it is then sent at the head of the student's message instead.
_NO_LATE_SYSTEM = "no_late_system"

#: Statuses whose error may say a parameter is unsupported: 400 (OpenAI, vLLM), 404 (some
#: gateways), 422 (FastAPI validation), 500 (llama-cpp-python's server on ``json_schema``).
_ADAPTABLE_STATUSES = frozenset({400, 404, 422, 500})


@dataclass
class EndpointProfile:
    """What one endpoint and model showed it supports, learned from its answers.

    Shared by every backend in the process that talks to the same base URL and model (see
    :func:`endpoint_profile`), so a second session does not pay for the first one's lesson.
    ``events`` lists each adaptation as one readable line (logs, benchmarks)."""

    convention: str = JSON_SCHEMA
    quirks: set[str] = field(default_factory=set)
    context_tokens: int | None = None
    events: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)


_PROFILES: dict[tuple[str, str], EndpointProfile] = {}
_PROFILES_LOCK = threading.Lock()


def endpoint_profile(base_url: str, model: str) -> EndpointProfile:
    """The process-wide profile of ``model`` at ``base_url``."""
    key = (base_url.rstrip("/"), model)
    with _PROFILES_LOCK:
        profile = _PROFILES.get(key)
        if profile is None:
            profile = _PROFILES[key] = EndpointProfile()
        return profile


def forget_endpoint(base_url: str) -> None:
    """Drop what was learned about ``base_url`` (every model): a server restarted with other
    capabilities, or a test server whose port may be reused."""
    with _PROFILES_LOCK:
        for key in [key for key in _PROFILES if key[0] == base_url.rstrip("/")]:
            del _PROFILES[key]


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


class EndpointProblem(LLMError):
    """The endpoint failed its health check; the message names the URL and the fix."""


@dataclass(frozen=True)
class EndpointReport:
    """What :meth:`OpenAIBackend.check` found: the models the server lists (empty when it
    lists none), the context window it reports, and the tiny request's latency."""

    url: str
    models: tuple[str, ...]
    context_tokens: int | None
    latency_ms: float


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


def backend_from_env(
    env: Mapping[str, str] = os.environ, *, sleep: Callable[[float], None] = time.sleep
) -> OpenAIBackend | None:
    """The openai backend when an endpoint is configured (``OPENAI_BASE_URL`` or
    ``OPENAI_API_KEY`` set), else ``None`` — the caller then uses the offline backend.
    ``PEDRAG_LLM=offline`` forces ``None`` even with a key in the environment."""
    if env.get("PEDRAG_LLM", "").strip().lower() == "offline":
        return None
    if not (env.get("OPENAI_BASE_URL", "").strip() or env.get("OPENAI_API_KEY", "").strip()):
        return None
    return OpenAIBackend(OpenAISettings.from_env(env), sleep=sleep)


class OpenAIBackend:
    """:class:`~pedrag.runtime.llm.interface.LLMBackend` over an OpenAI-compatible endpoint.

    Thread-safe. ``usage`` accumulates every successful call (chat and embeddings) by role;
    ``failures`` lists ``(role, message)`` for every call that raised, in order, so a command
    can warn as they happen and sum them up at the end. ``sleep`` is what waits between
    retries; tests pass a recorder to stay fast.
    """

    def __init__(
        self,
        settings: OpenAISettings | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        client: openai.OpenAI | None = None,
    ) -> None:
        self.settings = settings or OpenAISettings()
        self._client = client or openai.OpenAI(
            base_url=self.settings.base_url,
            api_key=self.settings.api_key,
            timeout=self.settings.timeout_s,
            max_retries=0,  # retries are ours: bounded, counted, mapped to LLMError
        )
        self._sleep = sleep
        self._usage_lock = threading.Lock()
        self.usage = Usage()
        self.failures: list[tuple[str, str]] = []

    @property
    def url(self) -> str:
        """The base URL as it may be shown (no credentials)."""
        return display_url(self.settings.base_url)

    def model_for(self, role: Role) -> str:
        return self.settings.model_for(role)

    def profile(self, role: Role) -> EndpointProfile:
        """What this endpoint's model for ``role`` has shown it supports."""
        return self._profile_for(self.model_for(role))

    def _profile_for(self, model: str) -> EndpointProfile:
        return endpoint_profile(self.settings.base_url, model)

    # -- chat ------------------------------------------------------------------------------

    def complete(self, request: LLMRequest) -> LLMResponse:
        """Send ``request``; retry timeouts, 5xx and 429 with backoff; for a structured
        request, move through the conventions and ask once more with the validation errors."""
        try:
            return self._complete(request)
        except LLMError as error:
            self._failed(request.role, error)
            raise

    def _complete(self, request: LLMRequest) -> LLMResponse:
        model = self.model_for(request.role)
        started = time.monotonic()
        completion, attempts, convention = self._send(request, model, ())
        text, finish_reason = self._reply_text(request, model, completion, attempts)
        answered_model = str(getattr(completion, "model", None) or model)
        prompt_tokens, completion_tokens = _token_counts(completion, request, text)
        parsed: dict[str, Any] | None = None
        repairs = 0
        if request.json_schema is not None:
            schema = request.json_schema

            def parse(reply: str, model_name: str, finish: str) -> dict[str, Any]:
                return parse_structured(
                    reply, schema, role=request.role, model=model_name, finish_reason=finish
                )

            try:
                parsed = parse(text, answered_model, finish_reason)
            except LLMMalformedOutput as error:
                if convention == JSON_SCHEMA:
                    # The server was held to the schema; asking again would not help (and
                    # a caller with its own repair loop would pay twice).
                    error.attempts = attempts
                    raise
                # Once more, shown its own reply and what was wrong with it.
                repairs = 1
                extra = (("assistant", text), ("user", _repair_instruction(error)))
                repair_request = request
                if finish_reason == "length" and request.max_tokens is not None:
                    # Cut off: the same budget would cut it off again.
                    repair_request = _with_max_tokens(request, request.max_tokens * 2)
                completion, more, convention = self._send(repair_request, model, extra)
                attempts += more
                text, finish_reason = self._reply_text(request, model, completion, attempts)
                answered_model = str(getattr(completion, "model", None) or model)
                more_prompt, more_completion = _token_counts(completion, request, text)
                prompt_tokens += more_prompt
                completion_tokens += more_completion
                try:
                    parsed = parse(text, answered_model, finish_reason)
                except LLMMalformedOutput as again:
                    again.attempts = attempts
                    raise
        return self._account(
            text,
            parsed,
            answered_model,
            model,
            prompt_tokens,
            completion_tokens,
            started,
            request.role,
            finish_reason,
            convention,
            repairs,
        )

    def _send(
        self, request: LLMRequest, model: str, extra: tuple[tuple[str, str], ...]
    ) -> tuple[Any, int, str]:
        """One request (with retries): the completion, the attempts and the convention."""
        sent: dict[str, str] = {}

        def send() -> Any:
            completion, convention = self._create_chat(request, model, extra=extra)
            sent["convention"] = convention
            return completion

        completion, attempts = self._with_retries(send, role=request.role, model=model)
        return completion, attempts, sent.get("convention", "")

    def _reply_text(
        self, request: LLMRequest, model: str, completion: Any, attempts: int
    ) -> tuple[str, str]:
        """The reply's text (reasoning removed) and finish reason, or the ``LLMError`` for a
        reply that is no answer."""
        role = request.role
        try:
            choices = getattr(completion, "choices", None)
            if not isinstance(choices, list):
                raise LLMUnavailable(
                    f"{self.url} answered with something that is not a chat completion",
                    role=role,
                    model=model,
                )
            if not choices:
                raise LLMRefusal(f"the {role} model returned no answer", role=role, model=model)
            choice = choices[0]
            message = choice.message
            finish_reason = str(choice.finish_reason or "stop")
            if getattr(message, "refusal", None):
                raise LLMRefusal(f"the {role} model refused to answer", role=role, model=model)
            if finish_reason == "content_filter":
                raise LLMRefusal(
                    f"the {role} model's answer was blocked by a content filter",
                    role=role,
                    model=model,
                )
            text = strip_reasoning(message.content or "")
            if not text.strip():
                raise LLMRefusal(
                    f"the {role} model returned an empty answer (finish_reason={finish_reason})",
                    role=role,
                    model=model,
                )
        except LLMError as error:
            error.attempts = attempts
            raise
        return text, finish_reason

    def stream(self, request: LLMRequest) -> LLMStream:
        """Send ``request`` streamed; the deltas as they arrive (see the module docstring)."""
        return LLMStream(lambda handle: self._stream_deltas(request, handle))

    def _stream_deltas(self, request: LLMRequest, handle: LLMStream) -> Iterator[str]:
        try:
            yield from self._stream_deltas_unwatched(request, handle)
        except LLMError as error:
            self._failed(request.role, error)
            raise

    def _stream_deltas_unwatched(self, request: LLMRequest, handle: LLMStream) -> Iterator[str]:
        role = request.role
        model = self.model_for(role)
        started = time.monotonic()
        sent: dict[str, str] = {}

        def open_chunks() -> Any:
            chunks, convention = self._create_chat(request, model, stream=True)
            sent["convention"] = convention
            return chunks

        chunks, attempts = self._with_retries(open_chunks, role=role, model=model)
        parts: list[str] = []
        usage: Any = None
        finish_reason: str | None = None
        answered_model = model
        parsed: dict[str, Any] | None = None
        reasoning = ReasoningFilter()
        try:
            iterator = iter(chunks)
            while True:
                try:
                    chunk = next(iterator)
                except StopIteration:
                    break
                except Exception as error:  # the boundary: nothing but LLMError may escape
                    mapped, _ = self._translate(error, role=role, model=model)
                    mapped.attempts = attempts
                    raise mapped from error
                answered_model = str(getattr(chunk, "model", None) or answered_model)
                usage = getattr(chunk, "usage", None) or usage
                for choice in getattr(chunk, "choices", None) or ():
                    delta = getattr(choice, "delta", None)
                    if getattr(delta, "refusal", None):
                        raise LLMRefusal(
                            f"the {role} model refused to answer", role=role, model=model
                        )
                    if choice.finish_reason:
                        finish_reason = str(choice.finish_reason)
                    content = getattr(delta, "content", None)
                    if content:
                        shown = reasoning.feed(content)
                        if shown:
                            parts.append(shown)
                            yield shown
            rest = reasoning.finish()
            if rest:
                parts.append(rest)
                yield rest
            text = "".join(parts)
            if finish_reason is None:
                message = f"the {role} stream from {self.url} ended before the reply did"
                raise LLMUnavailable(message, role=role, model=model, attempts=attempts)
            if finish_reason == "content_filter":
                raise LLMRefusal(
                    f"the {role} model's answer was blocked by a content filter",
                    role=role,
                    model=model,
                )
            if not text.strip():
                raise LLMRefusal(
                    f"the {role} model returned an empty answer (finish_reason={finish_reason})",
                    role=role,
                    model=model,
                )
            if request.json_schema is not None:
                parsed = parse_structured(
                    text,
                    request.json_schema,
                    role=role,
                    model=answered_model,
                    finish_reason=finish_reason,
                )
        finally:
            # However the stream ends (done, failed, closed by the caller): drop the connection
            # and account the call once, estimating what the server did not report.
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
            text = "".join(parts)
            prompt_tokens, completion_tokens = _usage_counts(usage, request, text)
            handle.response = self._account(
                text,
                parsed,
                answered_model,
                model,
                prompt_tokens,
                completion_tokens,
                started,
                role,
                finish_reason or "incomplete",
                sent.get("convention", ""),
                0,
            )

    def _create_chat(
        self,
        request: LLMRequest,
        model: str,
        *,
        stream: bool = False,
        extra: tuple[tuple[str, str], ...] = (),
        role_header: str | None = None,
    ) -> tuple[Any, str]:
        """One chat request, adapting to what the server rejects by name; the answer and
        the structured-output convention it was sent with ("" for plain text)."""
        profile = self._profile_for(model)
        for _ in range(8):  # each lesson changes the profile, and there are few to learn
            convention = profile.convention if request.json_schema is not None else ""
            quirks = set(profile.quirks)
            arguments = self._chat_arguments(request, model, convention, quirks, extra, profile)
            if role_header is not None:
                arguments["extra_headers"] = {ROLE_HEADER: role_header}
            if stream:
                arguments["stream"] = True
                if _NO_STREAM_OPTIONS not in quirks:
                    arguments["stream_options"] = {"include_usage": True}
            try:
                return self._client.chat.completions.create(**arguments), convention
            except openai.APIStatusError as error:
                if error.status_code not in _ADAPTABLE_STATUSES:
                    raise
                if not self._learn(profile, error, arguments, convention, quirks, request.role):
                    raise
        raise LLMError(f"{self.url} kept rejecting the {request.role} request's parameters")

    def _learn(
        self,
        profile: EndpointProfile,
        error: openai.APIStatusError,
        arguments: Mapping[str, Any],
        convention: str,
        quirks: set[str],
        role: str,
    ) -> bool:
        """Whether ``error`` says a parameter we sent is unsupported; if so the profile now
        avoids it (or another thread already changed it) and the request may be sent again."""
        text = _error_text(error)
        with profile.lock:
            if (convention and profile.convention != convention) or profile.quirks != quirks:
                return True  # learned meanwhile by a concurrent call
            if "response_format" in arguments and _names_any(
                text, ("response_format", "json_schema", "json_object", "structured output")
            ):
                following = CONVENTIONS[CONVENTIONS.index(convention) + 1]
                change = f"{convention} -> {following}"
                profile.convention = following
            else:
                quirk = _quirk_for(text, arguments)
                if quirk is None or quirk in profile.quirks:
                    return False
                profile.quirks.add(quirk)
                change = quirk.replace("_", " ")
            event = (
                f"{role}: {change} after HTTP {error.status_code} ({_short(error.message, 120)})"
            )
            profile.events.append(event)
        logger.warning("%s (%s) %s", self.url, arguments.get("model"), event)
        return True

    def _chat_arguments(
        self,
        request: LLMRequest,
        model: str,
        convention: str,
        quirks: set[str],
        extra: tuple[tuple[str, str], ...],
        profile: EndpointProfile,
    ) -> dict[str, Any]:
        messages = [{"role": who, "content": content} for who, content in request.messages]
        messages += [{"role": who, "content": content} for who, content in extra]
        schema = request.json_schema
        arguments: dict[str, Any] = {
            "model": model,
            "extra_headers": {ROLE_HEADER: request.role},
        }
        if schema is not None:
            if convention == JSON_SCHEMA:
                arguments["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": request.schema_name,
                        "schema": schema,
                        "strict": True,
                    },
                }
            else:
                messages = _with_schema_instruction(messages, schema)
            if convention == JSON_OBJECT:
                # ``schema`` beside the type is llama.cpp's extension (it then constrains
                # decoding to the schema); servers without it ignore the key.
                arguments["response_format"] = {"type": "json_object", "schema": schema}
        max_tokens = self.settings.max_tokens_for(request.role, request.max_tokens)
        window = self.settings.context_tokens or profile.context_tokens
        if window is not None:
            messages, max_tokens = _fit_context(messages, max_tokens, window, request.role)
        if _NO_LATE_SYSTEM in quirks:
            messages = _fold_late_systems(messages)
        arguments["messages"] = messages
        if request.temperature is not None and _NO_TEMPERATURE not in quirks:
            arguments["temperature"] = request.temperature
        if max_tokens is not None:
            key = "max_completion_tokens" if _MAX_COMPLETION_TOKENS in quirks else "max_tokens"
            arguments[key] = max_tokens
        return arguments

    # -- health ----------------------------------------------------------------------------

    def check(self, roles: Sequence[Role] = ROLES) -> EndpointReport:
        """The endpoint's health, before any turn: ``/v1/models`` answers and lists the
        models ``roles`` use (when it lists any), then one tiny chat request succeeds.
        Raises :class:`EndpointProblem` naming the URL and the fix; remembers the context
        window the listing reports."""
        url = self.url
        needed = list(dict.fromkeys(self.model_for(role) for role in roles))
        listed, entries = self._list_models(url)
        if listed:
            missing = [model for model in needed if model not in listed]
            if missing:
                variable = (
                    "PEDRAG_MODEL"
                    if missing[0] == self.settings.default_model
                    else ("PEDRAG_MODEL_<ROLE>")
                )
                raise EndpointProblem(
                    f"{url} does not serve the model {missing[0]!r} (it serves: "
                    f"{', '.join(listed[:8])}{', ...' if len(listed) > 8 else ''}); set "
                    f"{variable} (or --model) to one of them"
                )
        context = None
        for model in needed:
            found = _context_window(entries.get(model, {}))
            if found is not None:
                self._profile_for(model).context_tokens = found
                context = found if context is None else min(context, found)
        started = time.monotonic()
        model = needed[0] if needed else self.settings.default_model
        tiny = LLMRequest(
            role=roles[0] if roles else "actor",
            messages=(("user", "Reply with the word ok."),),
            max_tokens=1,
        )
        try:
            # Adapts to max_completion_tokens and the like, as any request does.
            self._create_chat(tiny, model, role_header=HEALTH_ROLE)
        except Exception as error:  # the boundary: a health problem, with its fix
            message = self._health_message(error, "a one-token chat request", model)
            raise EndpointProblem(message) from None
        return EndpointReport(
            url=url,
            models=tuple(listed),
            context_tokens=self.settings.context_tokens or context,
            latency_ms=(time.monotonic() - started) * 1000,
        )

    def check_embeddings(self) -> int:
        """The health of ``/v1/embeddings`` before indexing: the listing (when the server
        has one) holds ``PEDRAG_EMBEDDING_MODEL``, and one tiny embedding request succeeds.
        Returns the vectors' dimension; raises :class:`EndpointProblem` naming the URL and
        the fix, like :meth:`check`."""
        url = self.url
        model = self.settings.embedding_model
        listed, _ = self._list_models(url)
        if listed and model not in listed:
            raise EndpointProblem(
                f"{url} does not serve the embedding model {model!r} (it serves: "
                f"{', '.join(listed[:8])}{', ...' if len(listed) > 8 else ''}); set "
                "PEDRAG_EMBEDDING_MODEL (or --embedding-model) to one of them"
            )
        try:
            result = self._client.embeddings.create(
                model=model,
                input=["ok"],
                encoding_format="float",
                extra_headers={ROLE_HEADER: HEALTH_ROLE},
            )
            [item] = result.data
        except Exception as error:  # the boundary: a health problem, with its fix
            raise EndpointProblem(
                self._health_message(error, "an embedding request", model)
            ) from None
        try:
            dimension = len(_as_vector(item.embedding))
        except (TypeError, ValueError):
            raise EndpointProblem(_not_vectors(url)) from None
        if not dimension:
            raise EndpointProblem(f"{url} answered an embedding request with an empty vector")
        return dimension

    def _list_models(self, url: str) -> tuple[list[str], dict[str, dict[str, Any]]]:
        try:
            page = self._client.models.list()
            entries = {str(item.id): item.to_dict() for item in page.data}
        except openai.NotFoundError as error:
            if _lacks_version(self.settings.base_url):
                raise EndpointProblem(self._health_message(error, "GET /models")) from None
            return [], {}  # a server without a listing: the tiny request decides
        except Exception as error:  # the boundary: a health problem, with its fix
            raise EndpointProblem(self._health_message(error, "GET /models")) from None
        return list(entries), entries

    def _health_message(self, error: Exception, what: str, model: str | None = None) -> str:
        url = self.url
        add_v1 = (
            f"; the base URL usually ends in /v1: OPENAI_BASE_URL={url.rstrip('/')}/v1"
            if _lacks_version(self.settings.base_url)
            else ""
        )
        if isinstance(error, openai.APITimeoutError):
            return (
                f"{url} did not answer {what} within {self.settings.timeout_s:g}s; is the "
                "server up and the model loaded? (raise PEDRAG_LLM_TIMEOUT for slow servers)"
            )
        if isinstance(error, openai.APIConnectionError):
            return (
                f"cannot reach {url} ({_short(str(error.__cause__ or error), 80)}): start the "
                "server, or fix the endpoint's URL (--endpoint, or OPENAI_BASE_URL)"
            )
        if isinstance(error, openai.APIStatusError):
            status = error.status_code
            detail = _short(re.sub(r"^Error code: \d+ - ", "", error.message), 160)
            if status in (401, 403):
                return f"{url} rejected the key for {what} (HTTP {status}): set OPENAI_API_KEY"
            if status == 404 and add_v1:
                return f"{url} answered HTTP 404 for {what}{add_v1}"
            if status == 404 and model is not None:
                return (
                    f"{url} answered HTTP 404 for {what} to {model!r} ({detail}): check the "
                    "model name (PEDRAG_MODEL, --model) and OPENAI_BASE_URL"
                )
            return f"{url} failed {what} (HTTP {status}): {detail}{add_v1}"
        if isinstance(error, openai.APIResponseValidationError | ValueError):
            return f"{url} answered {what} with something that is not the OpenAI API{add_v1}"
        return f"{url} failed {what}: {type(error).__name__}: {_short(str(error), 160)}{add_v1}"

    def _failed(self, role: str, error: LLMError) -> None:
        with self._usage_lock:
            self.failures.append((role, f"{type(error).__name__}: {error}"))

    # -- embeddings ------------------------------------------------------------------------

    def embed(self, texts: Sequence[str], *, role: Role = "extractor") -> list[list[float]]:
        """One vector per text, in order, from ``/v1/embeddings`` (``PEDRAG_EMBEDDING_MODEL``).
        Same retries and error mapping as :meth:`complete`; usage is filed under ``role``,
        and a failure in ``failures``."""
        try:
            return self._embed(texts, role)
        except LLMError as error:
            self._failed(role, error)
            raise

    def _embed(self, texts: Sequence[str], role: Role) -> list[list[float]]:
        model = self.settings.embedding_model
        vectors: list[list[float]] = []
        for start in range(0, len(texts), EMBEDDING_BATCH_SIZE):
            batch = list(texts[start : start + EMBEDDING_BATCH_SIZE])
            started = time.monotonic()
            result, _ = self._with_retries(
                functools.partial(
                    self._client.embeddings.create,
                    model=model,
                    input=batch,
                    encoding_format="float",  # base64 is not universally supported
                    extra_headers={ROLE_HEADER: role},
                ),
                role=role,
                model=model,
            )
            data = sorted(getattr(result, "data", None) or [], key=lambda item: item.index)
            if len(data) != len(batch):
                raise LLMUnavailable(
                    f"the embedding endpoint returned {len(data)} vectors for {len(batch)} texts",
                    role=role,
                    model=model,
                )
            try:
                vectors.extend(_as_vector(item.embedding) for item in data)
            except (TypeError, ValueError):
                raise LLMUnavailable(_not_vectors(self.url), role=role, model=model) from None
            usage = getattr(result, "usage", None)
            prompt_tokens = getattr(usage, "prompt_tokens", None)
            if prompt_tokens is None:
                prompt_tokens = sum(_estimate_tokens(text) for text in batch)
            answered_model = str(getattr(result, "model", None) or model)
            price = self._price(role, answered_model, model)
            self._record(
                LLMResponse(
                    text="",
                    model=answered_model,
                    prompt_tokens=prompt_tokens,
                    cost_usd=price.cost(prompt_tokens, 0) if price else 0.0,
                    latency_ms=(time.monotonic() - started) * 1000,
                    role=role,
                    priced=price is not None,
                )
            )
        return vectors

    # -- shared machinery ------------------------------------------------------------------

    def _with_retries(self, send: Callable[[], _T], *, role: str, model: str) -> tuple[_T, int]:
        """Call ``send`` up to ``1 + retries`` times; return its result and the attempt count,
        or raise the mapped :class:`LLMError` of the last failure. A 429/503 that says
        ``Retry-After`` is waited for that long (up to ``max_wait_s``; longer gives up)."""
        attempts = 0
        while True:
            attempts += 1
            try:
                return send(), attempts
            except Exception as error:  # the boundary: nothing but LLMError may escape
                mapped, retryable = self._translate(error, role=role, model=model)
                mapped.attempts = attempts
                if not retryable or attempts > self.settings.retries:
                    raise mapped from error
                delay = self.settings.backoff_s * 2 ** (attempts - 1)
                asked = _retry_after(error)
                if asked is not None:
                    if asked > self.settings.max_wait_s:
                        mapped.args = (
                            f"{mapped} (the server asks to wait {asked:g}s, more than "
                            f"PEDRAG_LLM_MAX_WAIT={self.settings.max_wait_s:g}s)",
                        )
                        raise mapped from error
                    delay = asked
                logger.info(
                    "%s call to %s failed (%s); retry %d/%d in %.2fs",
                    role,
                    model,
                    type(mapped).__name__,
                    attempts,
                    self.settings.retries,
                    delay,
                )
                self._sleep(delay)

    def _translate(self, error: Exception, *, role: str, model: str) -> tuple[LLMError, bool]:
        """The :class:`LLMError` for a client exception, and whether retrying may help."""
        where = self.url
        if isinstance(error, openai.APITimeoutError):
            message = f"the {role} call to {model} timed out after {self.settings.timeout_s:g}s"
            return LLMTimeout(message, role=role, model=model), True
        if isinstance(error, openai.APIConnectionError):
            return LLMUnavailable(f"cannot reach {where}", role=role, model=model), True
        if isinstance(error, openai.APIStatusError):
            status = error.status_code
            # The client prefixes "Error code: 401 - "; the message already says the status.
            detail = _short(re.sub(r"^Error code: \d+ - ", "", error.message))
            if status >= 500 or status == 429:
                message = f"{where} is unavailable (HTTP {status}): {detail}"
                return LLMUnavailable(message, role=role, model=model, status_code=status), True
            if _is_content_filter(error):
                message = f"the {role} request was blocked by a content filter"
                return LLMRefusal(message, role=role, model=model), False
            hint = {
                401: " — check OPENAI_API_KEY",
                403: " — check OPENAI_API_KEY",
                404: " — check OPENAI_BASE_URL and the model name (PEDRAG_MODEL...)",
            }.get(status, "")
            message = f"{where} rejected the {role} request (HTTP {status}): {detail}{hint}"
            return LLMError(message, role=role, model=model), False
        if isinstance(error, openai.ContentFilterFinishReasonError):
            message = f"the {role} answer was blocked by a content filter"
            return LLMRefusal(message, role=role, model=model), False
        if isinstance(error, openai.APIResponseValidationError | ValueError):
            # Typically a wrong base URL answering HTML with 200: retrying will not fix it.
            message = f"{where} answered with a body that is not an OpenAI API response"
            return LLMUnavailable(message, role=role, model=model), False
        if isinstance(error, openai.APIError):
            # What is left: an error event inside a streamed answer.
            message = f"{where} reported an error mid-stream: {_short(error.message)}"
            return LLMUnavailable(message, role=role, model=model), False
        if isinstance(error, LLMError):
            return error, False
        message = f"the {role} call to {model} failed: {type(error).__name__}: {_short(str(error))}"
        return LLMError(message, role=role, model=model), False

    def _price(self, role: str, answered_model: str, requested_model: str) -> Price | None:
        return self.settings.prices.resolve(role, answered_model, requested_model)

    def _account(
        self,
        text: str,
        parsed: dict[str, Any] | None,
        answered_model: str,
        asked_model: str,
        prompt_tokens: int,
        completion_tokens: int,
        started: float,
        role: Role,
        finish_reason: str,
        convention: str = "",
        repairs: int = 0,
    ) -> LLMResponse:
        """The response of one finished call (streamed or not), priced and added to usage."""
        price = self._price(role, answered_model, asked_model)
        response = LLMResponse(
            text=text,
            parsed=parsed,
            model=answered_model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=price.cost(prompt_tokens, completion_tokens) if price else 0.0,
            latency_ms=(time.monotonic() - started) * 1000,
            role=role,
            finish_reason=finish_reason,
            convention=convention,
            repairs=repairs,
            priced=price is not None,
        )
        self._record(response)
        return response

    def _record(self, response: LLMResponse) -> None:
        with self._usage_lock:
            self.usage.record(response)


def _error_text(error: openai.APIStatusError) -> str:
    """Everything an error answer says, lower-cased: message, ``param`` and the raw body
    (FastAPI's 422/500 bodies name the parameter in ``loc``, not in a message)."""
    parts = [str(error.message), str(getattr(error, "param", "") or "")]
    body = getattr(error, "body", None)
    if body is not None:
        parts.append(json.dumps(body, default=str) if not isinstance(body, str) else body)
    return " ".join(parts).lower()


def _names_any(text: str, names: Sequence[str]) -> bool:
    return any(name in text for name in names)


def _quirk_for(text: str, arguments: Mapping[str, Any]) -> str | None:
    """Which server quirk an error names, if it is one we can work around."""
    if "max_tokens" in arguments and "max_completion_tokens" in text:
        return _MAX_COMPLETION_TOKENS
    if "temperature" in arguments and "temperature" in text:
        return _NO_TEMPERATURE
    if "stream_options" in arguments and "stream_options" in text:
        return _NO_STREAM_OPTIONS
    if _late_system(arguments.get("messages", ())) and (
        "alternate" in text or ("system" in text and "role" in text)
    ):
        return _NO_LATE_SYSTEM
    return None


def _late_system(messages: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a system message follows a message of another role."""
    roles = [message["role"] for message in messages]
    first_other = next((index for index, role in enumerate(roles) if role != "system"), len(roles))
    return "system" in roles[first_other:]


def _fold_late_systems(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each system message after the leading ones, put at the head of the message after it."""
    folded: list[dict[str, Any]] = []
    pending: list[str] = []
    for index, message in enumerate(messages):
        late = any(earlier["role"] != "system" for earlier in messages[:index])
        if late and message["role"] == "system" and index < len(messages) - 1:
            pending.append(str(message["content"]))
            continue
        if pending:
            message = {**message, "content": "\n\n".join([*pending, str(message["content"])])}
            pending = []
        folded.append(message)
    return folded


def _repair_instruction(error: LLMMalformedOutput) -> str:
    problems = "; ".join(error.errors[:6]) or str(error)
    return (
        f"That reply is not valid: {_short(problems, 400)}. Reply again with only the "
        "corrected JSON object, matching the schema, and nothing else."
    )


def _with_max_tokens(request: LLMRequest, max_tokens: int) -> LLMRequest:
    return replace(request, max_tokens=max_tokens)


def _fit_context(
    messages: list[dict[str, Any]], max_tokens: int | None, window: int, role: str
) -> tuple[list[dict[str, Any]], int | None]:
    """``messages`` within a context window of ``window`` tokens: the leading system
    messages (the stable prompt, the schema), the system messages right before the last
    message (the actor's per-turn contract) and the last message are kept; history in between
    is dropped oldest first; then the reply budget shrinks to what is left. Raises ``LLMError``
    when even the kept messages leave no room — failing closed beats a silently cut contract.
    Token counts are estimated on the generous side (three characters a token)."""
    reserve = max_tokens if max_tokens is not None else REPLY_RESERVE_TOKENS
    head = 0
    while head < len(messages) - 1 and messages[head]["role"] == "system":
        head += 1
    tail = len(messages) - 1
    while tail > head and messages[tail - 1]["role"] == "system":
        tail -= 1
    kept_head, history, last = messages[:head], messages[head:tail], messages[tail:]

    def size(items: Sequence[Mapping[str, Any]]) -> int:
        return sum(math.ceil(len(str(item.get("content", ""))) / 3) + 4 for item in items)

    fixed = size(kept_head) + size(last)
    while history and fixed + size(history) + reserve > window:
        history = history[1:]
    prompt = fixed + size(history)
    if prompt + reserve > window:
        room = window - prompt
        if room < MIN_REPLY_TOKENS:
            raise LLMError(
                f"the {role} prompt needs about {prompt} tokens, more than the context window "
                f"of {window} leaves (PEDRAG_CONTEXT_TOKENS or the server's /v1/models)",
                role=role,
            )
        max_tokens = room
    return [*kept_head, *history, *last], max_tokens


_CONTEXT_KEYS = ("max_model_len", "context_length", "context_window", "max_context_length", "n_ctx")


def _context_window(entry: Mapping[str, Any]) -> int | None:
    """The context window a ``/v1/models`` entry reports (vLLM ``max_model_len``, OpenRouter
    ``context_length``, llama.cpp ``meta.n_ctx``/``n_ctx_train``), if any."""
    sources = [entry, entry.get("meta") if isinstance(entry.get("meta"), Mapping) else {}]
    for source in sources:
        for key in (*_CONTEXT_KEYS, "n_ctx_train"):
            value = source.get(key)  # type: ignore[union-attr]
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def _lacks_version(base_url: str) -> bool:
    """Whether the URL has no ``/v1``-like part: the usual mistake behind a 404."""
    return not re.search(r"/v\d+(beta)?(/|$)", urllib.parse.urlsplit(base_url).path)


def _retry_after(error: Exception) -> float | None:
    """Seconds a 429/503 asks to wait (``retry-after-ms``, ``Retry-After`` in seconds or as
    an HTTP date), if it says."""
    if not isinstance(error, openai.APIStatusError) or error.status_code not in (429, 503):
        return None
    headers = error.response.headers
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _is_content_filter(error: openai.APIStatusError) -> bool:
    code = getattr(error, "code", None)
    return code == "content_filter" or "content_filter" in str(error.message).lower()


def _with_schema_instruction(
    messages: list[dict[str, Any]], schema: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Ask for the JSON in words, for servers that reject ``response_format``."""
    instruction = (
        "Reply with a single JSON object and nothing else. It must match this JSON Schema:\n"
        + json.dumps(schema, sort_keys=True)
    )
    if messages and messages[0]["role"] == "system":
        first = {**messages[0], "content": f"{messages[0]['content']}\n\n{instruction}"}
        return [first, *messages[1:]]
    return [{"role": "system", "content": instruction}, *messages]


def _token_counts(completion: Any, request: LLMRequest, text: str) -> tuple[int, int]:
    """Tokens from ``usage``; when a server omits it, a generous estimate — the budget stage
    fails closed on cost, so undercounting to zero would defeat it."""
    return _usage_counts(getattr(completion, "usage", None), request, text)


def _usage_counts(usage: Any, request: LLMRequest, text: str) -> tuple[int, int]:
    prompt_tokens = getattr(usage, "prompt_tokens", None)
    completion_tokens = getattr(usage, "completion_tokens", None)
    if prompt_tokens is None:
        prompt_tokens = sum(_estimate_tokens(content) + 4 for _, content in request.messages)
    if completion_tokens is None:
        completion_tokens = _estimate_tokens(text)
    return int(prompt_tokens), int(completion_tokens)


def _estimate_tokens(text: str) -> int:
    # About four characters per token for English text.
    return math.ceil(len(text) / 4)


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


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


def _as_vector(embedding: Any) -> list[float]:
    """One embedding as floats; TypeError/ValueError when it is not a flat list of numbers."""
    if not isinstance(embedding, list | tuple):
        raise TypeError("not a list")
    return [float(value) for value in embedding]


def _not_vectors(url: str) -> str:
    # e.g. llama-cpp-python's server with a chat model: one vector per token, no pooling
    return (
        f"{url} answered the embedding request with something other than one list of numbers "
        "per text (one vector per token? the server must pool them: use an embedding model)"
    )
