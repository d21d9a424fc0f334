"""The `pedrag` command line: one subcommand per module in `pedrag.commands`.

Each command module exposes `NAME`, `HELP`, `add_arguments(parser)` and `run(args) -> int`;
only the command being run is imported (`COMMANDS` below lists them all for `--help`).
Exit codes everywhere: 0 success, 1 findings/failure, 2 usage problems.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from pedrag import __version__

if TYPE_CHECKING:
    import argparse

DESCRIPTION = """\
pedrag checks pedagogical theory files and runs an LLM tutor that follows them.

A theory file (YAML) declares learner metrics, teaching actions on the H0..H7 hint ladder and
rules mapping learner state to actions. `pedrag check` proves the rules right; `pedrag chat`
and `pedrag simulate` run the supervised tutor (offline by default, no network needed).
"""

EPILOG = """\
examples:
  pedrag check theories/                     check every theory file in a folder
  pedrag check theories/socratic.yaml --format json
  pedrag check --explain coverage-gap        what a check means and how to fix it
  pedrag schema > theory.schema.json         JSON Schema for editor autocompletion

Run `pedrag COMMAND --help` for a command's options.
"""


# Every command: name -> (order in `--help`, one-line help). The module `pedrag.commands.NAME`
# holds the rest and declares the same NAME, ORDER and HELP (tests/test_cli_startup.py keeps
# the two equal). The table lets `pedrag --help`, `--version` and a mistyped command answer
# without importing any command module (and with them the compiler, openai or networkx).
COMMANDS: dict[str, tuple[int, str]] = {
    "check": (10, "check theory files and curricula (files or folders, recursively)"),
    "compile": (20, "lower a theory file to a compiled policy (JSON) the runtime loads"),
    "diff": (
        20,
        "regions of state space where the chosen action changes between two theory versions",
    ),
    "chat": (30, "talk to the supervised tutor (offline by default; --model for an endpoint)"),
    "why": (30, "explain which rules hold, the ceiling and the selection for a given state"),
    "simulate": (31, "run one scripted-student session (personas: answer-seeker, injector, ...)"),
    "audit": (32, "print a session's per-turn audit trace (contract, rules, action, verdicts)"),
    "replay": (
        33,
        "re-run recorded sessions' turns under an edited theory: which turns would differ",
    ),
    "instructor": (
        33,
        "an instructor's toggles on a session (explain mode, exam lockdown, lift a conduct "
        "restriction); a learner's exam sittings and retakes",
    ),
    "grade": (
        34,
        "grade one learner message against an exercise, as the tutor would (verdict and why)",
    ),
    "index": (35, "index a course's materials (PDF/Markdown/text/HTML) so the tutor can cite them"),
    "evaluate": (
        40,
        "simulate sessions across tutor configurations: BHR, post-test mastery, gates G1-G4",
    ),
    "extract": (
        40,
        "extract a theory file from a pedagogical corpus (PDF/TXT/Markdown) with an LLM",
    ),
    "graph": (
        40,
        "draw metrics -> rules -> actions and the theory switch graph (mermaid or dot)",
    ),
    "serve": (60, "serve the tutor over HTTP: sessions, turns (JSON or SSE), audit, playground"),
    "lsp": (
        95,
        "run the language server (stdio) for editors: diagnostics, hover, completion, definitions",
    ),
    "daemon": (
        96,
        "keep a check server running: `pedrag check` in this project answers from memory",
    ),
    "schema": (
        90,
        "print the JSON Schema of theory files (or curricula) for editor autocompletion",
    ),
}


BATCH = frozenset({"check", "compile", "diff"})
"""Commands that build one large object graph (positions, ASTs, interned formulas, z3 terms),
answer and exit. The cyclic garbage collector only re-scans that graph, so it is off while
they run, imports included: at 5,000 rules a re-check after an edit takes a quarter less CPU
(2.45 -> 1.85 s) and a cold check 7-11% less, for 5 MiB more (reference counting still frees what is not a
cycle). Long-running commands (chat, serve, lsp) keep it."""


def _command_module(name: str) -> Any:
    return importlib.import_module(f"pedrag.commands.{name}")


def _requested_command(argv: Sequence[str]) -> str | None:
    for token in argv:
        if not token.startswith("-"):
            return token
    return None


def build_parser(only: str | None = None, lazy: bool = False) -> argparse.ArgumentParser:
    """The whole CLI (every command's options), or with `lazy` only the command `only`'s:
    the others are listed with their help line and not imported. (argparse is imported here:
    a `pedrag check` a check server answers never builds a parser.)"""
    import argparse

    parser = argparse.ArgumentParser(
        prog="pedrag",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pedrag {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in sorted(COMMANDS.items(), key=lambda item: item[1][0]):
        if lazy and name != only:
            subparsers.add_parser(name, help=help_text)
            continue
        module = _command_module(name)
        sub = subparsers.add_parser(
            name,
            help=help_text,
            description=getattr(module, "DESCRIPTION", help_text),
            epilog=getattr(module, "EPILOG", None),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(sub)
        sub.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _requested_command(argv)
    collecting = gc.isenabled()
    if command in BATCH:
        gc.disable()
    try:
        return _main(argv, command)
    finally:
        if collecting:
            gc.enable()


def _main(argv: list[str], command: str | None) -> int:
    parser = build_parser(only=command, lazy=True)
    args = parser.parse_args(argv)
    args._argv = argv  # the command line as given, for reports that record it (SARIF)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader stopped before the command finished (`| head`): what the command would
        # have concluded is unknown, so this is not a success. `pedrag check` answers its own
        # status before it writes the report and keeps it on a closed pipe, as ruff does.
        from pedrag.commands._output import silence_stdout

        silence_stdout()
        return 1


def console() -> None:
    """The `pedrag` program: `main`, then exit. A batch command's object graph is not torn
    down object by object at exit (at 5,000 rules that teardown is 0.3 s of CPU, a sixth of a
    re-check); its output is flushed and the process ends, as mypy's does. Everything the
    command writes to files (the check cache, `--output`) is closed before `main` returns."""
    argv = sys.argv[1:]
    batch = _requested_command(argv) in BATCH
    if batch:
        # pydantic validates pedrag's own theory models here, which no pydantic plugin
        # observes; finding plugins scans every installed package's entry points (10 ms of a
        # 0.3 s check). A user's own setting is kept.
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if _requested_command(argv) == "check":
        # A running check server (`pedrag daemon`) answers before the checker is imported.
        from pedrag.commands._check_client import through_server

        try:
            answered = through_server(argv)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            _hard_exit(130)
        if answered is not None:
            out, err, code = answered
            try:
                sys.stderr.write(err)
                sys.stdout.write(out)
            except BrokenPipeError:
                pass  # as the check itself: the status stands (`_hard_exit`)
            _hard_exit(code)
    code = main(argv)
    if batch:
        _hard_exit(code)
    sys.exit(code)


def _hard_exit(code: int) -> NoReturn:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # a reader that stopped early (`| head`) is not an error
        pass
    except OSError:
        code = code or 1  # output that could not be written must not look like success
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    console()
