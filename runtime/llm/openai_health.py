"""The ``openai`` backend's health checks, run by the commands before their first turn or index.

Runtime stage: LLM backends (health). Takes the configured endpoint; gives an
:class:`EndpointReport` (models listed, context window, the tiny request's latency) or raises
:class:`EndpointProblem` whose message names the URL (without credentials) and the fix.
"""

from __future__ import annotations

import re
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import openai

from pedrag.runtime.llm.interface import (
    ROLES,
    LLMError,
    LLMRequest,
    Role,
)
from pedrag.runtime.llm.openai_profile import (
    _context_window,
    _server_kind,
)
from pedrag.runtime.llm.openai_transport import (
    HEALTH_ROLE,
    ROLE_HEADER,
    OpenAITransport,
    _short,
)


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


class OpenAIHealth(OpenAITransport):
    """``/v1/models`` and a tiny request, for chat (:meth:`check`) and embeddings."""

    def check(self, roles: Sequence[Role] = ROLES) -> EndpointReport:
        """The endpoint's health, before any turn: ``/v1/models`` answers and lists the
        models ``roles`` use (when it lists any), then one tiny chat request succeeds.
        Raises :class:`EndpointProblem` naming the URL and the fix; remembers the context
        window the listing reports, and the server kind it shows (llama.cpp's)."""
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
            entry = entries.get(model, {})
            found = _context_window(entry)
            if found is not None:
                self._profile_for(model).context_tokens = found
                context = found if context is None else min(context, found)
            if _server_kind(entry):
                self._profile_for(model).server = _server_kind(entry)
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


def _lacks_version(base_url: str) -> bool:
    """Whether the URL has no ``/v1``-like part: the usual mistake behind a 404."""
    return not re.search(r"/v\d+(beta)?(/|$)", urllib.parse.urlsplit(base_url).path)


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
