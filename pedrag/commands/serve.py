"""`pedrag serve`: the tutor as an HTTP service (FastAPI on uvicorn, one or more workers)."""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

NAME = "serve"
ORDER = 60
HELP = "serve the tutor over HTTP: sessions, turns (JSON or SSE), audit, playground"
DESCRIPTION = """\
Serve the supervised tutor over HTTP (docs/service.md): learners, sessions, turns as JSON or
as Server-Sent Events (only text the stream guard released), audit records, instructor
toggles, theory checking, Prometheus metrics and a playground page at /playground/.

Requests carry a tenant's API key (`Authorization: Bearer KEY`). Create a tenant and its
first key (an admin key) with `pedrag serve --add-tenant ID`; the key is printed once and
stored hashed. Keys have roles: `learner` (sessions and turns; what a student-facing app
holds), `instructor` (also toggles, audits, learner records, checks), `admin` (also keys and
deletion): `--issue-key ID --role learner`, `--list-keys ID`, `--revoke-key KEY_ID`. A
learner key is one learner's (`--learner LEARNER_ID`): its sessions are that learner's and it
reaches no other's; a learner key bound to nobody starts anonymous sessions only (no exams).
`--bind-key KEY_ID --learner ID` binds such a key (one issued before revision 0009) to an
existing learner: bind only a key that learner alone holds, since whoever holds it becomes
that learner. The sessions it started anonymously stay anonymous, and it no longer reaches
them.

The database is PEDRAG_DB (or --db): SQLite by default, fine for one worker; use PostgreSQL
(postgresql+psycopg://...) for --workers above 1. Every worker applies the schema migrations
at start under a lock, so any number may start together on an empty database. The model
endpoint comes from OPENAI_BASE_URL / OPENAI_API_KEY as for `pedrag chat`; without one the
offline backend answers.

exit status: 0 stopped cleanly, 2 usage problem (bad option, database or theory files)
"""
EPILOG = """\
examples:
  pedrag serve --add-tenant acme --name "Acme School" --requests-per-minute 600
  pedrag serve --issue-key acme --role learner --learner ana   ana's own key
  pedrag serve --issue-key acme --role learner   anonymous practice only
  pedrag serve --list-keys acme                  key ids, roles, revoked or not
  pedrag serve --revoke-key 3f9a0c1d2e4b         refused from the next request on
  pedrag serve --bind-key 3f9a0c1d2e4b --learner ana   an unbound learner key becomes ana's
  pedrag serve                                   one worker on 127.0.0.1:8000, SQLite
  PEDRAG_DB=postgresql+psycopg://tutor@db/pedrag pedrag serve --workers 4 --host 0.0.0.0
  pedrag serve --theories theories/ --port 9000  serve your own theory files
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    parser.add_argument(
        "--workers", type=int, default=1, help="worker processes (default: 1; PostgreSQL for >1)"
    )
    parser.add_argument("--db", help="database path or URL (default: $PEDRAG_DB, else SQLite)")
    parser.add_argument(
        "--worker-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with --workers above 1: how long a worker may take to start or to answer the "
        "supervisor's health check before it is replaced (default: 60, or "
        "$PEDRAG_SERVE_WORKER_TIMEOUT; uvicorn's own 5 s kills busy workers on a loaded host)",
    )
    parser.add_argument(
        "--keep-alive",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how long an idle connection is kept open (default: 75, or "
        "$PEDRAG_SERVE_KEEP_ALIVE). Longer than a client's or a proxy's own idle limit, so "
        "the client, not the server, closes it: a connection closed by the server just as the "
        "client reuses it fails that request (uvicorn's 5 s equals httpx's own 5 s)",
    )
    parser.add_argument(
        "--theories",
        action="append",
        metavar="PATH",
        help="theory/curriculum files or folders to serve (repeatable; default: shipped set)",
    )
    parser.add_argument(
        "--metrics-public",
        action="store_true",
        help="answer GET /metrics without an API key, for a Prometheus scraper that sends none "
        "(default: an instructor key or above; or $PEDRAG_SERVE_METRICS_PUBLIC=1)",
    )
    parser.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="info",
        help="log level (default: info); every line carries the request id",
    )
    admin = parser.add_argument_group("tenant administration (runs and exits)")
    admin.add_argument(
        "--add-tenant", metavar="ID", help="create a tenant and print its first (admin) API key"
    )
    admin.add_argument(
        "--issue-key", metavar="ID", help="print a new API key for a tenant (with --role)"
    )
    admin.add_argument(
        "--role",
        choices=("learner", "instructor", "admin"),
        default="learner",
        help="with --issue-key: the key's role (default: learner)",
    )
    admin.add_argument(
        "--learner",
        metavar="LEARNER_ID",
        help="with --issue-key and --role learner: the learner the key acts as (created if the "
        "tenant has none of that id); its sessions are that learner's, it reaches no other's. "
        "A learner key without one starts anonymous sessions only. With --bind-key: the "
        "existing learner to bind the key to",
    )
    admin.add_argument(
        "--bind-key",
        metavar="KEY_ID",
        help="bind a learner key bound to nobody (its id, from --list-keys) to --learner, an "
        "existing learner of the key's tenant; a bound key is never rebound (issue a new one)",
    )
    admin.add_argument("--list-keys", metavar="ID", help="list a tenant's keys: id, role, state")
    admin.add_argument(
        "--revoke-key", metavar="KEY_ID", help="revoke a key (its id, from --list-keys)"
    )
    admin.add_argument("--list-tenants", action="store_true", help="list tenants and settings")
    admin.add_argument("--name", help="with --add-tenant: display name")
    admin.add_argument(
        "--max-usd", type=float, help="with --add-tenant: the tenant's spending cap in USD"
    )
    admin.add_argument(
        "--requests-per-minute", type=int, help="with --add-tenant: rate limit (all workers)"
    )
    admin.add_argument(
        "--retention-days",
        type=int,
        help="with --add-tenant: delete sessions this many days after their last turn",
    )


def _log_config(level: str) -> dict[str, Any]:
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": "pedrag.runtime.service.app.RequestIdFilter"}},
        "formatters": {
            "plain": {
                "format": "%(asctime)s %(levelname)s %(process)d [%(request_id)s] "
                "%(name)s: %(message)s"
            }
        },
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "plain",
                "filters": ["request_id"],
                "stream": "ext://sys.stderr",
            }
        },
        "loggers": {
            "pedrag": {"handlers": ["stderr"], "level": level.upper(), "propagate": False},
            "uvicorn": {"handlers": ["stderr"], "level": level.upper(), "propagate": False},
            # pedrag's own access line (with the request id) replaces uvicorn's.
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
        },
    }


def _admin(args: argparse.Namespace) -> int:
    from pedrag.runtime.store.session_store import LearnerNotFound, SessionStore, StoreError

    try:
        with SessionStore(args.db) as store:
            if args.list_tenants:
                for tenant in store.tenants.list():
                    print(
                        f"{tenant.id}\t{tenant.name}\tmax_usd={tenant.max_usd}\t"
                        f"requests_per_minute={tenant.requests_per_minute}\t"
                        f"retention_days={tenant.retention_days}"
                    )
                return 0
            if args.list_keys:
                keys = store.tenants.list_keys(args.list_keys)
                if store.tenants.get(args.list_keys) is None:
                    raise StoreError(f"no tenant with id {args.list_keys!r}")
                for item in keys:
                    state = "in force" if item.revoked_at is None else f"revoked {item.revoked_at}"
                    learner = f"learner={item.learner}" if item.learner else "-"
                    print(f"{item.id}\t{item.role}\t{state}\t{learner}\t{item.label}")
                return 0
            if args.revoke_key:
                if not store.tenants.revoke_key(args.revoke_key):
                    raise StoreError(f"no key {args.revoke_key!r} in force (see --list-keys)")
                print(f"key {args.revoke_key} revoked", file=sys.stderr)
                return 0
            if args.bind_key:
                if args.learner is None:
                    raise StoreError("--bind-key KEY_ID goes with --learner ID")
                try:
                    bound = store.tenants.bind_key(args.bind_key, args.learner)
                except LearnerNotFound as error:
                    raise StoreError(
                        f"{error} in the key's tenant: a key is bound to an existing learner "
                        "(`--issue-key TENANT --role learner --learner ID` creates one, with a "
                        "new key)"
                    ) from error
                print(
                    f"key {args.bind_key} of tenant {bound.tenant.id!r} is learner "
                    f"{args.learner!r} from its next request (its anonymous sessions stay "
                    "anonymous)",
                    file=sys.stderr,
                )
                return 0
            role = args.role
            if args.learner is not None and (not args.issue_key or role != "learner"):
                raise StoreError(
                    "--learner goes with --issue-key TENANT --role learner, or --bind-key KEY_ID"
                )
            if args.add_tenant:
                store.tenants.create(
                    args.add_tenant,
                    args.name,
                    retention_days=args.retention_days,
                    max_usd=args.max_usd,
                    requests_per_minute=args.requests_per_minute,
                )
                role = "admin"  # the tenant's first key: it issues the others
            tenant_id = args.add_tenant or args.issue_key
            if args.learner is not None:
                _ensure_learner(store, tenant_id, args.learner)
            key = store.tenants.issue_key(
                tenant_id, label="pedrag serve", role=role, learner=args.learner
            )
    except StoreError as error:
        print(f"pedrag serve: {error}", file=sys.stderr)
        return 2
    print(key)
    to_whom = f" bound to learner {args.learner!r}" if args.learner is not None else ""
    print(
        f"{role} API key for tenant {tenant_id!r}{to_whom} (shown once; stored hashed)",
        file=sys.stderr,
    )
    return 0


def _ensure_learner(store: Any, tenant_id: str, learner_id: str) -> None:
    """The tenant's learner ``learner_id``, created when missing (the CLI has no other way to
    create one), said on stderr; an unknown tenant is the issuing's error, as without it."""
    from pedrag.runtime.store.session_store import AlreadyExists, LearnerNotFound

    if store.tenants.get(tenant_id) is None:
        return  # issue_key says "no tenant with id ..."
    scoped = store.for_tenant(tenant_id)
    try:
        scoped.load_learner(learner_id)
    except LearnerNotFound:
        try:
            scoped.create_learner(learner_id)
            print(f"learner {learner_id!r} created in tenant {tenant_id!r}", file=sys.stderr)
        except AlreadyExists:
            pass  # created meanwhile by another process: as good


SERVICE_PACKAGES = ("fastapi", "uvicorn", "httptools", "prometheus_client")
"""What `pedrag serve` imports beyond pedrag's own dependencies (the `service` extra)."""


def _seconds(given: float | None, option: str, variable: str, default: float) -> float | str:
    """A duration from its option, else its environment variable, else the default; a
    message (str) when it is not a number of seconds above 0."""
    if given is None:
        raw = os.environ.get(variable, "").strip()
        try:
            given = float(raw) if raw else default
        except ValueError:
            return f"{variable} is not seconds: {raw!r}"
    if not given > 0:
        return f"{option} must be above 0 seconds"
    return given


def _missing_service_packages() -> list[str]:
    """The service extra's packages this environment lacks: `pip install .` leaves them out,
    and the service then stopped on a traceback from its first import."""
    missing = []
    for name in SERVICE_PACKAGES:
        try:
            importlib.import_module(name)  # the service imports them next anyway
        except ImportError:
            missing.append(name)
    return missing


def run(args: argparse.Namespace) -> int:
    if args.db:
        os.environ["PEDRAG_DB"] = args.db
    if (
        args.add_tenant
        or args.issue_key
        or args.list_tenants
        or args.list_keys
        or args.revoke_key
        or args.bind_key
    ):
        return _admin(args)
    if args.workers < 1:
        print("pedrag serve: --workers must be at least 1", file=sys.stderr)
        return 2
    missing = _missing_service_packages()
    if missing:
        print(
            f"pedrag serve: the service needs the `service` extra ({', '.join(missing)} not "
            "installed): pip install 'pedrag[service]' (from a checkout: pip install '.[service]')",
            file=sys.stderr,
        )
        return 2
    for option, variable, default in (
        ("--worker-timeout", "PEDRAG_SERVE_WORKER_TIMEOUT", 60.0),
        ("--keep-alive", "PEDRAG_SERVE_KEEP_ALIVE", 75.0),
    ):
        name = option.removeprefix("--").replace("-", "_")
        seconds = _seconds(getattr(args, name), option, variable, default)
        if isinstance(seconds, str):
            print(f"pedrag serve: {seconds}", file=sys.stderr)
            return 2
        setattr(args, name, seconds)
    if args.metrics_public:
        os.environ["PEDRAG_SERVE_METRICS_PUBLIC"] = "1"  # read by every worker
    if args.theories:
        os.environ["PEDRAG_SERVE_THEORIES"] = os.pathsep.join(
            str(Path(path).resolve()) for path in args.theories
        )
    import uvicorn

    from pedrag.runtime.policy.theory_set import TheoryLoadError
    from pedrag.runtime.service.app import ServiceSettings, load_service
    from pedrag.runtime.service.transport import HTTP_PROTOCOL
    from pedrag.runtime.store.session_store import StoreError, resolve_db_url

    try:
        url = resolve_db_url(args.db)
        if args.workers > 1 and url.get_backend_name() == "sqlite":
            print(
                "pedrag serve: note: several workers on SQLite serialise every write; "
                "use PostgreSQL for a multi-worker deployment",
                file=sys.stderr,
            )
        # Fail here, with a message, rather than in every worker: the database opens (and is
        # migrated) and the theories load.
        load_service(ServiceSettings.from_env()).store.close()
    except (StoreError, TheoryLoadError, ValueError) as error:
        print(f"pedrag serve: {error}", file=sys.stderr)
        return 2
    metrics_dir = None
    if args.workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        metrics_dir = tempfile.mkdtemp(prefix="pedrag-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    try:
        uvicorn.run(
            "pedrag.runtime.service.app:create_app",
            factory=True,
            host=args.host,
            port=args.port,
            workers=args.workers,
            log_config=_log_config(args.log_level),
            access_log=False,
            http=HTTP_PROTOCOL,  # TCP_NODELAY on every connection, whatever the workers
            timeout_graceful_shutdown=10,
            timeout_worker_healthcheck=args.worker_timeout,
            timeout_keep_alive=args.keep_alive,
        )
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    return 0
