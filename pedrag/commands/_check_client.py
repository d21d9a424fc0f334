"""The check server's address and key, and `pedrag check`'s thin client of it.

CLI stage. Takes `pedrag check`'s command line; gives the report a running check server
(`pedrag daemon`, `pedrag.commands._check_server`) made for it (stdout, stderr, exit status), or
None when no server answers, so the caller checks in its own process. A fresh process cannot
re-check a one-rule edit of a 5,000-rule file in 0.3 s (its imports alone are 0.2 to 0.4 s);
the server holds the language server's state between checks (docs/check-speed.md, brief P6).
This module imports the standard library's socket and json and pedrag's code version only:
the client's whole cost is the interpreter, these imports and the key.

The server is found by the project root (the closest folder with a pyproject.toml, else the
working folder) and keyed by pedrag's code, Python's version, the solver libraries' versions
and that root; a server whose key differs refuses the request (it would answer for other
code). The client's working folder is not in the key but in the request: the server resolves
the command line's paths against it, so `pedrag check` from any folder of the project is
answered (the report names the files as a check run there names them).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

from pedrag.compiler.cache_folder import project_root as project_root
from pedrag.kernel.errors import PedragError

SERVER_ENV = "PEDRAG_DAEMON"
"""`off`: `pedrag check` never asks a server (a benchmark of the fresh process, a script that
wants it)."""
TIMEOUT_ENV = "PEDRAG_DAEMON_TIMEOUT"
ANSWER_SECONDS = 120.0
"""How long the client waits for a report before it checks in its own process (a cold
5,000-rule check through the server takes about 9 s; a server stopped or stuck must not
hang the command)."""
CONNECT_SECONDS = 2.0
MARGIN_SECONDS = 5.0
"""What the client waits beyond the time it gives the server: the server stops a check at
the client's time (`_check_server.check_within`) and says so, which takes this long at most
to reach the client on a loaded machine."""

IN_PROCESS = frozenset(
    {
        "-",
        "--fix",
        "--diff",
        "--unsafe-fixes",
        "--no-cache",
        "--statistics",
        "--explain",
        "--list-checks",
        "--stdin-filename",
        "-h",
        "--help",
    }
)
"""Options the server does not honour (stdin, fixes that write files, the cache's own
options and statistics, help): the client does not ask it. The server parses the command line
with the CLI's own parser and refuses these too, abbreviated or not (`_check_server`)."""


SOCKET_BYTES = 100
"""A local socket's path must stay under about 104 bytes (macOS; 108 on Linux)."""


def socket_path(folder: Path | None = None) -> Path:
    """The server's socket for the project `folder` is in: in the check cache's folder, named
    by the root's digest; where that path is too long for a socket (a deep cache folder), in a
    folder of this user's own under the temporary folder, named by the cache folder too."""
    from pedrag.compiler.cache_folder import default_folder

    root = project_root((folder or Path.cwd()).resolve())
    cache = default_folder()
    name = hashlib.sha256(str(root).encode("utf-8")).hexdigest()[:16]
    path = cache / f"server-{name}.sock"
    if len(str(path).encode("utf-8")) <= SOCKET_BYTES:
        return path
    import tempfile

    both = hashlib.sha256(f"{cache}\n{root}".encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"pedrag-{os.getuid()}" / f"server-{both}.sock"


def server_key() -> dict[str, Any]:
    """What a server's answers depend on besides the request: a server started by other code
    must not answer. The project root and not the working folder: a client in a subfolder of
    the project finds the same socket (`socket_path`), and was refused when the key held the
    folder the server was started in."""
    from pedrag.compiler.code_version import library_versions, pedrag_code

    return {
        "pedrag": pedrag_code(),
        "python": sys.version,
        "libraries": [list(pair) for pair in library_versions()],
        "root": str(project_root(Path.cwd().resolve())),
    }


class NoAnswer(PedragError):
    """No server answered (none runs, it died, it timed out, the reply was not JSON)."""


def ask(path: Path, request: dict[str, Any], seconds: float) -> dict[str, Any]:
    """One request and its reply: a JSON document each way, each side closing its end."""
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.settimeout(CONNECT_SECONDS)
        try:
            client.connect(str(path))
            client.settimeout(seconds)
            client.sendall(json.dumps(request).encode("utf-8"))
            client.shutdown(socket.SHUT_WR)
            chunks = []
            while chunk := client.recv(1 << 20):
                chunks.append(chunk)
        except (OSError, ValueError) as exc:  # socket.timeout is an OSError
            raise NoAnswer(str(exc) or type(exc).__name__) from exc
    finally:
        client.close()
    try:
        reply = json.loads(b"".join(chunks))
    except ValueError as exc:
        raise NoAnswer("the server's reply was cut short") from exc
    if not isinstance(reply, dict):
        raise NoAnswer("the server's reply was not a report")
    return reply


def colour(mode: str) -> bool:
    """Whether `--color MODE` colours a report on this process's stdout: the rule of every
    command with a `--color` option (`pedrag.commands.check._colour`), kept here because the
    client decides it for the server, whose stdout is no terminal."""
    if mode == "always":
        return True
    if mode == "never" or os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


def _colour_option(argv: list[str]) -> str:
    mode = "auto"
    for number, token in enumerate(argv):
        if token.startswith("--color="):
            mode = token.split("=", 1)[1]
        elif token == "--color" and number + 1 < len(argv):
            mode = argv[number + 1]
    return mode


def through_server(argv: list[str]) -> tuple[str, str, int] | None:
    """(stdout, stderr, exit status) of `pedrag check ARGV` as a running server checked it, or
    None: no server for this folder, an option it does not honour, or no answer in time. A
    server that refuses (its key differs) or does not answer says so on stderr."""
    if os.environ.get(SERVER_ENV, "").strip().lower() == "off":
        return None
    if any(token.split("=", 1)[0] in IN_PROCESS for token in argv[1:]):
        return None
    try:
        path = socket_path()
    except OSError:
        return None
    if not path.exists():
        return None
    seconds = float(os.environ.get(TIMEOUT_ENV) or ANSWER_SECONDS)
    request = {
        "op": "check",
        "argv": argv,
        "key": server_key(),
        "cwd": os.getcwd(),
        "colour": colour(_colour_option(argv)),
        "seconds": seconds,  # the server stops the check then: nobody waits for it after
    }
    try:
        reply = ask(path, request, seconds + MARGIN_SECONDS)
    except NoAnswer as exc:
        # Said, whatever the cause: a server that exists and does not answer is never passed
        # over in silence (a stale socket left by a killed server, one that died mid-check).
        if "timed out" in str(exc):
            print(
                f"pedrag check: the check server did not answer in {seconds:g} s; checking "
                "here (`pedrag daemon status` says what it holds)",
                file=sys.stderr,
            )
        else:
            print(
                f"pedrag check: the check server did not answer ({exc}); checking here "
                "(`pedrag daemon status` says whether one runs, `pedrag daemon start` starts one)",
                file=sys.stderr,
            )
        return None
    if reply.get("answer") == "refused":
        print(
            f"pedrag check: the check server refused: {reply.get('reason')}; checking here "
            "(restart it: `pedrag daemon restart`)",
            file=sys.stderr,
        )
        return None
    if reply.get("answer") == "fallback" and reply.get("notice"):
        print(f"pedrag check: {reply.get('reason')}; checking here", file=sys.stderr)
        return None
    if reply.get("answer") != "report":
        return None  # an option it does not honour: the client's by design, nothing to say
    return str(reply["stdout"]), str(reply["stderr"]), int(reply["status"])
