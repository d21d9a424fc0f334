"""`pedrag lsp` spoken to over stdio by a minimal LSP client (JSON-RPC with Content-Length
framing), as an editor would: diagnostics on open and change, hover, completion, definition,
references and code actions."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# A typo (`frustated`, line 11) and a dead rule (`never`, line 12).
THEORY = """\
pedrag: 1
theory: {id: lsp, name: LSP}
metrics:
  frustration: {type: float, range: [0, 1], source: inferred}
  affect: {type: enum, values: [calm, frustrated], source: inferred}
actions:
  encourage: {rung: H0, priority: 5, description: Encourage.}
  probe: {rung: H3, priority: 5, description: Probe.}
rules:
  - {id: ok, when: "frustration < 0.5", then: probe}
  - {id: typo, when: "affect == frustated", then: encourage}
  - {id: never, when: "frustration > 0.8 and frustration < 0.2", then: encourage}
"""
CLEAN = THEORY.replace("frustated", "frustrated")  # the dead rule alone


class Client:
    """Just enough of an LSP client: requests, notifications, and what the server publishes."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pedrag.cli", "lsp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.notifications: queue.Queue[dict[str, Any]] = queue.Queue()
        self.responses: dict[int, queue.Queue[dict[str, Any]]] = {}
        self.next_id = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            headers = {}
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                key, _, value = line.decode("ascii").partition(":")
                headers[key.strip().lower()] = value.strip()
            message = json.loads(stream.read(int(headers["content-length"])))
            if "method" in message and "id" in message:  # a request from the server
                self._send({"id": message["id"], "result": None})
            elif "method" in message:
                self.notifications.put(message)
            else:
                self.responses.setdefault(message["id"], queue.Queue()).put(message)

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        stream = self.process.stdin
        assert stream is not None
        with self.lock:
            stream.write(f"Content-Length: {len(body)}\r\n\r\n".encode("ascii") + body)
            stream.flush()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"method": method, "params": params})

    def request(self, method: str, params: dict[str, Any], timeout: float = 20) -> Any:
        self.next_id += 1
        number = self.next_id
        answers = self.responses.setdefault(number, queue.Queue())
        self._send({"id": number, "method": method, "params": params})
        message = answers.get(timeout=timeout)
        assert "error" not in message, message
        return message["result"]

    def diagnostics(
        self, uri: str, until: Any, timeout: float
    ) -> tuple[list[dict[str, Any]], float]:
        """Wait for published diagnostics of `uri` that satisfy `until`; (them, seconds)."""
        started = time.monotonic()
        while True:
            remaining = timeout - (time.monotonic() - started)
            if remaining <= 0:
                raise AssertionError(f"no diagnostics matching within {timeout} s")
            try:
                message = self.notifications.get(timeout=remaining)
            except queue.Empty:
                continue
            if message.get("method") == "textDocument/publishDiagnostics":
                params = message["params"]
                if params["uri"] == uri and until(params["diagnostics"]):
                    return params["diagnostics"], time.monotonic() - started

    def close(self) -> None:
        try:
            self.request("shutdown", {}, timeout=5)
            self.notify("exit", {})
            self.process.wait(timeout=5)
        finally:
            if self.process.poll() is None:
                self.process.kill()


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Client]:
    made = Client()
    made.request(
        "initialize",
        {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}},
    )
    made.notify("initialized", {})
    yield made
    made.close()


def _open(client: Client, tmp_path: Path, text: str = THEORY) -> str:
    path = tmp_path / "lsp.yaml"
    path.write_text(text, "utf-8")
    uri = path.as_uri()
    client.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": text}},
    )
    return uri


def _codes(diagnostics: list[dict[str, Any]]) -> set[str]:
    return {d["code"] for d in diagnostics}


def test_open_publishes_the_typo_alone_as_the_cli_does(client: Client, tmp_path: Path) -> None:
    """A file with a front-end error gets its front end's findings alone, in the editor as
    from `pedrag check`: the dead rule is not reported until the typo is fixed."""
    time.sleep(1.0)  # let the server import the solver, as it does once per session
    uri = _open(client, tmp_path)
    published = _publishes(client, uri, 1, 2)  # the front end's, then the semantic run's
    assert [_codes(found) for found in published] == [{"unknown-name"}, {"unknown-name"}]
    typo = published[1][0]
    column = THEORY.splitlines()[10].index("frustated")
    assert typo["range"] == {
        "start": {"line": 10, "character": column},
        "end": {"line": 10, "character": column + len("frustated")},
    }
    assert "did you mean `frustrated`?" in typo["message"]
    assert _as_cli(published[1]) == _cli(tmp_path, THEORY)


def _publishes(client: Client, uri: str, version: int, count: int) -> list[list[dict[str, Any]]]:
    """The first `count` publishes of `uri` made for `version` (a change's front-end publish,
    then its semantic run's), in the order they came."""
    found: list[list[dict[str, Any]]] = []
    while len(found) < count:
        message = client.notifications.get(timeout=60)
        params = message.get("params", {})
        if message.get("method") == "textDocument/publishDiagnostics" and params["uri"] == uri:
            if params.get("version") == version:
                found.append(params["diagnostics"])
    return found


SEVERITIES = {1: "error", 2: "warning", 3: "note"}


def _as_cli(published: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    """Published diagnostics as (check, severity, 1-based line), sorted."""
    return sorted(
        (d["code"], SEVERITIES[d["severity"]], d["range"]["start"]["line"] + 1) for d in published
    )


def _cli(tmp_path: Path, text: str) -> list[tuple[str, str, int]]:
    """`pedrag check`'s findings on `text`, as `_as_cli` lists the editor's."""
    path = tmp_path / "cli" / "lsp.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, "utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pedrag.cli", "check", str(path), "--format", "json", "--no-cache"],
        capture_output=True,
        text=True,
        env={**os.environ, "PEDRAG_DAEMON": "off"},
        timeout=600,
    )
    report = json.loads(done.stdout)
    return sorted((d["check"], d["severity"], d["line"]) for d in report["diagnostics"])


def test_a_designer_breaks_a_shipped_theory_and_sees_the_cli_s_errors_and_stale_findings(
    client: Client, tmp_path: Path
) -> None:
    """socratic.yaml opened, a rule made dead, another rule's condition mistyped, the typo
    fixed. While the file does not compile, each publish holds exactly `pedrag check`'s
    findings, and the dead rule found before the typo, marked stale (a note, no fix); once it
    compiles again the findings are `pedrag check`'s and none is stale."""
    shipped = (Path(__file__).resolve().parents[2] / "theories" / "socratic.yaml").read_text()
    uri = _open(client, tmp_path, shipped)
    assert _as_cli(_publishes(client, uri, 1, 2)[1]) == _cli(tmp_path, shipped)
    dead = shipped.replace(
        'when: "frustration >= 0.8"', 'when: "frustration >= 0.8 and frustration < 0.1"'
    )
    broken = dead.replace(
        '"intent == solution_demand and frustration >= 0.7"',
        '"intent == solution_demand and frustation >= 0.7"',
    )
    for version, text in ((2, dead), (3, broken), (4, dead)):
        client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
        )
        front, settled = _publishes(client, uri, version, 2)
        cli = _cli(tmp_path, text)
        assert "dead-rule" in _codes(settled) or version == 3
        if version != 3:
            assert _as_cli(settled) == cli and "unknown-name" not in _codes(settled)
            assert not any(d["data"].get("stale") for d in settled)
            before = settled
            continue
        assert [check for check, _, _ in cli] == ["unknown-name"]
        for shown in (front, settled):
            current = [d for d in shown if not d["data"].get("stale")]
            stale = [d for d in shown if d["data"].get("stale")]
            assert _as_cli(current) == cli
            # Every finding of the version before, none of them made again for this one.
            assert sorted((d["code"], d["message"]) for d in stale) == sorted(
                (d["code"], "(stale: found in the last version that compiled) " + d["message"])
                for d in before
            )
            assert {d["severity"] for d in stale} == {3}
            actions = client.request(
                "textDocument/codeAction",
                {
                    "textDocument": {"uri": uri},
                    "range": stale[0]["range"],
                    "context": {"diagnostics": stale},
                },
            )
            assert actions == []


def test_a_change_is_checked_again(client: Client, tmp_path: Path) -> None:
    uri = _open(client, tmp_path)
    client.diagnostics(uri, lambda ds: "unknown-name" in _codes(ds), timeout=20)
    fixed = THEORY.replace("frustated", "frustrated")
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]},
    )
    found, _ = client.diagnostics(
        uri, lambda ds: "unknown-name" not in _codes(ds) and "dead-rule" in _codes(ds), timeout=20
    )
    assert "coverage-gap" in _codes(found)  # the whole-set checks are back once it is clean
    dead = next(d for d in found if d["code"] == "dead-rule")
    assert dead["range"]["start"]["line"] == 11
    assert fixed.splitlines()[11][dead["range"]["start"]["character"] :].startswith(
        "frustration > 0.8"
    )
    assert dead["relatedInformation"]  # the contradicting part


def test_a_keystroke_keeps_the_previous_semantic_findings_until_the_new_ones(
    client: Client, tmp_path: Path
) -> None:
    uri = _open(client, tmp_path, CLEAN)
    found, _ = client.diagnostics(uri, lambda ds: "dead-rule" in _codes(ds), timeout=20)
    dead = next(d for d in found if d["code"] == "dead-rule")
    added = '  - {id: new, when: "frustration > 0.3", then: probe}\n'
    changed = CLEAN.replace("rules:\n", "rules:\n" + added)
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": changed}]},
    )
    # The very next publication is the front end's, made at once: the dead rule is still
    # reported, one line lower, where the rule now is.
    first, _ = client.diagnostics(uri, lambda ds: True, timeout=20)
    kept = [d for d in first if d["code"] == "dead-rule"]
    assert len(kept) == 1
    assert kept[0]["range"]["start"]["line"] == dead["range"]["start"]["line"] + 1
    assert kept[0]["message"] == dead["message"]


def _at(text: str, needle: str, offset: int = 0) -> dict[str, int]:
    index = text.index(needle) + offset
    line = text.count("\n", 0, index)
    return {"line": line, "character": index - (text.rfind("\n", 0, index) + 1)}


def test_completion_inside_a_condition_offers_metrics_and_enum_values(
    client: Client, tmp_path: Path
) -> None:
    uri = _open(client, tmp_path)
    doc = {"uri": uri}
    result = client.request(
        "textDocument/completion",
        {"textDocument": doc, "position": _at(THEORY, 'when: "frustration < 0.5"', 7)},
    )
    labels = [item["label"] for item in result["items"]]
    assert {"frustration", "affect", "trend", "and"} <= set(labels)
    result = client.request(
        "textDocument/completion",
        {"textDocument": doc, "position": _at(THEORY, "frustated", 0)},
    )
    labels = [item["label"] for item in result["items"]]
    assert labels[:2] == ["calm", "frustrated"]  # the enum's values come first
    result = client.request(
        "textDocument/completion",
        {"textDocument": doc, "position": _at(THEORY, "then: probe", 6)},
    )
    assert {item["label"] for item in result["items"]} == {"encourage", "probe"}


def test_hover_on_a_metric_shows_its_range_and_source(client: Client, tmp_path: Path) -> None:
    uri = _open(client, tmp_path)
    result = client.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": _at(THEORY, "frustration < 0.5", 3)},
    )
    value = result["contents"]["value"]
    assert "metric `frustration`" in value and "[0, 1]" in value
    assert "source: `inferred`" in value and "context analyzer" in value
    result = client.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": _at(THEORY, "then: probe", 7)},
    )
    assert "rung H3" in result["contents"]["value"]


def test_definition_and_references_of_a_metric(client: Client, tmp_path: Path) -> None:
    uri = _open(client, tmp_path)
    where = client.request(
        "textDocument/definition",
        {"textDocument": {"uri": uri}, "position": _at(THEORY, "frustration < 0.5", 2)},
    )
    assert where["range"]["start"] == {"line": 3, "character": 2}
    found = client.request(
        "textDocument/references",
        {
            "textDocument": {"uri": uri},
            "position": _at(THEORY, "frustration < 0.5", 2),
            "context": {"includeDeclaration": True},
        },
    )
    assert sorted(r["range"]["start"]["line"] for r in found) == [3, 9, 11, 11]


def test_code_actions_apply_a_did_you_mean_and_a_gap_fix(client: Client, tmp_path: Path) -> None:
    uri = _open(client, tmp_path)
    found, _ = client.diagnostics(uri, lambda ds: "unknown-name" in _codes(ds), timeout=20)
    typo = next(d for d in found if d["code"] == "unknown-name")
    actions = client.request(
        "textDocument/codeAction",
        {"textDocument": {"uri": uri}, "range": typo["range"], "context": {"diagnostics": [typo]}},
    )
    (edit,) = actions[0]["edit"]["changes"][uri]
    assert edit["newText"] == "frustrated" and edit["range"] == typo["range"]
    fixed = THEORY.replace("frustated", "frustrated").replace(
        '  - {id: never, when: "frustration > 0.8 and frustration < 0.2", then: encourage}\n', ""
    )
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]},
    )
    found, _ = client.diagnostics(uri, lambda ds: "coverage-gap" in _codes(ds), timeout=20)
    gap = next(d for d in found if d["code"] == "coverage-gap")
    actions = client.request(
        "textDocument/codeAction",
        {"textDocument": {"uri": uri}, "range": gap["range"], "context": {"diagnostics": [gap]}},
    )
    (edit,) = actions[0]["edit"]["changes"][uri]
    assert edit["range"]["start"] == edit["range"]["end"] == {"line": 11, "character": 0}
    assert edit["newText"].startswith("  - {id: fill_gap_1, when: ")


def test_a_keystroke_resolves_only_the_condition_it_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server keeps resolved conditions by their declarations (`lsp.RESOLVED`) and loads
    the document once per change: typing in one rule type-checks that rule's condition, not
    the file's others, and reports what a fresh check reports."""
    from pedrag.compiler.config import CheckConfig
    from pedrag.compiler.driver import check_text
    from pedrag.dsl import resolve
    from pedrag.lsp import checking as lsp

    monkeypatch.setattr(lsp, "RESOLVED", lsp.ResolvedMemo())
    monkeypatch.setattr(lsp, "RESULTS", {})  # a server that has checked nothing yet
    resolved: list[str] = []
    real = resolve._ConditionResolver.condition

    def counting(self: Any) -> Any:
        resolved.append(self.located.text)
        return real(self)

    monkeypatch.setattr(resolve._ConditionResolver, "condition", counting)
    text = (Path(__file__).resolve().parents[2] / "theories" / "socratic.yaml").read_text()
    lsp.analyse(text, "socratic.yaml", True, CheckConfig())
    assert len(resolved) > 50  # every rule, step, invariant and monitor, once
    resolved.clear()
    edited = text.replace('when: "', 'when: "frustration >= 0.123 and ', 1)
    found = lsp.analyse(edited, "socratic.yaml", True, CheckConfig())
    assert len(resolved) == 1 and resolved[0].startswith("frustration >= 0.123 and ")
    fresh = check_text(edited, "socratic.yaml", CheckConfig()).diagnostics
    assert [(d.check, d.message) for d in found] == [(d.check, d.message) for d in fresh]


def test_a_documents_first_check_reads_the_on_disk_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening a file that `pedrag check` has checked is answered from the on-disk cache
    (the dead rule's core is z3's when asked cold); `--no-cache` turns that off."""
    from pedrag.compiler import analysis as analysis_module
    from pedrag.compiler.check_cache import CheckCache
    from pedrag.compiler.config import CheckConfig
    from pedrag.compiler.driver import check_paths
    from pedrag.lsp import checking as lsp

    fixture = Path(__file__).resolve().parents[2] / "tests" / "data" / "checks" / "dead-rule.yaml"
    monkeypatch.setenv("PEDRAG_CACHE_DIR", str(tmp_path))
    check_paths([str(fixture)], cache=CheckCache.default())
    started: list[bool] = []
    real = analysis_module.Analysis._start_solver
    monkeypatch.setattr(
        analysis_module.Analysis, "_start_solver", lambda self: started.append(True) or real(self)
    )

    def first_check(disk: bool) -> list[str]:
        analysis_module._CACHE.clear()  # a server just started
        monkeypatch.setattr(analysis_module, "_KEPT", {})  # nor its last analyses
        monkeypatch.setattr(lsp, "WARMED", set())
        monkeypatch.setattr(lsp, "RESULTS", {})
        monkeypatch.setattr(lsp, "DISK_CACHE", disk)
        started.clear()
        found = lsp.analyse(fixture.read_text(), str(fixture), True, CheckConfig())
        return [d.check for d in found]

    assert "dead-rule" in first_check(disk=True) and started == []
    assert "dead-rule" in first_check(disk=False) and started == [True]


def test_a_first_check_from_the_disk_cache_is_warmed_when_idle_so_the_first_edit_is_not_cold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A document opened from the on-disk cache leaves the process without its answers; the
    idle re-check (`checking.warm_up`) fills them, so the first edit asks the solver about
    the edited rule only, where without it every rule's status was computed again."""
    import sys

    from pedrag.compiler import analysis as analysis_module
    from pedrag.compiler.check_cache import CheckCache
    from pedrag.compiler.config import CheckConfig
    from pedrag.compiler.driver import check_paths, check_text
    from pedrag.lsp import checking as lsp

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from theory_gen import generate

    theory = tmp_path / "gen.yaml"
    text = generate(60, 3, "weighted")
    theory.write_text(text, "utf-8")
    monkeypatch.setenv("PEDRAG_CACHE_DIR", str(tmp_path / "cache"))
    for _ in range(2):  # the second check keeps the findings whole
        check_paths([str(theory)], cache=CheckCache.default())
    computed: list[str] = []
    real = analysis_module.Analysis._rule_status
    monkeypatch.setattr(
        analysis_module.Analysis,
        "_rule_status",
        lambda self, rule: computed.append(rule.id) or real(self, rule),
    )
    at = text.index('when: "', text.index("\nrules:")) + len('when: "')

    def first_edit(warm: bool, k: int) -> list[str]:
        analysis_module._CACHE.clear()  # a server just started
        monkeypatch.setattr(analysis_module, "_KEPT", {})  # nor its last analyses
        monkeypatch.setattr(lsp, "WARMED", set())
        monkeypatch.setattr(lsp, "RESULTS", {})
        monkeypatch.setattr(lsp, "LOADED", {})
        monkeypatch.setattr(lsp, "WARM_UP", [])
        monkeypatch.setattr(lsp, "DISK_CACHE", True)
        lsp.analyse(text, str(theory), True, CheckConfig())  # the open: from the disk cache
        assert len(lsp.WARM_UP) == 1
        if warm:
            assert lsp.warm_up() and not lsp.warm_up()
        computed.clear()
        edited = text[:at] + f"frustration >= 0.{k}1 and " + text[at:]
        found = lsp.analyse(edited, str(theory), True, CheckConfig())
        fresh = check_text(edited, str(theory), CheckConfig()).diagnostics
        assert [(d.check, d.message, d.span) for d in found] == [
            (d.check, d.message, d.span) for d in fresh
        ]
        return list(computed)

    assert len(first_edit(warm=False, k=1)) >= 60
    assert first_edit(warm=True, k=2) == ["r0"]


def test_an_edit_during_the_idle_re_check_is_checked_without_waiting_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A generated file opened from the disk cache is re-checked when the editor idles; an
    edit sent once that re-check has started stops it: the server says so before it
    publishes the edit's semantic findings, which are `pedrag check`'s, and the re-check is
    not done afterwards for the old text."""
    import sys as system

    system.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from theory_gen import generate

    monkeypatch.setenv("PEDRAG_CACHE_DIR", str(tmp_path / "cache"))
    text = generate(3000, 5, "weighted")
    theory = tmp_path / "lsp.yaml"
    theory.write_text(text, "utf-8")
    from pedrag.compiler.check_cache import CheckCache
    from pedrag.compiler.driver import check_paths

    for _ in range(2):  # the second analysis keeps the findings whole: the open runs none
        check_paths([str(theory)], cache=CheckCache.default())
    client = Client()
    try:
        client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        client.notify("initialized", {})
        uri = _open(client, tmp_path, text)
        said: list[str] = []
        while not said or not said[-1].endswith("started"):
            message = client.notifications.get(timeout=120)
            if message.get("method") == "window/logMessage":
                said.append(message["params"]["message"])
        at = text.index('when: "', text.index("\nrules:")) + len('when: "')
        edited = text[:at] + "frustration >= 0.31 and " + text[at:]
        client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": edited}]},
        )
        seen: list[str] = []
        while seen.count("publish 2") < 2:
            message = client.notifications.get(timeout=120)
            if message.get("method") == "window/logMessage":
                seen.append(message["params"]["message"].rpartition(": ")[2])
            elif message.get("method") == "textDocument/publishDiagnostics":
                seen.append(f"publish {message['params'].get('version')}")
                settled = message["params"]["diagnostics"]
        assert "put off for an edit" in seen
        assert seen.index("put off for an edit") < len(seen) - 1
        assert "done" not in seen
        assert _as_cli(settled) == _cli(tmp_path, edited)
    finally:
        client.close()


def test_a_conflict_offers_its_proved_guard_as_a_quick_fix(client: Client, tmp_path: Path) -> None:
    conflict = (Path(__file__).resolve().parents[1] / "data/checks/conflict.yaml").read_text(
        "utf-8"
    )
    uri = _open(client, tmp_path, conflict)
    found, _ = client.diagnostics(uri, lambda ds: "conflict" in _codes(ds), timeout=20)
    finding = next(d for d in found if d["code"] == "conflict")
    actions = client.request(
        "textDocument/codeAction",
        {
            "textDocument": {"uri": uri},
            "range": finding["range"],
            "context": {"diagnostics": [finding]},
        },
    )
    (action,) = actions
    assert action["title"] == "Add `frustration < 0.5` to rule `push` (proved)"
    (edit,) = action["edit"]["changes"][uri]
    lines = conflict.splitlines()
    start, end = edit["range"]["start"], edit["range"]["end"]
    assert start["line"] == end["line"] == 11
    line = lines[11]
    applied = line[: start["character"]] + edit["newText"] + line[end["character"] :]
    assert (
        applied
        == '  - {id: push, when: "confidence >= 0.5 and frustration < 0.5", then: challenge}'
    )


def test_a_guard_that_narrows_a_bound_is_titled_as_the_check_words_it(
    client: Client, tmp_path: Path
) -> None:
    """`attempts >= 5` replaces the rule's `attempts >= 3`: the quick fix says it narrows the
    bound (as the finding's help and `pedrag check --fix` do), not that it adds a comparison."""
    text = (Path(__file__).resolve().parents[1] / "data/checks/invariant-violation.yaml").read_text(
        "utf-8"
    )
    uri = _open(client, tmp_path, text)
    found, _ = client.diagnostics(uri, lambda ds: "invariant-violation" in _codes(ds), timeout=20)
    finding = next(d for d in found if d["code"] == "invariant-violation")
    (action,) = client.request(
        "textDocument/codeAction",
        {
            "textDocument": {"uri": uri},
            "range": finding["range"],
            "context": {"diagnostics": [finding]},
        },
    )
    assert action["title"] == "Narrow `attempts >= 3` to `attempts >= 5` in rule `stuck` (proved)"


def _published_until(client: Client, uri: str, until: Any, timeout: float) -> list[str]:
    """The URIs of every publishDiagnostics until `uri`'s satisfy `until`."""
    seen: list[str] = []
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        try:
            message = client.notifications.get(timeout=0.5)
        except queue.Empty:
            continue
        if message.get("method") == "textDocument/publishDiagnostics":
            params = message["params"]
            seen.append(params["uri"])
            if params["uri"] == uri and until(params["diagnostics"]):
                return seen
    raise AssertionError(f"no diagnostics for {uri} within {timeout} s; saw {seen}")


def test_yaml_files_that_are_not_pedrag_files_get_no_diagnostics(
    client: Client, tmp_path: Path
) -> None:
    workflow = tmp_path / ".github" / "workflows" / "ci.yml"
    workflow.parent.mkdir(parents=True)
    text = "name: ci\non: push\njobs:\n  test: {runs-on: ubuntu-latest}\n"
    workflow.write_text(text, "utf-8")
    client.notify(
        "textDocument/didOpen",
        {
            "textDocument": {
                "uri": workflow.as_uri(),
                "languageId": "yaml",
                "version": 1,
                "text": text,
            }
        },
    )
    uri = _open(client, tmp_path, CLEAN)  # a pedrag file opened after it
    seen = _published_until(client, uri, lambda ds: "dead-rule" in _codes(ds), timeout=20)
    assert workflow.as_uri() not in seen
    # A file matched by `[tool.pedrag] files` is a pedrag file without the `pedrag:` key.
    (tmp_path / "pyproject.toml").write_text('[tool.pedrag]\nfiles = ["drafts/*.yaml"]\n')
    draft = tmp_path / "drafts" / "new.yaml"
    draft.parent.mkdir()
    draft.write_text("theory: {id: new, name: New}\n", "utf-8")
    client.notify(
        "textDocument/didOpen",
        {
            "textDocument": {
                "uri": draft.as_uri(),
                "languageId": "yaml",
                "version": 1,
                "text": draft.read_text("utf-8"),
            }
        },
    )
    found, _ = client.diagnostics(draft.as_uri(), lambda ds: bool(ds), timeout=20)
    assert "syntax-error" in _codes(found)  # missing keys, reported as for any theory


def test_witnesses_spell_booleans_as_the_condition_language_does(
    client: Client, tmp_path: Path
) -> None:
    text = THEORY.replace(
        "  affect: {type: enum, values: [calm, frustrated], source: inferred}\n",
        "  affect: {type: enum, values: [calm, frustrated], source: inferred}\n"
        "  exam_active: {type: bool, source: trusted}\n",
    ).replace('when: "frustration < 0.5"', 'when: "frustration < 0.5 and exam_active"')
    text = text.replace("frustated", "frustrated")
    uri = _open(client, tmp_path, text)
    found, _ = client.diagnostics(uri, lambda ds: "coverage-gap" in _codes(ds), timeout=20)
    witnessed = [d["message"] for d in found if "witness:" in d["message"]]
    assert any("exam_active=" in m for m in witnessed)
    assert not any("True" in m or "False" in m for m in witnessed)
    assert any("exam_active=false" in m or "exam_active=true" in m for m in witnessed)
    href = found[0]["codeDescription"]["href"]
    assert href.endswith(f"/checks/{found[0]['code']}/")


def test_document_symbols_outline_metrics_actions_rules_and_ceiling_steps(
    client: Client, tmp_path: Path
) -> None:
    text = THEORY + "ceiling:\n  start: H4\n  steps:\n    - {when: affect == calm, set: H2}\n"
    uri = _open(client, tmp_path, text)
    client.diagnostics(uri, lambda ds: True, timeout=20)
    outline = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    assert [s["name"] for s in outline] == ["metrics", "actions", "rules", "ceiling"]
    children = {s["name"]: [c["name"] for c in s["children"]] for s in outline}
    assert children == {
        "metrics": ["frustration", "affect"],
        "actions": ["encourage", "probe"],
        "rules": ["ok", "typo", "never"],
        "ceiling": ["step 1: set H2"],
    }
    probe = outline[1]["children"][1]
    assert probe["selectionRange"]["start"] == _at(text, "probe: {rung")
    assert probe["detail"] == "H3, priority 5"


def test_rename_a_metric_across_the_theory_set(client: Client, tmp_path: Path) -> None:
    other = tmp_path / "other.yaml"
    other_text = (
        THEORY.replace("id: lsp, name: LSP", "id: other, name: Other")
        .replace("frustated", "frustrated")
        .replace("The frustration", "x")
    )
    other_text = other_text.replace(
        "probe: {rung: H3, priority: 5, description: Probe.}",
        ("probe: {rung: H3, priority: 5, description: Probe the frustration.}"),
    )
    other.write_text(other_text, "utf-8")
    unrelated = tmp_path / "unrelated.yaml"
    unrelated.write_text(
        "pedrag: 1\ntheory: {id: u, name: U}\nmetrics:\n  mood: {type: float, range: [0, 1], "
        "source: inferred}\nactions:\n  frustration: {rung: H0, priority: 5, description: A.}\n"
        'rules:\n  - {id: r, when: "mood > 0.5", then: frustration}\n',
        "utf-8",
    )
    uri = _open(client, tmp_path)
    client.diagnostics(uri, lambda ds: True, timeout=20)
    at = _at(THEORY, "frustration < 0.5", 2)
    assert client.request(
        "textDocument/prepareRename", {"textDocument": {"uri": uri}, "position": at}
    ) == {"start": _at(THEORY, "frustration < 0.5"), "end": _at(THEORY, " < 0.5")}
    edit = client.request(
        "textDocument/rename",
        {"textDocument": {"uri": uri}, "position": at, "newName": "annoyance"},
    )
    changes = edit["changes"]
    assert set(changes) == {uri, other.as_uri()}  # `unrelated` declares an action of that name

    def applied(text: str, edits: list[dict[str, Any]]) -> str:
        lines = text.split("\n")
        for e in sorted(
            edits,
            key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]),
            reverse=True,
        ):
            start, end = e["range"]["start"], e["range"]["end"]
            assert start["line"] == end["line"]
            line = lines[start["line"]]
            lines[start["line"]] = (
                line[: start["character"]] + e["newText"] + line[end["character"] :]
            )
        return "\n".join(lines)

    assert applied(THEORY, changes[uri]) == THEORY.replace("frustration", "annoyance")
    renamed_other = applied(other_text, changes[other.as_uri()])
    assert "description: Probe the frustration." in renamed_other  # prose is left alone
    assert renamed_other.count("annoyance") == 4
    # A name the theory already declares is refused, with the reason as the error message.
    client.next_id += 1
    number = client.next_id
    answers = client.responses.setdefault(number, queue.Queue())
    client._send(
        {
            "id": number,
            "method": "textDocument/rename",
            "params": {"textDocument": {"uri": uri}, "position": at, "newName": "affect"},
        }
    )
    refused = answers.get(timeout=20)
    assert "already declares a metric `affect`" in refused["error"]["message"]


def test_hover_on_an_action_lists_a_derived_tag_as_derived() -> None:
    """A designer sees the tag an invariant reads on an action that never declares it."""
    from pedrag.lsp.server import _describe_action

    value = _describe_action(
        "scaffold",
        {"rung": "H4", "tags": ["explain", "hint"], "variants": ["Plan: {hint}", "See {example}"]},
    )
    assert "tags: explain, hint, example (derived: fills `{example}`)" in value
    assert _describe_action("bare", {"rung": "H1"}).count("tags") == 0
