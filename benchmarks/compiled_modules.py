"""Compiled modules for the benchmarks' child processes, kept as an installed pedrag keeps them.

Benchmark helper. Takes whether a run asked for the old behaviour (`--compile-each-run`); gives
the environment a benchmark starts a timed child process with (`child_environment`).

Why: with `PYTHONDONTWRITEBYTECODE` set (as on the shared machine) and no `__pycache__`, every
child process compiled pedrag's modules from source again, which no installed copy does, so a
figure that includes a process's start (a `pedrag check` run, an import time) timed the
compiler too. For the run, compiled modules are kept in a temporary folder of its own
(`PYTHONPYCACHEPREFIX`), so the source tree is not touched; the first child writes them and
the rest read them, as after an install; a benchmark whose first timed child would be the one
to write them runs an untimed one first (`warm_up`). `--compile-each-run` keeps the inherited
environment. Every benchmark that times a pedrag process uses this one helper.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

FLAG = "--compile-each-run"
_FOLDER: list[str] = []  # the run's bytecode folder while `kept_for_the_run` is active


def add_flag(parser: argparse.ArgumentParser) -> None:
    """The benchmark's `--compile-each-run` switch (the old behaviour)."""
    parser.add_argument(
        FLAG,
        action="store_true",
        help="keep no compiled modules between child processes (PYTHONDONTWRITEBYTECODE as "
        "inherited: each one compiles pedrag from source)",
    )


@contextmanager
def kept_for_the_run(compile_each_run: bool = False) -> Iterator[str | None]:
    """While active, children started with `child_environment` keep compiled modules in one
    temporary folder (yielded; None with `compile_each_run`), removed at the end."""
    if compile_each_run:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="pedrag-bytecode-") as folder:
        _FOLDER.append(folder)
        try:
            yield folder
        finally:
            _FOLDER.remove(folder)


def child_environment(**extra: str) -> dict[str, str]:
    """This process's environment plus `extra`, with compiled modules kept in the run's
    folder when `kept_for_the_run` is active."""
    env = {**os.environ, **extra}
    if _FOLDER:
        env["PYTHONPYCACHEPREFIX"] = _FOLDER[-1]
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def warm_up(argv: Sequence[str], **extra: str) -> None:
    """Run `argv` once, untimed and its output dropped, so that the timed children find
    pedrag's modules and its libraries' already compiled (nothing to do with
    `--compile-each-run`, where every child compiles anyway)."""
    if _FOLDER:
        subprocess.run(list(argv), env=child_environment(**extra), capture_output=True, check=False)
