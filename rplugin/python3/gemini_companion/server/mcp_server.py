"""The MCP server: JSON-RPC over streamable HTTP (server/http.py) on a pre-bound loopback socket.

Written against the transport spec rather than with the `mcp` SDK: the IDE clients
use five methods (initialize, ping, tools/list, tools/call, and notifications on
their GET stream), and the SDK cost 550 ms and 45 MiB to import — the figures a
user feels as "the agent connects late" and "the host is heavy". Stateful, as the
clients need (`../shared/notes/client-facts.md`): `initialize` issues an
`mcp-session-id`, notifications reach a client only on its `GET /mcp` stream.

Everything here runs on the server's asyncio loop; other threads talk to it
through `McpServer`'s thread-safe methods.
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from gemini_companion import log
from gemini_companion.feature import error
from gemini_companion.server import http, log_lines
from gemini_companion.server.http_guard import (
    EDITOR_PATH,
    HOOKS_PATH,
    MCP_PATH,
    Receive,
    RequestGuard,
    Scope,
    Send,
    parse_json,
    quote,
    reply,
)
from gemini_companion.server.jsonrpc import PROTOCOL_VERSIONS, RpcError, check_protocol_version, dumps, send_json
from gemini_companion.server.jsonrpc import error as error_message
from gemini_companion.server.session import Hooks, Limits, Session

if TYPE_CHECKING:
    from gemini_companion.server.access import Identity

SERVER_INFO = {"name": "gemini-companion.nvim", "version": "0.1.0"}
KEEPALIVE_SECONDS = 20.0  # the client gives up after ~300 s of silence on its stream
# A client whose stream stays closed this long is gone (its process died: clients never
# send DELETE). A live client reopens a dropped stream within a few seconds.
STREAM_GRACE_SECONDS = 10.0
FLUSH_SECONDS = 1.0  # at exit, for what is queued for clients
STREAM_QUEUE = 1000  # messages waiting for a client that does not read; more are dropped


class McpServer:
    def __init__(
        self, sock: socket.socket, identify: Callable[[bytes], Identity | None], port: int, hooks: Hooks, limits: Limits
    ) -> None:
        self._sock = sock
        self._hooks = hooks
        self._limits = limits
        # Each endpoint serves its own tools: the model never sees openDiff, the IDE client never
        # sees the editor tools.
        self._tools = {
            MCP_PATH: {tool.name: tool for tool in hooks.tools},
            EDITOR_PATH: {tool.name: tool for tool in hooks.model_tools},
        }
        self._sessions: dict[str, Session] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None  # set on the loop: stop serving
        self._exit_requested = False
        self._app = RequestGuard(self._http, identify=identify, port=port, max_body=limits.max_body_bytes)

    # --- thread-safe surface -------------------------------------------------

    def request_exit(self) -> None:
        """Stop serving. Waits (briefly) until what is queued for clients has been written:
        an answer given just before Neovim exits (`:wqa`) must still reach the CLI."""
        self._exit_requested = True
        loop = self._loop
        if loop is None or not loop.is_running():
            return
        flushed = asyncio.run_coroutine_threadsafe(self._close_streams(), loop)
        try:
            flushed.result(FLUSH_SECONDS)
        except Exception:  # noqa: BLE001 - a client that does not read is not waited for longer
            flushed.cancel()
        loop.call_soon_threadsafe(self._request_exit)

    def notify_all(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification to every connected client (fire and forget)."""
        self._call_soon(self.broadcast, method, params)

    def send_threadsafe(self, session_id: str, method: str, params: dict[str, Any] | None) -> None:
        self._call_soon(self.send, session_id, method, params)

    def label(self, session_id: str) -> str | None:
        """Who a session is ("qwen (Qwen Code 0.24.4)"); any thread (one dict lookup)."""
        session = self._sessions.get(session_id)
        return session.label if session else None

    def later(self, delay: float, fn: Callable[[], None]) -> bool:
        """Run `fn` on the server's loop in `delay` seconds (any thread); False when not serving."""
        return self._call_soon(lambda: asyncio.get_running_loop().call_later(delay, fn))

    def _call_soon(self, fn: Callable[..., object], *args: Any) -> bool:
        loop = self._loop
        if loop is None or not loop.is_running():
            return False
        loop.call_soon_threadsafe(fn, *args)
        return True

    # --- server thread: sending ----------------------------------------------

    def send(self, session_id: str, method: str, params: dict[str, Any] | None) -> None:
        """Queue a notification on the client's stream; without an open stream it is dropped."""
        session = self._sessions.get(session_id)
        if session is None or session.stream is None or not session.listed:
            return
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        try:
            session.stream.put_nowait(b"event: message\ndata: " + dumps(message) + b"\n\n")
        except asyncio.QueueFull:
            log.write(log.WARN, f"{session.label}: dropped {method} (its stream is {STREAM_QUEUE} behind)")
            return
        level = log.TRACE if method == "ping" else log.DEBUG
        if log.enabled(level):
            log.write(level, f"{session.label} ← {method} {log_lines.summary(params)}")

    def broadcast(self, method: str, params: dict[str, Any] | None) -> None:
        for session in list(self._sessions.values()):
            if session.path == MCP_PATH:  # IDE notifications are for IDE clients
                self.send(session.id, method, params)

    # --- server thread: serving ----------------------------------------------

    def run(self) -> None:
        """Serve until `request_exit()`; blocks the calling (worker) thread."""
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except Exception as err:  # noqa: BLE001 - logged, and the companion says why
            log.write(log.ERROR, f"the server failed: {type(err).__name__}: {err}")
            self._hooks.on_failed(f"{type(err).__name__}: {err}")
        finally:
            loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        if self._exit_requested:
            return
        server = http.Server(self._app, self._sock)
        await server.start()
        log.write(log.INFO, f"serving on 127.0.0.1:{self._sock.getsockname()[1]}")
        self._hooks.on_ready()
        chores = [asyncio.create_task(self._keepalive()), asyncio.create_task(self._reap_idle())]
        try:
            await self._stop.wait()
        finally:
            for chore in chores:
                chore.cancel()
            await server.close()

    async def _close_streams(self) -> None:
        """End every stream after what is queued on it; return once all are written out."""
        for session in self._sessions.values():
            if session.stream is not None:
                _end_stream(session.stream)
        while any(session.stream is not None for session in self._sessions.values()):
            await asyncio.sleep(0.005)

    def _request_exit(self) -> None:
        if self._stop is not None:
            self._stop.set()

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A request that passed the guard (local, ours, /mcp, declared size within limits)."""
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        identity = scope["identity"]  # set by the guard: whose token this is
        method = scope["method"]
        try:
            if identity.path != scope["path"]:
                raise RpcError(403, -32600, "this token is not for this endpoint")
            if identity.path == HOOKS_PATH:
                await self._hook(method, receive, send)
                return
            check_protocol_version(headers)
            if method == "POST":
                await self._post(headers, identity, receive, send)
            elif method == "GET":
                await self._get(headers, identity, receive, send)
            elif method == "DELETE":
                self._end(self._session(headers, identity))
                await reply(send, 200, "session ended")
            else:
                raise RpcError(405, -32600, f"method {method} not allowed")
        except RpcError as err:
            log.write(log.WARN, f"refused {method} {scope['path']}: {err.status} {err.message}")
            await send_json(send, err.status, error_message(None, err.code, err.message))

    def _session(self, headers: dict[str, str], identity: Identity) -> Session:
        session_id = headers.get("mcp-session-id")
        if not session_id:
            raise RpcError(400, -32600, "missing mcp-session-id: initialize first")
        session = self._sessions.get(session_id)
        if session is None and identity.path == EDITOR_PATH:
            session = self._resume(session_id, identity)
        if session is None or session.identity != identity:  # another token's session is not yours
            raise RpcError(404, -32001, "unknown session")
        session.last_seen = time.monotonic()
        return session

    def _resume(self, session_id: str, identity: Identity) -> Session | None:
        """An editor-tools session an earlier server of these tokens opened (a kept agent's, see
        agents/kept.lua): the CLIs never initialize again after a 404, so its tools would stay dead.
        Its token is this server's: it could open a session anyway."""
        if len(session_id) > 64 or not session_id.isalnum() or len(self._sessions) >= self._limits.max_sessions:
            return None
        session = Session(id=session_id, name="resumed", version="", identity=identity, path=identity.path)
        session.initialized = True
        self._sessions[session_id] = session
        log.write(log.INFO, f"{session.label} resumed its session on {session.path} (session {session_id[:8]})")
        return session

    async def _post(self, headers: dict[str, str], identity: Identity, receive: Receive, send: Send) -> None:
        if not headers.get("content-type", "").startswith("application/json"):
            raise RpcError(415, -32600, "content-type must be application/json")
        accept = headers.get("accept", "*/*")
        if not any(kind in accept for kind in ("application/json", "text/event-stream", "*/*")):
            raise RpcError(406, -32600, "accept must allow application/json")
        message = await self._json_body(receive)
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            raise RpcError(400, -32600, "expected one JSON-RPC 2.0 message (batches are not supported)")
        name, request_id = message.get("method"), message.get("id")
        if isinstance(request_id, (bool, dict, list)):
            raise RpcError(400, -32600, "id must be a string, a number or null")
        if name == "initialize" and request_id is not None:
            await self._initialize(headers, identity, message, send)
            return
        session = self._session(headers, identity)
        if request_id is None or not isinstance(name, str):  # a notification, or a response to us
            log.write(log.DEBUG, f"{session.label} → {quote(str(name), 100)}")
            if name == "notifications/initialized":
                session.initialized = True
                self._list(session)
            await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        session.busy += 1
        started = time.perf_counter()
        if log.enabled(log.TRACE):  # the start of a long one (an openDiff waits for the user)
            log.write(log.TRACE, log_lines.request(session.label, name, request_id, message.get("params")))
        try:
            answer = await self._request(session, name, request_id, message.get("params"))
        finally:
            session.busy -= 1
            session.last_seen = time.monotonic()
        took = (time.perf_counter() - started) * 1000
        await send_json(send, 200, answer)  # the answer first, then its line
        if log.enabled(log.DEBUG):
            line = log_lines.request(session.label, name, request_id, message.get("params"), answer, took)
            log.write(log.DEBUG, line)

    async def _hook(self, method: str, receive: Receive, send: Send) -> None:
        """Errors are JSON-RPC shaped here too (hook.py ignores the answer; a probe reads one shape)."""
        if method != "POST" or self._hooks.on_hook is None:
            raise RpcError(405, -32600, "hooks are POSTed")
        event = await self._json_body(receive)
        if not isinstance(event, dict):
            raise RpcError(400, -32600, "expected a JSON object")
        started = time.perf_counter()
        try:
            answer = await self._hooks.on_hook(event)
        except (ValueError, TypeError) as err:  # a value no path or git can take (a NUL in cwd, say)
            raise RpcError(400, -32600, f"bad hook event: {quote(str(err), 100)}") from None
        took = (time.perf_counter() - started) * 1000
        await send_json(send, 200, answer)
        if log.enabled(log.DEBUG):
            log.write(log.DEBUG, f"hook {log_lines.summary(event)} → {log_lines.summary(answer)} in {took:.1f} ms")

    async def _json_body(self, receive: Receive) -> Any:
        body = await self._read_body(receive)
        if body is None:
            raise RpcError(413, -32600, "request body too large")
        try:
            return parse_json(body)
        except ValueError as err:
            raise RpcError(400, -32700, f"parse error: {err}") from None

    async def _read_body(self, receive: Receive) -> bytes | None:
        """The whole body, or None once it passes the limit (a chunked upload declares no length)."""
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return b""
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self._limits.max_body_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body"):
                return b"".join(chunks)

    async def _initialize(
        self, headers: dict[str, str], identity: Identity, message: dict[str, Any], send: Send
    ) -> None:
        if headers.get("mcp-session-id"):
            raise RpcError(400, -32600, "already initialized: a session id is issued, never chosen")
        params = message.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
            raise RpcError(400, -32602, "initialize needs params.protocolVersion")
        if len(self._sessions) >= self._limits.max_sessions:
            raise RpcError(503, -32000, "too many sessions")
        info = params.get("clientInfo")
        if not isinstance(info, dict):
            info = {}
        session = Session(
            id=secrets.token_hex(16),
            name=str(info.get("name", "unknown"))[:100],
            version=str(info.get("version", ""))[:100],
            identity=identity,
            path=identity.path,
        )
        self._sessions[session.id] = session
        log.write(log.INFO, f"{session.label} connected to {session.path} (session {session.id[:8]})")
        asked = params["protocolVersion"]
        result = {
            "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0],
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": SERVER_INFO,
        }
        answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        await send_json(send, 200, answer, [(b"mcp-session-id", session.id.encode())])

    async def _request(self, session: Session, name: str, request_id: Any, params: Any) -> dict[str, Any]:
        if name == "ping":
            return {"jsonrpc": "2.0", "id": request_id, "result": {}}
        if name == "tools/list":
            tools = [
                {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                for t in self._tools[session.path].values()
            ]
            return {"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools}}
        if name != "tools/call":
            return error_message(request_id, -32601, f"method not found: {quote(name)}")
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            return error_message(request_id, -32602, "tools/call needs params.name")
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict):
            return error_message(request_id, -32602, "tools/call arguments must be an object")
        tool = self._tools[session.path].get(params["name"])
        if tool is None:
            result = error(f"unknown tool: {quote(params['name'])}")
        else:
            try:
                result = await tool.handler(session.id, arguments)
            except Exception as err:  # noqa: BLE001 - the model gets one line, the log the rest, the server goes on
                said = f"{tool.name} failed: {quote(str(err), 200)}"
                log.write(log.ERROR, f"{session.label}: {said} ({type(err).__name__})")
                result = error(said)
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    async def _get(self, headers: dict[str, str], identity: Identity, receive: Receive, send: Send) -> None:
        """The client's stream for our notifications: open until it hangs up or we end it."""
        if "text/event-stream" not in headers.get("accept", ""):
            raise RpcError(406, -32600, "accept must allow text/event-stream")
        session = self._session(headers, identity)
        if session.stream is not None:
            raise RpcError(409, -32600, "this session's stream is already open")
        await receive()  # the (empty) request body
        stream: asyncio.Queue[bytes | None] = asyncio.Queue(STREAM_QUEUE)
        session.stream = stream
        start_headers = [
            (b"content-type", b"text/event-stream"),
            (b"cache-control", b"no-cache"),
            (b"mcp-session-id", session.id.encode()),
        ]
        hangup = asyncio.ensure_future(receive())
        # The hangup ends the stream as our own end does (_end_stream): one `get` per message.
        hangup.add_done_callback(lambda _: _end_stream(stream))
        try:
            await send({"type": "http.response.start", "status": 200, "headers": start_headers})
            await send({"type": "http.response.body", "body": b": open\n\n", "more_body": True})
            self._on_stream(session, True)
            while (data := await stream.get()) is not None and not hangup.done():
                await send({"type": "http.response.body", "body": data, "more_body": True})
            if not hangup.done():
                await send({"type": "http.response.body", "body": b""})
        finally:
            hangup.cancel()
            if session.stream is stream:
                session.stream = None
                self._on_stream(session, False)

    # --- clients ---------------------------------------------------------------

    def _list(self, session: Session) -> None:
        """Show an initialized session as a client; its state goes out once its stream is open.
        (The model's tool sessions are no IDE clients: never listed, sent no state.)"""
        if session.listed or not session.initialized or self._sessions.get(session.id) is not session:
            return
        if session.path != MCP_PATH:
            return
        session.listed = True
        self._publish_clients()
        if session.stream is not None:
            self._spawn(self._hooks.on_stream_open(session.id))

    def _on_stream(self, session: Session, is_open: bool) -> None:
        if not is_open:
            self._publish_clients()
            asyncio.get_running_loop().call_later(STREAM_GRACE_SECONDS, self._unlist_if_closed, session)
        elif not session.listed:
            self._list(session)  # new, or back after a drop: a live client
        else:
            self._publish_clients()
            self._spawn(self._hooks.on_stream_open(session.id))

    def _unlist_if_closed(self, session: Session) -> None:
        if session.stream is None:
            self._unlist(session)

    def _unlist(self, session: Session) -> None:
        if session.listed:
            log.write(log.INFO, f"{session.label} gone (session {session.id[:8]}: its stream stayed closed)")
            session.listed = False
            self._hooks.on_client_gone(session.id)
            self._publish_clients()

    def _end(self, session: Session) -> None:
        log.write(log.DEBUG, f"{session.label}: session {session.id[:8]} ended")
        self._sessions.pop(session.id, None)
        if session.stream is not None:
            _end_stream(session.stream)
        self._unlist(session)

    def _publish_clients(self) -> None:
        self._hooks.on_clients([s.describe() for s in self._sessions.values() if s.listed])

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)  # the loop keeps only weak references to tasks
        task.add_done_callback(self._tasks.discard)

    async def _keepalive(self) -> None:
        while True:
            await asyncio.sleep(KEEPALIVE_SECONDS)
            # A JSON-RPC notification the client ignores; bytes on the stream are what count.
            self.broadcast("ping", None)

    async def _reap_idle(self) -> None:
        idle = self._limits.session_idle_seconds
        while True:
            await asyncio.sleep(min(idle, 30.0))
            now = time.monotonic()
            for session in list(self._sessions.values()):
                if session.stream is None and not session.busy and now - session.last_seen > idle:
                    self._end(session)


def _end_stream(stream: asyncio.Queue[bytes | None]) -> None:
    """Queue the stream's end; a full queue (a client that does not read) drops its oldest message."""
    while True:
        try:
            stream.put_nowait(None)
            return
        except asyncio.QueueFull:
            stream.get_nowait()
