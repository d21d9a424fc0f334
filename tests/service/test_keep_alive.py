"""An idle connection outlives a client's own idle limit, so the client closes it, not the
server (`pedrag serve --keep-alive`, docs/service.md "Operations").

uvicorn closes an idle connection after 5 s by default, and httpx reuses one for up to 5 s: a
request sent on a connection the server is closing at that moment fails with a read error. A
loaded run of the 50-session PostgreSQL test failed so."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.service.servers import running_server

REQUEST = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def _response(connection: socket.socket) -> bytes:
    """One whole response (head and its Content-Length of body), however the server's
    segments arrive; b"" when the connection is closed before any of it."""
    received = b""
    while b"\r\n\r\n" not in received:
        piece = connection.recv(65536)
        if not piece:
            return received
        received += piece
    head, body = received.split(b"\r\n\r\n", 1)
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        piece = connection.recv(65536)
        assert piece, "the connection closed inside a response"
        body += piece
    return head


def _status_after_idle(base: str, idle: float) -> bytes:
    """The first line of the answer to a second request on one connection, sent after it has
    been idle for ``idle`` seconds; b"" when the server has closed the connection."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.sendall(REQUEST)
        assert _response(connection).startswith(b"HTTP/1.1 200")
        time.sleep(idle)
        try:
            connection.sendall(REQUEST)
            return _response(connection).split(b"\r\n", 1)[0]
        except (BrokenPipeError, ConnectionResetError):
            return b""


@pytest.fixture(params=[None, "1"], ids=["default", "one-second"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str | None]]:
    env = {} if request.param is None else {"PEDRAG_SERVE_KEEP_ALIVE": request.param}
    with running_server(
        f"sqlite:///{tmp_path / 'db.sqlite'}", workers=1, log=tmp_path / "serve.log", env=env
    ) as base:
        yield base, request.param


def test_an_idle_connection_is_kept_past_a_clients_own_idle_limit(
    server: tuple[str, str | None],
) -> None:
    base, keep_alive = server
    status = _status_after_idle(base, 6.5)  # past uvicorn's and httpx's 5 s
    if keep_alive is None:
        assert status == b"HTTP/1.1 200 OK"
    else:  # the option is what decides: one second closes it
        assert status == b""
