"""LLM access: the one interface every model call in pedrag goes through.

Runtime stage: LLM backends. Takes an :class:`LLMRequest` (a role, messages, optionally a JSON
Schema for structured output), gives an :class:`LLMResponse` (text, parsed object, tokens,
cost, latency) or raises one of the :class:`LLMError` subclasses.

Why one small interface: the turn loop, extraction and evaluation must not care whether the
model is a remote OpenAI-compatible endpoint (``llm_openai``) or the deterministic offline
backend; they build requests, catch one exception hierarchy and fail closed on it. The
structured-output helpers live here too, so every backend parses and validates replies the
same way.

Streaming is optional: a backend may also offer ``stream(request)``, an iterator of text
deltas (:class:`StreamingBackend`); :func:`open_stream` gives every backend that shape, falling
back to one ``complete`` call yielded whole. An :class:`LLMStream` carries the call's
:class:`LLMResponse` (usage, cost) once it has ended, however it ended.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args, runtime_checkable

from pedrag.kernel.errors import PedragError

Role = Literal[
    "actor", "classifier", "analyzer", "judge", "selector", "extractor", "evaluator", "student"
]
"""Who is calling: each role can be served by its own model (``PEDRAG_MODEL_<ROLE>``)."""

ROLES: tuple[Role, ...] = get_args(Role)

MessageRole = Literal["system", "user", "assistant"]
Message = tuple[MessageRole, str]

_MESSAGE_ROLES: tuple[str, ...] = get_args(MessageRole)
# OpenAI's rule for json_schema names; enforced here so every backend agrees.
_SCHEMA_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class ActorPlan:
    """What the actor's prompt asks for, as data, for a backend that answers without a model
    (the offline one): the action's wordings filled with the topic (the template first, then
    its variants; empty when no exercise is in play), the teaching material the turn may use,
    what the tutor said before in the session (reply fingerprints, the previous reply, the
    reply count, which material is still new), the grader's facts, and whether a refused draft
    is being written again. Never sent to a server: a model reads the prompt, where only what
    it can use appears (issue 30: the per-turn suffix stays short, so a server's prompt cache
    covers most of the prompt)."""

    template: str
    wordings: tuple[str, ...] = ()
    material: Mapping[str, str] = field(default_factory=dict)
    said: Mapping[str, Any] = field(default_factory=dict)
    grader_facts: tuple[str, ...] = ()
    revising: bool = False


@dataclass(frozen=True)
class LLMRequest:
    """One model call. ``json_schema`` asks for a JSON object reply validated against it."""

    role: Role
    messages: tuple[Message, ...]
    json_schema: dict[str, Any] | None = field(default=None, hash=False)
    schema_name: str = "reply"
    temperature: float | None = None
    max_tokens: int | None = None
    # The metric definitions behind ``json_schema`` (name -> MetricField), for a backend that
    # answers without a model (the offline one): a JSON Schema carries no declared default, so
    # rebuilding the metrics from it would turn an inferred metric's default of 0.6 into 0.0.
    # Never sent to a server.
    metric_fields: Mapping[str, Any] | None = field(default=None, hash=False, compare=False)
    # The contract behind a judge's request (the policy core's ``Contract``), for a backend
    # that judges without a model: the offline one reads the object, not the prompt's JSON.
    # Never sent to a server.
    contract: Any = field(default=None, hash=False, compare=False)
    # The actor's plan as data (:class:`ActorPlan`), for a backend that writes the reply
    # without a model. Never sent to a server.
    actor: ActorPlan | None = field(default=None, hash=False, compare=False)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"unknown LLM role {self.role!r}; expected one of {', '.join(ROLES)}")
        # Accept lists for convenience but store tuples so the request stays immutable.
        messages = tuple((str(who), content) for who, content in self.messages)
        for who, content in messages:
            if who not in _MESSAGE_ROLES:
                raise ValueError(
                    f"unknown message role {who!r}; expected system, user or assistant"
                )
            if not isinstance(content, str):
                raise TypeError(f"message content must be str, got {type(content).__name__}")
        if not messages:
            raise ValueError("an LLM request needs at least one message")
        object.__setattr__(self, "messages", messages)
        if not _SCHEMA_NAME.match(self.schema_name):
            raise ValueError(f"schema_name {self.schema_name!r} must match {_SCHEMA_NAME.pattern}")
        if self.temperature is not None and not 0.0 <= self.temperature <= 2.0:
            raise ValueError(f"temperature {self.temperature} is outside [0, 2]")
        if self.max_tokens is not None and self.max_tokens <= 0:
            raise ValueError(f"max_tokens must be positive, got {self.max_tokens}")


@dataclass(frozen=True)
class LLMResponse:
    """What a model call produced and what it cost.

    ``parsed`` is set only when the request had a ``json_schema`` and the reply was a JSON
    object satisfying it. ``role`` echoes the request's role so :class:`Usage` can file it.
    """

    text: str
    parsed: dict[str, Any] | None = None
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    role: Role | None = None
    finish_reason: str = "stop"
    #: How a structured reply was asked for (``json_schema``, ``json_object`` or ``prompted``;
    #: empty for plain text), and how many times it was asked again with the validation
    #: error before it validated (0: it validated on the first try).
    convention: str = ""
    repairs: int = 0
    #: False when no price is known for the model: ``cost_usd`` is then 0 and means
    #: "not known", and reports show tokens only.
    priced: bool = True
    #: Of ``prompt_tokens``, how many the server read from its prefix cache, as it reported
    #: (``usage.prompt_tokens_details.cached_tokens``: OpenAI, vLLM, llama-server; else
    #: llama.cpp's ``timings.cache_n``); ``None`` when it reported nothing about it.
    cached_tokens: int | None = None


@runtime_checkable
class LLMBackend(Protocol):
    """Anything that answers an :class:`LLMRequest`. Implementations raise only
    :class:`LLMError` subclasses, never transport exceptions."""

    def complete(self, request: LLMRequest) -> LLMResponse: ...


@runtime_checkable
class StreamingBackend(LLMBackend, Protocol):
    """A backend that can also stream a reply: ``stream`` gives the text deltas in order.
    Errors (before or during the stream) arrive as :class:`LLMError` while iterating. Returning
    an :class:`LLMStream` lets the caller see the call's usage; a plain iterator is accepted."""

    def stream(self, request: LLMRequest) -> Iterator[str]: ...


class LLMStream(Iterator[str]):
    """The text deltas of one streamed model call.

    Iterate it for the deltas; :meth:`close` stops it early (a remote backend drops the
    connection, so the model stops spending). ``response`` is ``None`` until the stream has
    ended and is then the call's :class:`LLMResponse`: the text received, tokens and cost —
    estimated when the stream failed or was closed after it started, since a budget that
    undercounts an aborted call to zero would not fail closed.

    ``deltas`` is called once with this stream and returns the delta iterator (typically a
    generator); the producer sets ``response`` when it ends, in a ``finally``, so that it is set
    on every way out. Nothing runs before the first ``next``.
    """

    def __init__(self, deltas: Callable[[LLMStream], Iterator[str]]) -> None:
        self.response: LLMResponse | None = None
        self._deltas = deltas(self)

    def __iter__(self) -> LLMStream:
        return self

    def __next__(self) -> str:
        return next(self._deltas)

    def close(self) -> None:
        """Stop early; the producer's clean-up (and usage accounting) runs now."""
        close = getattr(self._deltas, "close", None)
        if close is not None:
            close()


def open_stream(backend: LLMBackend, request: LLMRequest) -> LLMStream:
    """``backend``'s stream of ``request`` as an :class:`LLMStream`. A backend without
    ``stream`` answers with ``complete``, yielded once (a failure's response is its
    ``LLMError.spent``); a ``stream`` returning a plain iterator
    is wrapped, with usage estimated from the text (it reports none)."""
    stream = getattr(backend, "stream", None)
    if stream is None:

        def whole(handle: LLMStream) -> Iterator[str]:
            try:
                response = backend.complete(request)
            except LLMError as error:
                # Answered, paid for, then failed: the stream's response is what it spent,
                # so a budget over the stream settles it as it settles ``complete``.
                handle.response = error.spent
                raise
            handle.response = response
            if response.text:
                yield response.text

        return LLMStream(whole)
    produced = stream(request)
    if isinstance(produced, LLMStream):
        return produced

    def relay(handle: LLMStream) -> Iterator[str]:
        parts: list[str] = []
        try:
            for delta in produced:
                parts.append(delta)
                yield delta
        finally:
            close = getattr(produced, "close", None)
            if close is not None:
                close()
            text = "".join(parts)
            handle.response = LLMResponse(
                text=text,
                prompt_tokens=sum(len(content) for _, content in request.messages) // 4,
                completion_tokens=len(text) // 4,
                role=request.role,
            )

    return LLMStream(relay)


@runtime_checkable
class EmbeddingBackend(Protocol):
    """Anything that turns texts into vectors (used by extraction)."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


# -- errors ---------------------------------------------------------------------------------


class LLMError(PedragError):
    """Base of every LLM failure. Messages never quote the prompt (it may hold student text).

    ``spent`` is what a call that failed *after the server answered* cost — a malformed,
    refused or empty reply, or a repair round that failed after a first reply: the tokens the
    server reported (estimated where it reported none) and their price, as an
    :class:`LLMResponse` whose ``text`` is empty. ``None`` when nothing was answered (a
    timeout, a rejected request). The budget settles a failed call's reservation with it
    rather than releasing it, so tokens paid for are never counted as free."""

    def __init__(
        self,
        message: str,
        *,
        role: str | None = None,
        model: str | None = None,
        attempts: int = 1,
        spent: LLMResponse | None = None,
    ) -> None:
        super().__init__(message)
        self.role = role
        self.model = model
        self.attempts = attempts
        self.spent = spent


class LLMTimeout(LLMError):
    """The endpoint did not answer within the configured timeout (after retries)."""


class LLMUnavailable(LLMError):
    """The endpoint is unreachable, overloaded (HTTP 5xx / 429) or not speaking the protocol."""

    def __init__(
        self,
        message: str,
        *,
        role: str | None = None,
        model: str | None = None,
        attempts: int = 1,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message, role=role, model=model, attempts=attempts)
        self.status_code = status_code


class LLMRefusal(LLMError):
    """The model refused (a ``refusal`` field, a content filter) or returned nothing."""


class LLMMalformedOutput(LLMError):
    """A structured reply was not JSON or did not match the schema. ``raw_text`` holds the
    reply for the audit log; it is kept out of the message."""

    def __init__(
        self,
        message: str,
        *,
        role: str | None = None,
        model: str | None = None,
        attempts: int = 1,
        raw_text: str = "",
        errors: Sequence[str] = (),
    ) -> None:
        super().__init__(message, role=role, model=model, attempts=attempts)
        self.raw_text = raw_text
        self.errors = tuple(errors)


class LLMBudgetExceeded(LLMError):
    """A spending or call cap would be exceeded; the caller must fail closed."""


# -- usage accounting -----------------------------------------------------------------------


@dataclass(frozen=True)
class RoleUsage:
    """Totals for one role.

    ``calls`` counts every call the server answered, as the turn budget does: the ones whose
    answer was used and the ``failed_calls`` among them (answered and paid for, then malformed,
    refused, empty or cut off). ``unpriced_calls`` are the calls without a known price, so
    they are never more than ``calls`` (a failed call once counted as unpriced but not as a
    call, and a report could say "2 unpriced of 1 call")."""

    calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    unpriced_calls: int = 0

    def __add__(self, other: RoleUsage) -> RoleUsage:
        return RoleUsage(
            calls=self.calls + other.calls,
            failed_calls=self.failed_calls + other.failed_calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
            latency_ms=self.latency_ms + other.latency_ms,
            unpriced_calls=self.unpriced_calls + other.unpriced_calls,
        )

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def used_calls(self) -> int:
        """The calls whose answer was used (not failed after the server answered)."""
        return self.calls - self.failed_calls


_NO_USAGE = RoleUsage()


@dataclass
class Usage:
    """Tokens, cost and latency per role, accumulated over calls.

    ``record`` a response after each call; add two ``Usage`` objects (or ``sum`` many) to get
    session or evaluation totals.
    """

    by_role: dict[str, RoleUsage] = field(default_factory=dict)

    def record(
        self, response: LLMResponse, role: str | None = None, *, failed: bool = False
    ) -> None:
        """File ``response`` under its role. ``failed``: what a call that failed after the
        server answered spent (``LLMError.spent``): it counts as a call, as paid for (its
        tokens, cost and price), and as a failed one (``used_calls`` leaves it out)."""
        role = role or response.role
        if role is None:
            raise ValueError("cannot file usage: neither the response nor the caller names a role")
        # The role's entry plus this call's, as ``RoleUsage.__add__`` adds them (the same sums
        # in the same order), built once: a turn records three or four calls, and the two
        # frozen dataclasses more per call were a third of the turn budget's cost (issue 30).
        before = self.by_role.get(role) or _NO_USAGE
        self.by_role[role] = RoleUsage(
            calls=before.calls + 1,
            failed_calls=before.failed_calls + (1 if failed else 0),
            prompt_tokens=before.prompt_tokens + response.prompt_tokens,
            completion_tokens=before.completion_tokens + response.completion_tokens,
            cost_usd=before.cost_usd + response.cost_usd,
            latency_ms=before.latency_ms + response.latency_ms,
            unpriced_calls=before.unpriced_calls + (0 if response.priced else 1),
        )

    def __add__(self, other: Usage) -> Usage:
        combined = dict(self.by_role)
        for role, entry in other.by_role.items():
            combined[role] = combined.get(role, RoleUsage()) + entry
        return Usage(combined)

    def __radd__(self, other: object) -> Usage:
        # Lets sum(usages) start from its default 0.
        if other == 0:
            return Usage(dict(self.by_role))
        if isinstance(other, Usage):
            return other + self
        return NotImplemented

    @property
    def total(self) -> RoleUsage:
        """Every role's entry summed, in the roles' order (what adding them up one after the
        other gives, without a ``RoleUsage`` per role added: the turn budget asks for it after
        every call)."""
        calls = failed_calls = prompt_tokens = completion_tokens = unpriced_calls = 0
        cost_usd = latency_ms = 0.0
        for entry in self.by_role.values():
            calls += entry.calls
            failed_calls += entry.failed_calls
            prompt_tokens += entry.prompt_tokens
            completion_tokens += entry.completion_tokens
            cost_usd += entry.cost_usd
            latency_ms += entry.latency_ms
            unpriced_calls += entry.unpriced_calls
        return RoleUsage(
            calls,
            failed_calls,
            prompt_tokens,
            completion_tokens,
            cost_usd,
            latency_ms,
            unpriced_calls,
        )

    @property
    def calls(self) -> int:
        return self.total.calls

    @property
    def used_calls(self) -> int:
        """The calls whose answer was used: ``calls`` less the ones that failed."""
        return self.total.used_calls

    @property
    def prompt_tokens(self) -> int:
        return self.total.prompt_tokens

    @property
    def completion_tokens(self) -> int:
        return self.total.completion_tokens

    @property
    def total_tokens(self) -> int:
        return self.total.total_tokens

    @property
    def cost_usd(self) -> float:
        return self.total.cost_usd

    @property
    def cost_known(self) -> bool:
        """Whether every call had a price: otherwise ``cost_usd`` undercounts and a report
        should show tokens only."""
        return self.total.unpriced_calls == 0

    def turn_view(self) -> dict[str, dict[str, float]]:
        """Per role, in the order the roles first called, as a turn record's ``usage`` writes
        it (calls, tokens, cost, latency, unpriced calls): the turn budget's view of these
        counts (``BudgetedBackend.by_role``), not a second count. :meth:`to_dict` is the
        full form, roles sorted."""
        return {
            role: {
                "calls": entry.calls,
                "tokens": entry.total_tokens,
                "cost_usd": entry.cost_usd,
                "latency_ms": entry.latency_ms,
                "unpriced_calls": entry.unpriced_calls,
            }
            for role, entry in self.by_role.items()
        }

    def to_dict(self) -> dict[str, dict[str, float | int]]:
        """Plain JSON-ready form, for audit records and reports."""
        return {
            role: {
                "calls": entry.calls,
                "failed_calls": entry.failed_calls,
                "prompt_tokens": entry.prompt_tokens,
                "completion_tokens": entry.completion_tokens,
                "cost_usd": entry.cost_usd,
                "latency_ms": entry.latency_ms,
                "unpriced_calls": entry.unpriced_calls,
            }
            for role, entry in sorted(self.by_role.items())
        }


# -- reasoning blocks -----------------------------------------------------------------------

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)


def strip_reasoning(text: str) -> str:
    """The reply without the ``<think>...</think>`` blocks reasoning models write first.

    An unclosed ``<think>`` (the reply was cut off while thinking) drops everything after it;
    a lone ``</think>`` (chat templates that open the block in the prompt) drops everything
    before it. Why here: the reasoning is not the reply — it must never reach the student,
    and it is not the JSON a structured call asked for."""
    if "think>" not in text.lower():
        return text
    text = _THINK_BLOCK.sub("", text)
    closing = list(_THINK_CLOSE.finditer(text))
    if closing:
        text = text[closing[-1].end() :]
    opening = _THINK_OPEN.search(text)
    if opening:
        text = text[: opening.start()]
    return text.strip()


class ReasoningFilter:
    """:func:`strip_reasoning` for a stream: ``feed`` each delta, get what may be shown;
    ``finish`` at the end. A tag split across deltas is held until it is complete. A lone
    ``</think>`` cannot be undone in a stream (what preceded it is out); the whole-reply
    check after the stream still sees it."""

    _OPEN, _CLOSE = "<think>", "</think>"

    def __init__(self) -> None:
        self._held = ""
        self._thinking = False

    def feed(self, delta: str) -> str:
        self._held += delta
        shown: list[str] = []
        while True:
            lowered = self._held.lower()
            tag = self._CLOSE if self._thinking else self._OPEN
            index = lowered.find(tag)
            if index >= 0:
                if not self._thinking:
                    shown.append(self._held[:index])
                self._held = self._held[index + len(tag) :]
                self._thinking = not self._thinking
                continue
            # Keep a possible partial tag at the end for the next delta.
            keep = _partial_tag_length(lowered, (self._OPEN, self._CLOSE))
            ready = self._held[: len(self._held) - keep]
            self._held = self._held[len(self._held) - keep :]
            if not self._thinking and ready:
                shown.append(ready)
            break
        return "".join(shown)

    def finish(self) -> str:
        rest, self._held = self._held, ""
        return "" if self._thinking else rest


def _partial_tag_length(text: str, tags: tuple[str, ...]) -> int:
    for length in range(min(max(len(tag) for tag in tags) - 1, len(text)), 0, -1):
        tail = text[-length:]
        if any(tag.startswith(tail) for tag in tags):
            return length
    return 0


# -- structured output ----------------------------------------------------------------------

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)


def extract_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a model reply: the whole text, else the first ``` fence, else the
    outermost ``{...}``. Raises ``ValueError`` when there is none.

    Why so forgiving: servers that ignore ``response_format`` often wrap the JSON in prose or
    Markdown fences; the schema check afterwards is what guarantees the shape.
    """
    candidates = [text.strip()]
    fenced = _FENCE.search(text)
    if fenced:
        candidates.append(fenced.group(1).strip())
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    last_error = "the reply is empty"
    for candidate in candidates:
        if not candidate:
            continue
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError as error:
            last_error = f"not valid JSON ({error.msg} at line {error.lineno} column {error.colno})"
            continue
        if isinstance(value, dict):
            return value
        last_error = f"expected a JSON object, got {_json_type(value)}"
    raise ValueError(last_error)


def schema_errors(value: Any, schema: Mapping[str, Any]) -> list[str]:
    """Where ``value`` breaks ``schema``, as ``$.path: problem`` strings (empty when valid).

    A deliberately small JSON Schema subset — ``type``, ``properties``, ``required``,
    ``additionalProperties``, ``items``, ``enum``, ``const``, ``anyOf``/``oneOf``/``allOf``,
    ``minimum``/``maximum``, ``minItems``/``maxItems`` and local ``$ref`` (as pydantic emits) —
    enough to catch a model that ignored the requested shape without adding a dependency.
    """
    errors: list[str] = []
    _check(value, schema, schema, "$", errors)
    return errors


def parse_structured(
    text: str,
    schema: Mapping[str, Any],
    *,
    role: str | None = None,
    model: str | None = None,
    finish_reason: str = "stop",
) -> dict[str, Any]:
    """Parse and validate a structured reply, or raise :class:`LLMMalformedOutput`."""
    truncated = (
        " (the reply was cut off: finish_reason=length)" if finish_reason == "length" else ""
    )
    try:
        value = extract_json_object(text)
    except ValueError as error:
        raise LLMMalformedOutput(
            f"{role or 'LLM'} reply is not a JSON object: {error}{truncated}",
            role=role,
            model=model,
            raw_text=text,
            errors=(str(error),),
        ) from None
    errors = schema_errors(value, schema)
    if errors:
        shown = "; ".join(errors[:5]) + (f"; and {len(errors) - 5} more" if len(errors) > 5 else "")
        raise LLMMalformedOutput(
            f"{role or 'LLM'} reply does not match its schema: {shown}{truncated}",
            role=role,
            model=model,
            raw_text=text,
            errors=errors,
        )
    return value


_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
}


def _json_type(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPE_CHECKS[name](value):
            return name
    return type(value).__name__


def _same_json(left: Any, right: Any) -> bool:
    # JSON distinguishes true from 1, Python does not.
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    return bool(left == right)


def _resolve(reference: str, root: Mapping[str, Any]) -> Mapping[str, Any]:
    if not reference.startswith("#"):
        raise ValueError(f"only local $ref is supported, got {reference!r}")
    node: Any = root
    for part in reference.lstrip("#").strip("/").split("/"):
        if part:
            node = node[part.replace("~1", "/").replace("~0", "~")]
    return node  # type: ignore[no-any-return]


def _conforms(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    errors: list[str] = []
    _check(value, schema, root, "$", errors)
    return not errors


def _check(
    value: Any, schema: Mapping[str, Any], root: Mapping[str, Any], path: str, errors: list[str]
) -> None:
    if "$ref" in schema:
        _check(value, _resolve(schema["$ref"], root), root, path, errors)
    for branch_key in ("anyOf", "oneOf"):
        if branch_key in schema:
            branches = schema[branch_key]
            if not any(_conforms(value, branch, root) for branch in branches):
                errors.append(f"{path}: matches none of the {len(branches)} allowed shapes")
    for branch in schema.get("allOf", ()):
        _check(value, branch, root, path, errors)
    if "const" in schema and not _same_json(value, schema["const"]):
        errors.append(f"{path}: expected {json.dumps(schema['const'])}")
    if "enum" in schema and not any(_same_json(value, option) for option in schema["enum"]):
        options = ", ".join(json.dumps(option) for option in schema["enum"])
        errors.append(f"{path}: {json.dumps(value)[:40]} is not one of {options}")
    expected = schema.get("type")
    if expected is not None:
        types = [expected] if isinstance(expected, str) else list(expected)
        if not any(_TYPE_CHECKS.get(name, lambda v: True)(value) for name in types):
            errors.append(f"{path}: expected {' or '.join(types)}, got {_json_type(value)}")
            return  # deeper checks would only repeat the type error
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties", {})
        for name in schema.get("required", ()):
            if name not in value:
                errors.append(f"{path}: missing required key {name!r}")
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in properties:
                _check(item, properties[name], root, f"{path}.{name}", errors)
            elif extra is False:
                errors.append(f"{path}: unexpected key {name!r}")
            elif isinstance(extra, Mapping):
                _check(item, extra, root, f"{path}.{name}", errors)
    elif isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{path}: expected at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: expected at most {schema['maxItems']} items")
        items = schema.get("items")
        if isinstance(items, Mapping):
            for index, item in enumerate(value):
                _check(item, items, root, f"{path}[{index}]", errors)
    elif _TYPE_CHECKS["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} is below the minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: {value} is above the maximum {schema['maximum']}")
