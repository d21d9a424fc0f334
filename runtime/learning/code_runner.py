"""Run a learner's Python code against an exercise's tests, in a sandboxed subprocess.

Runtime stage 2 (the grader). Takes the learner's code and the curriculum's ``tests:`` (a call
and the value it must return); gives one outcome per test, or an error. The child process runs
isolated (``python -I``: no site, no user paths, no environment), in an empty temporary folder,
with CPU-time, memory, file-size and process limits, and an audit hook that refuses sockets,
subprocesses, ``os.system``/``exec``/``fork``, writing files, ``ctypes``, listing folders and
reaching into frames or the garbage collector (``sys._getframe`` raises ``ValueError``, as on a
Python without frames, so ``namedtuple``, ``typing`` and ``enum`` still work). Anything that goes wrong — a limit, a timeout, a
crash, a report that is not the harness's — fails closed: the answer is not graded correct
(seed 2, §3.5: correctness comes from execution, never from a model's opinion).

The learner's code cannot forge its result (issue 24): the child only *serialises* what each
call returned — plain values of the exact built-in types (an ``int`` subclass with a rigged
``__eq__`` is no plain value) written with ``repr`` — and the parent compares them with the
expected literals. The report goes to a file the harness opened before the learner's code ran,
headed by a nonce the parent chose; stdout is not the channel (a printed report is ignored),
and a report file with anything else in it is an error.
"""

from __future__ import annotations

import ast
import math
import secrets
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TIME_LIMIT_S = 3.0  # wall clock for the whole run
CPU_LIMIT_S = 2
MEMORY_LIMIT_BYTES = 256 * 1024 * 1024
REPORT_LIMIT_BYTES = 1024 * 1024
MAX_CODE_CHARS = 20_000
MAX_VALUE_CHARS = 10_000  # a returned value longer than this (as repr) is not graded
MAX_DEPTH = 20

_HARNESS = r"""
import ast, sys
# Imported before the audit hook, which refuses frame access (`sys._getframe`) that some of
# these use while importing: the learner's code finds them ready.
import collections, dataclasses, decimal, enum, fractions, functools, itertools, json, math
import random, re, statistics, string, typing


def _main():
    # Everything the harness needs lives in this frame, bound before the learner's code runs:
    # that code can rebind builtins and import __main__, but it cannot reach a frame.
    report = open("report", "w", encoding="utf-8")  # before the audit hook: nothing else may
    payload = ast.literal_eval(sys.stdin.read())
    nonce, code, tests = payload["nonce"], payload["code"], payload["tests"]
    import builtins
    for name in payload["withheld"]:
        # An exercise's forbidden builtins (`forbid: [sum]`) are gone before the learner's
        # code runs, so no spelling reaches them (`builtins.__dict__["mus"[::-1]]`).
        if hasattr(builtins, name):
            delattr(builtins, name)
    del builtins
    kind_of, text_of, size, to_str, to_list, is_a = type, repr, len, str, list, isinstance
    leaves = (bool, int, float, str, bytes, type(None))
    containers = (list, tuple, set, frozenset, dict)
    blocked = ("socket.", "subprocess.", "os.system", "os.exec", "os.fork", "os.posix_spawn",
               "os.spawn", "ctypes.", "os.kill", "os.remove", "os.rename", "os.rmdir",
               "os.mkdir", "shutil.",
               "sys._current_frames", "gc.", "sys.settrace", "sys.setprofile", "os.chdir",
               "os.open", "os.truncate", "os.chmod", "os.link", "os.symlink", "os.dup",
               "object.__getattr__", "object.__setattr__", "object.__delattr__",
               "function.__new__", "code.__new__", "sys.addaudithook")
    modules = ("socket", "ctypes", "subprocess", "multiprocessing", "gc", "inspect")
    # What the standard library reads and sets while it builds the learner's classes
    # (dataclasses, typing.NamedTuple, enum): harmless on the learner's own functions and
    # classes, and no harness object is reachable to use them on (no frame, no gc). Frame
    # attributes (tb_frame, gi_frame, ...) and setting __code__ stay refused.
    readable = frozenset(("__code__", "__defaults__", "__kwdefaults__"))
    settable = frozenset(("__defaults__", "__kwdefaults__", "__doc__", "__module__",
                          "__qualname__", "__name__", "__bases__"))
    text_kind = str

    def plain(value, depth=0):
        # Only the exact built-in types: a subclass can rig __eq__ or __repr__.
        kind = kind_of(value)
        if kind in leaves:
            return True
        if kind not in containers or depth > __DEPTH__:
            return False
        if kind is dict:
            return all(plain(k, depth + 1) and plain(v, depth + 1) for k, v in to_list(value.items()))
        return all(plain(item, depth + 1) for item in to_list(value))

    def guard(event, args):
        if event == "sys._getframe":
            # As on a Python without frames: the standard library's callers (namedtuple,
            # typing, enum) catch ValueError and go on; the learner's code gets no frame, so
            # none leads to this one and its report.
            raise ValueError("call stack is not available in the grader")
        if size(args) > 1 and kind_of(args[1]) is text_kind and (
            (event == "object.__getattr__" and args[1] in readable)
            or (event == "object.__setattr__" and args[1] in settable)
        ):
            return
        if event.startswith(blocked):
            raise PermissionError("not allowed in the grader: " + event)
        if event in ("open", "os.listdir", "os.scandir") and args and (
            "/proc" in to_str(args[0]) or "/dev/fd" in to_str(args[0])
        ):
            raise PermissionError("not allowed in the grader: " + to_str(args[0]))
        if event == "open" and size(args) > 1 and is_a(args[1], str) and set(args[1]) & set("wax+"):
            raise PermissionError("not allowed in the grader: writing files")
        if event == "import" and args and to_str(args[0]).split(".")[0] in modules:
            raise PermissionError("not allowed in the grader: import " + to_str(args[0]))

    def send(data):
        report.write(nonce + "\n" + text_of(data))
        report.close()

    del payload
    sys.addaudithook(guard)
    namespace = {"__name__": "learner"}
    try:
        exec(compile(code, "<learner>", "exec"), namespace)
    except BaseException as exc:
        send({"error": (kind_of(exc).__name__ + ": " + to_str(exc))[:300]})
        return
    results = []
    for call in tests:
        try:
            got = eval(compile(call, "<test>", "eval"), namespace)
            if plain(got):
                text = text_of(got)
                results.append({"value": text} if size(text) <= __CHARS__ else {"problem": "too long"})
            else:
                results.append({"problem": "returned a " + kind_of(got).__name__ + ", not a plain value"})
        except BaseException as exc:
            results.append({"problem": (kind_of(exc).__name__ + ": " + to_str(exc))[:200]})
    send({"results": results})


globals().pop("_main")()  # no global name leads back to the harness
""".replace("__DEPTH__", str(MAX_DEPTH)).replace("__CHARS__", str(MAX_VALUE_CHARS))


@dataclass(frozen=True)
class TestOutcome:
    call: str
    passed: bool
    got: str
    expect: str


@dataclass(frozen=True)
class RunResult:
    """``outcomes`` when the code ran; ``error`` (and no outcomes) when it could not be graded."""

    outcomes: tuple[TestOutcome, ...] = ()
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.outcomes) and all(o.passed for o in self.outcomes)


def _limits() -> None:  # pragma: no cover - runs in the child
    import resource

    resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT_S, CPU_LIMIT_S))
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    resource.setrlimit(resource.RLIMIT_FSIZE, (REPORT_LIMIT_BYTES, REPORT_LIMIT_BYTES))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))


def same_value(got: Any, expected: Any) -> bool:
    """Equality of plain values as a test means it, in the parent: a number equals a number of
    equal value (``2.0`` is ``2``), a ``bool`` is not a number, containers match in kind and
    element by element."""
    numbers = (int, float)
    if type(got) in numbers and type(expected) in numbers:
        if isinstance(got, float) and isinstance(expected, float) and math.isnan(got):
            return math.isnan(expected)
        return bool(got == expected)
    if type(got) is not type(expected):
        return False
    if isinstance(got, (list, tuple)):
        return len(got) == len(expected) and all(
            same_value(a, b) for a, b in zip(got, expected, strict=True)
        )
    if isinstance(got, dict):
        return got.keys() == expected.keys() and all(same_value(got[k], expected[k]) for k in got)
    return bool(got == expected)  # str, bytes, bool, None, set, frozenset: built-in equality


def run_tests(
    code: str, tests: Sequence[tuple[str, str]], withheld: Sequence[str] = ()
) -> RunResult:
    """Run ``code`` then each ``(call, expected literal)``; never raises. The built-in
    functions named in ``withheld`` (an exercise's ``forbid:``) do not exist for the code: the
    grader's reading of the code refuses the ways it can see, and this the ones it cannot."""
    if not tests:
        return RunResult(error="the exercise declares no tests")
    results, error = _run(code, [call for call, _ in tests], withheld)
    if error is not None:
        return RunResult(error=error)
    return RunResult(
        tuple(_outcome(call, expect, r) for (call, expect), r in zip(tests, results, strict=True))
    )


def run_calls(
    code: str, calls: Sequence[str], withheld: Sequence[str] = ()
) -> tuple[str | None, ...] | None:
    """What each call returned after ``code`` ran, as a literal (None for a call that raised
    or returned no plain value), in the same sandbox as :func:`run_tests`; None when the code
    could not be run at all. For trusted code (an exercise's worked solution), whose values
    become further tests."""
    results, error = _run(code, list(calls), withheld)
    if error is not None:
        return None
    return tuple(
        r["value"] if isinstance(r, dict) and isinstance(r.get("value"), str) else None
        for r in results
    )


def _run(code: str, calls: list[str], withheld: Sequence[str]) -> tuple[list[Any], str | None]:
    """The harness's result for each call, or the reason the code could not be graded."""
    if len(code) > MAX_CODE_CHARS:
        return [], f"code longer than {MAX_CODE_CHARS} characters"
    nonce = secrets.token_hex(16)
    payload = repr(
        {
            "nonce": nonce,
            "code": code,
            "tests": calls,
            "withheld": [name for name in withheld if name.isidentifier()],
        }
    )
    try:
        with tempfile.TemporaryDirectory(prefix="pedrag-grader-") as folder:
            done = subprocess.run(
                [sys.executable, "-I", "-S", "-c", _HARNESS],
                input=payload,
                # Not captured: stdout is not the channel, and a captured flood (a loop of
                # prints) was held in this process's memory, 2 GB in under 3 s.
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                text=True,
                timeout=TIME_LIMIT_S,
                cwd=folder,
                env={},
                preexec_fn=_limits,  # noqa: PLW1509 - the limits must apply before exec
            )
            report_path = Path(folder) / "report"
            written = report_path.read_text("utf-8") if report_path.is_file() else ""
    except subprocess.TimeoutExpired:
        return [], f"the code ran longer than {TIME_LIMIT_S:g} s"
    except (OSError, UnicodeDecodeError) as exc:
        return [], f"the grader could not run the code: {exc}"
    report = _report(written, nonce)
    if report is None:
        reason = "killed by a limit" if done.returncode < 0 else f"exit status {done.returncode}"
        return [], f"the code could not be graded ({reason})"
    if "error" in report:
        return [], str(report["error"])
    results = report.get("results")
    if not isinstance(results, list) or len(results) != len(calls):
        return [], "the code could not be graded (an incomplete report)"
    return results, None


def _report(written: str, nonce: str) -> dict[str, Any] | None:
    """The harness's report: the nonce line, then one literal. Anything else (a report the
    learner's code wrote, junk before or after) is no report."""
    head, _, body = written.partition("\n")
    if head != nonce:
        return None
    try:
        report = ast.literal_eval(body)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return report if isinstance(report, dict) else None


def _outcome(call: str, expect: str, result: Any) -> TestOutcome:
    expected = ast.literal_eval(expect)
    if not isinstance(result, dict) or not isinstance(result.get("value"), str):
        problem = result.get("problem") if isinstance(result, dict) else None
        return TestOutcome(call, False, str(problem or "no value"), expect)
    try:
        got = ast.literal_eval(result["value"])
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return TestOutcome(call, False, "an unreadable value", expect)
    return TestOutcome(call, same_value(got, expected), result["value"][:200], expect)
