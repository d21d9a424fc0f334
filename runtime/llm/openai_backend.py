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

The backend is composed of one part per concept: ``openai_settings`` (configuration),
``openai_profile`` (what an endpoint showed it supports), ``openai_transport`` (shaping, retries,
error mapping, accounting), ``openai_streaming`` and ``openai_health``; this module adds the
non-streamed chat with its repair round and embeddings, and is where callers import from.

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
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pedrag.runtime.llm.interface import (
    LLMError,
    LLMMalformedOutput,
    LLMRefusal,
    LLMRequest,
    LLMResponse,
    LLMUnavailable,
    Role,
    parse_structured,
    strip_reasoning,
)
from pedrag.runtime.llm.openai_health import (
    EndpointProblem,
    EndpointReport,
    OpenAIHealth,
    _as_vector,
    _not_vectors,
)
from pedrag.runtime.llm.openai_profile import (
    CONVENTIONS,
    JSON_SCHEMA,
    EndpointProfile,
    forget_endpoint,
)
from pedrag.runtime.llm.openai_settings import (
    DEFAULT_MODEL,
    EMBEDDING_BATCH_SIZE,
    OpenAISettings,
    display_url,
)
from pedrag.runtime.llm.openai_streaming import OpenAIStreaming
from pedrag.runtime.llm.openai_transport import (
    ROLE_HEADER,
    _cached_tokens,
    _estimate_tokens,
    _short,
    _token_counts,
)

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

#: Tokens a chat template may add around each message (and to prime the reply), for the bound.
MESSAGE_FRAMING_TOKENS = 16


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


class OpenAIBackend(OpenAIStreaming, OpenAIHealth):
    """:class:`~pedrag.runtime.llm.interface.LLMBackend` over an OpenAI-compatible endpoint.

    Thread-safe. ``usage`` accumulates every successful call (chat and embeddings) by role;
    ``failures`` lists ``(role, message)`` for every call that raised, in order, so a command
    can warn as they happen and sum them up at the end. ``sleep`` is what waits between
    retries; tests pass a recorder to stay fast.
    """

    # -- chat ------------------------------------------------------------------------------

    def max_cost_usd(self, request: LLMRequest) -> float | None:
        """An upper bound of what :meth:`complete` can cost for ``request``, known before it is
        sent (the budget reserves it, ``runtime/turn/budget.py``): the prompt at one token per
        UTF-8 byte (a byte-level tokenizer never makes more) plus each message's framing, the
        whole reply budget, and for a structured request the repair round it may need (the
        reply, the validation errors and twice the reply budget). ``None`` when the model has
        no price. Generous by design: near a cap, a call is refused rather than risked.

        The reply budget is the request's ``max_tokens`` (or ``PEDRAG_MAX_TOKENS``), else the
        context window, else ``UNCAPPED_REPLY_TOKENS``, which is then sent as the cap
        (``_reply_limit``), so no reply can pass the bound. A server that answers with a
        dearer model than the one asked for costs what that model does."""
        model = self.model_for(request.role)
        price = self._price(request.role, model, model)
        if price is None:
            return None
        _, reply = self._reply_limit(request, model)
        prompt = MESSAGE_FRAMING_TOKENS + sum(
            len(content.encode("utf-8")) + MESSAGE_FRAMING_TOKENS for _, content in request.messages
        )
        if request.json_schema is None:
            return price.cost(prompt, reply)
        prompt += len(json.dumps(request.json_schema)) + 100  # the schema in words
        return price.cost(prompt, reply) + price.cost(prompt + reply + 200, 2 * reply)

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
        answers = _Answers(model)
        try:
            return self._complete_counted(request, model, started, answers)
        except LLMError as error:
            if answers.count and error.spent is None:
                # The server answered and was paid, though the call failed (malformed,
                # refused, empty, or its repair round failed): ``_account`` says what that
                # counts as and hands the cost to the error.
                self._account(
                    "",
                    None,
                    answers.model,
                    model,
                    answers.prompt_tokens,
                    answers.completion_tokens,
                    started,
                    request.role,
                    "failed",
                    failed=error,
                    cached_tokens=answers.cached_tokens,
                )
            raise

    def _complete_counted(
        self, request: LLMRequest, model: str, started: float, answers: _Answers
    ) -> LLMResponse:
        """:meth:`complete`, counting each answer the server sends in ``answers`` as soon as
        it arrives, before it is checked."""
        completion, attempts, convention = self._send(request, model, ())
        answers.add(completion, request)
        text, finish_reason = self._reply_text(request, model, completion, attempts)
        parsed: dict[str, Any] | None = None
        repairs = 0
        if request.json_schema is not None:
            schema = request.json_schema

            def parse(reply: str, model_name: str, finish: str) -> dict[str, Any]:
                return parse_structured(
                    reply, schema, role=request.role, model=model_name, finish_reason=finish
                )

            try:
                parsed = parse(text, answers.model, finish_reason)
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
                answers.add(completion, request)
                text, finish_reason = self._reply_text(request, model, completion, attempts)
                try:
                    parsed = parse(text, answers.model, finish_reason)
                except LLMMalformedOutput as again:
                    again.attempts = attempts
                    raise
        return self._account(
            text,
            parsed,
            answers.model,
            model,
            answers.prompt_tokens,
            answers.completion_tokens,
            started,
            request.role,
            finish_reason,
            convention,
            repairs,
            cached_tokens=answers.cached_tokens,
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


def _repair_instruction(error: LLMMalformedOutput) -> str:
    problems = "; ".join(error.errors[:6]) or str(error)
    return (
        f"That reply is not valid: {_short(problems, 400)}. Reply again with only the "
        "corrected JSON object, matching the schema, and nothing else."
    )


def _with_max_tokens(request: LLMRequest, max_tokens: int) -> LLMRequest:
    return replace(request, max_tokens=max_tokens)


@dataclass
class _Answers:
    """The answers one call has received so far (a repair round adds one): their tokens, as
    the server reported them or estimated, and the model that answered last."""

    model: str
    count: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = None  # None: the server said nothing about its prompt cache

    def add(self, completion: Any, request: LLMRequest) -> None:
        if not isinstance(getattr(completion, "choices", None), list):
            return  # no chat completion (a wrong base URL answering 200): nothing was generated
        prompt_tokens, completion_tokens = _token_counts(completion, request, _content(completion))
        self.count += 1
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self.model = str(getattr(completion, "model", None) or self.model)
        extra = getattr(completion, "model_extra", None)
        cached = _cached_tokens(getattr(completion, "usage", None), extra)
        if cached is not None:
            self.cached_tokens = (self.cached_tokens or 0) + cached


def _content(completion: Any) -> str:
    """The first choice's raw text (reasoning included: it was generated and paid for), or ""
    for an answer without one."""
    try:
        return str(completion.choices[0].message.content or "")
    except (AttributeError, IndexError, TypeError):
        return ""
