"""What an OpenAI-compatible endpoint showed it supports, learned from its error answers.

Runtime stage: LLM backends (adaptation). Takes a server's error answer to a request and the
arguments sent; gives the process-wide :class:`EndpointProfile` of that endpoint and model,
changed by the lesson: the next structured-output convention (``json_schema`` ->
``json_object`` -> prompted), or a quirk (``max_completion_tokens``, no ``temperature``, no
``stream_options``, no system message after the history); and what the server said it is
(llama.cpp's ``llama-server``, which is then asked to reuse its prompt cache). A lesson is
learned only when the error names the parameter, never from the status alone; a second
session does not pay for the first one's lesson.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import openai

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

#: The server kind of llama.cpp's own ``llama-server``, which reuses the KV cache of a
#: previous request's common prefix when asked (``cache_prompt``; older builds drop the cache
#: without it). Known from its ``/v1/models`` listing (``owned_by: "llamacpp"``) or from the
#: ``timings`` object it adds to every completion. llama-cpp-python's server (``owned_by:
#: "me"``, no ``timings``) reuses the common prefix by itself and ignores unknown fields.
LLAMA_CPP = "llama.cpp"

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
    #: What the server said it is (:data:`LLAMA_CPP`), or "" when it did not say.
    server: str = ""
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


def _server_kind(entry: Mapping[str, Any]) -> str:
    """The server kind a ``/v1/models`` entry says it comes from ("" when it says none we
    know): llama.cpp's ``llama-server`` lists its models as ``owned_by: "llamacpp"``."""
    return LLAMA_CPP if entry.get("owned_by") == "llamacpp" else ""


def _answered_by_llama_cpp(completion: Any) -> bool:
    """Whether a chat completion carries llama.cpp's ``timings`` object (its server adds it
    to every answer; the ``openai`` client keeps such extra fields)."""
    extra = getattr(completion, "model_extra", None)
    return isinstance(extra, Mapping) and isinstance(extra.get("timings"), Mapping)


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
