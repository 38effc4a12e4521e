"""ASGI gate in front of the MCP app: every request proves it is local and ours.

Checks, in order, before any byte of the body is read or any handler runs:
Host is 127.0.0.1:PORT or localhost:PORT (DNS rebinding), no Origin header at
all (browsers always send one; the CLIs never do), path is /mcp (the IDE client's),
/mcp/editor (the model's tools) or /hooks (the CLIs' hooks), and
`Authorization: Bearer <token>` known to `identify` (which compares in constant
time); the identity it returns goes on in `scope["identity"]`.
WebSocket upgrades are refused outright.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Message = MutableMapping[str, Any]
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MCP_PATH = "/mcp"  # the IDE client's endpoint
EDITOR_PATH = "/mcp/editor"  # the model's editor tools (tools.py)
HOOKS_PATH = "/hooks"  # the CLIs' lifecycle hooks (hook.py): plain JSON, not MCP


async def reply(send: Send, status: int, message: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": body})


class RequestGuard:
    """Wraps the MCP ASGI app: only what passes every check reaches it."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        identify: Callable[[bytes], object | None],
        port: int,
        max_body: int,
    ) -> None:
        self._app = app
        self._identify = identify
        self._hosts = {f"127.0.0.1:{port}".encode(), f"localhost:{port}".encode()}
        self._max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            # Closing before accept makes the server answer HTTP 403, never 101.
            await send({"type": "websocket.close", "code": 1008})
            return
        headers: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:
            headers.setdefault(name, value)
        if headers.get(b"host") not in self._hosts:
            await reply(send, 421, "bad host")
            return
        if b"origin" in headers:
            await reply(send, 403, "origin not allowed")
            return
        if scope["path"] not in (MCP_PATH, EDITOR_PATH, HOOKS_PATH):
            await reply(send, 404, "not found")
            return
        identity = self._identify(headers.get(b"authorization", b""))
        if identity is None:
            await reply(send, 401, "unauthorized", [(b"www-authenticate", b"Bearer")])
            return
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self._max_body):
            await reply(send, 413, "request body too large")
            return
        scope["identity"] = identity
        await self._app(scope, receive, send)
