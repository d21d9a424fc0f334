"""A document's diagnostics in the editor, and their LSP form.

Language server stage. Takes a document's text and path; gives pedrag's diagnostics: the
front end's at once, the compiler's (z3) checks when asked. A file that does not compile (a
front-end error) gets what `pedrag check` and the check server give it, its front end's
findings alone; the editor also shows the findings of the last version that compiled, marked
stale (`with_last_findings`), so typing through a broken state never blanks them and never
passes a finding about another theory off as current. Parsed and resolved conditions are kept
between keystrokes, and a document's first check reads the on-disk check cache. While a
keystroke's semantic run is under way, the previous run's findings stay shown (`carry_over`),
moved with the lines around the edit.
"""

from __future__ import annotations

import threading
from typing import Any

from pedrag.lsp.positions import LineIndex, span_range


def semantic_findings(diagnostics: list[Any]) -> list[Any]:
    """The compiler's findings among `diagnostics` (what a front-end-only run does not make)."""
    from pedrag.compiler.checks import catalog

    checks = catalog()
    return [
        d
        for d in diagnostics
        if d.check in checks and checks[d.check].info.stage in ("semantic", "set")
    ]


STALE = "(stale: found in the last version that compiled) "
"""How a finding shown from an earlier version starts its message (`with_last_findings`)."""


def compiles(diagnostics: list[Any]) -> bool:
    """Whether the document these diagnostics are about compiles: no front-end finding is an
    error (`LoadedFile.ok`, the condition `driver.check_loaded` runs the compiler's checks
    under). A semantic finding whose severity a configuration raised to error does not count."""
    semantic = {id(d) for d in semantic_findings(diagnostics)}
    return not any(d.severity.value == "error" and id(d) not in semantic for d in diagnostics)


def with_last_findings(found: list[Any], last: list[Any], settled: bool) -> list[Any]:
    """What the editor shows: `found` (this version's diagnostics) and the last semantic
    findings, carried to this text (`carry_over`). Where this version compiles they stand for
    the semantic run still to come (`settled` False: a keystroke's front-end publish) or are
    replaced by it. Where it does not, no semantic run comes: the CLI reports the front end's
    errors alone, and so does this, but a designer mid-edit still sees what the last version
    that compiled was found to have, each marked stale (a note whose message says so, with no
    fix to apply: a guard proved for another theory proves nothing here). The errors and
    warnings are then exactly `pedrag check`'s for this text."""
    from dataclasses import replace

    from pedrag.dsl.diagnostics import Severity

    if compiles(found):
        return found if settled else [*found, *last]
    return [
        *found,
        *(
            replace(
                finding,
                severity=Severity.NOTE,
                message=f"{STALE}{finding.message}",
                data={"stale": True},
            )
            for finding in last
        ),
    ]


def carry_over(old_text: str, new_text: str, findings: list[Any]) -> list[Any]:
    """`findings` about `old_text`, placed in `new_text`: lines before and after the edited
    block keep their findings (moved by the lines the edit added or removed); a finding that
    touches the edited block is dropped, as the next semantic run decides it afresh."""
    from dataclasses import replace

    old, new = old_text.split("\n"), new_text.split("\n")
    limit = min(len(old), len(new))
    before = 0
    while before < limit and old[before] == new[before]:
        before += 1
    after = 0
    while after < limit - before and old[-1 - after] == new[-1 - after]:
        after += 1
    shift = len(new) - len(old)
    first_after = len(old) - after + 1  # 1-based: the first old line after the edited block

    def moved(span: Any) -> Any:
        if span is None:
            return None
        if span.end_line <= before:
            return span
        if span.line >= first_after:
            if not shift:
                return span
            return replace(span, line=span.line + shift, end_line=span.end_line + shift)
        return False  # inside the edited block

    out = []
    for finding in findings:
        span = moved(finding.span)
        related = tuple(moved(r) for r in finding.related)
        if span is False or any(r is False for r in related):
            continue
        if span is finding.span and all(
            a is b for a, b in zip(related, finding.related, strict=True)
        ):
            out.append(finding)  # not moved: the same finding (80,000 copies cost seconds)
        else:
            out.append(replace(finding, span=span, related=related))
    return out


class ParsedMemo(dict):  # type: ignore[type-arg]
    """The server's parsed conditions by text (`pedrag.dsl.parser.remembering`): a keystroke
    re-parses the condition being typed, not the file's other hundreds. Bounded, oldest first
    out, since every keystroke in a condition makes a new text."""

    LIMIT = 20_000

    def __setitem__(self, key: Any, value: Any) -> None:
        if len(self) >= self.LIMIT:
            for old in list(self)[: self.LIMIT // 10]:
                self.pop(old, None)
        super().__setitem__(key, value)


PARSED = ParsedMemo()


class ResolvedMemo:
    """The server's resolved conditions (`pedrag.dsl.resolve.remembering_resolved`): one
    bounded memo per set of declarations, the few most recent kept (editing a metric makes a
    new set with every keystroke)."""

    KEPT = 8

    def __init__(self) -> None:
        self.shelves: dict[str, ParsedMemo] = {}

    def shelf(self, declarations: str) -> ParsedMemo:
        found = self.shelves.pop(declarations, None)
        if found is None:
            found = ParsedMemo()
            while len(self.shelves) >= self.KEPT:
                self.shelves.pop(next(iter(self.shelves)))
        self.shelves[declarations] = found  # the most recent last
        return found


RESOLVED = ResolvedMemo()

LOADED: dict[tuple[str, str], Any] = {}
"""The last version loaded of each document, by its text and path (at most `LOADED_PATHS`
documents: the language server edits one at a time, the check server checks folders)."""
LOADED_PATHS = 16
_READING: list[Any] = []
"""The front ends checks under way read (the same one twice when two checks read it)."""
_LOADING = threading.Lock()  # the server's front-end and semantic runs run in two threads

WARMED: set[str] = set()
"""Documents checked once in this server: the process's memo holds their answers since."""
DISK_CACHE = True  # `pedrag lsp --no-cache` turns it off


def _first_cache(path: str) -> Any:
    """The on-disk check cache for a document's first check in this server (what `pedrag
    check` and earlier servers kept: opening a 5,000-rule file is then not a cold check),
    None after it: the process's memo answers then, and reading the shard on every keystroke
    would cost more than it saves. Answers found after the first check are not written back."""
    import os

    path = os.path.abspath(path)  # the check server's paths are relative to each client's folder
    if not DISK_CACHE or path in WARMED:
        return None
    WARMED.add(path)
    from pedrag.compiler.check_cache import CheckCache

    return CheckCache.default()


WARM_UP: list[Any] = []
"""Checks to run again once the process is idle (`warm_up`), oldest first: each is a
document's first check in this process, which read the on-disk check cache
(`_first_cache`). Where that cache kept the file's findings whole no analysis ran, so the
process holds none of its answers and the first edit after it was a cold check (5 s at 5,000
rules, in the language server and the check server alike). Checked again with the process's
memos alone, that edit finds the answers in memory. The language server's and the check
server's are queued here and run by each one's idle loop. Each is called with the progress
callback its check passes to `check_loaded` (`warm_up`'s preemption)."""


class Preempted(BaseException):
    """Idle work given way to a check someone waits for (`warm_up`). A BaseException, as the
    check server's `TimeLimit` is, so that `check_loaded`'s `except Exception` (a checker bug
    must not hide a file's other findings) does not report it as an internal error."""


def warm_up(interrupted: Any = None) -> bool:
    """Run the oldest queued re-check (`WARM_UP`); whether one ran or was started. For idle
    time only: it costs what a check of its files costs with nothing kept in memory, seconds
    at 5,000 rules, and the language server runs its checks one at a time, so a keystroke's
    check queued behind it waited that long. `interrupted()` is asked before each of the
    compiler's checks (the driver's progress callback): once it is true (an edit came, a
    request is waiting) the re-check stops there and goes back to the front of the queue, for
    the next idle time. Stopping between two checks leaves nothing half-made: each check's
    answers are whole when it returns, and the unfinished analysis is neither kept nor saved.
    A failure is left to the next real check to report, if it still fails."""
    import traceback

    if not WARM_UP:
        return False
    job = WARM_UP.pop(0)

    def progress(_: str) -> None:
        if interrupted is not None and interrupted():
            raise Preempted

    try:
        job(progress)
    except Preempted:
        WARM_UP.insert(0, job)
    except Exception:
        traceback.print_exc()
    return True


def _warm(text: str, path: str, config: Any, progress: Any = None) -> None:
    """The semantic run of `text` (a language server's document) with the process's memos
    alone: neither the on-disk cache nor the kept results (`RESULTS`), which would skip the
    analysis this is for. Nothing, once the document has changed since: its keystroke's check
    made the answers for the new text, and loading the old one again would replace the front
    end the next keystroke is spliced into."""
    from pedrag.compiler.driver import check_loaded
    from pedrag.dsl.parser import remembering
    from pedrag.dsl.resolve import remembering_resolved
    from pedrag.lsp.heap import quiet_collector

    with _LOADING:
        if any(p == path and t != text for t, p in LOADED):
            return
    with quiet_collector(), remembering(PARSED), remembering_resolved(RESOLVED):
        loaded = _load(text, path)
        try:
            check_loaded([loaded], config, progress=progress)
        finally:
            with _LOADING:
                _READING.remove(loaded)


def analyse(text: str, path: str, semantic: bool, config: Any) -> list[Any]:
    """pedrag's diagnostics of one document (front end only, or with the compiler's checks)."""
    from pedrag.compiler import encode
    from pedrag.dsl.parser import remembering
    from pedrag.dsl.resolve import remembering_resolved
    from pedrag.lsp.heap import quiet_collector

    encode.SHARING = True  # this process checks again: rules' formulas are kept across checks
    with quiet_collector(), remembering(PARSED), remembering_resolved(RESOLVED):
        return _analyse(text, path, semantic, config)


def check_files(
    paths: list[str],
    config: Any,
    semantic: bool = True,
    pedrag_only: bool = False,
    progress: Any = None,
) -> Any:
    """`driver.check_paths` in a process that checks again and again (the check server,
    `pedrag.commands._check_server`): each file is read from disk now, and its front end is spliced
    from the version this process loaded last for its path (`_load`), its conditions and the
    solver's answers come from this process's memos, and the on-disk check cache is read for
    a file's first check only (`_first_cache`). The findings are `check_paths`' own: the same
    `check_loaded` runs on front ends equal to the ones it would load."""
    import time
    from pathlib import Path

    from pedrag.compiler import encode
    from pedrag.compiler.discovery import discover
    from pedrag.compiler.driver import check_loaded
    from pedrag.dsl.loader import load_bytes, load_file
    from pedrag.dsl.parser import remembering
    from pedrag.dsl.resolve import remembering_resolved
    from pedrag.lsp.heap import quiet_collector

    started = time.perf_counter()
    encode.SHARING = True
    skipped: list[Path] = []
    reading: list[Any] = []

    def load(path: Path) -> Any:
        try:
            raw = path.read_bytes()
        except OSError:
            return load_file(path)  # which says why it cannot be read
        try:
            text = raw.decode("utf-8-sig")  # as `load_bytes` decodes it
        except UnicodeDecodeError:
            return load_bytes(raw, str(path))  # which points at the byte
        loaded = _load(text, str(path))
        reading.append(loaded)
        return loaded

    with quiet_collector(), remembering(PARSED), remembering_resolved(RESOLVED):
        try:
            files = [load(path) for path in discover(paths, skipped, pedrag_only, config)]
            first = [_first_cache(f.path) for f in files]
            cache = next((c for c in first if c is not None), None)
            return check_loaded(
                files, config, semantic, progress, started, [str(p) for p in skipped], cache
            )
        finally:
            with _LOADING:
                for loaded in reading:
                    _READING.remove(loaded)


RESULTS: dict[bool, tuple[str, str, Any, list[Any]]] = {}
"""The last run's diagnostics of each kind (with the compiler's checks or not), by the text,
path and configuration they were made for. A run of the same text again (a save after the
last keystroke, a configuration re-read, the semantic run after its keystroke's front-end run)
returns them: they depend on nothing else, and an unchanged 5,000-rule text cost 0.2 s of
the front end, encoding and building every finding again. Findings a solver timeout left
undecided are not kept, as the analysis keeps no such answer either."""


def _analyse(text: str, path: str, semantic: bool, config: Any) -> list[Any]:
    from pedrag.compiler.config import CheckConfig

    file_config = (config or CheckConfig()).for_file(path)  # what `check_loaded` reads
    kept = _kept(semantic, text, path, file_config)
    if kept is not None:
        return list(kept)
    loaded = _load(text, path)
    try:
        found, settled = _diagnostics(text, path, semantic, config, loaded, file_config)
    finally:
        with _LOADING:
            _READING.remove(loaded)
    if settled:
        RESULTS[semantic] = (text, path, file_config, found)
    return list(found)


def _kept(semantic: bool, text: str, path: str, file_config: Any) -> list[Any] | None:
    """`RESULTS`' diagnostics of this kind of run, if they were made for this text, path and
    configuration."""
    kept = RESULTS.get(semantic)
    if kept is None or kept[1] != path or kept[0] != text or kept[2] != file_config:
        return None
    return kept[3]


def _load(text: str, path: str) -> Any:
    """The document's front end, once per text (the server's keystroke asks for the front
    end's findings at once and for the compiler's after a pause, on the same text), marked as
    being read (`_READING`) until the caller is done with it. An edit inside one rule's value
    on one line is spliced into the previous text's front end (`splice_condition_edit`: at
    5,000 rules composing, converting and resolving the whole file again was 0.3 s of a
    keystroke's 0.8 s), unless a check still reads that one: the splice moves its conditions'
    offsets to the new text. A whole load's positions are split per rule (`in_memory`), so a
    splice moves the edited rule's offsets, not the file's 100,000."""
    from pedrag.dsl.incremental import splice_condition_edit
    from pedrag.dsl.loader import load_text
    from pedrag.dsl.split_positions import in_memory
    from pedrag.dsl.yaml_source import Positions

    with _LOADING:
        loaded = LOADED.get((text, path))
        if loaded is None:
            previous = next((f for (_, p), f in LOADED.items() if p == path), None)
            if previous is not None and not text.startswith("\ufeff"):  # kept by load_text
                if not any(reading is previous for reading in _READING):
                    loaded = splice_condition_edit(previous, text.encode("utf-8"))
            if loaded is None:
                loaded = load_text(text, path)
                if type(loaded.positions) is Positions:
                    # Split once here, each keystroke's splice moves one rule's offsets.
                    loaded.positions = in_memory(loaded.positions)
            for key in [key for key in LOADED if key[1] == path]:
                del LOADED[key]
            while len(LOADED) >= LOADED_PATHS:
                del LOADED[next(iter(LOADED))]  # the oldest document first
            LOADED[(text, path)] = loaded
        _READING.append(loaded)
    return loaded


def _diagnostics(
    text: str, path: str, semantic: bool, config: Any, loaded: Any, file_config: Any
) -> tuple[list[Any], bool]:
    """The diagnostics, and whether they are settled (no solver question left undecided)."""
    from pedrag.compiler.driver import check_loaded

    # The keystroke's front-end run made these already, on the same text (`RESULTS`).
    front = _kept(False, text, path, file_config)
    if front is None:
        front = check_loaded([loaded], config, semantic=False).diagnostics
    if not semantic:
        return list(front), True
    # A file that does not compile gets its front end's findings alone, as `pedrag check`
    # gives it: `check_loaded` decides that (`LoadedFile.ok`), not this module. The on-disk
    # cache is read for the first check that can use it.
    cache = _first_cache(path) if loaded.ok else None
    result = check_loaded([loaded], config, cache=cache)
    if cache is not None:
        WARM_UP.append(lambda progress: _warm(text, path, config, progress))
    return list(result.diagnostics), not result.unsettled


def to_lsp(text: str | LineIndex, diagnostic: Any, uri: str, docs_url: str | None = None) -> Any:
    """A diagnostic as the editor reads it; its code links to the check's page on the
    documentation site (`[tool.pedrag] docs-url`, or the default)."""
    from lsprotocol import types

    from pedrag.compiler.config import check_page
    from pedrag.compiler.reports.text import witness_text

    lines = text if isinstance(text, LineIndex) else LineIndex(text)
    severity = {
        "error": types.DiagnosticSeverity.Error,
        "warning": types.DiagnosticSeverity.Warning,
        "note": types.DiagnosticSeverity.Information,
    }[diagnostic.severity.value]
    message = diagnostic.message
    if diagnostic.witness:
        message += "\nwitness: " + witness_text(diagnostic.witness)  # as the CLI spells it
    if diagnostic.help:
        message += f"\nhelp: {diagnostic.help}"
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(uri=uri, range=span_range(lines, span)), message="related"
        )
        for span in diagnostic.related
    ]
    span = diagnostic.span
    whole = types.Range(
        start=types.Position(line=0, character=0), end=types.Position(line=0, character=1)
    )
    return types.Diagnostic(
        range=span_range(lines, span) if span else whole,
        message=message,
        severity=severity,
        code=diagnostic.check,
        code_description=types.CodeDescription(href=check_page(diagnostic.check, docs_url)),
        source="pedrag",
        related_information=related or None,
        data={
            "help": diagnostic.help,
            "suggested_rule": diagnostic.data.get("suggested_rule"),
            "guard": diagnostic.data.get("guard"),
            "stale": bool(diagnostic.data.get("stale")),
        },
    )


def converter() -> Any:
    """The server's cattrs converter (pygls's), with a diagnostic already in its JSON form
    (`LspForms`) passed through as it is."""
    from lsprotocol import types
    from pygls.protocol import default_converter

    made = default_converter()
    default = made.get_unstructure_hook(types.Diagnostic)
    made.register_unstructure_hook(
        types.Diagnostic, lambda found: found if type(found) is dict else default(found)
    )
    return made


class LspForms:
    """Diagnostics in the JSON form the server publishes, kept per document between
    publishes: a keystroke in a file with 80,000 findings converts (`to_lsp`, then the
    converter) only the findings that changed, where converting every one took longer than
    checking the edit. A form is kept by everything it is made of: the finding's check,
    severity, message, help, witness (the object) and fix data, and its ranges in the current
    text, so a finding whose line moved or changed is converted again. Only the forms the last publish
    of a document used are kept."""

    def __init__(self) -> None:
        self._unstructure = converter().unstructure
        self.kept: dict[str, dict[Any, Any]] = {}  # key -> (form, the witness it shows)
        self._texts: dict[str, dict[int, tuple[dict[str, Any], str]]] = {}

    def convert(
        self, text: str, diagnostics: list[Any], uri: str, docs_url: str | None
    ) -> list[dict[str, Any]]:
        lines = LineIndex(text)
        kept = self.kept.get(uri, {})
        used: dict[Any, Any] = {}
        out = []
        # Many findings share a span (a rule's condition).
        ranges: dict[Any, tuple[int, int, int, int]] = {}

        def range_of(span: Any) -> tuple[int, int, int, int]:
            hit = ranges.get(span)
            if hit is None:
                hit = ranges[span] = lines.range_of(span)
            return hit

        for diagnostic in diagnostics:
            key = (
                docs_url,
                diagnostic.check,
                diagnostic.severity.value,
                diagnostic.message,
                diagnostic.help,
                range_of(diagnostic.span) if diagnostic.span else None,
                tuple(range_of(span) for span in diagnostic.related),
                # A witness by its identity (a kept finding's witness is the same object on
                # every keystroke; witnesses are never changed once made): the entry holds it,
                # so its id cannot be reused while the entry is kept.
                id(diagnostic.witness) if diagnostic.witness else None,
                repr((diagnostic.data.get("suggested_rule"), diagnostic.data.get("guard")))
                if diagnostic.data
                else None,
            )
            entry = used.get(key) or kept.get(key)
            if entry is None:
                form = self._unstructure(to_lsp(lines, diagnostic, uri, docs_url))
                entry = (form, diagnostic.witness)
            used[key] = entry
            out.append(entry[0])
        self.kept[uri] = used
        return out

    def notification(self, uri: str, version: int | None, forms: list[dict[str, Any]]) -> str:
        """The `textDocument/publishDiagnostics` notification of `forms` (from `convert`) as
        JSON text, each form encoded once while it is kept: `json.dumps` of a publish of
        80,000 findings (85 MB) was two seconds on every keystroke."""
        import json

        old = self._texts.get(uri, {})
        texts: dict[int, tuple[dict[str, Any], str]] = {}
        parts = []
        for form in forms:
            # By the form's id, with the form held next to its text: that id cannot be reused.
            hit = texts.get(id(form)) or old.get(id(form))
            if hit is None:
                hit = (form, json.dumps(form))
            texts[id(form)] = hit
            parts.append(hit[1])
        self._texts[uri] = texts
        params = f'{{"uri": {json.dumps(uri)}, "diagnostics": [{", ".join(parts)}]'
        if version is not None:
            params += f', "version": {int(version)}'
        return (
            f'{{"params": {params}}}, "method": "textDocument/publishDiagnostics", '
            '"jsonrpc": "2.0"}'
        )

    def forget(self, uri: str) -> None:
        self.kept.pop(uri, None)
        self._texts.pop(uri, None)
