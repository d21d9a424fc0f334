"""uvicorn's HTTP protocol, with Nagle's algorithm off on every connection (``TCP_NODELAY``).

Runtime, the HTTP service's transport. Takes a connection uvicorn accepted; gives it to
uvicorn's own httptools protocol with ``TCP_NODELAY`` set. ``pedrag serve`` names this class
as uvicorn's ``http`` protocol (``HTTP_PROTOCOL``).

Why: asyncio sets ``TCP_NODELAY`` on an accepted socket only when the socket says its
protocol is TCP. With ``--workers`` above 1, uvicorn binds the listening socket itself with
the protocol left at 0 (``Config.bind_socket``), the accepted sockets inherit the 0, and
Nagle's algorithm stays on: uvicorn writes a response's head and its body separately, so on
a keep-alive connection the body waits for the client's delayed ACK, about 40 ms on Linux.
With four workers, one client's turns took 56-60 ms at the median against 14-19 ms with one
(benchmarks/service_load.py, "alone"). uvicorn issue Kludex/uvicorn#3149, open as of uvicorn
0.54; this class is needless, and harmless, once uvicorn sets the protocol itself.
"""

from __future__ import annotations

import asyncio
import socket

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HTTP_PROTOCOL = "pedrag.runtime.service.transport:NoDelayHttpToolsProtocol"
"""uvicorn's ``http`` setting for this class (a string: uvicorn imports it in each worker)."""


def no_delay(transport: asyncio.BaseTransport) -> None:
    """Turn Nagle's algorithm off on a TCP transport's socket (a Unix socket has none)."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class NoDelayHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol; each connection with ``TCP_NODELAY`` set first."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        no_delay(transport)
        super().connection_made(transport)
