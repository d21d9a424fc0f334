"""`pedrag compile FILE -o policy.json`: check a theory, then write its compiled policy."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pedrag.commands._output import write_output
from pedrag.commands.check import _colour
from pedrag.compiler.checks import catalog
from pedrag.compiler.config import ConfigError, load_config
from pedrag.compiler.discovery import PathError
from pedrag.compiler.driver import check_paths
from pedrag.compiler.lower import dumps, lower
from pedrag.compiler.reports.text import format_report

NAME = "compile"
ORDER = 20
HELP = "lower a theory file to a compiled policy (JSON) the runtime loads"
DESCRIPTION = """\
Check a theory file, then lower it to a compiled policy: deterministic JSON (same input, same
bytes) with a content hash inside, which the tutor runtime loads without z3 or the parser.
Nothing is written when the file has errors; the diagnostics are printed as `pedrag check`
prints them.

Missing folders in the -o path are created; the file is replaced atomically.

exit status: 0 written, 1 the file has errors, 2 usage problem (bad path, bad option, the
output cannot be written)
"""
EPILOG = """\
examples:
  pedrag compile theories/socratic.yaml -o socratic.policy.json
  pedrag compile theories/socratic.yaml            # to standard output
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="a theory file")
    parser.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="where to write the policy (default: standard output)",
    )
    parser.add_argument(
        "--no-semantic", action="store_true", help="front-end checks only before compiling (no z3)"
    )
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour diagnostics (default: auto)",
    )


def run(args: argparse.Namespace) -> int:
    if Path(args.file).is_dir():
        print(
            f"pedrag compile: {args.file} is a folder; compile one theory file at a time",
            file=sys.stderr,
        )
        return 2
    try:
        config = load_config(Path(args.file).resolve().parent, frozenset(catalog()))
        result = check_paths([args.file], config, semantic=not args.no_semantic)
    except (PathError, ConfigError) as exc:
        print(f"pedrag compile: {exc}", file=sys.stderr)
        return 2
    loaded = result.files[0] if result.files else None
    if result.errors or loaded is None or loaded.theory is None:
        if loaded is not None and loaded.theory is None and loaded.kind == "curriculum":
            print(
                f"pedrag compile: {args.file} is a curriculum, not a theory file", file=sys.stderr
            )
            return 2
        sources = {f.path: f.source for f in result.files}
        report = format_report(
            result.diagnostics, sources, len(result.files), result.summary(), _colour(args.color)
        )
        print(report, file=sys.stderr)
        return 1
    policy = lower(loaded.theory)
    text = dumps(policy)
    if args.output:
        problem = write_output(args.output, text.encode("utf-8"))
        if problem:
            print(f"pedrag compile: {problem}", file=sys.stderr)
            return 2
        print(
            f"wrote {args.output} ({len(policy['rules'])} rules, content hash {policy['content_hash'][:12]})",
            file=sys.stderr,
        )
    else:
        sys.stdout.write(text)
    return 0
