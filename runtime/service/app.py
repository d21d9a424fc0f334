"""The FastAPI application of ``pedrag serve``: routes, error mapping, request ids, lifespan.

Runtime, the HTTP service. Takes :class:`ServiceSettings` (from the environment when uvicorn
starts a worker with ``create_app`` as its factory); gives an ASGI application.

Why it looks like this:

- **The event loop never blocks.** The Tutor, the store and the checker are synchronous. A
  turn route (JSON or streamed) checks its key, reads its session, runs the Tutor and commits
  in one worker thread (one hop off the loop per turn, :mod:`hop`; a streamed turn's pieces
  are held until it commits, so they are handed to the loop together); a session's creation
  checks its key and creates the session in one hop too; every other route is a plain
  ``def``, which FastAPI runs in AnyIO's thread pool. All take tokens of AnyIO's default
  limiter (40), so one worker holds at most 40 requests in progress.
- **Tenants are kept apart by the store.** Each route gets a :class:`TenantContext` from the
  API key and touches the database only through its tenant-bound store; an id of another
  tenant is as unknown as an id that was never created (404).
- **Errors are problem details**, one mapping for every route (:mod:`problems`); a request id
  (``X-Request-ID``, generated when absent) is echoed in the response, put in every log line
  and in every problem body.
- **Many workers, one database.** Each worker opens the store at start, which applies the
  migrations under a lock; turns are a compare-and-set on the turn index, so two workers
  posting the same session's turn give one 200 and one 409, and nothing is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import gc
import importlib.resources
import inspect
import json
import logging
import os
import random
import re
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from fastapi import Depends, FastAPI, Query, Request, Response
from fastapi import Path as PathParam
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, StreamingResponse
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from pydantic import TypeAdapter, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pedrag import __version__
from pedrag.kernel.ceiling import runtime_step
from pedrag.kernel.rungs import rung_name
from pedrag.runtime.learning.loop import CurriculumMap, GoalRecord
from pedrag.runtime.llm.interface import LLMBackend
from pedrag.runtime.policy.theory_set import TheoryLoadError, TheorySet
from pedrag.runtime.service import metrics
from pedrag.runtime.service.auth import (
    KeyClaim,
    TenantContext,
    TutorCache,
    deferred_role,
    is_deferred,
    learner_of_new_session,
    new_session_meta,
    require_reachable,
    required_role,
    role,
)
from pedrag.runtime.service.auth import claim as auth_claim
from pedrag.runtime.service.hop import ThreadHop
from pedrag.runtime.service.problems import PROBLEM_SCHEMA, Problem, problem_response
from pedrag.runtime.service.schemas import (
    CHECK_FILENAME,
    ID_PATTERN,
    MAX_BODY_BYTES,
    MAX_ID_CHARS,
    MAX_THEORY_BYTES,
    AuditOut,
    CheckRequest,
    CurriculumOut,
    ExamRetakeOut,
    ExamSittingOut,
    ExerciseOut,
    Health,
    InstructorUpdate,
    KeyCreate,
    KeyIssued,
    KeyOut,
    KeyRoleOut,
    LearnerCreate,
    LearnerDeleted,
    LearnerExams,
    LearnerGoal,
    LearnerOut,
    SessionCreate,
    SessionDetail,
    SessionOut,
    SessionSummary,
    TheoriesOut,
    TheoryOut,
    TurnCreate,
    TurnOut,
)
from pedrag.runtime.store.session_store import (
    AlreadyExists,
    LearnerNotFound,
    NoRetakeDue,
    SessionNotFound,
    SessionStore,
    StoredSession,
    StoreError,
    StoreUnavailable,
    TurnConflict,
)
from pedrag.runtime.turn.budget import Budget
from pedrag.runtime.turn.instructor import (
    EXPLAIN_MODE_METRIC,
    InstructorChange,
    InstructorError,
    apply_change,
    instructor_metrics,
)
from pedrag.runtime.turn.state import MetricSchema
from pedrag.runtime.turn.tutor import Session, TurnResult, Tutor

log = logging.getLogger("pedrag.service")
T = TypeVar("T")

REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("pedrag_request_id", default="-")

DATABASE_UNAVAILABLE = "the database is unavailable; retry the request later"
ENV_THEORIES = "PEDRAG_SERVE_THEORIES"
ENV_RETENTION_INTERVAL = "PEDRAG_SERVE_RETENTION_INTERVAL"
ENV_START_RETRY = "PEDRAG_SERVE_START_RETRY_SECONDS"
ENV_METRICS_PUBLIC = "PEDRAG_SERVE_METRICS_PUBLIC"
_EXAM_METRIC = runtime_step("exam_lockdown").metric
# Ids in paths have the shape of ids the service hands out: anything else (a NUL, a lone
# surrogate, 10 kB) is 422 before it reaches the database.
PathId = Annotated[str, PathParam(pattern=ID_PATTERN)]
KeyId = Annotated[str, PathParam(pattern=r"^[0-9a-f]{12}$")]
# The role a route needs is its dependency (auth.role): the one place that rule lives.
Learner = Annotated[TenantContext, Depends(role("learner"))]
Instructor = Annotated[TenantContext, Depends(role("instructor"))]
Admin = Annotated[TenantContext, Depends(role("admin"))]
# The hot path: the key is checked in the turn's own worker thread and read transaction.
LearnerClaim = Annotated[KeyClaim, Depends(deferred_role("learner"))]
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml", "text/plain")


class RequestIdFilter(logging.Filter):
    """Adds ``request_id`` to every log record (``-`` outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = REQUEST_ID.get()
        return True


@dataclass(frozen=True)
class ServiceSettings:
    """What a worker needs; every field has an environment variable (workers are processes)."""

    db: str | None = None  # PEDRAG_DB: path or URL; None -> ./.pedrag/sessions.db
    theories: tuple[str, ...] = ()  # PEDRAG_SERVE_THEORIES (os.pathsep); () -> shipped
    retention_interval_seconds: float = 3600.0  # how often expired sessions are purged
    # PEDRAG_SERVE_START_RETRY_SECONDS: how long a starting worker waits for the database.
    start_retry_seconds: float = 60.0
    # PEDRAG_SERVE_METRICS_PUBLIC=1 (`--metrics-public`): /metrics answers without a key.
    metrics_public: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> ServiceSettings:
        raw = env.get(ENV_THEORIES, "").strip()
        interval = env.get(ENV_RETENTION_INTERVAL, "").strip()
        start_retry = env.get(ENV_START_RETRY, "").strip()
        return cls(
            db=env.get("PEDRAG_DB", "").strip() or None,
            theories=tuple(part for part in raw.split(os.pathsep) if part) if raw else (),
            retention_interval_seconds=float(interval) if interval else 3600.0,
            start_retry_seconds=float(start_retry) if start_retry else 60.0,
            metrics_public=_flag(env, ENV_METRICS_PUBLIC),
        )


def _flag(env: Mapping[str, str], name: str) -> bool:
    """A yes/no environment variable: "1" or "true" is yes, unset, "", "0" or "false" no;
    anything else is refused rather than guessed."""
    value = env.get(name, "").strip().lower()
    if value in ("1", "true"):
        return True
    if value in ("", "0", "false"):
        return False
    raise ValueError(f"{name} is 1 or 0 (true or false), not {value!r}")


@dataclass
class ServiceState:
    settings: ServiceSettings
    store: SessionStore
    theories: TheorySet
    tutors: TutorCache
    started: float = field(default_factory=time.time)
    # The turns' and sessions' hop to a thread (hop.py); its threads end with the lifespan.
    hop: ThreadHop = field(default_factory=ThreadHop)


FROM_ENV = "from-env"
"""``backend=FROM_ENV``: the model backend ``pedrag chat`` would use (``OPENAI_BASE_URL``...)."""


def load_service(
    settings: ServiceSettings, backend: LLMBackend | None | str = FROM_ENV
) -> ServiceState:
    """Open the store (migrating it) and load the theories; raises StoreError or
    TheoryLoadError with a message for the operator. ``backend=None`` runs offline."""
    if isinstance(backend, str):
        from pedrag.runtime.llm.openai_backend import backend_from_env

        backend = backend_from_env()
    theories = TheorySet.from_paths(settings.theories) if settings.theories else TheorySet.shipped()
    store = open_store(settings)
    tutors = TutorCache(theories, backend, Budget.from_env())
    return ServiceState(settings, store, theories, tutors)


def _freeze_start_up_objects() -> None:
    """Leave what start-up built (modules, the compiled theories, the app and its routes, some
    170,000 objects) out of the garbage collector's full collections: they live as long as the
    worker, and each full collection walked them all (about 150 ms of CPU, once every few
    thousand turns; the collector's CPU per turn halved, 0.1 to 0.05 ms: docs/service.md).
    Start-up's garbage is collected first, so nothing that is garbage already is kept
    (``gc.freeze``'s advice); the lifespan's end thaws them, for a process that outlives its
    app (tests)."""
    gc.collect()
    gc.freeze()


def open_store(settings: ServiceSettings) -> SessionStore:
    """Open (and migrate) the store; a database that cannot be reached yet (a PostgreSQL
    restart, a deployment starting before its database) is tried again with backoff for
    ``start_retry_seconds``, each attempt logged, instead of failing the worker's start-up
    (which makes uvicorn stop the whole service)."""
    from tenacity import (
        RetryCallState,
        Retrying,
        retry_if_exception_type,
        stop_after_delay,
        wait_exponential,
        wait_random,
    )

    def waiting(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        log.warning(
            "database unavailable at start-up (attempt %d, %.0f s so far): %s",
            state.attempt_number,
            state.seconds_since_start,
            error,
        )

    for attempt in Retrying(
        retry=retry_if_exception_type(StoreUnavailable),
        stop=stop_after_delay(settings.start_retry_seconds),
        wait=wait_exponential(multiplier=0.2, max=5.0) + wait_random(0, 0.2),
        before_sleep=waiting,
        reraise=True,
    ):
        with attempt:
            return SessionStore(settings.db)
    raise AssertionError("unreachable")  # Retrying either returns or re-raises


def create_app(
    settings: ServiceSettings | None = None, *, backend: LLMBackend | None | str = FROM_ENV
) -> FastAPI:
    """The application; ``settings`` default to :meth:`ServiceSettings.from_env`, the model
    backend to the environment's (``None``: offline; an object: that backend)."""
    settings = settings or ServiceSettings.from_env()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state = await anyio.to_thread.run_sync(load_service, settings, backend)
        app.state.service = state
        await anyio.to_thread.run_sync(_purge_expired, state)  # before the first request
        purger = asyncio.create_task(_retention_loop(state))
        _freeze_start_up_objects()
        try:
            yield
        finally:
            purger.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await purger
            gc.unfreeze()
            state.hop.close()
            state.store.close()

    app = FastAPI(
        title="pedrag",
        version=__version__,
        summary="A supervised LLM tutor that follows a checked pedagogical theory.",
        lifespan=lifespan,
        responses={status: PROBLEM_SCHEMA for status in (401, 403, 404, 409, 422, 429)},
    )
    app.add_middleware(RequestContext)
    _install_errors(app)
    _install_routes(app, settings)
    _turns_first(app)
    _document_roles(app)
    playground = importlib.resources.files("pedrag.runtime.service").joinpath("playground")
    app.mount("/playground", StaticFiles(directory=str(playground), html=True), name="playground")
    return app


TURN_PATHS = ("/v1/sessions/{session_id}/turns", "/v1/sessions/{session_id}/turns/stream")


def _turns_first(app: FastAPI) -> None:
    """Put the turn routes first in the router's list. Starlette tries the routes in order and
    a turn, most of a deployment's requests, matched after twenty others (50 us of CPU per
    turn); no other route matches a turn's path, so what any request reaches is unchanged
    (tests/service/test_app.py checks every route is still the one its path reaches)."""
    app.router.routes.sort(key=lambda route: getattr(route, "path", None) not in TURN_PATHS)


_PATH_ID = re.compile(ID_PATTERN)
_TURN_PARAMETERS = ("session_id", "body", "request", "claim")


class _TurnRoute(APIRoute):
    """A turn route: declared as any route (its path id, its ``TurnCreate`` body, its
    :func:`~pedrag.runtime.service.auth.deferred_role` dependency, its response model), so the
    OpenAPI document and the role walk read it as before, and FastAPI's own handler answers
    every request that is not the plain case. The plain case, a deployment's most frequent
    request, skips FastAPI's per-request dependency solving (a quarter of the event loop's
    CPU per turn): the id matches its pattern, the body is ``application/json`` that
    ``TurnCreate`` accepts, parsed and validated in one pass by pydantic-core
    (``model_validate_json``: 9 us against 27 for ``json.loads`` and the model; it accepts no
    body FastAPI's ``json.loads`` and the same strict model refuse, and a body only
    ``json.loads`` reads, UTF-16 or behind a byte-order mark, is FastAPI's to answer); the key is read by the route's own security schemes (:func:`auth.claim`), the
    endpoint is called with what FastAPI would have passed, and its answer is serialised once
    by pydantic. Anything else (a malformed id or body, another content type) goes to
    FastAPI's handler, so every error is the one FastAPI gives, in the same order (a missing,
    unknown, revoked or weaker key before a bad body: ``_key_refusal``)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        declared = super().get_route_handler()
        needed = _route_role(self.dependant)
        parameters = tuple(inspect.signature(self.endpoint).parameters)
        if needed is None or parameters != _TURN_PARAMETERS:
            raise TypeError(f"{self.path}: a turn route takes {_TURN_PARAMETERS} and a role")
        endpoint = self.endpoint
        dump = TypeAdapter(self.response_model).dump_json if self.response_model else None

        async def handler(request: Request) -> Response:
            session_id = request.path_params.get("session_id", "")
            kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
            if kind != "application/json" or not _PATH_ID.fullmatch(session_id):
                return await declared(request)
            try:
                body = TurnCreate.model_validate_json(await request.body())
            except ValueError:  # not JSON, not UTF-8, not a turn (ValidationError): FastAPI's
                return await declared(request)
            claim = await auth_claim(request, needed)
            answer = await endpoint(session_id=session_id, body=body, request=request, claim=claim)
            if isinstance(answer, Response) or dump is None:
                return answer  # type: ignore[no-any-return]
            return Response(dump(answer), media_type="application/json")

        return handler


def _route_role(dependant: Any) -> str | None:
    for dependency in dependant.dependencies:
        needed = required_role(dependency.call) or _route_role(dependency)
        if needed is not None:
            return needed
    return None


def _deferred_role(dependant: Any) -> str | None:
    """The role a route needs if its key is checked by the route (:func:`deferred_role`)."""
    for dependency in dependant.dependencies:
        needed = required_role(dependency.call) if is_deferred(dependency.call) else None
        needed = needed or _deferred_role(dependency)
        if needed is not None:
            return needed
    return None


def _document_roles(app: FastAPI) -> None:
    """Each operation of the OpenAPI document says the role it needs (``x-pedrag-role``),
    read from the route's dependency, so the document cannot disagree with the check."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()
            for route in app.routes:
                if not isinstance(route, APIRoute) or not route.include_in_schema:
                    continue
                needed = _route_role(route.dependant)
                for method in route.methods or ():
                    operation = schema["paths"][route.path_format].get(method.lower())
                    if operation is not None and needed is not None:
                        operation["x-pedrag-role"] = needed
                        note = f"Needs a key of role `{needed}` or above."
                        operation["description"] = f"{operation.get('description', '')}\n\n{note}"
        return app.openapi_schema  # type: ignore[return-value]

    app.openapi = openapi  # type: ignore[method-assign]


async def _retention_loop(state: ServiceState) -> None:
    """Purge each tenant's expired sessions now and then (``retention_days``)."""
    while True:
        await asyncio.sleep(state.settings.retention_interval_seconds)
        await anyio.to_thread.run_sync(_purge_expired, state)


def _purge_expired(state: ServiceState) -> None:
    try:
        for tenant in state.store.tenants.list():
            if tenant.retention_days is not None:
                purged = state.store.for_tenant(tenant.id).purge_expired(tenant.retention_days)
                if purged:
                    log.info("retention: purged %d session(s) of tenant %s", purged, tenant.id)
    except StoreError as error:
        log.warning("retention: %s", error)


# -- request ids, access log ---------------------------------------------------------------


# The playground's page: its own script and styles only, talking to this origin only, never
# inside a frame (clickjacking), no referrer carrying a session id elsewhere.
PLAYGROUND_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        b"img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


_REQUEST_IDS = random.Random()
os.register_at_fork(after_in_child=_REQUEST_IDS.seed)  # a forked worker draws its own ids


def _new_request_id() -> str:
    """32 random hex digits, the shape ``uuid4().hex`` had. Not ``uuid4``: its ``os.urandom``
    is a system call that lets go of the GIL, which on a busy worker went to a turn's thread
    while the event loop waited to take it back, on every request. A request id names a
    request in the logs and is no secret: a generator seeded once per process from the
    system's randomness is enough."""
    return f"{_REQUEST_IDS.getrandbits(128):032x}"


class RequestContext:
    """Pure ASGI middleware (streaming-safe): request id in, out, and in the logs."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_headers = dict(scope.get("headers") or [])
        incoming = request_headers.get(b"x-request-id", b"").decode("latin-1")
        request_id = incoming if 0 < len(incoming) <= 128 and incoming.isprintable() else ""
        request_id = request_id or _new_request_id()
        token = REQUEST_ID.set(request_id)
        started = time.perf_counter()
        status = 500
        started_response = False

        async def send_with_id(message: Message) -> None:
            nonlocal status, started_response
            if message["type"] == "http.response.start":
                status = int(message["status"])
                started_response = True
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", request_id.encode("latin-1")))
                if str(scope.get("path", "")).startswith("/playground"):
                    headers.extend(PLAYGROUND_HEADERS)
                message = {**message, "headers": headers}
            await send(message)

        received = 0

        async def receive_within_limit() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > MAX_BODY_BYTES:
                    raise _BodyTooLarge
            return message

        try:
            declared = request_headers.get(b"content-length", b"")
            if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
                raise _BodyTooLarge
            await self.app(scope, receive_within_limit, send_with_id)
        except _BodyTooLarge:
            if not started_response:
                response = problem_response(
                    413,
                    "too-large",
                    f"a request body is at most {MAX_BODY_BYTES} bytes",
                    request_id,
                )
                await response(scope, receive, send_with_id)
        except ClientDisconnect:
            # The client left before its request was read (a closed tab, a dropped phone
            # connection): nobody is waiting for an answer, and it is no fault of the server's.
            status = 499
            log.info("client disconnected before its request was read")
        except Exception:
            # Here, not in Starlette's outermost handler: this one still knows the request id,
            # so the 500 carries it in its header, its body and its log line.
            log.exception("unhandled error")
            if not started_response:
                response = problem_response(
                    500,
                    "internal-error",
                    "the server failed on this request; see its log",
                    request_id,
                )
                await response(scope, receive, send_with_id)
        finally:
            metrics.count_request(status)
            log.info(
                "%s %s %d %.1f ms",
                scope.get("method"),
                scope.get("path"),
                status,
                (time.perf_counter() - started) * 1000,
            )
            REQUEST_ID.reset(token)


class _BodyTooLarge(Exception):
    """A request body past MAX_BODY_BYTES: answered 413 by RequestContext."""


# -- errors ----------------------------------------------------------------------------------


def _install_errors(app: FastAPI) -> None:
    def rid() -> str:
        return REQUEST_ID.get()

    @app.exception_handler(Problem)
    async def _problem(_request: Request, error: Problem) -> Response:
        return problem_response(
            error.status, error.slug, error.detail, rid(), error.headers, **error.extra
        )

    @app.exception_handler(SessionNotFound)
    async def _no_session(_request: Request, error: SessionNotFound) -> Response:
        return problem_response(404, "session-not-found", str(error), rid())

    @app.exception_handler(LearnerNotFound)
    async def _no_learner(_request: Request, error: LearnerNotFound) -> Response:
        return problem_response(404, "learner-not-found", str(error), rid())

    @app.exception_handler(TurnConflict)
    async def _conflict(_request: Request, error: TurnConflict) -> Response:
        metrics.TURN_CONFLICTS.inc()
        return problem_response(
            409, "turn-conflict", str(error), rid(), committed_turns=error.committed_turns
        )

    @app.exception_handler(AlreadyExists)
    async def _exists(_request: Request, error: AlreadyExists) -> Response:
        return problem_response(409, "already-exists", str(error), rid())

    @app.exception_handler(StoreError)
    async def _store(_request: Request, error: StoreError) -> Response:
        # The driver's text and the database URL stay in the log (with the request id).
        log.error("store: %s", error)
        return problem_response(
            503, "store-unavailable", DATABASE_UNAVAILABLE, rid(), {"Retry-After": "2"}
        )

    @app.exception_handler(InstructorError)
    async def _instructor(_request: Request, error: InstructorError) -> Response:
        return problem_response(422, "instructor-toggle", str(error), rid())

    async def _key_refusal(request: Request) -> Response | None:
        """A route with a deferred key check (the turns, a session's creation) checks its key
        in its worker thread (``KeyClaim``), which a request that fails validation never
        reaches; its key is checked here first, so an unknown, revoked or weaker key gets the
        401/403 it gets on every other route before anything is said about its body."""
        route = request.scope.get("route")
        needed = _deferred_role(route.dependant) if isinstance(route, APIRoute) else None
        if needed is None:
            return None
        try:
            claimed = await auth_claim(request, needed)
            await anyio.to_thread.run_sync(claimed.verify, request)
        except Problem as problem:
            return await _problem(request, problem)
        except StoreError as failure:
            return await _store(request, failure)
        return None

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, error: RequestValidationError) -> Response:
        refused = await _key_refusal(request)
        if refused is not None:
            return refused
        errors = jsonable_encoder(error.errors(), exclude={"input", "ctx", "url"})
        first = errors[0] if errors else {}
        where = ".".join(str(part) for part in first.get("loc", ()))
        detail = f"{where}: {first.get('msg', 'invalid')}" if first else "invalid request"
        return problem_response(422, "invalid-request", detail, rid(), errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, error: StarletteHTTPException) -> Response:
        if error.status_code == 400:  # FastAPI's body that is not UTF-8 JSON: a client error
            refused = await _key_refusal(request)
            if refused is not None:
                return refused
            detail = "the body is not JSON in UTF-8"
            return problem_response(422, "invalid-request", detail, rid(), errors=[])
        slug = "not-found" if error.status_code == 404 else f"http-{error.status_code}"
        return problem_response(error.status_code, slug, str(error.detail), rid())

    @app.exception_handler(Exception)
    async def _internal(_request: Request, error: Exception) -> Response:
        log.exception("unhandled error")
        return problem_response(
            500, "internal-error", "the server failed on this request; see its log", rid()
        )


# -- routes ------------------------------------------------------------------------------------


def _install_routes(app: FastAPI, settings: ServiceSettings) -> None:
    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/playground/")

    @app.get("/healthz", response_model=Health, tags=["operations"])
    def healthz() -> Health:
        """The process is up (liveness)."""
        return Health(status="ok")

    @app.get("/readyz", response_model=Health, tags=["operations"])
    def readyz(request: Request) -> Health:
        """The database answers and the theories are loaded (readiness)."""
        state: ServiceState = request.app.state.service
        try:
            state.store.ping()
        except StoreError as error:
            log.warning("not ready: %s", error)
            raise Problem(503, "not-ready", "database unavailable") from error
        return Health(status="ready", detail=f"{len(state.theories.ids)} theories")

    # The metrics count every tenant's turns: an instructor key or above reads them, unless
    # the deployment opts in to an open scrape endpoint (`pedrag serve --metrics-public`).
    metrics_role = [] if settings.metrics_public else [Depends(role("instructor"))]

    @app.get("/metrics", tags=["operations"], response_class=Response, dependencies=metrics_role)
    def prometheus() -> Response:
        """Prometheus text exposition (turn latency, model calls, fallbacks, reveals blocked),
        summed over every tenant of the service."""
        body, content_type = metrics.exposition()
        return Response(body, media_type=content_type)

    # -- theories ----------------------------------------------------------------------------

    @app.get("/v1/theories", response_model=TheoriesOut, tags=["theories"])
    def list_theories(ctx: Learner) -> TheoriesOut:
        """The theories this service runs and the curricula's exercises (answers withheld)."""
        theories = ctx.tutors.theories
        out = []
        for theory_id in theories.ids:
            policy = theories[theory_id].policy
            out.append(
                TheoryOut(
                    id=theory_id,
                    name=policy.theory_name,
                    description=(policy.description or "").strip(),
                    actions=len(policy.actions),
                    rules=len(policy.rules),
                    policy_hash=policy.content_hash,
                    instructor_toggles=list(instructor_metrics(MetricSchema.from_theory(policy))),
                )
            )
        curricula = [
            CurriculumOut(
                id=curriculum_id,
                exercises=[
                    ExerciseOut(id=item.id, goal=item.goal, prompt=item.prompt, exam=item.exam)
                    for item in loaded.model.exercises
                ],
            )
            for curriculum_id, loaded in sorted(theories.curricula.items())
        ]
        return TheoriesOut(theories=out, curricula=curricula)

    @app.post(
        "/v1/theories/check",
        tags=["theories"],
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/CheckRequest"}},
                    "application/yaml": {"schema": {"type": "string"}},
                },
            }
        },
    )
    async def check_theory(
        request: Request,
        ctx: Instructor,
        filename: Annotated[str, Query(pattern=CHECK_FILENAME)] = "theory.yaml",
        semantic: bool = True,
    ) -> dict[str, Any]:
        """Check a theory file: the JSON of ``pedrag check --format json``. Post the YAML
        itself (``Content-Type: application/yaml``, ``?filename=`` names it in the output) or
        JSON ``{"source", "filename", "semantic"}``."""
        raw = await request.body()
        if len(raw) > MAX_THEORY_BYTES + 1024:
            raise Problem(413, "too-large", f"a theory file is at most {MAX_THEORY_BYTES} bytes")
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind in ("", "application/json"):
            try:
                body = CheckRequest.model_validate_json(raw)
            except ValidationError as error:
                raise RequestValidationError(error.errors(include_url=False)) from error
        elif kind in YAML_TYPES:
            try:
                source = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise Problem(422, "invalid-request", f"the body is not UTF-8: {error}") from error
            body = CheckRequest(source=source, filename=filename, semantic=semantic)
        else:
            raise Problem(
                415,
                "unsupported-media-type",
                f"send application/yaml or application/json, not {kind}",
            )
        return await anyio.to_thread.run_sync(
            lambda: check_source(body.source, body.filename, semantic=body.semantic)
        )

    # -- learners ----------------------------------------------------------------------------

    @app.post("/v1/learners", response_model=LearnerOut, status_code=201, tags=["learners"])
    def create_learner(body: LearnerCreate, ctx: Instructor) -> LearnerOut:
        learner_id = body.id or uuid.uuid4().hex
        ctx.store.create_learner(learner_id, body.meta)
        return LearnerOut(**ctx.store.load_learner(learner_id))

    @app.get("/v1/learners/{learner_id}", response_model=LearnerOut, tags=["learners"])
    def get_learner(learner_id: PathId, ctx: Instructor) -> LearnerOut:
        return LearnerOut(**ctx.store.load_learner(learner_id))

    @app.get(
        "/v1/learners/{learner_id}/sessions",
        response_model=list[SessionSummary],
        tags=["learners"],
    )
    def learner_sessions(learner_id: PathId, ctx: Instructor) -> list[SessionSummary]:
        ctx.store.load_learner(learner_id)  # 404 for a learner not of this tenant
        return [
            SessionSummary(**item)
            for item in ctx.store.list_sessions(limit=1000, learner_id=learner_id)
        ]

    @app.get(
        "/v1/learners/{learner_id}/goals",
        response_model=list[LearnerGoal],
        tags=["learners"],
    )
    def learner_goals(
        learner_id: PathId,
        ctx: Instructor,
        curriculum: Annotated[
            str | None, Query(max_length=MAX_ID_CHARS, description="default: the only one")
        ] = None,
    ) -> list[LearnerGoal]:
        """The learner's mastery of each goal of a curriculum, in its order: what an
        instructor's dashboard shows, kept across sessions by the runtime's knowledge tracing."""
        ctx.store.load_learner(learner_id)  # 404 for a learner not of this tenant
        tutor = ctx.tutor(curriculum)
        if tutor.curriculum is None:
            raise Problem(422, "no-curriculum", "goals need a curriculum; none is loaded")
        course = CurriculumMap(tutor.curriculum)
        records = {
            goal: GoalRecord.from_dict(data)
            for goal, data in ctx.store.load_learner_goals(learner_id).items()
        }
        out = []
        for goal_id in course.goals:
            record = course.record(records, goal_id)
            out.append(
                LearnerGoal(
                    goal=goal_id,
                    mastery=record.mastery,
                    evidence=record.evidence,
                    solved=list(record.solved),
                    threshold=course.threshold(goal_id),
                    mastered=course.mastered(records, goal_id),
                    missing_prerequisites=course.missing_prerequisites(records, goal_id),
                )
            )
        return out

    @app.get("/v1/learners/{learner_id}/exams", response_model=LearnerExams, tags=["learners"])
    def learner_exams(learner_id: PathId, ctx: Instructor) -> LearnerExams:
        """The learner's exam sittings and the retakes granted them."""
        ctx.store.load_learner(learner_id)  # 404 for a learner not of this tenant
        sittings, retakes = ctx.store.exam_sittings(learner_id)
        return LearnerExams(
            learner_id=learner_id,
            sittings=[
                ExamSittingOut(
                    exam=item.exam_id,
                    sitting=item.sitting,
                    session_id=item.session_id,
                    sat_at=item.sat_at,
                )
                for item in sittings
            ],
            retakes=[_retake_out(item) for item in retakes],
        )

    @app.post(
        "/v1/learners/{learner_id}/exams/{exam_id}/retake",
        response_model=ExamRetakeOut,
        status_code=201,
        tags=["learners"],
    )
    def grant_retake(learner_id: PathId, exam_id: PathId, ctx: Instructor) -> ExamRetakeOut:
        """Let a learner sit an exam once more: the grant (who, when) allows exactly one more
        sitting. 409 when the learner has not sat the exam, or holds a retake not used yet."""
        exams = ctx.tutors.theories.exams
        if exam_id not in exams:
            known = ", ".join(sorted(exams)) or "none"
            raise Problem(404, "exam-not-found", f"no exam {exam_id!r} (exams: {known})")
        ctx.store.load_learner(learner_id)  # 404 for a learner not of this tenant
        try:
            retake = ctx.store.grant_retake(learner_id, exam_id, ctx.key_id)
        except NoRetakeDue as error:
            raise Problem(409, "no-retake-due", str(error)) from error
        log.info(
            "retake %d of exam %s granted to learner %s by key %s",
            retake.sitting,
            exam_id,
            learner_id,
            ctx.key_id,
        )
        return _retake_out(retake)

    @app.delete("/v1/learners/{learner_id}", response_model=LearnerDeleted, tags=["learners"])
    def delete_learner(learner_id: PathId, ctx: Admin) -> LearnerDeleted:
        """Delete a learner and every session and audit record of theirs."""
        deleted = ctx.store.delete_learner(learner_id)
        log.info(
            "deleted learner %s of tenant %s (%d sessions)", learner_id, ctx.tenant.id, deleted
        )
        return LearnerDeleted(id=learner_id, sessions_deleted=deleted)

    # -- sessions ----------------------------------------------------------------------------

    @app.post("/v1/sessions", response_model=SessionOut, status_code=201, tags=["sessions"])
    async def create_session(
        body: SessionCreate, request: Request, claim: LearnerClaim
    ) -> SessionOut:
        """A new session. Its key is checked in the thread that creates it (one hop off the
        event loop, where the key's dependency and the route took one each)."""
        return await _hop(request).run(_create_session, request, claim, body)

    @app.get("/v1/sessions", response_model=list[SessionSummary], tags=["sessions"])
    def list_sessions(
        ctx: Instructor, limit: Annotated[int, Query(ge=0, le=1000)] = 50
    ) -> list[SessionSummary]:
        """This tenant's sessions, most recently updated first."""
        return [SessionSummary(**item) for item in ctx.store.list_sessions(limit)]

    @app.get("/v1/sessions/{session_id}", response_model=SessionOut, tags=["sessions"])
    def get_session(session_id: PathId, ctx: Learner) -> SessionOut:
        """The session as its learner may see it (a learner key: its own learner's only)."""
        stored = ctx.store.read_session(session_id)
        require_reachable(ctx, session_id, stored.meta)
        tutor, session = _resume(ctx, session_id, stored)
        return _session_out(tutor, session, session.state.turn)

    @app.get("/v1/sessions/{session_id}/state", response_model=SessionDetail, tags=["instructor"])
    def get_session_state(session_id: PathId, ctx: Instructor) -> SessionDetail:
        """The session with its metrics and the instructor toggles its theory offers."""
        tutor, session = _resume(ctx, session_id)
        return _session_detail(tutor, session, session.state.turn)

    @app.get("/v1/sessions/{session_id}/audit", response_model=AuditOut, tags=["instructor"])
    def get_audit(session_id: PathId, ctx: Instructor) -> AuditOut:
        """The instructor view of every turn: the whole audit record."""
        return AuditOut(session_id=session_id, records=ctx.store.audit_records(session_id))

    def turn_route(path: str, **declared: Any) -> Callable[[Callable[..., Any]], Any]:
        """``@app.post(path, tags=["turns"], **declared)``, answered by :class:`_TurnRoute`."""

        def add(endpoint: Callable[..., Any]) -> Any:
            app.router.add_api_route(
                path,
                endpoint,
                methods=["POST"],
                tags=["turns"],
                route_class_override=_TurnRoute,
                **declared,
            )
            return endpoint

        return add

    @turn_route("/v1/sessions/{session_id}/turns", response_model=TurnOut)
    async def post_turn(
        session_id: PathId, body: TurnCreate, request: Request, claim: LearnerClaim
    ) -> TurnOut:
        """One supervised turn. The answer is the learner view: the reply and its rung, nothing
        derived from hidden data; the instructor reads the whole record at `.../audit`."""
        started = time.perf_counter()
        result = await _hop(request).run(
            _turn_in_thread, request, claim, session_id, body.turn, _plain(body.message)
        )
        metrics.record_turn("json", time.perf_counter() - started, result.audit)
        return _turn_out(session_id, result)

    @turn_route(
        "/v1/sessions/{session_id}/turns/stream",
        response_class=StreamingResponse,
        responses={
            200: {
                "description": "Server-Sent Events, sent once the turn is committed: `piece` "
                "events ({text}) with the text the stream guard released, then one `end` event "
                "(the learner view of the turn, as POST .../turns returns it). A turn that "
                "cannot commit answers with a problem instead and shows no text.",
                "content": {"text/event-stream": {}},
            }
        },
    )
    async def stream_turn(
        session_id: PathId, body: TurnCreate, request: Request, claim: LearnerClaim
    ) -> StreamingResponse:
        """One supervised turn as Server-Sent Events. Only committed text is shown: the
        pieces are held until the turn commits (a request that loses to another writer gets
        its 409 and no piece), then sent in the order the guard released them."""
        started = time.perf_counter()
        pieces, result = await _hop(request).run(
            _turn_in_thread, request, claim, session_id, body.turn, _streamed(body.message)
        )
        metrics.record_turn("stream", time.perf_counter() - started, result.audit)
        end = _turn_out(session_id, result).model_dump(mode="json")

        async def events() -> AsyncIterator[str]:
            for piece in pieces:
                yield _sse("piece", {"text": piece})
            yield _sse("end", end)

        return StreamingResponse(
            events(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @app.post(
        "/v1/sessions/{session_id}/instructor", response_model=SessionDetail, tags=["instructor"]
    )
    def instructor(session_id: PathId, body: InstructorUpdate, ctx: Instructor) -> SessionDetail:
        """Instructor toggles (trusted metrics): exam lockdown, explain mode, any toggle the
        theory declares with `writer: instructor`, lifting a conduct restriction, and ending
        an exam early."""
        toggles = dict(body.metrics)
        if body.exam_lockdown is not None:
            toggles[_EXAM_METRIC] = body.exam_lockdown
        if body.explain_mode is not None:
            toggles[EXPLAIN_MODE_METRIC] = body.explain_mode
        tutor, _ = _resume(ctx, session_id)
        session = apply_change(
            tutor,
            session_id,
            InstructorChange(toggles, body.lift_conduct_restriction, body.end_exam),
        )
        log.info("instructor change on session %s: %s", session_id, body.model_dump())
        return _session_detail(tutor, session, session.state.turn)

    # -- keys (admin) -------------------------------------------------------------------------

    @app.get("/v1/key", response_model=KeyRoleOut, tags=["sessions"])
    def this_key(ctx: Learner) -> KeyRoleOut:
        """The key this request is made with: its id and role. Any key may ask, so a client
        can tell what its key may do before it starts something it could not finish."""
        return KeyRoleOut(id=ctx.key_id, role=ctx.role, learner_id=ctx.learner)

    @app.get("/v1/keys", response_model=list[KeyOut], tags=["admin"])
    def list_keys(ctx: Admin) -> list[KeyOut]:
        """This tenant's API keys (their ids and roles, never the keys), revoked ones too."""
        return [_key_out(item) for item in ctx.store.tenants.list_keys(ctx.tenant.id)]

    @app.post("/v1/keys", response_model=KeyIssued, status_code=201, tags=["admin"])
    def issue_key(body: KeyCreate, ctx: Admin) -> KeyIssued:
        """A new API key of this tenant; the key is in this answer only (stored hashed)."""
        if body.learner_id is not None and body.role != "learner":
            raise Problem(
                422,
                "invalid-request",
                f"only a learner key is bound to a learner; a {body.role} key reaches every "
                "learner of its tenant",
            )
        directory = ctx.store.tenants
        key = directory.issue_key(
            ctx.tenant.id, body.label, role=body.role, learner=body.learner_id
        )
        issued = directory.key(key)
        assert issued is not None
        log.info("key %s (%s) issued by key %s", issued.id, issued.role, ctx.key_id)
        return KeyIssued(**_key_out(issued).model_dump(), key=key)

    @app.delete("/v1/keys/{key_id}", response_model=KeyOut, tags=["admin"])
    def revoke_key(key_id: KeyId, ctx: Admin) -> KeyOut:
        """Revoke one of this tenant's keys; it is refused from the next request on."""
        directory = ctx.store.tenants
        if not directory.revoke_key(key_id, ctx.tenant.id):
            raise Problem(404, "key-not-found", f"no key {key_id!r} in force")
        found = next(item for item in directory.list_keys(ctx.tenant.id) if item.id == key_id)
        log.info("key %s revoked by key %s", key_id, ctx.key_id)
        return _key_out(found)


# -- helpers -------------------------------------------------------------------------------


# A session's curriculum, by (tenant, session id): it picks the tutor that resumes the session.
# Meta is fixed at creation, so a cached entry never goes stale; a deleted session is still
# reported by the (tenant-scoped) resume. Saves one query per turn.
_CURRICULA: dict[tuple[str, str], str | None] = {}
_CURRICULA_LIMIT = 50_000


def _resume(
    ctx: TenantContext, session_id: str, stored: StoredSession | None = None
) -> tuple[Tutor, Session]:
    """The session's tutor and the session, read from the store (from ``stored`` when the
    caller has read it)."""
    key = (ctx.tenant.id, session_id)
    if stored is not None:
        curriculum = stored.meta.get("curriculum")
    elif key in _CURRICULA:
        curriculum = _CURRICULA[key]
    else:
        meta, _, _ = ctx.store.load_session(session_id)
        curriculum = meta.get("curriculum")
        if len(_CURRICULA) >= _CURRICULA_LIMIT:
            _CURRICULA.clear()
        _CURRICULA[key] = curriculum
    tutor = ctx.tutor(curriculum)
    try:
        return tutor, tutor.resume(session_id, stored)
    except KeyError as error:
        raise Problem(409, "session-not-runnable", str(error.args[0])) from error


def _hop(request: Request) -> ThreadHop:
    return request.app.state.service.hop  # type: ignore[no-any-return]


def _create_session(request: Request, claim: KeyClaim, body: SessionCreate) -> SessionOut:
    ctx = claim.verify(request)
    learner = learner_of_new_session(ctx, body.learner_id)  # a learner key: its own only
    tutor = ctx.tutor(body.curriculum)
    if body.theory not in tutor.theories:
        known = ", ".join(tutor.theories.ids)
        raise Problem(422, "unknown-theory", f"unknown theory {body.theory!r} (known: {known})")
    if body.exercise is not None and tutor.curriculum is None:
        raise Problem(422, "no-curriculum", "an exercise needs a curriculum; none is loaded")
    meta: dict[str, Any] = {"curriculum": body.curriculum, **new_session_meta(ctx, learner)}
    if learner is not None:
        ctx.store.load_learner(learner)  # an unknown learner is a 404 before all else
    try:
        session = tutor.start(
            body.theory,
            body.exercise,
            body.seed,
            session_id=uuid.uuid4().hex,
            meta=meta,
            learner=learner,
            exam_needs_learner=True,  # an anonymous sitting could be sat again and again
        )
    except KeyError as error:
        raise Problem(422, "unknown-exercise", str(error.args[0])) from error
    except ValueError as error:  # an exam sat already or without a learner or a lockdown, a
        # goal the learner has not unlocked
        raise Problem(422, "invalid-session", str(error)) from error
    _CURRICULA[(ctx.tenant.id, session.id)] = body.curriculum
    return _session_out(tutor, session, 0)


TURN_ATTEMPTS = 3
"""How often a turn runs when instructors' toggles keep landing while it runs."""


def _turn_in_thread(
    request: Request,
    claim: KeyClaim,
    session_id: str,
    turn: int | None,
    run: Callable[[Tutor, Session], T],
) -> T:
    """A turn in one worker thread, JSON or streamed (``run``): the key's check and the
    session's read are one statement, and the turn runs in the same thread (one hop off the
    event loop, where a dependency, a resume and a turn each took one). A toggle committed
    while the turn ran makes its commit match nothing (the version the turn read is gone):
    the turn is run again on the toggled state, so it obeys the toggle instead of undoing
    it. Another turn committed meanwhile is a real conflict: 409, as is a toggle storm past
    the attempts."""
    ctx, stored = claim.verify_with_session(request, session_id)
    require_reachable(ctx, session_id, stored.meta)  # another learner's session: 404
    tutor, session = _resume(ctx, session_id, stored)
    for attempt in range(1, TURN_ATTEMPTS + 1):
        if attempt > 1:
            tutor, session = _resume(ctx, session_id)
        _check_turn_index(session, turn)
        try:
            return run(tutor, session)
        except TurnConflict as error:
            _rerun_or_raise(error, attempt, session_id)
    raise AssertionError("unreachable")


def _plain(message: str) -> Callable[[Tutor, Session], TurnResult]:
    """A JSON turn: the committed turn's result."""
    return lambda tutor, session: tutor.turn(session, message)


def _streamed(message: str) -> Callable[[Tutor, Session], tuple[list[str], TurnResult]]:
    """A streamed turn, run to its commit in the worker thread (the pieces are held until
    the turn commits anyway, so none crosses to the loop before): the pieces the stream
    guard released and the committed turn's result."""

    def run(tutor: Tutor, session: Session) -> tuple[list[str], TurnResult]:
        pieces = list(tutor.stream(session, message))
        return pieces, session.results[-1]  # committed: the stream raised otherwise

    return run


def _rerun_or_raise(error: TurnConflict, attempt: int, session_id: str) -> None:
    """The rule both turn paths share: a turn that lost only to a toggle (the state changed
    under it) runs again, up to ``TURN_ATTEMPTS``; any other conflict is the client's 409."""
    if not error.state_changed or attempt == TURN_ATTEMPTS:
        raise error
    metrics.TURN_RERUNS.inc()
    log.info("turn on session %s re-run: a toggle landed while it ran", session_id)


def _check_turn_index(session: Session, turn: int | None) -> None:
    committed = session.state.turn
    if turn is not None and turn != committed + 1:
        metrics.TURN_CONFLICTS.inc()
        raise Problem(
            409,
            "turn-conflict",
            f"session {session.id!r}: cannot post turn {turn}, {committed} turn(s) are "
            f"committed (expected turn {committed + 1})",
            committed_turns=committed,
        )


def _session_out(tutor: Tutor, session: Session, turns: int) -> SessionOut:
    state = session.state
    return SessionOut(
        id=session.id,
        theory=state.theory_id,
        exercise=state.exercise_id,
        # The curriculum in use: the one asked for, else the tenant's default.
        curriculum=session.meta.get("curriculum") or getattr(tutor.curriculum, "id", None),
        learner_id=session.meta.get("learner_id"),
        turns=turns,
        solved=state.solved,
    )


def _session_detail(tutor: Tutor, session: Session, turns: int) -> SessionDetail:
    state = session.state
    schema = MetricSchema.from_theory(tutor.theories[state.theory_id].policy)
    return SessionDetail(
        **_session_out(tutor, session, turns).model_dump(),
        metrics=dict(state.metrics),
        instructor_toggles=list(instructor_metrics(schema)),
        meta=dict(session.meta),
    )


def _key_out(item: Any) -> KeyOut:
    return KeyOut(
        id=item.id,
        role=item.role,
        label=item.label,
        created_at=item.created_at,
        revoked_at=item.revoked_at,
        learner_id=item.learner,
    )


def _retake_out(item: Any) -> ExamRetakeOut:
    return ExamRetakeOut(
        learner_id=item.learner_id,
        exam=item.exam_id,
        sitting=item.sitting,
        granted_by=item.granted_by,
        granted_at=item.granted_at,
    )


def _turn_out(session_id: str, result: TurnResult) -> TurnOut:
    """The learner view: built field by field from what the student saw, never from the
    audit, so nothing the detector or the judge wrote about the hidden answer can reach it."""
    return TurnOut(
        session_id=session_id, turn=result.turn, reply=result.tutor, rung=rung_name(result.rung)
    )


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def check_source(source: str, filename: str, *, semantic: bool = True) -> dict[str, Any]:
    """``pedrag check --format json`` on one posted file, named ``filename`` in the output."""
    from pedrag.compiler.driver import check_paths
    from pedrag.compiler.reports.json_report import report_dict

    with tempfile.TemporaryDirectory(prefix="pedrag-check-") as folder:
        path = Path(folder) / filename
        path.write_text(source, encoding="utf-8")
        result = check_paths([str(path)], semantic=semantic)
        report = report_dict([f.path for f in result.files], result.diagnostics, result.summary())
        text = json.dumps(report).replace(json.dumps(str(path))[1:-1], filename)
    return json.loads(text)


__all__ = ["RequestIdFilter", "ServiceSettings", "TheoryLoadError", "create_app", "load_service"]
