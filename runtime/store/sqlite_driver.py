"""The SQLite driver: the one DB-API module every SQLite store opens its database with, and
whether that module can load sqlite-vec for course-passage vectors.

Runtime, storage (DESIGN, "Grounding"). Decided once per process, here and nowhere else:

- the standard library's ``sqlite3`` when it can load extensions (python.org and Debian
  builds can) and ``sqlite-vec`` is installed;
- else ``pysqlite3`` (``pysqlite3-binary`` on Linux: the same API over its own, extension-
  capable SQLite) when it and ``sqlite-vec`` are installed;
- else the standard ``sqlite3`` without vectors: full-text BM25 only, and
  :func:`vectors_unavailable` says which package to install.

One module for everything, because two copies of the SQLite library in one process must
never open the same file (each keeps its own POSIX locks, so one would not see the other's
and could corrupt the database). Anything that opens a store's file directly (tests, tools)
uses :func:`sqlite_dbapi`.
"""

from __future__ import annotations

import functools
import sqlite3
from dataclasses import dataclass
from types import ModuleType
from typing import Any

VECTORS_EXTRA = "pip install 'pedrag[vectors]'"


@dataclass(frozen=True)
class _Driver:
    module: ModuleType
    problem: str | None  # why vectors are unavailable; None when sqlite-vec loads


@functools.cache
def _driver() -> _Driver:
    try:
        import sqlite_vec  # noqa: F401  (only whether it is installed)
    except ImportError:
        return _Driver(
            sqlite3, f"sqlite-vec is not installed ({VECTORS_EXTRA} adds it and a driver)"
        )
    candidates: list[ModuleType] = []
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        candidates.append(sqlite3)
    try:
        from pysqlite3 import dbapi2
    except ImportError:
        pass
    else:
        candidates.append(dbapi2)
    if not candidates:
        return _Driver(
            sqlite3,
            "this Python's sqlite3 cannot load extensions and pysqlite3 is not installed "
            f"(on Linux, {VECTORS_EXTRA} adds pysqlite3-binary; elsewhere use a Python whose "
            "sqlite3 can load extensions)",
        )
    problems: list[str] = []
    for module in candidates:
        try:
            connection = module.connect(":memory:")
            try:
                load_vectors(connection)
                connection.execute("SELECT vec_version()").fetchone()
            finally:
                connection.close()
        except Exception as error:  # a broken build of either: try the next, then report
            problems.append(f"{module.__name__}: {error}")
            continue
        return _Driver(module, None)
    return _Driver(sqlite3, "sqlite-vec does not load: " + "; ".join(problems))


def sqlite_dbapi() -> ModuleType:
    """The DB-API module SQLite databases are opened with in this process."""
    return _driver().module


def vectors_unavailable() -> str | None:
    """Why SQLite cannot hold passage vectors here (with the package to install), or None."""
    return _driver().problem


def load_vectors(dbapi_connection: Any) -> None:
    """Load sqlite-vec into a raw connection of :func:`sqlite_dbapi`'s module."""
    import sqlite_vec

    dbapi_connection.enable_load_extension(True)
    try:
        sqlite_vec.load(dbapi_connection)
    finally:
        dbapi_connection.enable_load_extension(False)


def serialize_vector(vector: list[float]) -> bytes:
    """A vector as sqlite-vec stores ``float[N]``: little-endian float32."""
    import sqlite_vec

    return bytes(sqlite_vec.serialize_float32(vector))
