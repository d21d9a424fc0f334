"""`pedrag daemon start|stop|restart|status`: the check server `pedrag check` asks first."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from pedrag.commands._check_client import NoAnswer, ask, project_root, socket_path

NAME = "daemon"
ORDER = 96
HELP = "keep a check server running: `pedrag check` in this project answers from memory"
DESCRIPTION = """\
Start, stop or ask about the check server of the project you are in (the closest folder with
a pyproject.toml, else this folder), as dmypy does for mypy. While it runs, `pedrag check`
run in this folder sends its command line to the server, which keeps every file's front end,
parsed conditions and solver answers in memory between checks: re-checking a one-rule edit
of a 5,000-rule file costs a fraction of a fresh process's time. The report, its format and
the exit status are those of `pedrag check --no-cache`: each check re-reads the files and
their pyproject.toml from disk.

`pedrag check` checks in its own process, exactly as without a server, when no server runs,
when the server does not answer in time ($PEDRAG_DAEMON_TIMEOUT seconds, default 120), for
options the server leaves to it (-, --fix, --diff, --no-cache, --statistics, --explain,
--list-checks), when the server runs other code (pedrag, Python or a solver library was
upgraded since it started: `pedrag daemon restart`), or when the check fails inside the
server; it then says why. `pedrag check` from any folder of the project is answered by the
project's server, its paths read from that folder. The server stops a check once its client
has stopped waiting for it, and then starts afresh on the same socket: the requests waiting
meanwhile are answered once it is up again. PEDRAG_DAEMON=off makes `pedrag check`
ignore a running server.

The server listens on a local socket in the check cache's folder ($PEDRAG_CACHE_DIR or the
platform's cache folder), readable by you only, and nowhere else; its log is beside it. A
relative $PEDRAG_CACHE_DIR is taken from the project's root, so the server and clients in
any folder of the project agree on it.

exit status: 0 done (`status`: a server runs), 1 `status` with no server running or a server
that did not start, 2 usage problem.
"""
EPILOG = """\
examples:
  pedrag daemon start
  pedrag check theories/          # answered by the server
  pedrag daemon status            # pid, key, the files it holds, memory
  pedrag daemon stop
"""

START_SECONDS = 60.0  # for a new server to answer `status` (its imports, on a loaded machine)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("start", "stop", "restart", "status"))
    parser.add_argument(
        "--json", action="store_true", help="`status` as JSON (what the server holds)"
    )


def run(args: argparse.Namespace) -> int:
    path = socket_path()
    if args.action == "status":
        return _status(path, args.json)
    if args.action in ("stop", "restart"):
        _stop(path)
        if args.action == "stop":
            return 0
    return _start(path)


def _ask_status(path: Path) -> dict[str, object] | None:
    if not path.exists():
        return None
    try:
        reply = ask(path, {"op": "status"}, 10.0)
    except NoAnswer:
        return None
    return reply if reply.get("answer") == "status" else None


def _status(path: Path, as_json: bool) -> int:
    status = _ask_status(path)
    if status is None:
        print(f"no check server runs for {project_root(Path.cwd().resolve())}")
        return 1
    if as_json:
        print(json.dumps(status, indent=2))
        return 0
    files = status["files"] or []
    assert isinstance(files, list)
    print(f"check server {status['pid']} for {status['root']}, up {status['up_seconds']} s")
    print(f"  socket: {status['socket']}")
    print(
        f"  requests answered: {status['requests']} ({status['failed']} failed inside it, "
        f"{status.get('stopped', 0)} stopped at their time limit)"
    )
    memory = status.get("memory_kib")
    if memory:
        print(f"  memory: {int(memory) // 1024} MiB")  # type: ignore[call-overload]
    print(f"  files held ({len(files)}):")
    for name in files:
        print(f"    {name}")
    return 0


def _stop(path: Path) -> None:
    if not path.exists():
        print("no check server was running")
        return
    try:
        reply = ask(path, {"op": "stop"}, 10.0)
    except NoAnswer:
        path.unlink(missing_ok=True)  # a server that died left its socket file
        print("no check server was running (removed its stale socket)")
        return
    pid = int(reply.get("pid", 0))
    deadline = time.monotonic() + 10.0
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    print(f"check server {pid} stopped")


def _start(path: Path) -> int:
    running = _ask_status(path)
    if running is not None:
        print(f"check server {running['pid']} already runs for {running['root']}")
        return 0
    path.unlink(missing_ok=True)  # a stale socket file: its server is gone
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.parent.name == f"pedrag-{os.getuid()}":  # under the temporary folder, everyone's
        if path.parent.stat().st_uid != os.getuid():
            print(f"pedrag daemon: {path.parent} belongs to another user", file=sys.stderr)
            return 1
        path.parent.chmod(0o700)
    log = path.with_suffix(".log")
    with open(log, "ab") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "pedrag.commands._check_server", str(path)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,  # it outlives this command and its terminal
            env=os.environ.copy(),
        )
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        status = _ask_status(path)
        if status is not None:
            print(f"check server {status['pid']} started for {status['root']} (log: {log})")
            return 0
        if server.poll() is not None:
            break
        time.sleep(0.05)
    print(f"pedrag daemon: the check server did not start; see {log}", file=sys.stderr)
    return 1
