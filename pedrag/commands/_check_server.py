"""The check server: `pedrag check` answered by a process that stays up (`pedrag daemon`).

CLI stage, a long-running one: the language server's checking without an editor. Takes requests on a local socket (AF_UNIX, in the
check cache's folder, `pedrag.commands._check_client.socket_path`): a `pedrag check` command
line, its client's key and whether to colour; gives the report the CLI's own writer made
(`pedrag.commands.check.run`), its stderr and exit status. Each request re-reads the files and
their pyproject.toml from disk; what the process keeps between requests is the language
server's (`pedrag.lsp.checking.check_files`: each file's last front end, spliced on a one-rule
edit, its parsed and resolved conditions, the rules' interned formulas and the solver's
answers), which is what makes a one-rule edit of a 5,000-rule file cost the language server's
keystroke and not a fresh process's 1 to 2 s.

Requests are answered one at a time, in the order they come (a second client waits in the
socket's queue). A request whose key (pedrag's code, Python, the solver libraries, the
project root) differs from the server's is refused, never answered; the request's working
folder, any folder of the project, is the one its paths are resolved in (`_in_folder`). A
check that fails inside the server, or outlasts the time its client waits (`check_within`),
is answered `fallback` with the reason (the client says it and checks in its own process);
a failure's traceback goes to the server's log. The server listens on nothing but its socket.

    python -m pedrag.commands._check_server SOCKET     (what `pedrag daemon start` runs)
    python -m pedrag.commands._check_server SOCKET --listening FD   (the same, started afresh)
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import select
import signal
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from pedrag.commands._check_client import ANSWER_SECONDS, server_key

REQUEST_SECONDS = 10.0  # to read a request: a client that connects and sends nothing is dropped
REQUEST_BYTES = 1 << 20
IDLE_SECONDS = 1.0  # as the language server's (`pedrag.lsp.server.IDLE_SECONDS`)

NOT_HONOURED = ("fix", "diff", "unsafe_fixes", "no_cache", "statistics", "explain", "list_checks")
"""Options the server leaves to the client's own process: fixes write files, --no-cache and
--statistics are about the on-disk cache, --explain and --list-checks need no check."""


class Server:
    def __init__(self, path: Path, listening: int | None = None) -> None:
        """`listening`: the socket a server that starts afresh was listening on (`main`),
        kept open across the restart; else a new socket is bound at `path`."""
        self.path = path
        self.key = server_key()
        self.started = time.time()
        self.requests = 0
        self.failed = 0
        self.stopped = 0  # checks stopped at their time limit (`check_within`)
        self.afresh = False  # one was: the process is started again (`main`)
        if listening is not None:
            self.listener = socket.socket(fileno=listening)
            self.listener.set_inheritable(False)
            self.inode = path.stat().st_ino
            return
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.listener.bind(str(path))
        os.chmod(path, 0o600)  # another user's client must not run checks as this one
        self.inode = path.stat().st_ino
        self.listener.listen(16)

    def serve(self) -> None:
        try:
            while True:
                ready, _, _ = select.select([self.listener], [], [], IDLE_SECONDS)
                if not ready:
                    from pedrag.lsp import checking, heap

                    # One at a time, and given way to a request that comes meanwhile.
                    if not checking.warm_up(self._waiting):
                        heap.collect_if_due()  # between requests, never inside one
                    continue
                connection, _ = self.listener.accept()
                with connection:
                    if self._answer(connection) == "stop" or self.afresh:
                        return
        finally:
            if not self.afresh:  # else the socket stays open for the process started afresh
                self.close()

    def _waiting(self) -> bool:
        """Whether a client waits in the socket's queue (idle work then gives way)."""
        return bool(select.select([self.listener], [], [], 0)[0])

    def close(self) -> None:
        self.listener.close()
        with contextlib.suppress(OSError):
            if self.path.stat().st_ino == self.inode:  # not a newer server's socket
                self.path.unlink()

    def _answer(self, connection: socket.socket) -> str:
        connection.settimeout(REQUEST_SECONDS)
        try:
            request = _read(connection)
            op = str(request.get("op"))
            reply = self._reply(op, request)
        except Exception as exc:  # a malformed request must not stop the server
            op, reply = "bad", {"answer": "error", "reason": f"bad request: {exc!r}"}
        with contextlib.suppress(OSError):  # the client gave up: nothing to tell it
            connection.sendall(json.dumps(reply).encode("utf-8"))
        return op

    def _reply(self, op: str, request: dict[str, Any]) -> dict[str, Any]:
        if op == "status":
            return {"answer": "status", **self.status()}
        if op == "stop":
            return {"answer": "stopping", "pid": os.getpid()}
        if op != "check":
            return {"answer": "error", "reason": f"unknown request {op!r}"}
        differs = sorted(
            part for part in self.key if request.get("key", {}).get(part) != self.key[part]
        )
        if differs:
            return {"answer": "refused", "reason": self._differs(differs, request["key"])}
        seconds = _seconds(request.get("seconds"))
        try:
            with _in_folder(request.get("cwd")):
                reply = check_within(request, seconds)
        except TimeLimit:
            self.stopped += 1
            self.afresh = True
            return {
                "answer": "fallback",
                "notice": True,
                "reason": f"the check server stopped this check after {seconds:g} s, the time "
                "this command waits for it ($PEDRAG_DAEMON_TIMEOUT), and starts afresh",
            }
        except Exception:  # a failed check must not stop the server: the client checks itself
            self.failed += 1
            traceback.print_exc()
            return {
                "answer": "fallback",
                "notice": True,
                "reason": f"the check failed inside the check server (its log: "
                f"{self.path.with_suffix('.log')})",
            }
        self.requests += reply["answer"] == "report"  # reports made, not requests passed on
        return reply

    def _differs(self, parts: list[str], theirs: dict[str, Any]) -> str:
        """Why a client's key is refused, in the words of what to do about it: each part the
        server and the client see differently, with both values where they are short."""
        said = []
        for part in parts:
            if part == "root":
                said.append(f"it serves the project {self.key['root']}, not {theirs.get('root')}")
            elif part == "python":
                mine, other = self.key["python"].split()[0], str(theirs.get("python")).split()[0]
                said.append(f"it runs Python {mine}, this command Python {other}")
            elif part == "libraries":
                said.append("it runs other versions of the solver libraries")
            else:
                said.append("it runs other pedrag code (installed or edited since it started)")
        return f"{'; '.join(said)} (server pid {os.getpid()})"

    def status(self) -> dict[str, Any]:
        from pedrag.lsp import checking

        return {
            "pid": os.getpid(),
            "root": self.key["root"],
            "socket": str(self.path),
            "key": self.key,
            "up_seconds": round(time.time() - self.started, 1),
            "requests": self.requests,
            "failed": self.failed,
            "stopped": self.stopped,
            "files": sorted({path for _, path in checking.LOADED}),
            "memory_kib": _resident_kib(),
            "cpu_seconds": time.process_time(),  # what a request cost (benchmarks/recheck.py)
        }


IMPORT_RETRY_SECONDS = 0.01


class TimeLimit(BaseException):
    """A check outlasted the time its client waits. A BaseException, as KeyboardInterrupt is,
    so that no `except Exception` inside the check (a checker bug must not hide a file's
    other findings) takes it for a finding."""


def _seconds(given: Any) -> float:
    try:
        seconds = float(given)
    except (TypeError, ValueError):
        return ANSWER_SECONDS
    return seconds if 0 < seconds < 1e6 else ANSWER_SECONDS


def check_within(request: dict[str, Any], seconds: float) -> dict[str, Any]:
    """`check(request)`, stopped (`TimeLimit`) once it has run `seconds`: the client waits that
    long and then checks in its own process, so a check still running after it only holds up
    the requests queued behind it. An alarm signal, so the server's main thread (the only one
    that answers) is interrupted between two bytecodes.

    A check cut short can leave what the process keeps half-updated: most memos are filled
    by one dictionary store of a finished value, but some kept objects are updated in several
    steps (the box form of "some rule is eligible", `analysis._KEPT_UNIONS`; positions moved
    lazily and shared between a file's versions, `split_positions`), and a module whose import
    is cut short can stay bound, half-made, in another. So the server answers and then starts
    afresh (`main`: the same process, executed again, its on-disk cache intact, written by
    temporary files renamed into place). The alarm is put off (`IMPORT_RETRY_SECONDS`) while
    the check is inside the import machinery, so the answer itself is not cut short there."""

    def expire(_: int, frame: Any) -> None:
        while frame is not None:
            if frame.f_code.co_filename.startswith("<frozen importlib"):
                signal.setitimer(signal.ITIMER_REAL, IMPORT_RETRY_SECONDS)
                return
            frame = frame.f_back
        raise TimeLimit

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return check(request)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _in_folder(folder: Any) -> Any:
    """The request's working folder for the check (its paths, the report's names, the kept
    report's key), the server's own after it. Only a folder of the server's project reaches
    here: the client's key names its project root, which must be the server's."""
    home = os.getcwd()
    if folder is not None:
        os.chdir(str(folder))  # a folder gone since the client started: the check fails, said
    try:
        yield
    finally:
        os.chdir(home)


def check(request: dict[str, Any]) -> dict[str, Any]:
    """`pedrag check ARGV` as the CLI runs it, with this process's checker
    (`checking.check_files`) and the client's colour; `fallback` for what it does not
    honour (`NOT_HONOURED`, stdin, a command line the parser rejects)."""
    from pedrag.cli import build_parser
    from pedrag.commands import check as command
    from pedrag.lsp import checking

    argv = [str(token) for token in request["argv"]]
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(errors):
            args = _parser(build_parser).parse_args(argv)
    except SystemExit:
        return {"answer": "fallback", "reason": "the command line is the CLI's to reject"}
    if getattr(args, "command", None) != "check" or any(
        getattr(args, name) for name in NOT_HONOURED
    ):
        return {"answer": "fallback", "reason": "an option the server does not honour"}
    if not args.paths or "-" in args.paths or args.stdin_filename:
        return {"answer": "fallback", "reason": "standard input is read by the client"}
    args._argv = argv  # as `pedrag.cli` records it (SARIF)
    args.color = "always" if request.get("colour") else "never"
    inputs = _inputs(args, argv)
    if inputs is not None and inputs in REPORTS:
        return REPORTS[inputs]
    results: list[Any] = []

    def check_files(*given: Any) -> Any:
        results.append(checking.check_files(*given))
        return results[-1]

    args._check = check_files
    out, err = io.StringIO(), io.StringIO()
    warmed = set(checking.WARMED)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = command.run(args)
    if checking.WARMED - warmed:
        folder = os.getcwd()
        checking.WARM_UP.append(lambda progress: _warm_up(folder, args, progress))
    reply = {
        "answer": "report",
        "stdout": out.getvalue(),
        "stderr": err.getvalue(),
        "status": status,
    }
    settled = results and not any(result.unsettled for result in results)
    if inputs is not None and settled and _inputs(args, argv) == inputs:
        while len(REPORTS) >= REPORTS_KEPT:
            del REPORTS[next(iter(REPORTS))]
        REPORTS[inputs] = reply
    return reply


REPORTS: dict[bytes, dict[str, Any]] = {}
"""The last reports made, by the digest of everything they are a function of (the command
line, the colour, the working folder, each file's bytes and its pyproject.toml's:
`kept_report.report_inputs`, as the CLI keeps whole reports on disk): the same files checked
again cost the reading of their bytes, as a fresh process's kept report does, where the
analysis again cost 0.3 s at 5,000 rules. Not a SARIF log (its invocation is the run's), nor
a report a solver timeout left undecided, nor one whose files changed while it was made."""
REPORTS_KEPT = 8


def _warm_up(folder: str, args: Any, progress: Any = None) -> None:
    """A request's files checked again with the process's memos alone (`checking.WARM_UP`:
    its first check read the on-disk cache), in the request's folder."""
    from pedrag.commands import check as command
    from pedrag.lsp import checking

    with (
        _in_folder(folder),
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        finder = command._finder(args)
        checking.check_files(
            args.paths, finder, not args.no_semantic, args.skip_non_pedrag, progress
        )


def _inputs(args: Any, argv: list[str]) -> bytes | None:
    import hashlib

    from pedrag.compiler.kept_report import report_inputs

    if args.format == "sarif":
        return None
    found = report_inputs(args.paths, args.skip_non_pedrag, (argv, args.color))
    return None if found is None else hashlib.sha256(found).digest()


_PARSERS: list[Any] = []


def _parser(build: Any) -> Any:
    """`pedrag check`'s parser, built once (argparse parsers are reused across parses)."""
    if not _PARSERS:
        _PARSERS.append(build(only="check", lazy=True))
    return _PARSERS[0]


def _read(connection: socket.socket) -> dict[str, Any]:
    chunks, size = [], 0
    while chunk := connection.recv(1 << 16):
        chunks.append(chunk)
        size += len(chunk)
        if size > REQUEST_BYTES:
            raise ValueError("request too large")
    request = json.loads(b"".join(chunks))
    if not isinstance(request, dict):
        raise ValueError("a request is a JSON object")
    return request


def _resident_kib() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


LISTENING = "--listening"
"""`main`'s option: the file descriptor of the socket the server started afresh listens on."""


def main(argv: list[str]) -> int:
    listening = int(argv[2]) if argv[1:2] == [LISTENING] else None
    server = Server(Path(argv[0]), listening)
    # A `kill` (or the session's end) removes the socket on the way out, as `stop` does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    print(f"check server {os.getpid()} listening on {server.path}", flush=True)
    server.serve()
    if server.afresh:  # a check was cut short (`check_within`): nothing it left is kept
        # The listening socket is handed to the new process: the requests queued behind the
        # stopped check, and those that come while it starts, wait in the socket's queue and
        # are answered once it serves. Closed and bound again, they were dropped (their
        # clients, told nothing, checked in their own processes) and, until the new process
        # bound it, `pedrag check` found no server and `pedrag daemon start` started another.
        print(f"check server {os.getpid()} starts afresh after a stopped check", flush=True)
        sys.stderr.flush()
        fd = server.listener.fileno()
        os.set_inheritable(fd, True)
        os.execv(
            sys.executable,
            [sys.executable, "-m", "pedrag.commands._check_server", argv[0], LISTENING, str(fd)],
        )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
