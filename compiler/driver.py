"""`pedrag check`'s engine: paths -> loaded files -> diagnostics and a summary.

Discovers theory and curriculum files, runs the front end on each, then the semantic checks
on every file that resolved cleanly and the set-level checks on the whole set, and finally
applies ignores and severity overrides. Returns data; the CLI chooses a writer.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pedrag.compiler.check_cache import CheckCache
from pedrag.compiler.checks import catalog
from pedrag.compiler.code_version import code_of
from pedrag.compiler.config import CheckConfig, ConfigSource
from pedrag.compiler.discovery import discover
from pedrag.compiler.kept_front_ends import KeptFrontEnds
from pedrag.dsl.diagnostics import Diagnostic, Severity, error
from pedrag.dsl.loader import LoadedFile, load_bytes, load_file, load_text
from pedrag.dsl.model import Theory
from pedrag.dsl.parser import remembering
from pedrag.dsl.resolve import remembering_resolved
from pedrag.kernel.suggest import did_you_mean


@dataclass
class CheckResult:
    files: list[LoadedFile]
    diagnostics: list[Diagnostic]
    theories: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    skipped: list[str] = field(default_factory=list)
    cache_dropped: int = 0  # damaged check-cache records dropped and computed again
    # Files with a solver question left undecided (a timeout) or a check that failed: their
    # findings may differ next time, so the report is not kept whole (`kept_report`).
    unsettled: list[str] = field(default_factory=list)
    # Every file's front end was left kept by this check (`KeptFrontEnds.unkept`): a one-rule
    # edit's, spliced and kept as its edit at once. The report kept whole then need not wait
    # for a second check to keep them (`pedrag.commands.check._kept_report`).
    front_ends_kept: bool = False

    @property
    def errors(self) -> int:
        return sum(d.severity is Severity.ERROR for d in self.diagnostics)

    @property
    def warnings(self) -> int:
        return sum(d.severity is Severity.WARNING for d in self.diagnostics)

    def summary(self) -> dict[str, Any]:
        coverages = [t["coverage"] for t in self.theories if t.get("coverage") is not None]
        return {
            "errors": self.errors,
            "warnings": self.warnings,
            "rules": sum(t["rules"] for t in self.theories),
            "actions": sum(t["actions"] for t in self.theories),
            "metrics": sum(t["metrics"] for t in self.theories),
            "coverage": min(coverages) if coverages else None,
            "theories": self.theories,
            "skipped": self.skipped,
        }


def _ignore_lists(loaded: LoadedFile) -> list[tuple[str | None, tuple[str | int, ...], list[str]]]:
    """Every `ignore:` list of a file that names something: (item it belongs to or None for
    the file, path, names). An empty item list ignores nothing and names nothing to check, so
    it is left out: every check asks for these lists twice, and naming all 5,000 rules of a
    file where none ignores anything was a tenth of the language server's re-check of it."""
    model = loaded.model
    if model is None:
        return []
    out: list[tuple[str | None, tuple[str | int, ...], list[str]]] = [
        (None, ("ignore",), model.ignore)
    ]
    if isinstance(model, Theory):
        out.append((f"theory:{model.theory.id}", ("ignore",), model.ignore))
        for index, rule in enumerate(model.rules):
            if rule.ignore:
                out.append((f"rule:{rule.id}", ("rules", index, "ignore"), rule.ignore))
        for name, action in model.actions.items():
            if action.ignore:
                out.append((f"action:{name}", ("actions", name, "ignore"), action.ignore))
        for name, metric in model.metrics.items():
            if metric.ignore:
                out.append((f"metric:{name}", ("metrics", name, "ignore"), metric.ignore))
    else:
        out.append((f"curriculum:{model.id}", ("ignore",), model.ignore))
    return out


def _item_ignores(loaded: LoadedFile) -> dict[str, frozenset[str]]:
    """Item name (`rule:x`, `action:y`, `metric:z`, `theory:t`) -> checks ignored on it."""
    return {item: frozenset(names) for item, _, names in _ignore_lists(loaded) if item is not None}


def _file_ignores(loaded: LoadedFile) -> frozenset[str]:
    return frozenset(loaded.model.ignore) if loaded.model is not None else frozenset()


def _check_ignore_lists(loaded: LoadedFile) -> list[Diagnostic]:
    """`ignore:` entries that name no check, or a front-end check (which cannot be ignored:
    a file with a syntax, name, type or trust-boundary error cannot be compiled at all)."""
    checks = catalog()
    out: list[Diagnostic] = []
    if loaded.positions is None:
        return out
    for item, path, names in _ignore_lists(loaded):
        if item is not None and item.startswith(("theory:", "curriculum:")):
            continue  # the same list as the file's
        for index, name in enumerate(names):
            span = loaded.positions.span((*path, index))
            if name not in checks:
                out.append(
                    error(
                        "unknown-name",
                        f"`ignore:` names unknown check `{name}`",
                        span,
                        items=(item,) if item else (),
                        help=did_you_mean(name.replace("_", "-"), checks)
                        or "see `pedrag check --list-checks`",
                    )
                )
            elif checks[name].info.stage == "front-end":
                out.append(
                    error(
                        "type-error",
                        f"`{name}` cannot be ignored: a file with a front-end error cannot be compiled",
                        span,
                        items=(item,) if item else (),
                        help="fix the error instead; only the compiler's findings can be ignored",
                    )
                )
    return out


Progress = Callable[[str], None]
T = TypeVar("T")
"""Told what the driver is doing now (`socratic.yaml: coverage-gap`), for a status line."""


def run_semantic(
    loaded: LoadedFile,
    progress: Progress | None = None,
    cache: CheckCache | None = None,
    config: CheckConfig | None = None,
    unsettled: list[str] | None = None,
) -> tuple[list[Diagnostic], dict[str, Any]]:
    """The compiler's checks on one resolved theory; returns diagnostics and per-theory facts.
    Checks `config` does not report are not run (`--select dead-rule` skips the gap search).
    The file's path is appended to `unsettled` when a solver question was left undecided."""
    checks = [
        c
        for c in catalog().values()
        if c.info.stage == "semantic"
        and c.run is not None
        and (config is None or config.reports(c.info.name))
    ]
    if not checks:
        return [], {}
    assert loaded.theory is not None
    theory = loaded.theory
    undecided = False

    def analyse(_: bytes, __: str) -> tuple[list[Diagnostic], dict[str, Any]]:
        from pedrag.compiler.analysis import Analysis  # z3 is imported only when it is needed

        nonlocal undecided
        analysis = Analysis(theory, cache=cache)
        diagnostics: list[Diagnostic] = []
        for index, check in enumerate(checks, 1):
            assert check.run is not None
            if progress is not None:
                progress(f"{loaded.path}: {check.info.name} ({index}/{len(checks)})")
            diagnostics.extend(check.run(analysis))
        facts = analysis.facts()
        analysis.save_cache()
        analysis.keep()
        undecided = analysis.undecided
        if undecided and unsettled is not None:
            unsettled.append(loaded.path)
        return diagnostics, facts

    if cache is None:
        return analyse(b"", "")
    # The findings depend on the file's text and name, the compiler's code and the checks run
    # (not on the configuration otherwise: ignores and severities are applied to them after).
    code = f"{checker_code()}\n{','.join(c.info.name for c in checks)}"
    text = loaded.source.text.encode("utf-8")
    return cache.kept_findings().load(
        text, loaded.path, analyse, code, keep=lambda _: not undecided
    )


def check_paths(
    paths: list[str],
    config: ConfigSource | None = None,
    semantic: bool = True,
    progress: Progress | None = None,
    cache: CheckCache | None = None,
    pedrag_only: bool = False,
) -> CheckResult:
    """Check the files named or found under `paths`; `config` gives each file's configuration
    (a `CheckConfig` for all, or a `ConfigFinder` that finds it upward from each file).
    `pedrag_only`: named files that are not pedrag files are skipped too (`discover`).
    `cache`: the on-disk check cache to read and fill (`CheckCache.default()` as the CLI uses;
    None keeps answers in this process only)."""
    started = time.perf_counter()
    skipped: list[Path] = []
    cache = cache or CheckCache.disabled()
    loaded_files = KeptFrontEnds(cache.folder, cache.damage)
    files = _each_file(paths, config, cache, pedrag_only, skipped, _load, loaded_files)
    result = check_loaded(
        files, config, semantic, progress, started, [str(p) for p in skipped], cache
    )
    result.cache_dropped = cache.dropped
    result.front_ends_kept = loaded_files.unkept == 0
    return result


def keep_front_ends(
    paths: list[str], config: ConfigSource | None, cache: CheckCache, pedrag_only: bool = False
) -> None:
    """Keep the front end of every file `check_paths` would load (`KeptFrontEnds`), and
    nothing else: the second check of inputs whose whole report was kept at the first
    (`pedrag.commands.check`) reads that report, and still keeps each file's front end, as a
    second check always did, for the next edit to be spliced into
    (`pedrag.dsl.incremental`)."""
    _each_file(
        paths, config, cache, pedrag_only, [], _keep, KeptFrontEnds(cache.folder, cache.damage)
    )


def _each_file(
    paths: list[str],
    config: ConfigSource | None,
    cache: CheckCache,
    pedrag_only: bool,
    skipped: list[Path],
    each: Callable[[Path, KeptFrontEnds], T],
    loaded_files: KeptFrontEnds,
) -> list[T]:
    """`each(path, loaded_files)` for each file found under `paths` (`discover`), with
    the cache's parsed and resolved conditions remembered."""
    parsed, resolved = cache.parsed_conditions(), cache.resolved_conditions()
    with remembering(parsed), remembering_resolved(resolved):
        found = [each(path, loaded_files) for path in discover(paths, skipped, pedrag_only, config)]
    parsed.save()
    resolved.save()
    return found


def _keep(path: Path, loaded_files: KeptFrontEnds) -> None:
    """A file's front end kept, not read where it is kept already (`KeptFrontEnds.keep`)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return  # the check said why
    loaded_files.keep(raw, str(path), load_bytes, front_end_code())


def _load(path: Path, loaded_files: KeptFrontEnds) -> LoadedFile:
    """A file's front end, or the result a check of the same bytes kept (`KeptFrontEnds`)."""
    try:
        raw = path.read_bytes()
    except OSError:
        loaded_files.unkept += 1
        return load_file(path)  # which says why it cannot be read
    return loaded_files.load(raw, str(path), load_bytes, front_end_code())


@functools.cache
def front_end_code() -> str:
    """The front end's modules (`pedrag.dsl`, `pedrag.kernel`, the condition grammar) by
    name, size and modification time: a kept front end is keyed by them as well as by the
    file's bytes (`KeptFrontEnds`). Stating them costs about a millisecond."""
    import pedrag.dsl
    import pedrag.grammar
    import pedrag.kernel

    return code_of(pedrag.dsl, pedrag.grammar, pedrag.kernel)


@functools.cache
def checker_code() -> str:
    """`front_end_code` and the compiler's modules (`pedrag.compiler`, all the semantic checks
    import besides the front end): kept findings are keyed by them (`run_semantic`)."""
    import pedrag.compiler

    return f"{front_end_code()}:{code_of(pedrag.compiler)}"


def check_text(
    text: str, path: str, config: ConfigSource | None = None, semantic: bool = True
) -> CheckResult:
    """Check one file's text (stdin, an editor buffer, a fix before it is written) as if it
    were the file at `path`."""
    return check_loaded([load_text(text, path)], config, semantic)


def check_loaded(
    files: list[LoadedFile],
    config: ConfigSource | None = None,
    semantic: bool = True,
    progress: Progress | None = None,
    started: float | None = None,
    skipped: list[str] | None = None,
    cache: CheckCache | None = None,
) -> CheckResult:
    started = time.perf_counter() if started is None else started
    config = config or CheckConfig()
    diagnostics: list[Diagnostic] = []
    theories: list[dict[str, Any]] = []
    unsettled: list[str] = []
    for loaded in files:
        file_diagnostics = list(loaded.diagnostics) + _check_ignore_lists(loaded)
        facts: dict[str, Any] = {}
        if loaded.theory is not None:
            t = loaded.theory
            facts = {
                "id": t.id,
                "file": loaded.path,
                "rules": len(t.rules),
                "actions": len(t.actions),
                "metrics": len(t.metrics),
                "coverage": None,
            }
            if semantic and loaded.ok:
                try:
                    more, extra = run_semantic(
                        loaded, progress, cache, config.for_file(loaded.path), unsettled
                    )
                except Exception as exc:  # a checker bug must not hide the file's other findings
                    unsettled.append(loaded.path)
                    more, extra = (
                        [
                            error(
                                "internal-error",
                                f"the compiler failed on this file: {exc!r}",
                                t.span,
                            )
                        ],
                        {},
                    )
                file_diagnostics.extend(more)
                facts.update(extra)
            theories.append(facts)
        diagnostics.extend(_filter(loaded, file_diagnostics, config))
    # Checks over the whole set: front-end ones (duplicate ids across files) always, semantic
    # ones (the switch graph) unless --no-semantic.
    stages = ("front-end", "set") if semantic else ("front-end",)
    memo = (cache or CheckCache.disabled()).memo("set answers")
    for check in catalog().values():
        if check.info.stage in stages and check.run is not None:
            found = check.run(files, memo) if check.info.stage == "set" else check.run(files)
            for diagnostic in found:
                owner = next((f for f in files if diagnostic.file == f.path), None)
                diagnostics.extend(_filter(owner, [diagnostic], config) if owner else [diagnostic])
    memo.save()
    diagnostics.sort(key=Diagnostic.sort_key)
    return CheckResult(
        files, diagnostics, theories, time.perf_counter() - started, skipped or [], 0, unsettled
    )


def _filter(
    loaded: LoadedFile | None, diagnostics: list[Diagnostic], source: ConfigSource
) -> list[Diagnostic]:
    config = source.for_file(loaded.path) if loaded else CheckConfig()
    file_ignores = _file_ignores(loaded) if loaded else frozenset()
    item_ignores = _item_ignores(loaded) if loaded else {}
    kept: list[Diagnostic] = []
    front_end = {name for name, check in catalog().items() if check.info.stage == "front-end"}
    for diagnostic in diagnostics:
        if diagnostic.check in front_end:  # never ignorable: the file cannot be compiled
            kept.append(diagnostic)
            continue
        if not config.reports(diagnostic.check) or diagnostic.check in file_ignores:
            continue
        # An item's `ignore:` silences findings about that item: the first item a finding
        # names, the one its location points at.
        if diagnostic.items and diagnostic.check in item_ignores.get(
            diagnostic.items[0], frozenset()
        ):
            continue
        if diagnostic.check in config.severity:
            diagnostic = diagnostic.with_severity(config.severity[diagnostic.check])
        kept.append(diagnostic)
    return kept
