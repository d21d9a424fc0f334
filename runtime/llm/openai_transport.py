"""The ``openai`` backend's transport: one chat request shaped, sent, retried, mapped and priced.

Runtime stage: LLM backends (transport). Takes an :class:`~pedrag.runtime.llm.interface.LLMRequest`
and the backend's settings; gives the server's answer, or exactly one ``LLMError`` after a
bounded number of retries that this module owns (the client's own retries are off so the count
is predictable; a ``Retry-After`` on 429/503 is honoured). Shaping a request means the
endpoint profile's convention and quirks, the schema in words where the server does not hold
replies to it, and the context window (oldest history dropped, never the contract). Every
finished call is priced and added to the backend's usage here, streamed or not.
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import openai

from pedrag.runtime.llm.interface import (
    LLMError,
    LLMRefusal,
    LLMRequest,
    LLMResponse,
    LLMTimeout,
    LLMUnavailable,
    Role,
    Usage,
)
from pedrag.runtime.llm.openai_profile import (
    _ADAPTABLE_STATUSES,
    _MAX_COMPLETION_TOKENS,
    _NO_LATE_SYSTEM,
    _NO_STREAM_OPTIONS,
    _NO_TEMPERATURE,
    CONVENTIONS,
    JSON_OBJECT,
    JSON_SCHEMA,
    LLAMA_CPP,
    EndpointProfile,
    _answered_by_llama_cpp,
    _error_text,
    _fold_late_systems,
    _names_any,
    _quirk_for,
    endpoint_profile,
)
from pedrag.runtime.llm.openai_settings import (
    OpenAISettings,
    display_url,
)
from pedrag.runtime.llm.pricing import Price

logger = logging.getLogger(__name__)

#: Tokens kept free for the reply when a request sets no ``max_tokens``.
REPLY_RESERVE_TOKENS = 512
#: Below this many tokens left for the reply, a request does not fit the context window.
MIN_REPLY_TOKENS = 16
#: The reply cap sent with a priced request that has none (no ``max_tokens``, no
#: ``PEDRAG_MAX_TOKENS``) to a model whose context window is not known: the worst-case cost
#: assumes it, so it is sent, and the bound holds.
UNCAPPED_REPLY_TOKENS = 4096

#: Sent with every request so logs and the test server can tell the roles apart; real
#: endpoints ignore unknown headers.
ROLE_HEADER = "X-Pedrag-Role"
#: The role header of the health check's one-token request.
HEALTH_ROLE = "health"

_T = TypeVar("_T")


class OpenAITransport:
    """Settings, client, retries, error mapping and accounting of an ``openai`` backend; the
    chat, streaming and health parts extend it (:class:`~pedrag.runtime.llm.openai_backend.OpenAIBackend`)."""

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
                answer = self._client.chat.completions.create(**arguments)
            except openai.APIStatusError as error:
                if error.status_code not in _ADAPTABLE_STATUSES:
                    raise
                if not self._learn(profile, error, arguments, convention, quirks, request.role):
                    raise
                continue
            if not stream and not profile.server and _answered_by_llama_cpp(answer):
                self._learn_server(profile, LLAMA_CPP, model)
            return answer, convention
        raise LLMError(f"{self.url} kept rejecting the {request.role} request's parameters")

    def _learn_server(self, profile: EndpointProfile, server: str, model: str) -> None:
        """Remember that ``model``'s endpoint is ``server`` (once, logged like a lesson)."""
        with profile.lock:
            if profile.server:
                return
            profile.server = server
            profile.events.append(f"server: {server} (its answer carries timings)")
        logger.info("%s (%s) is %s: prompts are sent with cache_prompt", self.url, model, server)

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
        max_tokens, _ = self._reply_limit(request, model)
        window = self._window(profile)
        if window is not None:
            # A priced call's bound assumes no reply outlasts the window: say so to the server
            # too (PEDRAG_CONTEXT_TOKENS may be smaller than the server's own window).
            cap = max_tokens is None and self._price(request.role, model, model) is not None
            messages, max_tokens = _fit_context(
                messages, max_tokens, window, request.role, cap_reply=cap
            )
        if _NO_LATE_SYSTEM in quirks:
            messages = _fold_late_systems(messages)
        arguments["messages"] = messages
        if profile.server == LLAMA_CPP:
            # Reuse the KV cache of the previous request's common prefix (the stable system
            # prompt, the history): llama-server's own field, which older builds need asked.
            arguments["extra_body"] = {"cache_prompt": True}
        if request.temperature is not None and _NO_TEMPERATURE not in quirks:
            arguments["temperature"] = request.temperature
        if max_tokens is not None:
            key = "max_completion_tokens" if _MAX_COMPLETION_TOKENS in quirks else "max_tokens"
            arguments[key] = max_tokens
        return arguments

    def _window(self, profile: EndpointProfile) -> int | None:
        """The context window: ``PEDRAG_CONTEXT_TOKENS``, else what ``/v1/models`` said."""
        return self.settings.context_tokens or profile.context_tokens

    def _reply_limit(self, request: LLMRequest, model: str) -> tuple[int | None, int]:
        """The reply cap to send (``None``: none) and the most tokens the reply can have,
        which the worst-case cost (``max_cost_usd``) assumes, in this order: the request's
        ``max_tokens`` or ``PEDRAG_MAX_TOKENS[_<ROLE>]`` (sent; the server stops there); else
        the context window (prompt and reply share it, so no reply is longer; a priced
        request is sent the room the prompt leaves, :func:`_fit_context`); else, for a priced
        model, :data:`UNCAPPED_REPLY_TOKENS`, sent as the cap so
        that the bound is one the server keeps. An unpriced call reserves nothing and is sent
        without a cap, as asked."""
        cap = self.settings.max_tokens_for(request.role, request.max_tokens)
        if cap is not None:
            return cap, cap
        window = self._window(self._profile_for(model))
        if window is not None:
            return None, window
        if self._price(request.role, model, model) is None:
            return None, UNCAPPED_REPLY_TOKENS
        return UNCAPPED_REPLY_TOKENS, UNCAPPED_REPLY_TOKENS

    def _failed(self, role: str, error: LLMError) -> None:
        with self._usage_lock:
            self.failures.append((role, f"{type(error).__name__}: {error}"))

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
        *,
        failed: LLMError | None = None,
        cached_tokens: int | None = None,
    ) -> LLMResponse:
        """The response of one finished call (streamed or not), priced and added to usage.

        The one place for what a call counts as, streamed or not: an answer that was used is a
        call; ``failed`` — the error of a call that failed after the server answered (a
        malformed, refused or empty reply, a failed repair round, a stream cut off or
        refused) — makes it what that call spent: its tokens and cost are added to usage, not
        as a call, and the error carries it (``failed.spent``, text empty) so the budget
        settles the reservation with it rather than giving it back."""
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
            cached_tokens=cached_tokens,
        )
        self._record(response, failed=failed is not None)
        if failed is not None and failed.spent is None:
            failed.spent = replace(response, text="", parsed=None)
        return response

    def _record(self, response: LLMResponse, *, failed: bool = False) -> None:
        with self._usage_lock:
            self.usage.record(response, failed=failed)


def _fit_context(
    messages: list[dict[str, Any]],
    max_tokens: int | None,
    window: int,
    role: str,
    *,
    cap_reply: bool = False,
) -> tuple[list[dict[str, Any]], int | None]:
    """``messages`` within a context window of ``window`` tokens: the leading system
    messages (the stable prompt, the schema), the system messages right before the last
    message (the actor's per-turn contract) and the last message are kept; history in between
    is dropped oldest first; then the reply budget shrinks to what is left (``cap_reply``: an
    uncapped reply is given what is left as its cap, so no reply outlasts ``window``, even on
    a server whose own window is larger). Raises ``LLMError``
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
    elif cap_reply and max_tokens is None:
        max_tokens = window - prompt
    return [*kept_head, *history, *last], max_tokens


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


def _cached_tokens(usage: Any, extra: Any) -> int | None:
    """The prompt tokens a server says it read from its prefix cache: OpenAI's
    ``usage.prompt_tokens_details.cached_tokens`` (vLLM and llama-server send it too), else
    llama.cpp's ``timings.cache_n`` (``extra``: the answer's fields beyond OpenAI's); ``None``
    when it says neither."""
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None)
    if isinstance(cached, int) and not isinstance(cached, bool):
        return cached
    timings = extra.get("timings") if isinstance(extra, Mapping) else None
    cached = timings.get("cache_n") if isinstance(timings, Mapping) else None
    if isinstance(cached, int) and not isinstance(cached, bool):
        return cached
    return None


def _estimate_tokens(text: str) -> int:
    # About four characters per token for English text.
    return math.ceil(len(text) / 4)


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
