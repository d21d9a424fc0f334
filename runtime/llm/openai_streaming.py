"""The ``openai`` backend's streamed chat: text deltas as the server sends them.

Runtime stage: LLM backends (streaming). Takes an :class:`~pedrag.runtime.llm.interface.LLMRequest`;
gives an :class:`~pedrag.runtime.llm.interface.LLMStream` of text deltas (``<think>`` blocks
removed as they pass). Retries happen only before the first delta (opening the stream); an error
after it — an error event, a dropped connection, a read timeout — ends the stream with the mapped
``LLMError``, since text already handed out cannot be taken back. Usage comes from the final
chunk (``stream_options={"include_usage": True}``) and is estimated when a server omits it or
the stream ends early; the call is accounted once however the stream ends — as a call when it
ends well or is closed by its caller, and as a failed plain call is (tokens and cost in usage,
not a call; the cost on ``LLMError.spent``) when it ends with an error once open.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from pedrag.runtime.llm.interface import (
    LLMError,
    LLMRefusal,
    LLMRequest,
    LLMStream,
    LLMUnavailable,
    ReasoningFilter,
    parse_structured,
)
from pedrag.runtime.llm.openai_transport import (
    OpenAITransport,
    _cached_tokens,
    _usage_counts,
)


class OpenAIStreaming(OpenAITransport):
    """Streamed chat over the transport."""

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
        timings: Any = None
        finish_reason: str | None = None
        answered_model = model
        parsed: dict[str, Any] | None = None
        reasoning = ReasoningFilter()
        failure: LLMError | None = None
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
                extra = getattr(chunk, "model_extra", None)
                if isinstance(extra, dict) and extra.get("timings"):
                    timings = extra  # llama.cpp's, on the last chunk
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
        except LLMError as error:
            failure = error
            raise
        finally:
            # However the stream ends (done, failed, closed by the caller): drop the connection
            # and account the call once, estimating what the server did not report. A stream
            # that failed once open was answered and paid for: it counts as a failed plain
            # call does (``_account``), and the stream's response still says what it spent.
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
                failed=failure,
                cached_tokens=_cached_tokens(usage, timings),
            )
