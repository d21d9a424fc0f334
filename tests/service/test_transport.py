"""Every connection of `pedrag serve` has Nagle's algorithm off, on the listening socket
uvicorn binds itself for several workers (runtime/service/transport.py)."""

from __future__ import annotations

import asyncio
import socket

import uvicorn
from uvicorn.server import ServerState

from pedrag.runtime.service.app import ServiceSettings, create_app
from pedrag.runtime.service.transport import HTTP_PROTOCOL, NoDelayHttpToolsProtocol


def test_a_connection_accepted_on_uvicorns_own_listener_has_tcp_nodelay(tmp_path: object) -> None:
    config = uvicorn.Config(
        create_app(ServiceSettings(db=f"{tmp_path}/db.sqlite"), backend=None),
        host="127.0.0.1",
        port=0,
        http=HTTP_PROTOCOL,
    )
    config.load()
    assert config.http_protocol_class is NoDelayHttpToolsProtocol
    listener = config.bind_socket()  # what uvicorn's supervisor hands each worker
    state = ServerState()
    made: list[NoDelayHttpToolsProtocol] = []

    def protocol() -> NoDelayHttpToolsProtocol:
        made.append(NoDelayHttpToolsProtocol(config=config, server_state=state, app_state={}))
        return made[-1]

    async def connect() -> int:
        server = await asyncio.get_running_loop().create_server(protocol, sock=listener)
        _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
        while not made or made[-1].transport is None:  # connection_made has run
            await asyncio.sleep(0.01)
        sock = made[-1].transport.get_extra_info("socket")
        nodelay = int(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()
        server.close()
        return nodelay

    assert asyncio.run(asyncio.wait_for(connect(), 30)) == 1
