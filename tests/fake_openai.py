"""A scripted OpenAI-compatible HTTP server for tests.

Why: every LLM test should exercise the real ``openai`` client — its HTTP stack, its error
classes, its timeouts — without touching the network. This server listens on 127.0.0.1 on a
free port, implements ``POST /v1/chat/completions`` (plain and ``stream: true`` SSE),
``POST /v1/embeddings`` and ``GET /v1/models`` (the listing set by :meth:`FakeOpenAI.serve_models`;
empty by default), answers from a script and records every request so a test can assert
what was sent (for example that the judge never saw the student's message).

A script is a queue of replies per endpoint, consumed one per request, plus an optional
standing reply used when the queue is empty::

    fake.script("plain text", {"verdict": "allow"}, Reply.error(500), Reply.text("late").delayed(1))
    fake.always(lambda request: Reply.text(f"echo {request.model}"))

A queue item or standing reply is a :class:`Reply`, a ``str`` (text reply), a ``dict`` (its JSON
as the reply text) or a callable taking the :class:`RecordedRequest` (which reads like the
request JSON: ``request["messages"]``) and returning one of those. An unscripted chat request
gets HTTP 500 and is listed in ``unscripted`` (the pytest fixture fails the test on it);
unscripted embedding requests get deterministic vectors: a bag of words by default, or, with
``FakeOpenAI(embedding_scheme="trigrams")``, hashed character trigrams — a scheme that shares
nothing with BM25's whole-word matching, so a misspelt word is still near its passage. Fault
injection works on embeddings as on chat: ``fake.script(Reply.error(500), endpoint="embeddings")``,
``Reply.malformed()``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Endpoint = Literal["chat", "embeddings"]
EmbeddingScheme = Literal["words", "trigrams"]

_PATHS: dict[str, Endpoint] = {
    "/v1/chat/completions": "chat",
    "/v1/embeddings": "embeddings",
}

#: Dimension of the default embedding vectors.
DEFAULT_EMBEDDING_DIMENSION = 16


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Build it with the class methods rather than by hand."""

    content: str | None = ""
    refusal: str | None = None
    status: int = 200
    delay: float = 0.0
    raw_body: bytes | None = None
    prompt_tokens: int | None = 10
    completion_tokens: int | None = 5
    model: str | None = None
    finish_reason: str = "stop"
    error_message: str = ""
    error_code: str | None = None
    embeddings: tuple[tuple[float, ...], ...] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    #: Fields a server adds to its completion body beside OpenAI's (llama.cpp's ``timings``).
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: ``usage.prompt_tokens_details.cached_tokens``; ``None`` leaves the details out.
    cached_tokens: int | None = None

    @classmethod
    def text(
        cls,
        content: str,
        *,
        prompt_tokens: int | None = 10,
        completion_tokens: int | None = 5,
        model: str | None = None,
        finish_reason: str = "stop",
    ) -> Reply:
        """A normal assistant message. ``prompt_tokens=None`` omits ``usage`` entirely;
        ``model=None`` echoes the requested model."""
        return cls(
            content=content,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            model=model,
            finish_reason=finish_reason,
        )

    @classmethod
    def json(
        cls,
        value: Any,
        *,
        prompt_tokens: int | None = 10,
        completion_tokens: int | None = 5,
        model: str | None = None,
        fenced: bool = False,
    ) -> Reply:
        """An assistant message whose text is ``value`` as JSON (optionally in a ``` fence,
        as chatty models do when a server ignores ``response_format``)."""
        text = json.dumps(value)
        if fenced:
            text = f"Here you go:\n```json\n{text}\n```"
        return cls.text(
            text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, model=model
        )

    @classmethod
    def error(cls, status: int, message: str = "", *, code: str | None = None) -> Reply:
        """An HTTP error in OpenAI's ``{"error": {...}}`` shape (e.g. 400, 429, 500)."""
        return cls(status=status, error_message=message or f"fake error {status}", error_code=code)

    @classmethod
    def malformed(cls, body: bytes = b"<html>this is not JSON</html>") -> Reply:
        """HTTP 200 whose body is not JSON (a misconfigured proxy, a wrong base URL)."""
        return cls(raw_body=body)

    @classmethod
    def refused(cls, message: str = "I'm sorry, I can't help with that.") -> Reply:
        """The model refuses: ``message.refusal`` set, ``content`` null."""
        return cls(content=None, refusal=message)

    @classmethod
    def embedding(
        cls, vectors: list[list[float]] | list[tuple[float, ...]], *, prompt_tokens: int = 8
    ) -> Reply:
        """An embeddings answer with exactly these vectors, in input order."""
        return cls(
            embeddings=tuple(tuple(vector) for vector in vectors),
            prompt_tokens=prompt_tokens,
            completion_tokens=0,
        )

    def with_fields(self, **fields: Any) -> Reply:
        """This reply with extra top-level fields in its completion body, as a server adds
        them (llama.cpp's ``timings={"cache_n": 120, ...}``)."""
        return replace(self, extra={**self.extra, **fields})

    def cached(self, tokens: int) -> Reply:
        """This reply with ``tokens`` of its prompt reported as read from the prefix cache
        (``usage.prompt_tokens_details.cached_tokens``, as OpenAI reports it)."""
        return replace(self, cached_tokens=tokens)

    def delayed(self, seconds: float) -> Reply:
        """This reply, sent only after ``seconds`` (to trigger client timeouts)."""
        return replace(self, delay=seconds)


ScriptItem = Reply | str | Mapping[str, Any] | Callable[["RecordedRequest"], Any]


@dataclass(frozen=True)
class RecordedRequest(Mapping[str, Any]):
    """One request the server received. Reads like the request JSON (``request["model"]``)
    and adds the path, the headers (lower-case names) and a few conveniences."""

    path: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]
    raw: bytes = b""

    def __getitem__(self, key: str) -> Any:
        return self.body[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.body)

    def __len__(self) -> int:
        return len(self.body)

    @property
    def endpoint(self) -> Endpoint | None:
        return _PATHS.get(self.path)

    @property
    def model(self) -> str | None:
        model = self.body.get("model")
        return model if isinstance(model, str) else None

    @property
    def role(self) -> str | None:
        """The pedrag role, from the ``X-Pedrag-Role`` header the openai backend sends."""
        return self.headers.get("x-pedrag-role")

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages = self.body.get("messages")
        return list(messages) if isinstance(messages, list) else []

    @property
    def text(self) -> str:
        """Every message content (or embedding input) joined by newlines: the thing to
        search when asserting some text was, or was never, sent."""
        parts: list[str] = []
        for message in self.messages:
            content = message.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(
                    str(part.get("text", "")) for part in content if isinstance(part, dict)
                )
        embedding_input = self.body.get("input")
        if isinstance(embedding_input, str):
            parts.append(embedding_input)
        elif isinstance(embedding_input, list):
            parts.extend(str(item) for item in embedding_input)
        return "\n".join(parts)


class FakeOpenAI:
    """The server. Use as a context manager or call :meth:`start` / :meth:`close`."""

    def __init__(
        self,
        *,
        embedding_dimension: int = DEFAULT_EMBEDDING_DIMENSION,
        embedding_scheme: EmbeddingScheme = "words",
    ) -> None:
        self.embedding_dimension = embedding_dimension
        self.embedding_scheme = embedding_scheme
        self.requests: list[RecordedRequest] = []
        self.unscripted: list[RecordedRequest] = []
        self._queues: dict[Endpoint, deque[ScriptItem]] = {"chat": deque(), "embeddings": deque()}
        self._standing: dict[Endpoint, ScriptItem | None] = {"chat": None, "embeddings": None}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0
        self._models: list[dict[str, Any]] | None = []
        self.listings = 0  # GET /v1/models requests served
        self.health_checks: list[RecordedRequest] = []
        self._health_reply: ScriptItem = Reply.text("ok", prompt_tokens=12, completion_tokens=1)

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> FakeOpenAI:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        from pedrag.runtime.llm.openai_backend import forget_endpoint

        if self._server is not None:
            # The port may serve another test's fake next: what backends learned about this
            # one must not carry over.
            forget_endpoint(self.base_url)
        self._stopping.set()  # wakes handlers sleeping on a delayed reply
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        """The URL to give the client, ending in ``/v1``."""
        if self._server is None:
            raise RuntimeError("FakeOpenAI is not running; call start() first")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    # -- scripting -------------------------------------------------------------------------

    def script(self, *replies: ScriptItem, endpoint: Endpoint = "chat") -> FakeOpenAI:
        """Append replies to the endpoint's queue; each answers exactly one request."""
        with self._lock:
            self._queues[endpoint].extend(replies)
        return self

    def always(self, reply: ScriptItem | None, *, endpoint: Endpoint = "chat") -> FakeOpenAI:
        """The reply (or callable) used whenever the endpoint's queue is empty; ``None``
        removes it."""
        with self._lock:
            self._standing[endpoint] = reply
        return self

    def serve_models(self, *models: str | Mapping[str, Any] | None) -> FakeOpenAI:
        """What ``GET /v1/models`` lists: model ids, or whole entries (``{"id": ...,
        "max_model_len": 4096}``). ``serve_models(None)`` makes the route answer 404, as a
        server without a listing does."""
        with self._lock:
            if models == (None,):
                self._models = None
            else:
                self._models = [
                    {"id": item, "object": "model", "owned_by": "fake"}
                    if isinstance(item, str)
                    else {"object": "model", "owned_by": "fake", **dict(item or {})}
                    for item in models
                ]
        return self

    def answer_health_checks(self, reply: ScriptItem) -> FakeOpenAI:
        """The answer to the health check's one-token request (``X-Pedrag-Role: health``),
        ``ok`` by default. Health checks are answered outside the script and recorded in
        ``health_checks``, not ``requests``, so a test's script is about its turns."""
        with self._lock:
            self._health_reply = reply
        return self

    def reset(self) -> None:
        """Forget the script and the recorded requests."""
        with self._lock:
            for queue in self._queues.values():
                queue.clear()
            self._standing = {"chat": None, "embeddings": None}
            self.requests.clear()
            self.unscripted.clear()

    def pending(self, endpoint: Endpoint = "chat") -> int:
        """How many queued replies have not been used yet."""
        with self._lock:
            return len(self._queues[endpoint])

    def requests_to(self, endpoint: Endpoint) -> list[RecordedRequest]:
        return [request for request in self.requests if request.endpoint == endpoint]

    # -- serving (called from handler threads) ---------------------------------------------

    def _next_reply(self, request: RecordedRequest) -> Reply | None:
        endpoint = request.endpoint
        assert endpoint is not None
        if endpoint == "chat" and request.role == "health":
            with self._lock:
                self.health_checks.append(request)
                item = self._health_reply
            return _to_reply(item, request)
        with self._lock:
            self.requests.append(request)
            self._counter += 1
            queue = self._queues[endpoint]
            item = queue.popleft() if queue else self._standing[endpoint]
            if item is None and endpoint == "chat":
                self.unscripted.append(request)
        if item is None:
            return None
        return _to_reply(item, request)

    def _embedding_for(self, text: str) -> list[float]:
        """A deterministic vector: a bag of words (texts sharing words are close, so tests of
        similarity-based logic behave sensibly) or hashed character trigrams of each word
        padded with spaces (texts sharing spellings are close)."""
        vector = [0.0] * self.embedding_dimension
        words = re.findall(r"\w+", text.lower()) or [""]
        if self.embedding_scheme == "trigrams":
            for word in words:
                padded = f" {word} "
                for start in range(len(padded) - 2):
                    digest = hashlib.sha256(padded[start : start + 3].encode()).digest()
                    slot = int.from_bytes(digest[:4], "big") % self.embedding_dimension
                    vector[slot] += 1.0
        else:
            for word in words:
                digest = hashlib.sha256(word.encode()).digest()
                vector[digest[0] % self.embedding_dimension] += 1.0 if digest[1] % 2 else -1.0
        norm = math.sqrt(sum(value * value for value in vector)) or 1.0
        return [value / norm for value in vector]

    def _wait(self, seconds: float) -> bool:
        """Sleep for a delayed reply; False when the server is shutting down meanwhile."""
        return not self._stopping.wait(seconds)


def _to_reply(item: ScriptItem, request: RecordedRequest) -> Reply:
    produced: Any = item(request) if callable(item) else item
    if isinstance(produced, Reply):
        return produced
    if isinstance(produced, str):
        return Reply.text(produced)
    if isinstance(produced, Mapping):
        return Reply.json(dict(produced))
    raise TypeError(f"fake_openai: a script item produced {produced!r}, not a Reply/str/dict")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeOpenAI


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep pytest output clean

    def do_POST(self) -> None:
        try:
            self._serve()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (e.g. it timed out on a delayed reply)

    def do_GET(self) -> None:
        fake = self.server.fake
        path = self.path.split("?", 1)[0]
        with fake._lock:
            models = fake._models
            if path == "/v1/models":
                fake.listings += 1
        if path != "/v1/models" or models is None:
            self._send_json(404, _error_body(f"fake_openai: no route GET {path}", None))
            return
        self._send_json(200, {"object": "list", "data": models})

    def _serve(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = {}
        path = self.path.split("?", 1)[0]
        request = RecordedRequest(
            path=path,
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body if isinstance(body, dict) else {},
            raw=raw,
        )
        if path not in _PATHS:
            self._send_json(404, _error_body(f"fake_openai: no route {path}", None))
            return
        reply = fake._next_reply(request)
        if reply is None:
            if request.endpoint == "embeddings":
                reply = Reply.embedding(
                    [fake._embedding_for(text) for text in _embedding_inputs(request)]
                )
            else:
                message = "fake_openai: no scripted reply left for this request"
                self._send_json(500, _error_body(message, "unscripted"))
                return
        if reply.delay and not fake._wait(reply.delay):
            return
        if reply.raw_body is not None:
            self._send_bytes(reply.status, reply.raw_body, "application/json", reply.headers)
        elif reply.status >= 400:
            body = _error_body(reply.error_message, reply.error_code)
            self._send_json(reply.status, body, reply.headers)
        elif request.endpoint == "embeddings":
            self._send_json(200, _embeddings_body(request, reply), reply.headers)
        elif request.get("stream"):
            self._send_stream(request, reply, fake._counter)
        else:
            self._send_json(200, _completion_body(request, reply, fake._counter), reply.headers)

    def _send_bytes(
        self,
        status: int,
        payload: bytes,
        content_type: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _send_json(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(body).encode(), "application/json", headers)

    def _send_stream(self, request: RecordedRequest, reply: Reply, number: int) -> None:
        # HTTP/1.0 without Content-Length: the body ends when the connection closes.
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for chunk in _stream_chunks(request, reply, number):
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def _error_body(message: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "fake_error", "param": None, "code": code}}


def _usage(reply: Reply) -> dict[str, Any] | None:
    if reply.prompt_tokens is None:
        return None
    completion = reply.completion_tokens or 0
    usage: dict[str, Any] = {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": reply.prompt_tokens + completion,
    }
    if reply.cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
    return usage


def _completion_body(request: RecordedRequest, reply: Reply, number: int) -> dict[str, Any]:
    finish_reason = "stop" if reply.refusal is not None else reply.finish_reason
    body: dict[str, Any] = {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.model or request.model or "fake-model",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": reply.content,
                    "refusal": reply.refusal,
                },
                "finish_reason": finish_reason,
                "logprobs": None,
            }
        ],
    }
    usage = _usage(reply)
    if usage is not None:
        body["usage"] = usage
    body.update(reply.extra)
    return body


def _stream_chunks(request: RecordedRequest, reply: Reply, number: int) -> list[dict[str, Any]]:
    """The SSE events of one streamed completion: role, content pieces, finish, usage."""
    base = {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": reply.model or request.model or "fake-model",
    }

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        return {**base, "choices": [choice]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    if reply.refusal is not None:
        chunks.append(chunk({"refusal": reply.refusal}))
    else:
        # Split after whitespace so the joined deltas equal the content exactly.
        pieces = re.findall(r"\S*\s*", reply.content or "")
        chunks.extend(chunk({"content": piece}) for piece in pieces if piece)
    chunks.append(chunk({}, reply.finish_reason))
    options = request.get("stream_options")
    usage = _usage(reply)
    if isinstance(options, dict) and options.get("include_usage") and usage is not None:
        chunks.append({**base, "choices": [], "usage": usage})
    return chunks


def _base64_floats(vector: tuple[float, ...]) -> str:
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()


def _embedding_inputs(request: RecordedRequest) -> list[str]:
    embedding_input = request.get("input")
    if isinstance(embedding_input, str):
        return [embedding_input]
    if isinstance(embedding_input, list):
        return [str(item) for item in embedding_input]
    return []


def _embeddings_body(request: RecordedRequest, reply: Reply) -> dict[str, Any]:
    vectors = reply.embeddings or ()
    tokens = reply.prompt_tokens or 0
    # The openai client asks for base64 (little-endian float32) unless told "float".
    as_base64 = request.get("encoding_format") == "base64"
    return {
        "object": "list",
        "model": reply.model or request.model or "fake-embedding",
        "data": [
            {
                "object": "embedding",
                "index": index,
                "embedding": _base64_floats(vector) if as_base64 else list(vector),
            }
            for index, vector in enumerate(vectors)
        ],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
