"""Run a learner's Python code against an exercise's tests, in a sandboxed subprocess.

Runtime stage 2 (the grader). Takes the learner's code and the curriculum's ``tests:`` (a call
and the value it must return); gives one outcome per test, or an error. The child process runs
isolated (``python -I``: no site, no user paths, no environment), in an empty temporary folder,
with CPU-time, memory, file-size and process limits, and an audit hook that refuses sockets,
subprocesses, ``os.system``/``exec``/``fork``, writing files and ``ctypes``. Anything that goes
wrong — a limit, a timeout, a crash, output that is not the harness's — fails closed: the
answer is not graded correct (seed 2, §3.5: correctness comes from execution, never from a
model's opinion).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

TIME_LIMIT_S = 3.0  # wall clock for the whole run
CPU_LIMIT_S = 2
MEMORY_LIMIT_BYTES = 256 * 1024 * 1024
MAX_CODE_CHARS = 20_000
MAX_OUTPUT_CHARS = 200_000

_HARNESS = r"""
import ast, json, sys

def _guard(event, args):
    if event.startswith(("socket.", "subprocess.", "os.system", "os.exec", "os.fork",
                         "os.posix_spawn", "os.spawn", "ctypes.", "os.kill", "os.remove",
                         "os.rename", "os.rmdir", "os.mkdir", "shutil.")):
        raise PermissionError(f"not allowed in the grader: {event}")
    if event == "open" and len(args) > 1 and isinstance(args[1], str) and set(args[1]) & set("wax+"):
        raise PermissionError("not allowed in the grader: writing files")
    if event == "import" and args and str(args[0]).split(".")[0] in ("socket", "ctypes", "subprocess", "multiprocessing"):
        raise PermissionError(f"not allowed in the grader: import {args[0]}")

payload = json.loads(sys.stdin.read())
sys.addaudithook(_guard)
results = []
namespace = {"__name__": "learner"}
try:
    exec(compile(payload["code"], "<learner>", "exec"), namespace)
except BaseException as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"[:300]}))
    raise SystemExit(0)
for test in payload["tests"]:
    try:
        got = eval(compile(test["call"], "<test>", "eval"), namespace)
        expected = ast.literal_eval(test["expect"])
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (got, expected))
        same = got == expected and (numbers or type(got) is type(expected))
        results.append({"call": test["call"], "passed": same,
                        "got": repr(got)[:200], "expect": test["expect"]})
    except BaseException as exc:
        results.append({"call": test["call"], "passed": False, "got": f"{type(exc).__name__}: {exc}"[:200],
                        "expect": test["expect"]})
print(json.dumps({"results": results}))
"""


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
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))


def run_tests(code: str, tests: Sequence[tuple[str, str]]) -> RunResult:
    """Run ``code`` then each ``(call, expected literal)``; never raises."""
    if not tests:
        return RunResult(error="the exercise declares no tests")
    if len(code) > MAX_CODE_CHARS:
        return RunResult(error=f"code longer than {MAX_CODE_CHARS} characters")
    payload = json.dumps({"code": code, "tests": [{"call": c, "expect": e} for c, e in tests]})
    try:
        with tempfile.TemporaryDirectory(prefix="pedrag-grader-") as folder:
            done = subprocess.run(
                [sys.executable, "-I", "-S", "-c", _HARNESS],
                input=payload,
                capture_output=True,
                text=True,
                timeout=TIME_LIMIT_S,
                cwd=folder,
                env={},
                preexec_fn=_limits,  # noqa: PLW1509 - the limits must apply before exec
            )
    except subprocess.TimeoutExpired:
        return RunResult(error=f"the code ran longer than {TIME_LIMIT_S:g} s")
    except OSError as exc:
        return RunResult(error=f"the grader could not start: {exc}")
    lines = done.stdout[:MAX_OUTPUT_CHARS].strip().splitlines()
    try:
        report = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        report = None
    if not isinstance(report, dict):
        reason = "killed by a limit" if done.returncode < 0 else f"exit status {done.returncode}"
        return RunResult(error=f"the code could not be graded ({reason})")
    if "error" in report:
        return RunResult(error=str(report["error"]))
    return RunResult(
        tuple(
            TestOutcome(str(r["call"]), bool(r["passed"]), str(r["got"]), str(r["expect"]))
            for r in report.get("results", [])
        )
    )
