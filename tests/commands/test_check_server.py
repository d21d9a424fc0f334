"""The check server (`pedrag daemon`, `pedrag.commands._check_server`) with real processes: a server
started in a temporary project, `pedrag check` processes answered by it, each report compared
byte for byte with a `--no-cache` check in the client's own process (`PEDRAG_DAEMON=off`)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKS = ROOT / "tests" / "data" / "checks"
sys.path.insert(0, str(ROOT / "benchmarks"))

from theory_gen import generate  # noqa: E402


class Project:
    def __init__(self, folder: Path, cache: Path) -> None:
        self.folder = folder
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "PEDRAG_CACHE_DIR": str(cache),
            "PEDRAG_DAEMON_TIMEOUT": "300",
        }
        self.env.pop("PEDRAG_DAEMON", None)
        self.env.pop("NO_COLOR", None)

    def run(
        self, *args: str, cwd: Path | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pedrag.cli", *args],
            capture_output=True,
            text=True,
            cwd=cwd or self.folder,
            env={**self.env, **env},
            timeout=600,
        )

    def status(self) -> dict[str, object]:
        found = self.run("daemon", "status", "--json")
        assert found.returncode == 0, found.stdout + found.stderr
        return json.loads(found.stdout)  # type: ignore[no-any-return]

    def socket(self) -> Path:
        return Path(str(self.status()["socket"]))

    def served(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """`pedrag check ARGS`, which the server must have answered."""
        before = self.status()["requests"]
        found = self.run("check", *args, cwd=cwd)
        assert self.status()["requests"] == before + 1  # type: ignore[operator]
        return found

    def in_process(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return self.run("check", *args, "--no-cache", cwd=cwd, PEDRAG_DAEMON="off")


def _same(
    served: subprocess.CompletedProcess[str], fresh: subprocess.CompletedProcess[str]
) -> None:
    assert (served.returncode, served.stdout) == (fresh.returncode, fresh.stdout)


def _without_invocation(sarif: str) -> object:
    """A SARIF log without the run's invocation (its command line and times are the run's)."""
    log = json.loads(sarif)
    for run in log["runs"]:
        run.pop("invocations", None)
    return log


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    folder = tmp_path / "project"
    shutil.copytree(ROOT / "theories", folder / "theories", ignore=shutil.ignore_patterns("*.py"))
    (folder / "pyproject.toml").write_text("[tool.pedrag]\n", "utf-8")
    for name in ("dead-rule.yaml", "syntax-error.yaml", "conflict.yaml"):
        shutil.copy(CHECKS / name, folder / name)
    made = Project(folder, tmp_path / "cache")
    started = made.run("daemon", "start")
    assert started.returncode == 0, started.stdout + started.stderr
    pid = int(made.status()["pid"])  # type: ignore[call-overload]
    try:
        yield made
    finally:
        made.run("daemon", "stop")
        try:
            os.kill(pid, signal.SIGKILL)  # a test that stopped it leaves no server behind
        except ProcessLookupError:
            pass


def test_the_shipped_theories_are_reported_as_a_fresh_check_reports_them(
    project: Project,
) -> None:
    for options in ((), ("--format", "json"), ("--format", "github"), ("-q", "--color", "always")):
        _same(project.served("theories", *options), project.in_process("theories", *options))
    served = project.served("theories", "--format", "sarif")
    fresh = project.in_process("theories", "--format", "sarif")
    assert served.returncode == fresh.returncode
    assert _without_invocation(served.stdout) == _without_invocation(fresh.stdout)
    command_line = json.loads(served.stdout)["runs"][0]["invocations"][0]["commandLine"]
    assert command_line == "pedrag check theories --format sarif"


def test_a_broken_file_an_ignore_entry_and_options_as_the_cli_reports_them(
    project: Project,
) -> None:
    for args in (
        ("syntax-error.yaml",),
        ("dead-rule.yaml",),
        ("dead-rule.yaml", "conflict.yaml", "--format", "json"),
        ("conflict.yaml", "--ignore", "conflict", "--exit-zero"),
        ("conflict.yaml", "--fail-on", "warning", "--no-semantic"),
    ):
        served, fresh = project.served(*args), project.in_process(*args)
        _same(served, fresh)
        assert served.stderr == fresh.stderr
    assert project.served("syntax-error.yaml").returncode == 1
    missing = project.served("gone.yaml")
    _same(missing, project.in_process("gone.yaml"))
    assert missing.returncode == 2 and "gone.yaml" in missing.stderr


def test_files_and_configuration_saved_under_the_server_are_checked_as_saved(
    project: Project,
) -> None:
    theory = project.folder / "gen.yaml"
    original = generate(300, 7, "weighted")
    theory.write_text(original, "utf-8")
    _same(project.served("gen.yaml"), project.in_process("gen.yaml"))
    start = original.index("\nrules:")
    for k in range(4):  # one rule's condition narrowed each time, as a designer's edit
        at = original.index('when: "', start) + len('when: "')
        edited = original[:at] + f"frustration >= 0.{k}1 and " + original[at:]
        theory.write_text(edited, "utf-8")
        _same(project.served("gen.yaml"), project.in_process("gen.yaml"))
    assert str(theory.name) in project.status()["files"]  # type: ignore[operator]
    before = project.served("conflict.yaml")
    (project.folder / "pyproject.toml").write_text(
        '[tool.pedrag]\nignore = ["conflict"]\n', "utf-8"
    )
    after = project.served("conflict.yaml")
    _same(after, project.in_process("conflict.yaml"))
    assert "conflict" in before.stdout and after.stdout != before.stdout
    (project.folder / "conflict.yaml").unlink()
    deleted = project.served("conflict.yaml")
    _same(deleted, project.in_process("conflict.yaml"))
    assert deleted.returncode == 2


def _ask(path: Path, request: object) -> dict[str, object]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(60)
        client.connect(str(path))
        client.sendall(request if isinstance(request, bytes) else json.dumps(request).encode())
        client.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := client.recv(1 << 16):
            chunks.append(chunk)
    return json.loads(b"".join(chunks))  # type: ignore[no-any-return]


def test_a_server_with_another_key_never_answers(project: Project) -> None:
    path = project.socket()
    key = dict(project.status()["key"])  # type: ignore[call-overload]
    for part, value, said in (
        ("pedrag", "0" * 64, "other pedrag code"),
        ("python", "2.7.18 (default)", "Python 2.7.18"),
        ("libraries", [], "solver libraries"),
        ("root", "/elsewhere", "not /elsewhere"),
    ):
        reply = _ask(
            path, {"op": "check", "argv": ["check", "theories"], "key": {**key, part: value}}
        )
        assert reply["answer"] == "refused" and said in str(reply["reason"])
        assert "stdout" not in reply
    assert project.status()["requests"] == 0


def test_a_client_in_a_subfolder_of_the_project_is_answered_from_there(
    project: Project,
) -> None:
    sub = project.folder / "theories"
    for folder, args in ((sub, ("socratic.yaml",)), (sub, (".", "--format", "json"))):
        found = project.served(*args, cwd=folder)
        assert found.stderr == ""  # no refusal, no fallback said
        _same(found, project.in_process(*args, cwd=folder))
    # The same relative name in two folders: each report is its own folder's file's.
    (sub / "dead-rule.yaml").write_text((CHECKS / "conflict.yaml").read_text("utf-8"), "utf-8")
    for folder in (project.folder, sub, project.folder):
        found = project.served("dead-rule.yaml", cwd=folder)
        _same(found, project.in_process("dead-rule.yaml", cwd=folder))
    assert project.status()["root"] == str(project.folder.resolve())
    started_here = project.run("daemon", "status", cwd=sub)
    assert started_here.returncode == 0  # the subfolder's server is the project's


def test_a_relative_cache_folder_is_the_project_s_from_every_folder(tmp_path: Path) -> None:
    """With `PEDRAG_CACHE_DIR=.cache`, the server started at the project's root and a client
    in a subfolder find one cache and one socket: the client is answered by the server, and
    no cache is made in the subfolder (each read it from its own working folder before)."""
    folder = tmp_path / "project"
    shutil.copytree(ROOT / "theories", folder / "theories", ignore=shutil.ignore_patterns("*.py"))
    (folder / "pyproject.toml").write_text("[tool.pedrag]\n", "utf-8")
    made = Project(folder, Path(".cache"))
    started = made.run("daemon", "start")
    assert started.returncode == 0, started.stdout + started.stderr
    pid = int(made.status()["pid"])  # type: ignore[call-overload]
    try:
        sub = folder / "theories"
        found = made.served("socratic.yaml", cwd=sub)
        assert found.stderr == ""
        _same(found, made.in_process("socratic.yaml", cwd=sub))
        assert (folder / ".cache").is_dir() and not (sub / ".cache").exists()
        assert made.run("daemon", "status", cwd=sub).returncode == 0
    finally:
        made.run("daemon", "stop")
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_requests_that_fail_inside_the_server_leave_it_answering(project: Project) -> None:
    path = project.socket()
    key = project.status()["key"]
    assert _ask(path, b"not json")["answer"] == "error"
    assert _ask(path, {"op": "check", "key": "not a key"})["answer"] == "error"
    failed = _ask(path, {"op": "check", "key": key, "argv": None})
    assert failed["answer"] == "fallback" and failed["notice"] is True
    assert "failed inside the check server" in str(failed["reason"])
    assert str(path.with_suffix(".log")) in str(failed["reason"])
    assert _ask(path, {"op": "check", "key": key, "argv": ["check", "-"]})["answer"] == "fallback"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as idle:
        idle.connect(str(path))  # a client that connects and says nothing
        _same(project.served("dead-rule.yaml"), project.in_process("dead-rule.yaml"))
    assert project.status()["failed"] == 1


def test_a_check_outlasting_its_client_is_stopped_and_the_server_starts_afresh(
    project: Project,
) -> None:
    """A check stopped at its time limit, at several points of a cold check, answers
    `fallback` with the reason, and the server (the same process) starts afresh: it then
    answers the same file, and an edit of it, exactly as a fresh check does."""
    theory = project.folder / "gen.yaml"
    original = generate(1000, 11, "weighted")
    theory.write_text(original, "utf-8")
    path, status = project.socket(), project.status()
    request = {
        "op": "check",
        "key": status["key"],
        "cwd": str(project.folder),
        "argv": ["check", "gen.yaml"],
    }
    for seconds in (0.05, 0.15, 0.3):
        reply = _ask(path, {**request, "seconds": seconds})
        assert reply["answer"] == "fallback" and reply["notice"] is True
        assert f"stopped this check after {seconds:g} s" in str(reply["reason"])
        again = _restarted(project)
        assert again["pid"] == status["pid"] and again["stopped"] == 0  # a new start
    _same(project.served("gen.yaml"), project.in_process("gen.yaml"))
    at = original.index('when: "', original.index("\nrules:")) + len('when: "')
    theory.write_text(original[:at] + "frustration >= 0.71 and " + original[at:], "utf-8")
    _same(project.served("gen.yaml"), project.in_process("gen.yaml"))
    # The client says why it checks in its own process.
    theory.write_text(original[:at] + "frustration >= 0.72 and " + original[at:], "utf-8")
    found = project.run("check", "gen.yaml", "--format", "json", PEDRAG_DAEMON_TIMEOUT="0.01")
    assert "stopped this check after 0.01 s" in found.stderr
    _same(found, project.in_process("gen.yaml", "--format", "json"))
    _restarted(project)


def test_requests_queued_behind_a_stopped_check_are_answered_by_the_server_started_afresh(
    project: Project,
) -> None:
    """A check stopped at its time limit makes the server start afresh; a request that was
    waiting in the socket's queue behind it is answered by the new start (the same pid, its
    counters new), where it was dropped unanswered when the socket was closed for the
    restart. A `pedrag check` right after is answered too, and says nothing."""
    (project.folder / "gen.yaml").write_text(generate(1000, 11, "weighted"), "utf-8")
    path, status = project.socket(), project.status()
    request = {
        "op": "check",
        "key": status["key"],
        "cwd": str(project.folder),
        "argv": ["check", "gen.yaml"],
        "seconds": 0.05,
    }
    with (
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stopped,
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as queued,
    ):
        for client, sent in ((stopped, request), (queued, {"op": "status"})):
            client.settimeout(120)
            client.connect(str(path))
            client.sendall(json.dumps(sent).encode())
            client.shutdown(socket.SHUT_WR)
        replies = []
        for client in (stopped, queued):
            chunks = []
            while chunk := client.recv(1 << 16):
                chunks.append(chunk)
            replies.append(b"".join(chunks))
    assert json.loads(replies[0])["answer"] == "fallback"
    assert replies[1], "the queued request was dropped unanswered"
    again = json.loads(replies[1])
    assert again["answer"] == "status" and again["pid"] == status["pid"]
    assert again["stopped"] == 0 and again["socket"] == str(path)  # a new start, same socket
    found = project.served("dead-rule.yaml")
    assert found.stderr == ""
    _same(found, project.in_process("dead-rule.yaml"))


def _restarted(project: Project) -> dict[str, object]:
    """The server's status once it answers again (it starts afresh after a stopped check)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = project.run("daemon", "status", "--json")
        if found.returncode == 0:
            return json.loads(found.stdout)  # type: ignore[no-any-return]
        time.sleep(0.2)
    raise AssertionError("the check server did not start again")


def test_options_the_server_does_not_honour_are_checked_by_the_client(project: Project) -> None:
    before = project.status()["requests"]
    for args in (("--statistics",), ("--no-c",), ("--diff",)):
        found = project.run("check", "conflict.yaml", *args)
        fresh = project.run("check", "conflict.yaml", *args, PEDRAG_DAEMON="off")
        _same(found, fresh)
    assert project.status()["requests"] == before


def test_concurrent_clients_are_each_answered(project: Project) -> None:
    fresh = project.in_process("theories", "--format", "json")
    clients = [
        subprocess.Popen(
            [sys.executable, "-m", "pedrag.cli", "check", "theories", "--format", "json"],
            cwd=project.folder,
            env=project.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    for client in clients:
        out, _ = client.communicate(timeout=600)
        assert (client.returncode, out) == (fresh.returncode, fresh.stdout)
    assert project.status()["requests"] == 3


def test_a_stuck_or_killed_server_does_not_hang_the_client(project: Project) -> None:
    pid = int(project.status()["pid"])  # type: ignore[call-overload]
    path = project.socket()
    fresh = project.in_process("dead-rule.yaml")
    os.kill(pid, signal.SIGSTOP)
    try:
        stuck = project.run("check", "dead-rule.yaml", PEDRAG_DAEMON_TIMEOUT="1")
        assert "did not answer in 1 s" in stuck.stderr
        _same(stuck, fresh)
        client = subprocess.Popen(
            [sys.executable, "-m", "pedrag.cli", "check", "dead-rule.yaml"],
            cwd=project.folder,
            env=project.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.0)  # it has sent its request (the socket's queue took it) and waits
        os.kill(pid, signal.SIGKILL)
    finally:
        os.kill(pid, signal.SIGCONT)
    out, err = client.communicate(timeout=600)
    assert (client.returncode, out) == (fresh.returncode, fresh.stdout)
    assert "Traceback" not in err
    assert "the check server did not answer" in err  # said, not passed over
    assert path.exists()  # killed: its socket file is stale
    stale = project.run("check", "dead-rule.yaml")
    _same(stale, fresh)
    assert "the check server did not answer" in stale.stderr and "daemon start" in stale.stderr
    assert project.run("daemon", "status").returncode == 1
    restarted = project.run("daemon", "start")
    assert restarted.returncode == 0 and "started" in restarted.stdout
    _same(project.served("dead-rule.yaml"), fresh)


def test_stop_when_none_runs_and_status_of_what_it_holds(project: Project) -> None:
    project.served("dead-rule.yaml")
    shown = project.run("daemon", "status")
    assert shown.returncode == 0 and "dead-rule.yaml" in shown.stdout
    path = project.socket()
    assert "stopped" in project.run("daemon", "stop").stdout
    assert not path.exists()
    again = project.run("daemon", "stop")
    assert again.returncode == 0 and "no check server was running" in again.stdout
    assert project.run("daemon", "status").returncode == 1


def test_a_check_the_server_answers_imports_neither_the_checker_nor_argparse(
    project: Project,
) -> None:
    project.served("dead-rule.yaml")  # the server holds it; the report is kept
    before = project.status()["requests"]
    found = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pedrag.cli", "check", "dead-rule.yaml"],
        capture_output=True,
        text=True,
        cwd=project.folder,
        env=project.env,
        timeout=600,
    )
    assert project.status()["requests"] == before + 1  # type: ignore[operator]
    imported = {line.split("|")[-1].strip() for line in found.stderr.splitlines() if "|" in line}
    assert "socket" in imported and "pedrag.commands._check_client" in imported
    for heavy in ("argparse", "pedrag.dsl", "pedrag.compiler.driver", "yaml", "pydantic", "z3"):
        assert heavy not in imported
