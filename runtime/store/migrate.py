"""Schema migrations: bring a session database to the head revision, once, under a lock.

Runtime stage: persistence, at start. Takes an SQLAlchemy engine; gives a database whose
schema is the head of the Alembic revisions in ``pedrag.runtime.store.migrations`` (package data).

Why it looks like this:

- **Safe when many processes start at once.** A deployment starts its workers together on a
  possibly empty database. ``CREATE TABLE`` from several of them at once fails on PostgreSQL
  (a duplicate row in ``pg_type`` even with ``IF NOT EXISTS``), so the upgrade runs inside one
  transaction that first takes a PostgreSQL advisory transaction lock
  (``pg_advisory_xact_lock``): one process migrates, the others wait, then find the head
  revision and do nothing. On SQLite the transaction starts with ``BEGIN IMMEDIATE`` (the
  store's write transaction), which serialises the same way. DDL is transactional on both, so
  a process killed mid-migration leaves the previous revision.
- **Cheap when there is nothing to do.** The current revision is read first without the lock;
  at head (every start after the first) no script is loaded.
- **Databases from before migrations** (created by ``metadata.create_all``) have the tables of
  revision ``0001`` and no ``alembic_version``: they are stamped ``0001`` and upgraded, so
  their sessions and audit records are kept.
- **No ``env.py``.** Alembic's environment is configured here, on the caller's connection, so
  the migration runs in the transaction that holds the lock. ``alembic`` on the command line
  is not needed to run pedrag; the revisions are ordinary Alembic scripts for anyone who wants
  to inspect them with it.
"""

from __future__ import annotations

import importlib.resources
from typing import Any

from alembic.config import Config
from alembic.runtime.environment import EnvironmentContext
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, inspect, text

HEAD = "0009"
"""The newest revision; a test checks it is the head of the scripts."""

INITIAL = "0001"
LOCK_KEY = 0x70656472  # "pedr": the advisory lock every pedrag process migrates under


def _config() -> Config:
    config = Config()
    location = importlib.resources.files("pedrag.runtime.store").joinpath("migrations")
    config.set_main_option("script_location", str(location))
    return config


def script_directory() -> ScriptDirectory:
    """The revisions shipped with pedrag."""
    return ScriptDirectory.from_config(_config())


def current_revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


def upgrade(engine: Engine, begin_write: Any) -> bool:
    """Upgrade the database to :data:`HEAD`; True if anything was applied.

    ``begin_write`` opens the store's write transaction (a context manager giving a
    connection), so SQLite takes its write lock at BEGIN."""
    with engine.connect() as connection:
        if current_revision(connection) == HEAD:
            return False
    with begin_write() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": LOCK_KEY})
        current = current_revision(connection)
        if current == HEAD:
            return False  # another process migrated while this one waited for the lock
        config = _config()
        script = ScriptDirectory.from_config(config)
        if current is None and inspect(connection).has_table("pedrag_sessions"):
            current = INITIAL  # created before migrations, by create_all: revision 0001
            _stamp(connection, script, INITIAL)

        def steps(revision: Any, _context: Any) -> Any:
            return script._upgrade_revs(HEAD, revision)

        with EnvironmentContext(config, script, fn=steps, destination_rev=HEAD) as environment:
            environment.configure(connection=connection)
            with environment.begin_transaction():
                environment.run_migrations()
        return True


def _stamp(connection: Connection, script: ScriptDirectory, revision: str) -> None:
    context = MigrationContext.configure(connection)
    context.stamp(script, revision)
