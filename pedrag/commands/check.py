"""`pedrag check PATH...`: check theory files and curricula; text, JSON or SARIF out."""

from __future__ import annotations

import argparse
import gc
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pedrag.commands._check_client import colour as _colour
from pedrag.commands._output import silence_stdout, write_output
from pedrag.compiler.cache_folder import RELATIVE
from pedrag.compiler.check_cache import CheckCache
from pedrag.compiler.checks import catalog
from pedrag.compiler.config import (
    ConfigError,
    ConfigFinder,
    Overrides,
    check_names,
    refuse_front_end,
)
from pedrag.compiler.discovery import PathError
from pedrag.dsl.diagnostics import Diagnostic, Severity

if TYPE_CHECKING:
    from pedrag.compiler.driver import CheckResult
    from pedrag.compiler.reports.sarif import Invocation
    from pedrag.dsl.loader import LoadedFile

# The driver (and through it the front end), the checks and the report writers are imported
# where they are used: a re-check of unchanged files whose report is kept whole
# (`pedrag.compiler.kept_report`) needs none of them.

NAME = "check"
ORDER = 10
HELP = "check theory files and curricula (files or folders, recursively)"
DESCRIPTION = """\
Check theory files and curricula. Folders are searched recursively for *.yaml / *.yml files
that have a top-level `pedrag:` key; other YAML files there (CI workflows, docker-compose,
...) and hidden folders (.git, .github, .venv, ...) are skipped, and the report lists the
skipped files. A file named on the command line is always checked; `-` reads one file from
standard input (name it with --stdin-filename).

Front-end checks (syntax, names, types, the trust boundary) run on every file and report
its independent mistakes in one run (an action or rule that fails validation is left out and
the rest is still resolved; a misspelt key is one finding with a "did you mean"); the
compiler's semantic checks (dead rules, conflicts, coverage gaps, invariants, ...) run on
every theory that passes them. Each file uses the closest pyproject.toml with a
[tool.pedrag] table in its folder or above (select, extend-select, ignore, severity,
fail-on); --select replaces its selection, --extend-select and --ignore add to it. `ignore:`
lists in the files silence checks per file or per item. Front-end checks are always reported.

--fix inserts the suggested rule for each coverage gap after the file's last rule (nothing
else in the file changes); every fix is checked again first and kept only if the file ends
with no more errors and a smaller gap. With --unsafe-fixes it also adds the guard a conflict
or invariant-violation finding's help names (proved by the solver) to that rule's `when:`
(a conjunct the guard implies, such as `attempts >= 3` under `attempts >= 5`, is dropped),
kept only if the file then has fewer errors and no new one. The file is replaced atomically; a symbolic link is
written through (the file it points to changes, the link stays). --diff shows the same fixes
and writes nothing; for a file that fails with no fix to offer (front-end errors, findings
with no automatic fix) it says why on stderr.

A check server (`pedrag daemon start`, in the project's folder) answers `pedrag check` from
memory, with the same report and exit status; without one, the check runs in this process.

exit status: 0 no errors (or --exit-zero), 1 errors found (with --fail-on warning also
warnings; with --diff: fixes to apply or errors no fix addresses), 2 usage problem (bad path,
option or configuration). A reader that closes the pipe early (`| head`) does not change it.
"""
EPILOG = """\
examples:
  pedrag check theories/
  pedrag check theories/socratic.yaml --format json
  pedrag check theories/ --format sarif > pedrag.sarif
  pedrag check theories/ --format github          # annotations in a GitHub workflow
  pedrag check theories/ --select dead-rule,conflict --statistics
  pedrag check theories/ --fail-on warning         # warnings fail CI too
  pedrag check theories/socratic.yaml --diff       # show the fixes, write nothing
  pedrag check theories/socratic.yaml --fix
  cat x.yaml | pedrag check - --stdin-filename theories/x.yaml
  pedrag check --explain dead-rule
  pedrag check --list-checks
  pedrag daemon start && pedrag check theories/    # re-checks answered from memory
"""


def _names(value: str) -> list[str]:
    return [name.strip() for name in value.split(",") if name.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="theory/curriculum files or folders; - for stdin"
    )
    parser.add_argument(
        "--format",
        choices=("text", "json", "sarif", "github"),
        default="text",
        help="output format (default: text; github: workflow annotations)",
    )
    parser.add_argument(
        "--select",
        action="append",
        type=_names,
        metavar="CHECKS",
        help="report only these checks (comma-separated names; replaces the configured set)",
    )
    parser.add_argument(
        "--extend-select",
        action="append",
        type=_names,
        metavar="CHECKS",
        help="report these checks as well as the selected ones",
    )
    parser.add_argument(
        "--ignore",
        action="append",
        type=_names,
        metavar="CHECKS",
        help="never report these checks (front-end checks cannot be ignored)",
    )
    parser.add_argument(
        "--fail-on",
        choices=("error", "warning", "note"),
        help="lowest severity that makes the exit status 1 (default: error, or fail-on in "
        "[tool.pedrag])",
    )
    parser.add_argument(
        "--exit-zero", action="store_true", help="exit 0 even when findings are reported"
    )
    parser.add_argument(
        "--statistics",
        action="store_true",
        help="print how often each check fired instead of the findings",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print the findings only: no summary, no fix notes, no status line",
    )
    parser.add_argument(
        "--stdin-filename",
        metavar="NAME",
        help="the path the file read from stdin stands for (in reports and to find its config)",
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
        help="insert the suggested rule for each coverage gap (safe fixes only; each re-checked)",
    )
    parser.add_argument(
        "--diff",
        action="store_true",
        help="print the fixes --fix would make as a unified diff; write nothing",
    )
    parser.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="with --fix or --diff, also try fixes marked unsafe (still re-checked)",
    )
    parser.add_argument(
        "--no-semantic", action="store_true", help="front-end checks only (fast; no z3)"
    )
    parser.add_argument(
        "--skip-non-pedrag",
        action="store_true",
        help="skip named files that are not pedrag files (no top-level `pedrag:` key and no "
        "match in [tool.pedrag] files), as folders do; for pre-commit, which names every "
        "staged YAML file",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="neither read nor write the on-disk check cache (parsed and resolved conditions, "
        "the parser's tables, the solver's answers, the graph answers of the set-level checks, "
        "the material check's findings and whole reports from earlier checks, kept by content "
        "in $PEDRAG_CACHE_DIR or the platform's cache folder; an edit re-parses and re-asks only "
        f"what it changed; {RELATIVE})",
    )
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour text output (default: auto)",
    )


def explain(name: str) -> int:
    checks = catalog()
    if name not in checks:
        from pedrag.kernel.suggest import did_you_mean

        hint = did_you_mean(name, checks, lead="; ")
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


def _flatten(groups: list[list[str]] | None) -> frozenset[str] | None:
    return None if groups is None else frozenset(name for group in groups for name in group)


def _finder(args: argparse.Namespace) -> ConfigFinder:
    known = frozenset(catalog())
    select = _flatten(args.select)
    extend = _flatten(args.extend_select) or frozenset()
    ignore = _flatten(args.ignore) or frozenset()
    for option, names in (("--select", select), ("--extend-select", extend), ("--ignore", ignore)):
        check_names(names or frozenset(), known, option)
    refuse_front_end(ignore, "--ignore")
    fail_on = Severity(args.fail_on) if args.fail_on else None
    return ConfigFinder(known, Overrides(select, extend, ignore, fail_on))


def _cache(args: argparse.Namespace) -> CheckCache:
    return CheckCache.disabled() if args.no_cache else CheckCache.default()


def _check_with_status(args: argparse.Namespace, config: ConfigFinder) -> CheckResult:
    """check_paths, with a live status line on a terminal: a 5,000-rule file takes seconds.
    The check server passes its own checker (`args._check`, `pedrag.commands._check_server`): the
    same findings from the front ends and answers its process holds."""
    server_check = getattr(args, "_check", None)
    if server_check is not None:
        return server_check(args.paths, config, not args.no_semantic, args.skip_non_pedrag)  # type: ignore[no-any-return]
    from pedrag.compiler.driver import check_paths

    cache = _cache(args)
    only = args.skip_non_pedrag
    if args.quiet or not sys.stderr.isatty():
        return check_paths(
            args.paths, config, semantic=not args.no_semantic, cache=cache, pedrag_only=only
        )
    from rich.console import Console

    with Console(stderr=True).status("checking ...") as status:
        return check_paths(
            args.paths,
            config,
            semantic=not args.no_semantic,
            progress=lambda what: status.update(f"checking {what}"),
            cache=cache,
            pedrag_only=only,
        )


CACHE_DAMAGE = "cache-records-dropped"  # a --statistics row: damaged check-cache records


def _statistics(result: CheckResult, as_json: bool) -> str:
    counts: dict[str, list[Diagnostic]] = {}
    for diagnostic in result.diagnostics:
        counts.setdefault(diagnostic.check, []).append(diagnostic)
    rows = []
    for check, found in sorted(counts.items(), key=lambda item: (-len(item[1]), item[0])):
        severity = max((d.severity for d in found), key=lambda s: s.rank)
        fixable = sum(
            "suggested_rule" in d.data and d.data["suggested_rule"]["safe"] for d in found
        )
        rows.append(
            {"check": check, "severity": severity.value, "count": len(found), "fixable": fixable}
        )
    if result.cache_dropped:
        rows.append(
            {"check": CACHE_DAMAGE, "severity": "info", "count": result.cache_dropped, "fixable": 0}
        )
    if as_json:
        return json.dumps(rows, indent=2)
    width = max((len(str(row["count"])) for row in rows), default=1)
    lines = [
        f"{row['count']:>{width}}  {row['check']:<22} {row['severity']:<8}"
        + (f" [*] {row['fixable']} fixable with --fix" if row["fixable"] else "")
        + (
            " (failed their checksum: dropped and computed again)"
            if row["check"] == CACHE_DAMAGE
            else ""
        )
        for row in rows
    ]
    return "\n".join(lines)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _invocation(args: argparse.Namespace, started: str, status: int) -> Invocation:
    """This run, as a SARIF log records it (ending now)."""
    from pedrag.compiler.reports.sarif import Invocation

    return Invocation(["pedrag", *getattr(args, "_argv", sys.argv[1:])], started, _now(), status)


def _read_stdin(args: argparse.Namespace) -> tuple[LoadedFile, str] | None:
    """(the loaded file, its text) when the input is stdin; None for paths. Bytes that are not
    UTF-8 are a syntax-error at their position, as for a file."""
    if args.paths == ["-"] or (not args.paths and args.stdin_filename):
        from pedrag.dsl.loader import load_bytes

        loaded = load_bytes(sys.stdin.buffer.read(), args.stdin_filename or "-")
        return loaded, loaded.source.text
    return None


def _fix_files(
    args: argparse.Namespace, result: CheckResult, finder: ConfigFinder, stdin: bool
) -> tuple[int, str | None, int]:
    """Apply (or with --diff show) the fixes; returns (files changed, fixed stdin text, usage
    status: 2 when a file cannot be written)."""
    from pedrag.compiler.fixes import fix_text, gap_suggestions, guard_suggestions
    from pedrag.compiler.guards import guard_change

    changed = 0
    fixed_stdin: str | None = None
    for loaded in result.files:
        guards = args.unsafe_fixes and guard_suggestions(result.diagnostics, loaded.path)
        if not gap_suggestions(result.diagnostics, loaded.path) and not guards:
            if stdin:
                fixed_stdin = loaded.source.text
            if args.diff and not args.quiet:
                _why_no_fix(loaded, result, finder)
            continue
        outcome = fix_text(loaded.source.text, loaded.path, finder, unsafe=args.unsafe_fixes)
        if stdin:
            fixed_stdin = outcome.fixed
        if outcome.changed:
            changed += 1
            if args.diff:
                sys.stdout.write(outcome.diff())
            elif not stdin:
                raw = Path(loaded.path).read_bytes()
                if raw.decode("utf-8-sig", errors="replace") != outcome.original:
                    print(
                        f"pedrag check: {loaded.path} changed while it was being checked; not fixed",
                        file=sys.stderr,
                    )
                    continue
                bom = "\ufeff" if raw.startswith(b"\xef\xbb\xbf") else ""
                problem = write_output(loaded.path, (bom + outcome.fixed).encode("utf-8"))
                if problem:
                    print(f"pedrag check: {problem}", file=sys.stderr)
                    return changed, fixed_stdin, 2
        if not args.quiet:
            verb = "would add" if args.diff else "added"
            ids = ", ".join(s.rule_id for s in outcome.applied)
            if outcome.applied:
                print(
                    f"{loaded.path}: {verb} {len(outcome.applied)} rule(s): {ids}", file=sys.stderr
                )
            for guard in outcome.guarded:
                print(
                    f"{loaded.path}: {'would apply' if args.diff else 'applied'}: "
                    f"{guard_change(guard)}",
                    file=sys.stderr,
                )
            for guard, reason in outcome.guards_rejected:
                print(
                    f"{loaded.path}: not applied: {guard_change(guard)}: {reason}",
                    file=sys.stderr,
                )
            for suggestion, reason in outcome.rejected:
                print(
                    f"{loaded.path}: not applied `{suggestion.when}` -> {suggestion.then}: {reason}",
                    file=sys.stderr,
                )
    return changed, fixed_stdin, 0


def _failing(
    result: CheckResult, finder: ConfigFinder, path: str | None = None
) -> list[Diagnostic]:
    """The findings that make the exit status 1 (of one file, or of all). Each file's
    configuration is looked up once, not once per finding (5,000 at 5,000 rules)."""
    configs: dict[str, Any] = {}
    failing: dict[tuple[str, Any], bool] = {}  # by file and severity (5,000 findings, a few)

    def fails(diagnostic: Diagnostic) -> bool:
        name = diagnostic.file or ""
        key = (name, diagnostic.severity)
        known = failing.get(key)
        if known is None:
            config = configs.get(name)
            if config is None:
                config = configs[name] = finder.for_file(name)
            known = failing[key] = bool(config.fails(diagnostic.severity))
        return known

    return [d for d in result.diagnostics if (path is None or d.file == path) and fails(d)]


def _why_no_fix(loaded: LoadedFile, result: CheckResult, finder: ConfigFinder) -> None:
    """--diff printed nothing for a file that still fails: say why, so an empty diff is not
    read as "nothing wrong"."""
    failing = _failing(result, finder, loaded.path)
    if not failing:
        return
    if not loaded.ok:
        reason = (
            "it has front-end errors (syntax, names, types), and fixes are computed only for a "
            "file that loads"
        )
    elif any("guard" in d.data for d in failing):
        reason = (
            "its findings' fixes are unsafe (a guard changes where a rule applies); "
            "--unsafe-fixes shows them"
        )
    else:
        reason = "none of its findings has an automatic fix"
    checks = ", ".join(sorted({d.check for d in failing}))
    print(
        f"{loaded.path}: no fix offered: {reason}; {len(failing)} finding(s) remain ({checks}); "
        f"run `pedrag check {loaded.path}` to see them",
        file=sys.stderr,
    )


def _add_material_check(result: CheckResult, cache: CheckCache) -> None:
    """The runtime's material check (`pedrag.runtime.learning.material`): a curriculum's hints, worked
    examples, parallel items, misconceptions and outlines must not state the exercise's answer,
    judged by the answer-reveal detector the tutor runs on every reply. It lives in the runtime
    (the compiler does not import the detector), so the command adds it to the compiler's.
    Findings are kept in the check cache by each exercise's material and answer key."""
    curricula = [f for f in result.files if f.curriculum is not None and f.ok]
    if not curricula:
        return
    from pedrag.runtime.learning.material import material_diagnostics

    memo = cache.memo("material findings")
    for loaded in curricula:
        result.diagnostics.extend(material_diagnostics(loaded, memo))
    memo.save()
    result.diagnostics.sort(key=Diagnostic.sort_key)


COLLECTOR_THRESHOLDS = (100_000, 50, 100)
"""The cycle collector's thresholds during a check (Python's default: 700, 10, 10). A check
builds hundreds of thousands of objects it keeps to the end (a front end, the solver's
answers), and the collections their allocation set off walked them again and again: at
5,000 rules a one-rule edit's re-check spent 10 to 18% of its CPU there, and unpickling a
kept front end in a process that held one already took 0.58 s with the collector on, 0.10 s
off. (Pausing it around the front end alone was tried: the collections after it then cost
more than it saved.) Restored after, for a caller that runs checks in its own process."""


def run(args: argparse.Namespace) -> int:
    thresholds = gc.get_threshold()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    try:
        return _run(args)
    finally:
        gc.set_threshold(*thresholds)


def _run(args: argparse.Namespace) -> int:
    if args.explain:
        return explain(args.explain)
    if args.list_checks:
        for info in sorted((c.info for c in catalog().values()), key=lambda i: i.name):
            print(f"{info.name:<22} {info.severity.value:<8} {info.summary}")
        return 0
    if not args.paths and not args.stdin_filename:
        print(
            "pedrag check: give at least one PATH (a theory file or a folder, - for stdin); see --help",
            file=sys.stderr,
        )
        return 2
    if "-" in args.paths and len(args.paths) > 1:
        print("pedrag check: `-` (stdin) must be the only PATH", file=sys.stderr)
        return 2
    if args.statistics and args.format in ("sarif", "github"):
        print(
            "pedrag check: --statistics prints text or JSON (--format text|json)", file=sys.stderr
        )
        return 2
    if _keeps_report(args):
        try:
            kept = _kept_report(args)
        except (PathError, ConfigError) as exc:
            print(f"pedrag check: {exc}", file=sys.stderr)
            return 2
        if kept is not None:
            status, text = kept
            try:
                sys.stdout.write(text)
                sys.stdout.flush()
            except BrokenPipeError:
                silence_stdout()
            return status
    from pedrag.compiler.driver import check_loaded, check_text

    started = _now()
    try:
        finder = _finder(args)
        stdin = _read_stdin(args)
        if stdin is not None:
            result = check_loaded([stdin[0]], finder, semantic=not args.no_semantic)
        else:
            result = _check_with_status(args, finder)
        changed = 0
        if args.fix or args.diff:
            changed, fixed_stdin, status = _fix_files(args, result, finder, stdin is not None)
            if status:
                return status
            if args.diff:
                # Fixes to apply fail, and so do findings that no fix addresses.
                return 1 if (changed or _failing(result, finder)) and not args.exit_zero else 0
            if stdin is not None:
                # As ruff does: the fixed file to stdout, what remains in it to stderr.
                text = fixed_stdin if fixed_stdin is not None else stdin[1]
                sys.stdout.write(text)
                name = stdin[0].path
                result = check_text(text, name, finder, semantic=not args.no_semantic)
            elif changed:
                result = _check_with_status(args, finder)  # report what remains after the fixes
    except (PathError, ConfigError) as exc:
        print(f"pedrag check: {exc}", file=sys.stderr)
        return 2
    out = sys.stderr if (args.fix and stdin is not None) else sys.stdout
    return _report(args, result, finder, started, out)


def _report(
    args: argparse.Namespace,
    result: CheckResult,
    finder: ConfigFinder,
    started: str,
    out: TextIO,
    invocation: bool = True,
) -> int:
    """Add the material check's findings, print the report to `out`; returns the exit status.
    `invocation` False: a SARIF log without the run's invocation (`_kept_report` adds it)."""
    _add_material_check(result, _cache(args))
    status = 1 if _failing(result, finder) and not args.exit_zero else 0
    try:
        _print_report(args, result, finder, started, status, out, invocation)
    except BrokenPipeError:
        # The reader stopped early (`pedrag check ... | head -1`); the findings are known, so
        # the status stays what it is (a `pipefail` CI step must not pass with errors).
        silence_stdout()
    return status


def _keeps_report(args: argparse.Namespace) -> bool:
    """Whether this check's report may be kept whole and read back (`_kept_report`): not for
    stdin, fixes, `--statistics` (it counts damaged cache records) or `--no-cache`. A SARIF
    log is kept without its invocation (the run's command line, times and exit code), which
    each run adds."""
    stdin = not args.paths or "-" in args.paths
    server = getattr(args, "_check", None) is not None  # it keeps what it needs in memory
    return not (stdin or server or args.no_cache or args.fix or args.diff or args.statistics)


def _kept_report(args: argparse.Namespace) -> tuple[int, str] | None:
    """(exit status, report text): the one a check of the same inputs kept
    (`pedrag.compiler.kept_report`, `CheckCache.kept_reports`), else this check's, kept at
    once (a report is small; waiting for the inputs' second check, as the per-file caches
    do, made that second check redo the analysis, slower than the first). None when the
    inputs cannot all be read (the check itself then says why).

    A report kept by the first check says whether its files' front ends are not kept yet
    (new bytes' wait for their second check, `LoadedFiles`): the second check, reading the
    report, then keeps them (`driver.keep_front_ends`), so the next edit is spliced into this
    version. A one-rule edit's front end is kept at its first check (spliced, and kept as its
    edit, `KeptFrontEnds`), so its report says nothing waits, and the edit's second check
    reads the report alone: it imported the driver and the front end (pydantic, the model)
    only to find each front end kept already, two thirds of its time."""
    import io

    from pedrag.compiler.code_version import pedrag_code
    from pedrag.compiler.kept_report import report_inputs

    options = sorted(
        (name, _colour(args.color) if name == "color" else value)
        for name, value in vars(args).items()
        if not name.startswith("_")
    )
    started = _now()
    inputs = report_inputs(args.paths, args.skip_non_pedrag, options)
    if inputs is None:
        return None
    checked = []
    sarif = args.format == "sarif"

    def check(_: bytes, __: str) -> tuple[int, str, bool, bool]:
        finder = _finder(args)
        result = _check_with_status(args, finder)
        text = io.StringIO()
        status = _report(args, result, finder, started, text, invocation=not sarif)
        # A file written while it was checked: the report may be of other bytes than the key's.
        unchanged = report_inputs(args.paths, args.skip_non_pedrag, options) == inputs
        checked.append(True)
        kept = unchanged and not result.unsettled
        return status, text.getvalue(), kept, not result.front_ends_kept

    reports, code = _cache(args).kept_reports(), pedrag_code()
    kept = reports.load(inputs, "", check, code, keep=lambda made: made[2], at_once=True)
    status, text, _, front_ends_pending = kept
    if front_ends_pending and not checked:
        from pedrag.compiler.driver import keep_front_ends

        keep_front_ends(args.paths, _finder(args), _cache(args), args.skip_non_pedrag)
        reports.replace(inputs, "", (status, text, True, False), code)
    if sarif:
        from pedrag.compiler.reports.sarif import with_invocation

        text = with_invocation(text, _invocation(args, started, status)) + "\n"
    return status, text


def _print_report(
    args: argparse.Namespace,
    result: CheckResult,
    finder: ConfigFinder,
    started: str,
    status: int,
    out: TextIO,
    invocation: bool = True,
) -> None:
    from pedrag.compiler.reports.github import format_github
    from pedrag.compiler.reports.json_report import format_json
    from pedrag.compiler.reports.sarif import format_sarif
    from pedrag.compiler.reports.text import format_diagnostic, format_report

    files = [f.path for f in result.files]
    docs_url = finder.for_file(files[0] if files else "").docs_url
    summary = result.summary()
    sources = {f.path: f.source for f in result.files}
    if args.statistics:
        print(_statistics(result, args.format == "json"), file=out)
    elif args.format == "json":
        print(format_json(files, result.diagnostics, summary), file=out)
    elif args.format == "sarif":
        run = _invocation(args, started, status) if invocation else None
        print(format_sarif(result.diagnostics, sources, run, docs_url), file=out)
    elif args.format == "github":
        if result.diagnostics:
            print(format_github(result.diagnostics), file=out)
    elif args.quiet:
        colour = _colour(args.color)
        for diagnostic in result.diagnostics:
            print(format_diagnostic(diagnostic, sources, colour) + "\n", file=out)
    else:
        print(
            format_report(result.diagnostics, sources, len(files), summary, _colour(args.color)),
            file=out,
        )
    out.flush()  # inside the caller's guard: a closed pipe fails here, not at exit
