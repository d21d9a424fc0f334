"""The `pedrag` command line: one subcommand per module in `pedrag.commands`.

Each command module exposes `NAME`, `HELP`, `add_arguments(parser)` and `run(args) -> int`.
Exit codes everywhere: 0 success, 1 findings/failure, 2 usage problems.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from typing import Any

from pedrag import __version__
from pedrag import commands as commands_package

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


def _command_names() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.iter_modules(commands_package.__path__)
        if not info.name.startswith("_")
    )


def _command_modules(only: str | None = None) -> list[Any]:
    """Command modules (a module's file name is its command name). With `only`, just that one:
    `pedrag check` should not pay for importing the LLM client that `pedrag chat` needs."""
    names = _command_names()
    if only is not None and only in names:
        names = [only]
    modules = []
    for name in names:
        module = importlib.import_module(f"{commands_package.__name__}.{name}")
        if hasattr(module, "NAME") and hasattr(module, "run"):
            modules.append(module)
    modules.sort(key=lambda m: getattr(m, "ORDER", 50))
    return modules


def _requested_command(argv: Sequence[str]) -> str | None:
    for token in argv:
        if not token.startswith("-"):
            return token
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pedrag",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pedrag {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules(only):
        sub = subparsers.add_parser(
            module.NAME,
            help=module.HELP,
            description=getattr(module, "DESCRIPTION", module.HELP),  # type: ignore[attr-defined]
            epilog=getattr(module, "EPILOG", None),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(sub)  # type: ignore[attr-defined]
        sub.set_defaults(_run=module.run)  # type: ignore[attr-defined]
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(only=_requested_command(argv))
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
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
