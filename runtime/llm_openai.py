"""The ``openai`` LLM backend: any OpenAI-compatible endpoint through the official client.

Runtime stage: LLM backends. Takes an :class:`~pedrag.runtime.llm.LLMRequest`, gives an
:class:`~pedrag.runtime.llm.LLMResponse`; configured from the environment (see
``docs/llm.md``): ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``PEDRAG_MODEL`` and
``PEDRAG_MODEL_<ROLE>``, ``PEDRAG_LLM_TIMEOUT``, ``PEDRAG_LLM_RETRIES``, prices.

Why it is more than a thin wrapper: the turn loop fails closed, so every failure must arrive as
one of the ``LLMError`` classes — never as an ``openai`` or ``httpx`` exception — after a bounded
number of retries that this module owns (the client's own retries are switched off so the
count is predictable). And "OpenAI-compatible" servers differ: some ignore or reject
``response_format``, some reasoning models reject ``max_tokens`` or ``temperature``; the backend
adapts once per server and remembers, so callers write one request for all of them.

``stream`` sends the same request with ``stream=True`` and yields the text deltas as the server
sends them. Retries happen only before the first delta (opening the stream); an error after it
— an error event in the stream, a dropped connection, a read timeout — ends the stream with the
mapped ``LLMError``, since text already handed out cannot be taken back. Usage comes from the
final chunk (``stream_options={"include_usage": True}``) and is estimated when a server omits
it or the stream ends early.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import openai

from pedrag.runtime.llm import (
    ROLES,
    LLMError,
    LLMRefusal,
    LLMRequest,
    LLMResponse,
    LLMStream,
    LLMTimeout,
    LLMUnavailable,
    Role,
    Usage,
    parse_structured,
)
from pedrag.runtime.pricing import FREE, Price, price_for, price_override_from_env

__all__ = [
    "DEFAULT_MODEL",
    "ROLE_HEADER",
    "OpenAIBackend",
    "OpenAISettings",
    "backend_from_env",
]

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_RETRIES = 2
DEFAULT_BACKOFF_S = 0.5
EMBEDDING_BATCH_SIZE = 128

#: Sent with every request so logs and the test server can tell the roles apart; real
#: endpoints ignore unknown headers.
ROLE_HEADER = "X-Pedrag-Role"

_T = TypeVar("_T")

# Server quirks learned from HTTP 400 answers, each applied at most once per backend.
_NO_RESPONSE_FORMAT = "no_response_format"
_MAX_COMPLETION_TOKENS = "max_completion_tokens"
_NO_TEMPERATURE = "no_temperature"
_NO_STREAM_OPTIONS = "no_stream_options"


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
    price_override: Price | None = None

    def model_for(self, role: str) -> str:
        return self.role_models.get(role, self.default_model)

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> OpenAISettings:
        """Read ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``PEDRAG_MODEL``,
        ``PEDRAG_MODEL_<ROLE>``, ``PEDRAG_EMBEDDING_MODEL``, ``PEDRAG_LLM_TIMEOUT`` (seconds),
        ``PEDRAG_LLM_RETRIES``, ``PEDRAG_LLM_BACKOFF`` (seconds) and the price overrides.
        Raises ``ValueError`` naming the variable when a value is unusable."""

        def text(name: str, default: str) -> str:
            return env.get(name, "").strip() or default

        default_model = text("PEDRAG_MODEL", DEFAULT_MODEL)
        role_models: dict[str, str] = {
            role: env[f"PEDRAG_MODEL_{role.upper()}"].strip()
            for role in ROLES
            if env.get(f"PEDRAG_MODEL_{role.upper()}", "").strip()
        }
        return cls(
            base_url=text("OPENAI_BASE_URL", DEFAULT_BASE_URL),
            # Local servers often need no key, but the client insists on one.
            api_key=text("OPENAI_API_KEY", "unused"),
            default_model=default_model,
            role_models=role_models,
            embedding_model=text("PEDRAG_EMBEDDING_MODEL", DEFAULT_EMBEDDING_MODEL),
            timeout_s=_number(env, "PEDRAG_LLM_TIMEOUT", DEFAULT_TIMEOUT_S, minimum=0.001),
            retries=int(_number(env, "PEDRAG_LLM_RETRIES", DEFAULT_RETRIES, minimum=0, whole=True)),
            backoff_s=_number(env, "PEDRAG_LLM_BACKOFF", DEFAULT_BACKOFF_S, minimum=0),
            price_override=price_override_from_env(env),
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
    """:class:`~pedrag.runtime.llm.LLMBackend` over an OpenAI-compatible endpoint.

    Thread-safe. ``usage`` accumulates every successful call (chat and embeddings) by role.
    ``sleep`` is what waits between retries; tests pass a recorder to stay fast.
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
        self._quirks: set[str] = set()
        self._usage_lock = threading.Lock()
        self.usage = Usage()

    def model_for(self, role: Role) -> str:
        return self.settings.model_for(role)

    # -- chat ------------------------------------------------------------------------------

    def complete(self, request: LLMRequest) -> LLMResponse:
        """Send ``request``; retry timeouts, 5xx and 429 with exponential backoff."""
        model = self.model_for(request.role)
        started = time.monotonic()
        completion, attempts = self._with_retries(
            lambda: self._create_chat(request, model), role=request.role, model=model
        )
        try:
            return self._interpret(request, model, completion, attempts, started)
        except LLMError as error:
            error.attempts = attempts
            raise

    def stream(self, request: LLMRequest) -> LLMStream:
        """Send ``request`` streamed; the deltas as they arrive (see the module docstring)."""
        return LLMStream(lambda handle: self._stream_deltas(request, handle))

    def _stream_deltas(self, request: LLMRequest, handle: LLMStream) -> Iterator[str]:
        role = request.role
        model = self.model_for(role)
        started = time.monotonic()
        chunks, attempts = self._with_retries(
            lambda: self._create_chat(request, model, stream=True), role=role, model=model
        )
        parts: list[str] = []
        usage: Any = None
        finish_reason: str | None = None
        answered_model = model
        parsed: dict[str, Any] | None = None
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
                        parts.append(content)
                        yield content
            text = "".join(parts)
            if finish_reason is None:
                message = (
                    f"the {role} stream from {self.settings.base_url} ended before the reply did"
                )
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
            )

    def _create_chat(self, request: LLMRequest, model: str, *, stream: bool = False) -> Any:
        while True:
            arguments = self._chat_arguments(request, model)
            if stream:
                arguments["stream"] = True
                if _NO_STREAM_OPTIONS not in self._quirks:
                    arguments["stream_options"] = {"include_usage": True}
            try:
                return self._client.chat.completions.create(**arguments)
            except openai.BadRequestError as error:
                quirk = _quirk_for(error, arguments)
                if quirk is None or quirk in self._quirks:
                    raise
                logger.warning(
                    "%s rejected a request parameter (%s); retrying without it from now on",
                    self.settings.base_url,
                    _short(error.message),
                )
                self._quirks.add(quirk)

    def _chat_arguments(self, request: LLMRequest, model: str) -> dict[str, Any]:
        messages = [{"role": who, "content": content} for who, content in request.messages]
        arguments: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "extra_headers": {ROLE_HEADER: request.role},
        }
        if request.json_schema is not None:
            if _NO_RESPONSE_FORMAT in self._quirks:
                arguments["messages"] = _with_schema_instruction(messages, request.json_schema)
            else:
                arguments["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": request.schema_name,
                        "schema": request.json_schema,
                        "strict": True,
                    },
                }
        if request.temperature is not None and _NO_TEMPERATURE not in self._quirks:
            arguments["temperature"] = request.temperature
        if request.max_tokens is not None:
            key = (
                "max_completion_tokens" if _MAX_COMPLETION_TOKENS in self._quirks else "max_tokens"
            )
            arguments[key] = request.max_tokens
        return arguments

    def _interpret(
        self, request: LLMRequest, model: str, completion: Any, attempts: int, started: float
    ) -> LLMResponse:
        role = request.role
        choices = getattr(completion, "choices", None)
        if not isinstance(choices, list):
            raise LLMUnavailable(
                f"{self.settings.base_url} answered with something that is not a chat completion",
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
        text = message.content or ""
        if finish_reason == "content_filter":
            raise LLMRefusal(
                f"the {role} model's answer was blocked by a content filter", role=role, model=model
            )
        if not text.strip():
            raise LLMRefusal(
                f"the {role} model returned an empty answer (finish_reason={finish_reason})",
                role=role,
                model=model,
            )
        answered_model = str(getattr(completion, "model", None) or model)
        parsed = None
        if request.json_schema is not None:
            parsed = parse_structured(
                text,
                request.json_schema,
                role=role,
                model=answered_model,
                finish_reason=finish_reason,
            )
        prompt_tokens, completion_tokens = _token_counts(completion, request, text)
        return self._account(
            text,
            parsed,
            answered_model,
            model,
            prompt_tokens,
            completion_tokens,
            started,
            role,
            finish_reason,
        )

    # -- embeddings ------------------------------------------------------------------------

    def embed(self, texts: Sequence[str], *, role: Role = "extractor") -> list[list[float]]:
        """One vector per text, in order, from ``/v1/embeddings`` (``PEDRAG_EMBEDDING_MODEL``).
        Same retries and error mapping as :meth:`complete`; usage is filed under ``role``."""
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
            vectors.extend([float(value) for value in item.embedding] for item in data)
            usage = getattr(result, "usage", None)
            prompt_tokens = getattr(usage, "prompt_tokens", None)
            if prompt_tokens is None:
                prompt_tokens = sum(_estimate_tokens(text) for text in batch)
            answered_model = str(getattr(result, "model", None) or model)
            self._record(
                LLMResponse(
                    text="",
                    model=answered_model,
                    prompt_tokens=prompt_tokens,
                    cost_usd=self._price(answered_model, model).cost(prompt_tokens, 0),
                    latency_ms=(time.monotonic() - started) * 1000,
                    role=role,
                )
            )
        return vectors

    # -- shared machinery ------------------------------------------------------------------

    def _with_retries(self, send: Callable[[], _T], *, role: str, model: str) -> tuple[_T, int]:
        """Call ``send`` up to ``1 + retries`` times; return its result and the attempt count,
        or raise the mapped :class:`LLMError` of the last failure."""
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
        where = self.settings.base_url
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

    def _price(self, answered_model: str, requested_model: str) -> Price:
        if self.settings.price_override is not None:
            return self.settings.price_override
        price = price_for(answered_model)
        return price if price != FREE else price_for(requested_model)

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
    ) -> LLMResponse:
        """The response of one finished call (streamed or not), priced and added to usage."""
        response = LLMResponse(
            text=text,
            parsed=parsed,
            model=answered_model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=self._price(answered_model, asked_model).cost(
                prompt_tokens, completion_tokens
            ),
            latency_ms=(time.monotonic() - started) * 1000,
            role=role,
            finish_reason=finish_reason,
        )
        self._record(response)
        return response

    def _record(self, response: LLMResponse) -> None:
        with self._usage_lock:
            self.usage.record(response)


def _quirk_for(error: openai.BadRequestError, arguments: Mapping[str, Any]) -> str | None:
    """Which server quirk a 400 reveals, if it is one we can work around."""
    text = f"{error.message} {getattr(error, 'param', '') or ''}".lower()
    if "response_format" in arguments and ("response_format" in text or "json_schema" in text):
        return _NO_RESPONSE_FORMAT
    if "max_tokens" in arguments and "max_completion_tokens" in text:
        return _MAX_COMPLETION_TOKENS
    if "temperature" in arguments and "temperature" in text:
        return _NO_TEMPERATURE
    if "stream_options" in arguments and "stream_options" in text:
        return _NO_STREAM_OPTIONS
    return None


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
