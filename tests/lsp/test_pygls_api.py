"""The server's protocol subclass stands on pygls's public API only: it reads no private pygls
name (an upgrade that renames one would break publishing silently), and the messages it sends
itself are framed as pygls frames its own, as the transport asked (`set_writer`)."""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path

import pytest
from pygls.io_ import StdoutWriter

from pedrag.lsp.server import create_server

SERVER = Path(__file__).resolve().parents[2] / "pedrag" / "lsp" / "server.py"


def test_the_protocol_subclass_reads_no_private_pygls_name() -> None:
    """Every `_name` the subclass touches is one it defines itself."""
    tree = ast.parse(SERVER.read_text("utf-8"))
    (protocol,) = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        and any(
            isinstance(base, ast.Name) and base.id == "LanguageServerProtocol"
            for base in node.bases
        )
    ]
    defined = {
        target.attr
        for node in ast.walk(protocol)
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Attribute)
    } | {node.name for node in protocol.body if isinstance(node, ast.FunctionDef)}
    private = {
        node.attr
        for node in ast.walk(protocol)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
    }
    assert private - defined == set()


@pytest.mark.parametrize("framed", [True, False])
def test_a_made_message_is_framed_as_pygls_frames_its_own(framed: bool) -> None:
    """Stdio and TCP frame each message with Content-Length, a WebSocket does not: the text
    the server sends itself goes out byte for byte as pygls sends the same message."""
    from lsprotocol import types

    protocol = create_server().protocol
    ours, theirs = io.BytesIO(), io.BytesIO()
    params = types.PublishDiagnosticsParams(uri="file:///t.yaml", diagnostics=[])

    protocol.set_writer(StdoutWriter(theirs), include_headers=framed)
    protocol.notify(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, params)
    sent = theirs.getvalue()
    body = sent.split(b"\r\n\r\n", 1)[-1]
    assert json.loads(body)["method"] == "textDocument/publishDiagnostics"
    assert sent.startswith(b"Content-Length: ") is framed
    protocol.set_writer(StdoutWriter(ours), include_headers=framed)
    protocol.send_text(body.decode("utf-8"))

    assert ours.getvalue() == sent
