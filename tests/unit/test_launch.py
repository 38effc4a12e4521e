"""The listening socket's accepted connections send without waiting for acknowledgements."""

from __future__ import annotations

import asyncio
import socket

from gemini_companion.server import launch


def test_accepted_connections_send_without_waiting_for_acks() -> None:
    """asyncio turns Nagle off only on sockets whose proto says TCP; accepted ones inherit the
    listener's. With Nagle on, a body written after its headers waits for the client's delayed
    ACK (~40 ms on loopback)."""
    sock = launch.listening(launch.bind_loopback())

    async def accepted_nodelay() -> int:
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def on_connect(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            seen.set_result(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(on_connect, sock=sock)
        client = socket.create_connection(sock.getsockname())
        try:
            return await asyncio.wait_for(seen, 30)
        finally:
            client.close()
            server.close()

    assert asyncio.run(accepted_nodelay()) != 0
