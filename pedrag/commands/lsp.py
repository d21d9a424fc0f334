"""`pedrag lsp`: a language server for theory files (stdio), built on pygls.

It publishes pedrag's own diagnostics: the front end's at once on every open and change, the
compiler's (z3) checks after a short pause in typing, in a worker thread, dropped if the
document changed meanwhile. A file whose conditions have front-end errors still gets the
compiler's findings about its other rules: the broken conditions are masked (replaced by
`false`, every offset kept) for the semantic run, and findings that depend on the whole rule
set (coverage, unused items) are withheld until the file is clean. Hover shows a metric's
type, domain, default and writer, an action's rung and priority, a rung's meaning; completion
offers metric names, enum values, history functions and keywords inside conditions, actions
after `then:`, rungs after `rung:`/`set:`/...; go to definition and find references work for
metrics, actions and rules; code actions apply a diagnostic's did-you-mean, `--fix`'s rule
for a coverage gap and the proved guard of a conflict or invariant violation.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

NAME = "lsp"
ORDER = 95
HELP = "run the language server (stdio) for editors: diagnostics, hover, completion, definitions"
DESCRIPTION = """\
Run pedrag's language server over stdin/stdout. Editors start it themselves:

  VS Code (any generic LSP client extension), command: pedrag lsp, languages: yaml
  Neovim:  vim.lsp.start({name = "pedrag", cmd = {"pedrag", "lsp"},
                          root_dir = vim.fs.root(0, {"pyproject.toml", ".git"})})

It reports every check `pedrag check` runs (z3 included, after a 0.4 s pause in typing),
hover for metrics, actions and rungs, completion inside conditions, go to definition, find
references, and quick fixes for did-you-mean suggestions and coverage gaps.
"""
EPILOG = """\
examples:
  pedrag lsp
"""

DEBOUNCE_SECONDS = 0.4
CONDITION_KEYS = ("when", "never", "always", "compute")
RUNG_KEYS = ("rung", "start", "set", "at_most", "at_least")
ACTION_KEYS = ("then", "to")
KEYWORDS = ("and", "or", "not", "implies", "in", "true", "false")
INVARIANT_WORDS = ("action", "rung", "priority", "tags")
# Findings about the whole rule set: wrong while a broken rule is masked.
WHOLE_SET_CHECKS = frozenset(
    {"coverage-gap", "unused-action", "unused-metric", "unwritten-metric", "switch-graph"}
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="neither read nor write the on-disk check cache (by default a document's first "
        "check in the server reads the answers earlier `pedrag check` runs and servers kept)",
    )


# -- what the document declares ------------------------------------------------------------


@dataclass
class Index:
    """Names a theory file declares and where, from its YAML (even when it does not validate)."""

    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    actions: dict[str, dict[str, Any]] = field(default_factory=dict)
    rules: dict[str, dict[str, Any]] = field(default_factory=dict)
    definitions: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> offsets


def build_index(text: str, path: str) -> Index | None:
    from pedrag.dsl.spans import SourceText
    from pedrag.dsl.yaml_source import YamlError, load_yaml

    try:
        data, positions = load_yaml(SourceText(path, text))
    except YamlError:
        return None
    if not isinstance(data, dict):
        return None
    index = Index()
    for section, table in (("metrics", index.metrics), ("actions", index.actions)):
        declared = data.get(section)
        if isinstance(declared, dict):
            for name, value in declared.items():
                table[str(name)] = value if isinstance(value, dict) else {}
                where = positions.keys.get((section, name))
                if where:
                    index.definitions.setdefault(str(name), where)
    rules = data.get("rules")
    if isinstance(rules, list):
        for number, rule in enumerate(rules):
            if isinstance(rule, dict) and isinstance(rule.get("id"), str):
                index.rules[rule["id"]] = rule
                where = positions.values.get(("rules", number, "id"))
                if where:
                    index.definitions.setdefault(rule["id"], where)
    return index


# -- positions ---------------------------------------------------------------------------


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _offset(text: str, line: int, character: int) -> int:
    """An LSP position (0-based line, UTF-16 character) as an offset into `text`."""
    lines = text.split("\n")
    line = max(0, min(line, len(lines) - 1))
    start = sum(len(part) + 1 for part in lines[:line])
    units = 0
    for column, char in enumerate(lines[line]):
        if units >= character:
            return start + column
        units += _utf16(char)
    return start + len(lines[line])


def _position(text: str, offset: int) -> Any:
    from lsprotocol import types

    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    return types.Position(line=line, character=_utf16(text[start:offset]))


def _span_range(text: str, span: Any) -> Any:
    """A 1-based pedrag span (code-point columns) as an LSP range (UTF-16)."""
    from lsprotocol import types

    lines = text.split("\n")

    def position(line: int, column: int) -> Any:
        row = max(0, min(line - 1, len(lines) - 1)) if lines else 0
        content = lines[row] if lines else ""
        return types.Position(line=row, character=_utf16(content[: max(0, column - 1)]))

    return types.Range(
        start=position(span.line, span.column), end=position(span.end_line, span.end_column)
    )


def _word_at(text: str, offset: int) -> tuple[str, int, int] | None:
    for found in re.finditer(r"[A-Za-z_][A-Za-z0-9_]*", text[text.rfind("\n", 0, offset) + 1 :]):
        start = text.rfind("\n", 0, offset) + 1 + found.start()
        end = start + len(found.group(0))
        if start <= offset <= end:
            return found.group(0), start, end
    return None


# -- diagnostics --------------------------------------------------------------------------


def _mask_broken_conditions(text: str, loaded: Any) -> tuple[str, set[str]]:
    """`text` with every rule condition that has a front-end error replaced by `false`
    (same length, newlines kept), and the ids of those rules."""
    positions = loaded.positions
    if positions is None:
        return text, set()
    masked: set[str] = set()
    bad = [d.span for d in loaded.diagnostics if d.span is not None]
    chars = list(text)
    number = 0
    while ("rules", number, "when") in positions.values:
        start, end = positions.values[("rules", number, "when")]
        first = positions.source.position(start)[0]
        last = positions.source.position(max(start, end - 1))[0]
        if any(first <= span.line <= last for span in bad) and end - start >= 5:
            for offset in range(start, end):
                chars[offset] = "\n" if text[offset] == "\n" else " "
            chars[start : start + 5] = list("false")
            rule_id = positions.source.text[
                slice(*positions.values.get(("rules", number, "id"), (0, 0)))
            ]
            masked.add(rule_id.strip("'\""))
        number += 1
    return "".join(chars), masked


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

WARMED: set[str] = set()
"""Documents checked once in this server: the process's memo holds their answers since."""
DISK_CACHE = True  # `pedrag lsp --no-cache` turns it off


def _first_cache(path: str) -> Any:
    """The on-disk check cache for a document's first check in this server (what `pedrag
    check` and earlier servers kept: opening a 5,000-rule file is then not a cold check),
    None after it: the process's memo answers then, and reading the shard on every keystroke
    would cost more than it saves. Answers found after the first check are not written back."""
    if not DISK_CACHE or path in WARMED:
        return None
    WARMED.add(path)
    from pedrag.compiler.check_cache import CheckCache

    return CheckCache.default()


def analyse(text: str, path: str, semantic: bool, config: Any) -> list[Any]:
    """pedrag's diagnostics of one document (front end only, or with the compiler's checks)."""
    from pedrag.dsl.parser import remembering
    from pedrag.dsl.resolve import remembering_resolved

    with remembering(PARSED), remembering_resolved(RESOLVED):
        return _analyse(text, path, semantic, config)


def _analyse(text: str, path: str, semantic: bool, config: Any) -> list[Any]:
    from pedrag.compiler.driver import check_loaded, check_text
    from pedrag.dsl.loader import load_text

    loaded = load_text(text, path)  # once: the front end's findings, then the compiler's
    result = check_loaded([loaded], config, semantic=False)
    diagnostics = list(result.diagnostics)
    if not semantic:
        return diagnostics
    if not result.errors:
        return list(check_loaded([loaded], config, cache=_first_cache(path)).diagnostics)
    masked_text, masked = _mask_broken_conditions(text, loaded)
    if not masked:
        return diagnostics
    again = check_text(masked_text, path, config)
    if any(
        d.severity.value == "error"
        and d.check in ("syntax-error", "unknown-name", "type-error", "trust-boundary")
        for d in again.diagnostics
    ):
        return diagnostics  # other front-end errors remain: nothing to prove yet
    for diagnostic in again.diagnostics:
        if diagnostic.check in WHOLE_SET_CHECKS:
            continue
        if any(item in {f"rule:{rule}" for rule in masked} for item in diagnostic.items):
            continue
        diagnostics.append(diagnostic)
    return diagnostics


def to_lsp(text: str, diagnostic: Any, uri: str) -> Any:
    from lsprotocol import types

    from pedrag.compiler.reports.sarif import HELP_URI

    severity = {
        "error": types.DiagnosticSeverity.Error,
        "warning": types.DiagnosticSeverity.Warning,
        "note": types.DiagnosticSeverity.Information,
    }[diagnostic.severity.value]
    message = diagnostic.message
    if diagnostic.witness:
        message += "\nwitness: " + ", ".join(f"{k}={v}" for k, v in diagnostic.witness.items())
    if diagnostic.help:
        message += f"\nhelp: {diagnostic.help}"
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(uri=uri, range=_span_range(text, span)), message="related"
        )
        for span in diagnostic.related
    ]
    span = diagnostic.span
    whole = types.Range(
        start=types.Position(line=0, character=0), end=types.Position(line=0, character=1)
    )
    return types.Diagnostic(
        range=_span_range(text, span) if span else whole,
        message=message,
        severity=severity,
        code=diagnostic.check,
        code_description=types.CodeDescription(href=HELP_URI.format(check=diagnostic.check)),
        source="pedrag",
        related_information=related or None,
        data={
            "help": diagnostic.help,
            "suggested_rule": diagnostic.data.get("suggested_rule"),
            "guard": diagnostic.data.get("guard"),
        },
    )


# -- the server ---------------------------------------------------------------------------


def _describe_metric(name: str, metric: dict[str, Any], text: str, index: Index) -> str:
    from pedrag.dsl.schema_text import SOURCES

    kind = metric.get("type", "?")
    domain = ""
    if kind in ("int", "float") and isinstance(metric.get("range"), list):
        low, high = metric["range"][:2]
        domain = f" in [{low}, {high}]"
    elif kind == "enum":
        domain = f" of {', '.join(map(str, metric.get('values') or []))}"
    source = str(metric.get("source", "?"))
    lines = [f"**metric `{name}`**: {kind}{domain}"]
    if "default" in metric:
        lines.append(f"default: `{metric['default']}`")
    lines.append(f"source: `{source}`, {SOURCES.get(source, 'unknown source')}")
    if metric.get("compute"):
        lines.append(f"compute: `{metric['compute']}`")
    if metric.get("description"):
        lines.append(str(metric["description"]))
    where = index.definitions.get(name)
    if where:
        lines.append(f"declared on line {text.count(chr(10), 0, where[0]) + 1}")
    return "\n\n".join(lines)


def _describe_action(name: str, action: dict[str, Any]) -> str:
    from pedrag.dsl.schema_text import RUNGS

    rung = str(action.get("rung", "?"))
    lines = [
        f"**action `{name}`**: rung {rung} ({RUNGS.get(rung, '?')}), priority {action.get('priority', '?')}"
    ]
    if action.get("description"):
        lines.append(str(action["description"]))
    if action.get("tags"):
        lines.append("tags: " + ", ".join(map(str, action["tags"])))
    return "\n\n".join(lines)


def _line_key(line: str) -> str | None:
    """The YAML key a line's value belongs to (`when` in `- {id: r, when: "a > |`)."""
    found = re.findall(r"([A-Za-z_]+)\s*:", line)
    return found[-1] if found else None


def create_server() -> Any:
    from lsprotocol import types
    from pygls.lsp.server import LanguageServer

    from pedrag import __version__
    from pedrag.compiler.checks import catalog
    from pedrag.compiler.config import ConfigFinder
    from pedrag.dsl.ast import HISTORY_FUNCTIONS
    from pedrag.dsl.schema_text import RUNGS

    server = LanguageServer(
        "pedrag", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full
    )
    checks = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pedrag-check")
    finder = ConfigFinder(frozenset(catalog()))
    pending: dict[str, asyncio.Task[None]] = {}
    indexes: dict[str, Index] = {}

    def path_of(uri: str) -> str:
        from pygls.uris import to_fs_path

        return to_fs_path(uri) or uri

    def document(uri: str) -> Any:
        return server.workspace.get_text_document(uri)

    def publish(uri: str, text: str, diagnostics: list[Any], version: int | None) -> None:
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=uri, version=version, diagnostics=[to_lsp(text, d, uri) for d in diagnostics]
            )
        )

    async def semantic(uri: str, version: int | None, delay: float) -> None:
        await asyncio.sleep(delay)
        doc = document(uri)
        text = doc.source
        loop = asyncio.get_running_loop()
        try:
            found = await loop.run_in_executor(checks, analyse, text, path_of(uri), True, finder)
        except Exception as exc:  # never take the editor's server down with a checker bug
            server.window_log_message(
                types.LogMessageParams(type=types.MessageType.Error, message=f"pedrag: {exc!r}")
            )
            return
        if document(uri).version == version:
            publish(uri, text, found, version)

    def refresh(uri: str, delay: float) -> None:
        doc = document(uri)
        text, version = doc.source, doc.version
        index = build_index(text, path_of(uri))
        if index is not None:
            indexes[uri] = index
        try:
            publish(uri, text, analyse(text, path_of(uri), False, finder), version)
        except Exception as exc:
            server.window_log_message(
                types.LogMessageParams(type=types.MessageType.Error, message=f"pedrag: {exc!r}")
            )
        if uri in pending:
            pending[uri].cancel()
        pending[uri] = asyncio.ensure_future(semantic(uri, version, delay))

    @server.feature(types.INITIALIZED)
    def initialized(params: types.InitializedParams) -> None:
        # Import the solver now, not on the first keystroke.
        checks.submit(lambda: __import__("pedrag.compiler.analysis"))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        refresh(params.text_document.uri, 0.0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        refresh(params.text_document.uri, DEBOUNCE_SECONDS)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri in pending:
            pending.pop(uri).cancel()
        indexes.pop(uri, None)
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(params: types.HoverParams) -> types.Hover | None:
        text = document(params.text_document.uri).source
        index = indexes.get(params.text_document.uri)
        offset = _offset(text, params.position.line, params.position.character)
        word = _word_at(text, offset)
        if word is None or index is None:
            return None
        name, start, end = word
        if name in index.metrics:
            value = _describe_metric(name, index.metrics[name], text, index)
        elif name in index.actions:
            value = _describe_action(name, index.actions[name])
        elif name in RUNGS:
            value = f"**{name}**: {RUNGS[name]}"
        elif name in HISTORY_FUNCTIONS:
            value = f"**{name}(...)**: a history function over the last n turns"
        else:
            enums = [m for m, d in index.metrics.items() if name in (d.get("values") or [])]
            if not enums:
                return None
            value = "value of enum " + ", ".join(f"`{m}`" for m in enums)
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=value),
            range=types.Range(start=_position(text, start), end=_position(text, end)),
        )

    @server.feature(
        types.TEXT_DOCUMENT_COMPLETION,
        types.CompletionOptions(trigger_characters=[" ", "(", "[", ":"]),
    )
    def completion(params: types.CompletionParams) -> types.CompletionList:
        text = document(params.text_document.uri).source
        index = indexes.get(params.text_document.uri) or Index()
        offset = _offset(text, params.position.line, params.position.character)
        line = text[text.rfind("\n", 0, offset) + 1 : offset]
        key = _line_key(line)
        items: list[types.CompletionItem] = []
        kind = types.CompletionItemKind
        if key in CONDITION_KEYS or _inside_condition(text, offset):
            enum_context = re.search(r"(\w+)\s*(?:==|!=|(?:not\s+)?in\s*\[[^\]]*)\s*\w*$", line)
            if enum_context and enum_context.group(1) in index.metrics:
                values = index.metrics[enum_context.group(1)].get("values") or []
                items += [
                    types.CompletionItem(label=str(v), kind=kind.EnumMember, sort_text=f"0{v}")
                    for v in values
                ]
            for name, metric in index.metrics.items():
                detail = str(metric.get("type", ""))
                if isinstance(metric.get("range"), list):
                    detail += f" [{metric['range'][0]}, {metric['range'][1]}]"
                detail += f" ({metric.get('source', '?')})"
                items.append(
                    types.CompletionItem(
                        label=name, kind=kind.Variable, detail=detail, sort_text=f"1{name}"
                    )
                )
            items += [
                types.CompletionItem(
                    label=f, kind=kind.Function, insert_text=f"{f}(", sort_text=f"2{f}"
                )
                for f in HISTORY_FUNCTIONS
            ]
            items += [
                types.CompletionItem(label=w, kind=kind.Keyword, sort_text=f"3{w}")
                for w in KEYWORDS
            ]
            if "never" in line or "always" in line:
                items += [
                    types.CompletionItem(label=w, kind=kind.Keyword, sort_text=f"3{w}")
                    for w in INVARIANT_WORDS
                ]
                items += [
                    types.CompletionItem(label=r, kind=kind.Constant, detail=t, sort_text=f"4{r}")
                    for r, t in RUNGS.items()
                ]
        elif key in ACTION_KEYS:
            items += [
                types.CompletionItem(
                    label=name, kind=kind.Function, detail=str(action.get("rung", ""))
                )
                for name, action in index.actions.items()
            ]
        elif key in RUNG_KEYS:
            items += [
                types.CompletionItem(label=r, kind=kind.Constant, detail=t)
                for r, t in RUNGS.items()
            ]
        return types.CompletionList(is_incomplete=False, items=items)

    def _inside_condition(text: str, offset: int) -> bool:
        """Inside a block-scalar condition (`when: |` and the lines under it)."""
        head = text[:offset]
        found = re.search(
            r"(?:when|never|always|compute):\s*[|>][-+]?\s*\n((?:[ \t]+.*\n?)*)$", head
        )
        return found is not None

    def _locations(uri: str, name: str) -> list[types.Location]:
        text = document(uri).source
        return [
            types.Location(
                uri=uri,
                range=types.Range(start=_position(text, m.start()), end=_position(text, m.end())),
            )
            for m in re.finditer(rf"(?<![\w#]){re.escape(name)}(?!\w)", text)
            if not text[text.rfind("\n", 0, m.start()) + 1 : m.start()].lstrip().startswith("#")
        ]

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    def definition(params: types.DefinitionParams) -> types.Location | None:
        uri = params.text_document.uri
        text = document(uri).source
        index = indexes.get(uri)
        word = _word_at(text, _offset(text, params.position.line, params.position.character))
        if index is None or word is None or word[0] not in index.definitions:
            return None
        start, end = index.definitions[word[0]]
        return types.Location(
            uri=uri, range=types.Range(start=_position(text, start), end=_position(text, end))
        )

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    def references(params: types.ReferenceParams) -> list[types.Location]:
        uri = params.text_document.uri
        text = document(uri).source
        index = indexes.get(uri)
        word = _word_at(text, _offset(text, params.position.line, params.position.character))
        if index is None or word is None:
            return []
        name = word[0]
        if name not in index.metrics and name not in index.actions and name not in index.rules:
            return []
        return _locations(uri, name)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
    )
    def code_action(params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        text = document(uri).source
        actions: list[types.CodeAction] = []
        for diagnostic in params.context.diagnostics:
            if diagnostic.source != "pedrag":
                continue
            data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
            help = data.get("help") or ""
            meant = re.fullmatch(r"did you mean `([^`]+)`\?", help)
            single_line = diagnostic.range.start.line == diagnostic.range.end.line
            if meant and diagnostic.code in ("syntax-error", "unknown-name") and single_line:
                actions.append(
                    types.CodeAction(
                        title=f"Replace with `{meant.group(1)}`",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        is_preferred=True,
                        edit=types.WorkspaceEdit(
                            changes={
                                uri: [
                                    types.TextEdit(range=diagnostic.range, new_text=meant.group(1))
                                ]
                            }
                        ),
                    )
                )
            rule = data.get("suggested_rule")
            if diagnostic.code == "coverage-gap" and isinstance(rule, dict) and rule.get("safe"):
                edit = _gap_edit(text, rule)
                if edit is not None:
                    actions.append(
                        types.CodeAction(
                            title=f"Add rule `{rule['id']}` for this gap (then: {rule['then']})",
                            kind=types.CodeActionKind.QuickFix,
                            diagnostics=[diagnostic],
                            edit=types.WorkspaceEdit(changes={uri: [edit]}),
                        )
                    )
            guard = data.get("guard")
            if diagnostic.code in ("conflict", "invariant-violation") and isinstance(guard, dict):
                edit = _guard_edit(text, path_of(uri), guard)
                if edit is not None:
                    actions.append(
                        types.CodeAction(
                            title=f"Add `{guard['add']}` to rule `{guard['rule']}` (proved)",
                            kind=types.CodeActionKind.QuickFix,
                            diagnostics=[diagnostic],
                            edit=types.WorkspaceEdit(changes={uri: [edit]}),
                        )
                    )
        return actions

    def _guard_edit(text: str, path: str, guard: dict[str, Any]) -> types.TextEdit | None:
        from pedrag.compiler.fixes import guard_edit

        fixed = guard_edit(text, path, guard)
        if fixed is None:
            return None
        # guard_edit rewrites one value: the edit is the stretch between the common ends.
        start = 0
        while start < min(len(text), len(fixed)) and text[start] == fixed[start]:
            start += 1
        end = 0
        while end < min(len(text), len(fixed)) - start and text[-1 - end] == fixed[-1 - end]:
            end += 1
        return types.TextEdit(
            range=types.Range(start=_position(text, start), end=_position(text, len(text) - end)),
            new_text=fixed[start : len(fixed) - end],
        )

    def _gap_edit(text: str, rule: dict[str, Any]) -> types.TextEdit | None:
        from pedrag.compiler.fixes import EditError, Suggestion, insert_rules

        try:
            fixed = insert_rules(text, [Suggestion.from_dict(rule)])
        except EditError:
            return None
        # insert_rules only inserts: the edit is the one inserted stretch.
        start = 0
        while start < len(text) and text[start] == fixed[start]:
            start += 1
        inserted = fixed[start : start + len(fixed) - len(text)]
        where = _position(text, start)
        return types.TextEdit(range=types.Range(start=where, end=where), new_text=inserted)

    return server


def run(args: argparse.Namespace) -> int:
    global DISK_CACHE
    DISK_CACHE = not getattr(args, "no_cache", False)
    try:
        server = create_server()
    except ImportError as exc:  # pragma: no cover - pygls is a dependency
        print(f"pedrag lsp: {exc}", file=sys.stderr)
        return 2
    server.start_io()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(run(argparse.Namespace()))
