"""`pedrag check PATH...`: check theory files and curricula; text, JSON or SARIF out."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pedrag.compiler.check_cache import CheckCache
from pedrag.compiler.checks import catalog
from pedrag.compiler.config import CheckConfig, ConfigError, load_config
from pedrag.compiler.driver import CheckResult, PathError, check_paths
from pedrag.compiler.reports.json_report import format_json
from pedrag.compiler.reports.sarif import format_sarif
from pedrag.compiler.reports.text import format_report

NAME = "check"
ORDER = 10
HELP = "check theory files and curricula (files or folders, recursively)"
DESCRIPTION = """\
Check theory files and curricula. Folders are searched recursively for *.yaml / *.yml files
that have a top-level `pedrag:` key; other YAML files there (CI workflows, docker-compose,
...) and hidden folders (.git, .github, .venv, ...) are skipped, and the report lists the
skipped files. A file named on the command line is always checked.

Front-end checks (syntax, names, types, the trust boundary) run on every file; the
compiler's semantic checks (dead rules, conflicts, coverage gaps, invariants, ...) run on
every theory that passes them. Severity overrides and ignores come from [tool.pedrag] in
pyproject.toml and from `ignore:` lists in the files (front-end checks cannot be ignored).

exit status: 0 no errors, 1 errors found, 2 usage problem (bad path, bad option)
"""
EPILOG = """\
examples:
  pedrag check theories/
  pedrag check theories/socratic.yaml --format json
  pedrag check theories/ --format sarif > pedrag.sarif
  pedrag check --explain dead-rule
  pedrag check --list-checks
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="theory/curriculum files or folders"
    )
    parser.add_argument(
        "--format",
        choices=("text", "json", "sarif"),
        default="text",
        help="output format (default: text)",
    )
    parser.add_argument(
        "--explain", metavar="CHECK", help="explain a check: meaning, failing example, fix"
    )
    parser.add_argument(
        "--list-checks", action="store_true", help="list every check with its default severity"
    )
    parser.add_argument(
        "--fix",
        action="store_true",
        help="append the suggested rule for each coverage gap to the file (safe fixes only)",
    )
    parser.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="with --fix, also apply fixes marked unsafe (review them before committing)",
    )
    parser.add_argument(
        "--no-semantic", action="store_true", help="front-end checks only (fast; no z3)"
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="neither read nor write the on-disk check cache (answers from earlier checks, "
        "kept in $PEDRAG_CACHE_DIR or the platform's cache folder; an edit re-checks only "
        "what it changed)",
    )
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour text output (default: auto)",
    )


def _colour(mode: str) -> bool:
    if mode == "always":
        return True
    if mode == "never" or os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


def explain(name: str) -> int:
    checks = catalog()
    if name not in checks:
        import difflib

        close = difflib.get_close_matches(name, list(checks), n=1)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        print(
            f"pedrag: unknown check `{name}`{hint} (see `pedrag check --list-checks`)",
            file=sys.stderr,
        )
        return 2
    info = checks[name].info
    print(f"{info.name} ({info.severity.value} by default)\n")
    print(f"{info.summary}\n")
    print(info.explanation + "\n")
    print("Example that fails:\n")
    print("\n".join("    " + line for line in info.example.rstrip().splitlines()) + "\n")
    print(f"How to fix: {info.fix}")
    return 0


def _check_with_status(args: argparse.Namespace, config: CheckConfig) -> CheckResult:
    """check_paths, with a live status line on a terminal: a 5,000-rule file takes seconds."""
    cache = CheckCache.disabled() if args.no_cache else CheckCache.default()
    if not sys.stderr.isatty():
        return check_paths(args.paths, config, semantic=not args.no_semantic, cache=cache)
    from rich.console import Console

    with Console(stderr=True).status("checking ...") as status:
        return check_paths(
            args.paths,
            config,
            semantic=not args.no_semantic,
            progress=lambda what: status.update(f"checking {what}"),
            cache=cache,
        )


def run(args: argparse.Namespace) -> int:
    if args.explain:
        return explain(args.explain)
    if args.list_checks:
        for info in sorted((c.info for c in catalog().values()), key=lambda i: i.name):
            print(f"{info.name:<22} {info.severity.value:<8} {info.summary}")
        return 0
    if not args.paths:
        print(
            "pedrag check: give at least one PATH (a theory file or a folder); see --help",
            file=sys.stderr,
        )
        return 2
    try:
        config = load_config(Path.cwd(), frozenset(catalog()))
        result = _check_with_status(args, config)
    except (PathError, ConfigError) as exc:
        print(f"pedrag check: {exc}", file=sys.stderr)
        return 2
    if args.fix:
        from pedrag.compiler.fixes import apply_fixes

        for loaded in result.files:
            applied, skipped = apply_fixes(
                loaded.path, result.diagnostics, unsafe=args.unsafe_fixes
            )
            if applied or skipped:
                note = f"; {skipped} unsafe fix(es) not applied (--unsafe-fixes)" if skipped else ""
                print(f"{loaded.path}: appended {applied} suggested rule(s){note}", file=sys.stderr)
        # Report what remains after the fixes.
        result = _check_with_status(args, config)
    files = [f.path for f in result.files]
    summary = result.summary()
    if args.format == "json":
        print(format_json(files, result.diagnostics, summary))
    elif args.format == "sarif":
        print(format_sarif(result.diagnostics))
    else:
        sources = {f.path: f.source for f in result.files}
        print(format_report(result.diagnostics, sources, len(files), summary, _colour(args.color)))
    return 1 if result.errors else 0
