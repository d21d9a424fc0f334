"""The language server (stdio), built on pygls: pedrag's checks and navigation in an editor.

Language server entry. It publishes pedrag's own diagnostics (`pedrag.lsp.checking`): the
front end's at once on every open and change, the compiler's (z3) checks after a short pause in
typing, in a worker thread, dropped if the document changed meanwhile; until they arrive the
previous ones stay shown, moved with the lines around the edit (never blanked); a version
with a front-end error gets `pedrag check`'s findings and those last ones marked stale
(`checking.with_last_findings`). Hover shows a metric's
type, domain, default and writer, an action's rung and priority, a rung's meaning; completion
offers metric names, enum values, history functions and keywords inside conditions, actions
after `then:`, rungs after `rung:`/`set:`/...; go to definition and find references work for
metrics, actions and rules; code actions apply a diagnostic's did-you-mean, `--fix`'s rule
for a coverage gap and the proved guard of a conflict or invariant violation.
"""

from __future__ import annotations

import asyncio
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pedrag.kernel.suggest import suggested
from pedrag.lsp import checking, heap
from pedrag.lsp.checking import (
    LspForms,
    analyse,
    carry_over,
    compiles,
    converter,
    semantic_findings,
    with_last_findings,
)
from pedrag.lsp.document import Index, Symbol, build_index
from pedrag.lsp.positions import offset_at, position_at, word_at

DEBOUNCE_SECONDS = 0.4
IDLE_SECONDS = 1.0
"""How long after a semantic run's publish, with no check pending, the server runs its idle
work: a document's first check again with the process's memos alone, when that check read the
on-disk cache (`checking.warm_up`: the first edit after opening a 5,000-rule file then costs
a keystroke's re-check, not a cold check's 5 s), else a due whole collection of its heap
(`heap.collect_if_due`): a keystroke then never pays either."""
IDLE_CHECK = "pedrag: re-check of a document opened from the disk cache, while idle: "
"""What the server logs when its idle re-check starts, ends or gives way to an edit."""
CONDITION_KEYS = ("when", "never", "always", "compute")
RUNG_KEYS = ("rung", "start", "set", "at_most", "at_least")
ACTION_KEYS = ("then", "to")
KEYWORDS = ("and", "or", "not", "implies", "in", "true", "false")
INVARIANT_WORDS = ("action", "rung", "priority", "tags")


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
    from pedrag.kernel.wording import derived_tags, shown_tags

    rung = str(action.get("rung", "?"))
    lines = [
        f"**action `{name}`**: rung {rung} ({RUNGS.get(rung, '?')}), priority {action.get('priority', '?')}"
    ]
    if action.get("description"):
        lines.append(str(action["description"]))
    tags = action.get("tags")
    declared = [str(tag) for tag in tags] if isinstance(tags, list) else []
    variants = action.get("variants")
    wordings = [action.get("template"), *(variants if isinstance(variants, list) else ())]
    derived = derived_tags(text for text in wordings if isinstance(text, str))
    shown = shown_tags(declared, derived)
    if shown:
        lines.append("tags: " + ", ".join(shown))
    return "\n\n".join(lines)


def _line_key(line: str) -> str | None:
    """The YAML key a line's value belongs to (`when` in `- {id: r, when: "a > |`)."""
    found = re.findall(r"([A-Za-z_]+)\s*:", line)
    return found[-1] if found else None


def _protocol() -> Any:
    """pygls's protocol, able to send a message whose JSON text is already made
    (`LspForms.notification`: a publish's diagnostics encoded once each, not on every
    keystroke); every other message goes as pygls sends it. It frames the text as pygls's own
    sender does, through the same writer.

    Only pygls's public API is used: the transport hands the protocol its writer through
    `set_writer(writer, include_headers)` (stdio and TCP framed, a WebSocket not), which this
    class extends to remember the framing itself rather than read pygls's private
    `_include_headers` (a test pins that no private pygls name is read)."""
    import inspect

    from pygls.protocol import LanguageServerProtocol

    class Protocol(LanguageServerProtocol):  # type: ignore[misc]
        framed_by_pedrag = False  # whether to send Content-Length headers (set_writer's say)

        def set_writer(self, writer: Any, include_headers: bool = True) -> None:
            super().set_writer(writer, include_headers)
            self.framed_by_pedrag = include_headers

        def send_text(self, body: str) -> None:
            if self.writer is None:
                return
            data = body.encode(self.CHARSET)
            if self.framed_by_pedrag:
                header = (
                    f"Content-Length: {len(data)}\r\n"
                    f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
                )
                data = header.encode(self.CHARSET) + data
            written = self.writer.write(data)
            if inspect.isawaitable(written):
                asyncio.ensure_future(written)

    return Protocol


def create_server() -> Any:
    from lsprotocol import types
    from pygls.lsp.server import LanguageServer

    from pedrag import __version__
    from pedrag.compiler.checks import catalog
    from pedrag.compiler.config import ConfigError, ConfigFinder
    from pedrag.compiler.discovery import is_pedrag_text
    from pedrag.dsl.schema_text import RUNGS
    from pedrag.kernel.history import NAMES as HISTORY_FUNCTIONS

    server = LanguageServer(
        "pedrag",
        __version__,
        text_document_sync_kind=types.TextDocumentSyncKind.Full,
        converter_factory=converter,
        protocol_cls=_protocol(),
    )
    checks = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pedrag-check")
    finder = ConfigFinder(frozenset(catalog()))
    pending: dict[str, asyncio.Task[None]] = {}
    indexes: dict[str, Index] = {}
    published: set[str] = set()  # documents the server has published diagnostics for
    # The last semantic findings shown for each document, and the text they are placed in:
    # shown again (moved with the edit) while the next semantic run is under way.
    shown: dict[str, tuple[str, list[Any]]] = {}
    forms = LspForms()  # the published diagnostics' JSON forms, kept between publishes
    edited = threading.Event()  # a document changed since the idle work was started

    def path_of(uri: str) -> str:
        from pygls.uris import to_fs_path

        return to_fs_path(uri) or uri

    def document(uri: str) -> Any:
        return server.workspace.get_text_document(uri)

    def config_of(uri: str) -> Any:
        """The document's configuration, or None when its pyproject.toml is broken (the
        diagnostics then say so through `analyse`)."""
        try:
            return finder.for_file(path_of(uri))
        except ConfigError:
            return None

    def wanted(uri: str, text: str) -> bool:
        """Only pedrag documents get diagnostics: a top-level `pedrag:` key, or a match in
        `[tool.pedrag] files`. An editor hands the server every YAML file (CI workflows,
        docker-compose files, ...); those are left alone, as `pedrag check` skips them in a
        folder."""
        if is_pedrag_text(text):
            return True
        config = config_of(uri)
        return config is not None and config.claims(path_of(uri))

    def publish(uri: str, text: str, diagnostics: list[Any], version: int | None) -> None:
        config = config_of(uri)
        docs_url = config.docs_url if config is not None else None
        converted = forms.convert(text, diagnostics, uri, docs_url)
        server.protocol.send_text(forms.notification(uri, version, converted))  # type: ignore[attr-defined]
        published.add(uri)

    def forget(uri: str) -> None:
        """Stop speaking about a document: no pending check, no index, no diagnostics."""
        if uri in pending:
            pending.pop(uri).cancel()
        indexes.pop(uri, None)
        shown.pop(uri, None)
        forms.forget(uri)
        if uri in published:
            published.discard(uri)
            server.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
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
            if compiles(found):
                shown[uri] = (text, semantic_findings(found))
            # else the last findings stay, carried to this text by its keystroke (`refresh`)
            last = shown[uri][1] if uri in shown and shown[uri][0] == text else []
            publish(uri, text, with_last_findings(found, last, True), version)
        if checking.WARM_UP or heap.due():
            asyncio.ensure_future(when_idle())

    async def when_idle() -> None:
        """The idle work (`IDLE_SECONDS`), one piece at a time, once the editor has been idle
        that long; a keystroke meanwhile puts the rest off to the end of its own semantic run,
        and stops a re-check under way at its next check (`checking.warm_up`): the keystroke's
        check runs in the same worker, and waited for the whole re-check before."""
        while checking.WARM_UP or heap.due():
            await asyncio.sleep(IDLE_SECONDS)
            if any(not task.done() for task in pending.values()):
                return
            loop = asyncio.get_running_loop()
            edited.clear()
            job = checking.WARM_UP[0] if checking.WARM_UP else None
            if job is not None:
                log(f"{IDLE_CHECK}started")
            if not await loop.run_in_executor(checks, checking.warm_up, edited.is_set):
                await loop.run_in_executor(checks, heap.collect_if_due)
                return
            stopped = bool(checking.WARM_UP) and checking.WARM_UP[0] is job
            log(f"{IDLE_CHECK}{'put off for an edit' if stopped else 'done'}")

    def log(message: str) -> None:
        server.window_log_message(
            types.LogMessageParams(type=types.MessageType.Log, message=message)
        )

    def refresh(uri: str, delay: float) -> None:
        edited.set()  # idle work under way gives way to this change's check (`warm_up`)
        doc = document(uri)
        text, version = doc.source, doc.version
        if not wanted(uri, text):
            forget(uri)  # it may have stopped being a pedrag file (its `pedrag:` deleted)
            return
        index = build_index(text, path_of(uri))
        if index is not None:
            indexes[uri] = index
        try:
            found = analyse(text, path_of(uri), False, finder)
            if uri in shown:  # never blank the compiler's findings while it works again
                old_text, old_findings = shown[uri]
                shown[uri] = (text, carry_over(old_text, text, old_findings))
                found = with_last_findings(found, shown[uri][1], False)
            publish(uri, text, found, version)
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
        forget(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(params: types.HoverParams) -> types.Hover | None:
        text = document(params.text_document.uri).source
        index = indexes.get(params.text_document.uri)
        offset = offset_at(text, params.position.line, params.position.character)
        word = word_at(text, offset)
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
            range=types.Range(start=position_at(text, start), end=position_at(text, end)),
        )

    @server.feature(
        types.TEXT_DOCUMENT_COMPLETION,
        types.CompletionOptions(trigger_characters=[" ", "(", "[", ":"]),
    )
    def completion(params: types.CompletionParams) -> types.CompletionList:
        text = document(params.text_document.uri).source
        index = indexes.get(params.text_document.uri) or Index()
        offset = offset_at(text, params.position.line, params.position.character)
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
                range=types.Range(
                    start=position_at(text, m.start()), end=position_at(text, m.end())
                ),
            )
            for m in re.finditer(rf"(?<![\w#]){re.escape(name)}(?!\w)", text)
            if not text[text.rfind("\n", 0, m.start()) + 1 : m.start()].lstrip().startswith("#")
        ]

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    def definition(params: types.DefinitionParams) -> types.Location | None:
        uri = params.text_document.uri
        text = document(uri).source
        index = indexes.get(uri)
        word = word_at(text, offset_at(text, params.position.line, params.position.character))
        if index is None or word is None or word[0] not in index.definitions:
            return None
        start, end = index.definitions[word[0]]
        return types.Location(
            uri=uri, range=types.Range(start=position_at(text, start), end=position_at(text, end))
        )

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    def references(params: types.ReferenceParams) -> list[types.Location]:
        uri = params.text_document.uri
        text = document(uri).source
        index = indexes.get(uri)
        word = word_at(text, offset_at(text, params.position.line, params.position.character))
        if index is None or word is None:
            return []
        name = word[0]
        if name not in index.metrics and name not in index.actions and name not in index.rules:
            return []
        return _locations(uri, name)

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbol(params: types.DocumentSymbolParams) -> list[types.DocumentSymbol]:
        uri = params.text_document.uri
        text = document(uri).source
        index = indexes.get(uri)
        if index is None:
            return []
        kinds = {
            "section": types.SymbolKind.Namespace,
            "metric": types.SymbolKind.Variable,
            "action": types.SymbolKind.Function,
            "rule": types.SymbolKind.Event,
            "ceiling step": types.SymbolKind.Number,
        }

        def convert(symbol: Symbol) -> types.DocumentSymbol:
            def span(offsets: tuple[int, int]) -> types.Range:
                return types.Range(
                    start=position_at(text, offsets[0]), end=position_at(text, offsets[1])
                )

            return types.DocumentSymbol(
                name=symbol.name,
                detail=symbol.detail or None,
                kind=kinds[symbol.kind],
                range=span(symbol.whole),
                selection_range=span(symbol.selection),
                children=[convert(child) for child in symbol.children] or None,
            )

        return [convert(symbol) for symbol in index.symbols]

    def _renamed(uri: str, offset: int) -> tuple[str, str, int, int] | None:
        """(kind, name, start, end) of the declared metric or action at `offset`."""
        text = document(uri).source
        index = indexes.get(uri)
        word = word_at(text, offset)
        if index is None or word is None:
            return None
        name, start, end = word
        if name in index.metrics:
            return "metric", name, start, end
        if name in index.actions:
            return "action", name, start, end
        return None

    @server.feature(types.TEXT_DOCUMENT_PREPARE_RENAME)
    def prepare_rename(params: types.PrepareRenameParams) -> types.Range | None:
        uri = params.text_document.uri
        text = document(uri).source
        found = _renamed(uri, offset_at(text, params.position.line, params.position.character))
        if found is None:
            return None
        return types.Range(start=position_at(text, found[2]), end=position_at(text, found[3]))

    def _theory_set(uri: str) -> dict[str, str]:
        """The pedrag files in the document's folder and below (the editor's text where one
        is open), by URI."""
        from pathlib import Path

        from pygls.uris import from_fs_path

        from pedrag.compiler.discovery import discover

        open_texts = {u: d.source for u, d in server.workspace.text_documents.items()}
        found = {uri: document(uri).source}
        for path in discover([str(Path(path_of(uri)).parent)]):
            other = from_fs_path(str(path.resolve())) or path.as_uri()
            if other in found:
                continue
            if other in open_texts:
                found[other] = open_texts[other]
                continue
            try:
                found[other] = path.read_text("utf-8")
            except (OSError, UnicodeDecodeError):
                continue
        return found

    @server.feature(types.TEXT_DOCUMENT_RENAME)
    def rename_symbol(params: types.RenameParams) -> types.WorkspaceEdit | None:
        from pedrag.lsp.rename import rename

        uri = params.text_document.uri
        text = document(uri).source
        found = _renamed(uri, offset_at(text, params.position.line, params.position.character))
        if found is None:
            return None
        kind, name, _, _ = found
        documents = _theory_set(uri)
        # RenameError reaches the editor as the request's error message.
        replacements = rename(documents, kind, name, params.new_name)
        changes: dict[str, list[types.TextEdit]] = {}
        for target, spots in replacements.items():
            source = documents[target]
            changes[target] = [
                types.TextEdit(
                    range=types.Range(
                        start=position_at(source, spot.start), end=position_at(source, spot.end)
                    ),
                    new_text=params.new_name,
                )
                for spot in spots
            ]
        return types.WorkspaceEdit(changes=changes)

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
            if data.get("stale"):
                continue  # found in another version: its fix is not proved for this one
            help = data.get("help") or ""
            meant = suggested(help)
            single_line = diagnostic.range.start.line == diagnostic.range.end.line
            if meant and diagnostic.code in ("syntax-error", "unknown-name") and single_line:
                actions.append(
                    types.CodeAction(
                        title=f"Replace with `{meant}`",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        is_preferred=True,
                        edit=types.WorkspaceEdit(
                            changes={uri: [types.TextEdit(range=diagnostic.range, new_text=meant)]}
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
                            title=_guard_title(guard),
                            kind=types.CodeActionKind.QuickFix,
                            diagnostics=[diagnostic],
                            edit=types.WorkspaceEdit(changes={uri: [edit]}),
                        )
                    )
        return actions

    def _guard_title(guard: dict[str, Any]) -> str:
        """The quick fix's title: what the fix does, in the words `pedrag check` uses."""
        from pedrag.compiler.guards import guard_change

        change = guard_change(guard)
        return f"{change[:1].upper()}{change[1:]} (proved)"

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
            range=types.Range(
                start=position_at(text, start), end=position_at(text, len(text) - end)
            ),
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
        where = position_at(text, start)
        return types.TextEdit(range=types.Range(start=where, end=where), new_text=inserted)

    return server
