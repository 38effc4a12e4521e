"""The MCP server: streamable HTTP on a pre-bound loopback socket, in its own thread.

Imported only from the worker thread: `mcp` takes seconds to import and must
never delay Neovim or the host's main loop. Everything here runs on the server's
asyncio loop; other threads talk to it through `McpServer`'s thread-safe methods.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server.lowlevel.server import Server
from mcp.server.transport_security import TransportSecuritySettings

from .feature import Tool, error
from .http_guard import MCP_PATH, RequestGuard

log = logging.getLogger(__name__)

KEEPALIVE_SECONDS = 20.0  # the client gives up after ~300 s of silence on its stream
# A client whose stream stays closed this long is gone (its process died: clients never
# send DELETE). A live client reopens a dropped stream within a few seconds.
STREAM_GRACE_SECONDS = 10.0
NOTIFY_TIMEOUT_SECONDS = 5.0  # one stuck client must not hold up the others


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = 32 * 1024 * 1024
    max_sessions: int = 64
    # Only counts while a client has no request or stream open: a live CLI
    # always holds its GET stream, so this reaps clients that vanished.
    session_idle_seconds: float = 600.0


@dataclass
class Client:
    session_id: str
    name: str
    version: str
    connection: Any  # mcp.server.connection.Connection
    stream_open: bool = False

    def describe(self) -> dict[str, Any]:
        return {"session": self.session_id[:8], "name": self.name, "version": self.version, "stream": self.stream_open}


@dataclass
class Hooks:
    """Callbacks into the companion; all are called on the server thread."""

    on_ready: Callable[[], None]
    on_failed: Callable[[str], None]
    on_clients: Callable[[list[dict[str, Any]]], None]
    # A client's notification stream just opened: the place to send it current state.
    on_stream_open: Callable[[str], Coroutine[Any, Any, None]]
    on_client_gone: Callable[[str], None] = lambda _sid: None
    tools: list[Tool] = field(default_factory=list)


class McpServer:
    def __init__(self, sock: socket.socket, token: str, port: int, hooks: Hooks, limits: Limits) -> None:
        self._sock = sock
        self._token = token
        self._port = port
        self._hooks = hooks
        self._limits = limits
        self._clients: dict[str, Client] = {}
        self._connections: dict[str, Any] = {}
        self._streams: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._uvicorn: uvicorn.Server | None = None
        self._exit_requested = False

    # --- thread-safe surface -------------------------------------------------

    def request_exit(self) -> None:
        self._exit_requested = True
        loop = self._loop
        if loop is not None and loop.is_running():
            loop.call_soon_threadsafe(self._request_exit)

    def notify_all(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification to every connected client (fire and forget)."""
        self.submit(self.broadcast(method, params))

    def submit(self, coro: Awaitable[Any]) -> None:
        loop = self._loop
        if loop is None or not loop.is_running():
            if asyncio.iscoroutine(coro):
                coro.close()
            return
        asyncio.run_coroutine_threadsafe(coro, loop)  # type: ignore[arg-type]

    # --- server thread -------------------------------------------------------

    def run(self) -> None:
        """Serve until `request_exit()`; blocks the calling (worker) thread."""
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except Exception as err:
            log.exception("server failed")
            self._hooks.on_failed(f"{type(err).__name__}: {err}")
        finally:
            loop.close()

    async def _serve(self) -> None:
        config = uvicorn.Config(
            self._build_app(),
            lifespan="on",
            http="h11",
            ws="none",
            log_config=None,
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=1,
            # Oversized Authorization headers must reach the guard and get 401, not a parser error.
            h11_max_incomplete_event_size=256 * 1024,
        )
        self._uvicorn = uvicorn.Server(config)
        self._uvicorn.should_exit = self._exit_requested
        keepalive = asyncio.create_task(self._keepalive())
        try:
            await self._uvicorn.serve(sockets=[self._sock])
        finally:
            keepalive.cancel()

    def _request_exit(self) -> None:
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True

    def _build_app(self) -> Any:
        tools = {tool.name: tool for tool in self._hooks.tools}

        async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(
                tools=[
                    types.Tool(name=t.name, description=t.description, input_schema=t.input_schema)
                    for t in tools.values()
                ]
            )

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            tool = tools.get(params.name)
            session_id = _connection(ctx).session_id or ""
            if tool is None:
                result = error(f"unknown tool: {params.name}")
            else:
                result = await tool.handler(session_id, dict(params.arguments or {}))
            return types.CallToolResult.model_validate(result)

        async def initialized(ctx: Any, params: Any) -> None:
            self._register(_connection(ctx))

        server: Server[Any] = Server(
            "gemini-companion.nvim", version="0.1.0", on_list_tools=list_tools, on_call_tool=call_tool
        )
        server.add_notification_handler("notifications/initialized", types.NotificationParams, initialized)
        mcp_app = server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            max_request_body_size=self._limits.max_body_bytes,
            max_sessions=self._limits.max_sessions,
            session_idle_timeout=self._limits.session_idle_seconds,
            transport_security=TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=[f"127.0.0.1:{self._port}", f"localhost:{self._port}"],
                allowed_origins=[],
            ),
        )
        guarded = RequestGuard(
            mcp_app,
            token=self._token,
            port=self._port,
            max_body=self._limits.max_body_bytes,
            on_stream=self._on_stream,
        )

        async def app(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "lifespan":
                await guarded(scope, receive, send)
                return

            async def watch(message: Any) -> None:
                await send(message)
                if message["type"] == "lifespan.startup.complete":
                    self._hooks.on_ready()

            await mcp_app(scope, receive, watch)

        return app

    def _register(self, connection: Any) -> None:
        session_id = connection.session_id
        if not session_id:
            return
        if session_id not in self._connections:
            self._connections[session_id] = connection

            async def forget() -> None:
                self._connections.pop(session_id, None)
                self._drop(session_id)

            connection.exit_stack.push_async_callback(forget)
        info = connection.client_params.client_info if connection.client_params else None
        client = Client(
            session_id=session_id,
            name=getattr(info, "name", "unknown"),
            version=getattr(info, "version", ""),
            connection=connection,
            stream_open=session_id in self._streams,
        )
        self._clients[session_id] = client
        self._publish_clients()
        if client.stream_open:
            self._spawn(self._hooks.on_stream_open(session_id))

    def _drop(self, session_id: str) -> None:
        self._streams.discard(session_id)
        if self._clients.pop(session_id, None) is not None:
            self._hooks.on_client_gone(session_id)
            self._publish_clients()

    def _on_stream(self, session_id: str, is_open: bool) -> None:
        loop = asyncio.get_running_loop()
        if is_open:
            self._streams.add(session_id)
            if session_id not in self._clients and session_id in self._connections:
                self._register(self._connections[session_id])  # back after a drop: a live client
                return
        else:
            self._streams.discard(session_id)
            loop.call_later(STREAM_GRACE_SECONDS, self._drop_if_closed, session_id)
        client = self._clients.get(session_id)
        if client is None:
            return
        client.stream_open = is_open
        self._publish_clients()
        if is_open:
            self._spawn(self._hooks.on_stream_open(session_id))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)  # the loop keeps only weak references to tasks
        task.add_done_callback(self._tasks.discard)

    def _drop_if_closed(self, session_id: str) -> None:
        if session_id not in self._streams:
            self._drop(session_id)

    def _publish_clients(self) -> None:
        self._hooks.on_clients([c.describe() for c in self._clients.values()])

    def send_threadsafe(self, session_id: str, method: str, params: dict[str, Any] | None) -> None:
        self.submit(self.send(session_id, method, params))

    async def send(self, session_id: str, method: str, params: dict[str, Any] | None) -> None:
        client = self._clients.get(session_id)
        if client is None:
            return
        try:
            await asyncio.wait_for(client.connection.notify(method, params), NOTIFY_TIMEOUT_SECONDS)
        except (asyncio.TimeoutError, Exception):  # noqa: BLE001 - a broken client only loses this message
            log.debug("dropped %s for %s", method, session_id[:8])

    async def broadcast(self, method: str, params: dict[str, Any] | None) -> None:
        await asyncio.gather(*(self.send(sid, method, params) for sid in list(self._clients)))

    async def _keepalive(self) -> None:
        while True:
            await asyncio.sleep(KEEPALIVE_SECONDS)
            # A JSON-RPC notification the client ignores; bytes on the stream are what count.
            await self.broadcast("ping", None)


def _connection(ctx: Any) -> Any:
    # mcp 2.3 hands handlers a per-request ServerSession and has no public accessor
    # for the connection behind it; we need that connection to push notifications
    # on the client's standalone stream later, outside any request.
    return ctx.session._connection
