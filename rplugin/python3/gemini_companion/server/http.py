"""HTTP/1.1 for the MCP app on the pre-bound loopback socket: h11 parses, asyncio carries.

What the clients use and nothing more: keep-alive and pipelined requests, Content-Length or
chunked bodies, streamed (chunked) responses for the event stream, `Expect: 100-continue`, and
`http.disconnect` when a client hangs up. No TLS, no WebSocket, no proxy headers. The app is
called ASGI-style (`scope`, `receive`, `send`), one request at a time per connection.

In place of uvicorn, which cost the host 30 ms and 4.5 MiB to import and woke it ten times a
second; h11 is the parser uvicorn used.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Callable
from typing import Any

import h11

from gemini_companion import log
from gemini_companion.server.http_guard import ASGIApp, Message

# Headers may be this large: an oversized Authorization header must reach the guard and get its
# 401, not a parser error. Larger still: 431, and the connection is closed.
MAX_HEADER_BYTES = 256 * 1024
BODY_BUFFER = 1024 * 1024  # body bytes read ahead of the app; reading pauses above it
IDLE_SECONDS = 75.0  # a connection with no request for this long is closed (clients close at ~4 s)
HEAD_SECONDS = 10.0  # a request's head must be whole this soon after its first byte (each holds up to 256 KiB)
BODY_STALL_SECONDS = 30.0  # a body that makes no progress this long: its client is gone
SHUTDOWN_SECONDS = 1.0  # at exit, for requests still running


class Server:
    """Serves `app` on `sock` until `close()`; runs on one asyncio loop."""

    def __init__(self, app: ASGIApp, sock: socket.socket) -> None:
        self._app = app
        self._sock = sock
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[_Connection] = set()

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Connection(self._app, self._connections), sock=self._sock)

    async def close(self) -> None:
        """Stop accepting; let running requests finish (briefly), then close every connection."""
        if self._server is not None:
            self._server.close()
        for connection in list(self._connections):
            connection.close_when_idle()
        running = [c.task for c in self._connections if c.task is not None]
        if running:
            await asyncio.wait(running, timeout=SHUTDOWN_SECONDS)
        for connection in list(self._connections):
            connection.abort()
        await asyncio.sleep(0)  # the cancelled requests unwind before their loop closes


class _Connection(asyncio.Protocol):
    def __init__(self, app: ASGIApp, connections: set[_Connection]) -> None:
        self._app = app
        self._connections = connections
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEADER_BYTES)
        self._transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self.task: asyncio.Task[None] | None = None
        self._body: list[bytes] = []
        self._body_size = 0
        self._body_state = "reading"  # reading | read (all of it arrived) | given (all handed to the app)
        self._wake = asyncio.Event()  # body bytes, its end, or the hangup arrived
        self._lost = False
        self._closing = False  # close once the running request is done
        self._paused = False
        self._writable: asyncio.Future[None] | None = None  # set while the transport's buffer is full
        self._timer: asyncio.TimerHandle | None = None  # the deadline of what the connection waits for
        self._heading = False  # a request's head is arriving
        self._head = b""  # a response's status line and headers, not yet written
        self._no_body = False  # answering HEAD: the head alone

    # --- asyncio.Protocol ------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._connections.add(self)
        self._arm_idle()

    def data_received(self, data: bytes) -> None:
        self._h11.receive_data(data)
        if self.task is None and not self._heading:  # the first bytes of a head: it has HEAD_SECONDS
            self._heading = True
            self._arm(HEAD_SECONDS, self._close)
        self._events()

    def eof_received(self) -> bool | None:
        self._h11.receive_data(b"")
        self._events()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._connections.discard(self)
        self._wake.set()
        self.resume_writing()  # a writer waiting for room goes on (its sends are no-ops now)
        self._disarm()

    def pause_writing(self) -> None:
        self._writable = self._loop.create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._writable = None

    # --- parsing -----------------------------------------------------------------

    def _events(self) -> None:
        while not self._lost:
            try:
                event = self._h11.next_event()
            except h11.RemoteProtocolError as err:
                self._refuse(err.error_status_hint)
                return
            if event is h11.NEED_DATA:
                return
            if event is h11.PAUSED:  # the next request waits for this one's end: so does reading
                self._pause()
                return
            if isinstance(event, h11.Request):
                self._begin(event)
            elif isinstance(event, h11.Data):
                self._body.append(event.data)
                self._body_size += len(event.data)
                self._arm(BODY_STALL_SECONDS, self._close)
                if self._body_size > BODY_BUFFER:
                    self._pause()
                self._wake.set()
            elif isinstance(event, h11.EndOfMessage):
                self._disarm()  # the app may take its time now (a review waits for the user)
                self._body_state = "read"
                self._wake.set()
            elif isinstance(event, h11.ConnectionClosed):
                self._wake.set()
                if self.task is None:
                    self._close()
                return

    def _begin(self, request: h11.Request) -> None:
        self._heading = False
        self._arm(BODY_STALL_SECONDS, self._close)
        self._body, self._body_size, self._body_state = [], 0, "reading"
        self._no_body = request.method == b"HEAD"
        self._wake.clear()
        target = request.target.partition(b"?")
        scope = {
            "type": "http",
            "http_version": request.http_version.decode(),
            "method": request.method.decode("ascii", "replace"),
            "path": target[0].decode("latin-1"),
            "raw_path": target[0],
            "query_string": target[2],
            "headers": list(request.headers),  # h11 gives the names in lower case
        }
        self.task = self._loop.create_task(self._run(scope))

    async def _run(self, scope: dict[str, Any]) -> None:
        started = [False]

        async def send(message: Message) -> None:
            if message["type"] == "http.response.start":
                started[0] = True
            await self._send(message)

        try:
            await self._app(scope, self._receive, send)
        except h11.LocalProtocolError as err:  # an answer h11 cannot frame: the connection ends
            log.write(log.WARN, f"request {scope['method']} {scope['path'][:100]!r}: {err}")
            self._closing = True
        except Exception as err:  # noqa: BLE001 - one request fails (said in the log), the server goes on
            log.write(log.ERROR, f"request {scope['method']} {scope['path'][:100]!r} failed: {_where(err)}")
            if not started[0]:
                with contextlib.suppress(Exception):
                    self._plain(500, b"internal error")
        finally:
            self.task = None
        self._next()

    def _next(self) -> None:
        """After a response: the next request on this connection, or close it."""
        self._write(self._head)  # an app that started an answer and gave it no body
        self._head = b""
        if self._lost:
            return
        if self._closing or self._h11.our_state is not h11.DONE or self._h11.their_state is not h11.DONE:
            self._close()  # a body we never read (a refusal), a response cut short, `Connection: close`
            return
        self._h11.start_next_cycle()
        self._arm_idle()
        self._resume()
        self._events()  # a pipelined request already buffered

    # --- the app's side ------------------------------------------------------------

    async def _receive(self) -> Message:
        if self._h11.they_are_waiting_for_100_continue and not self._lost:
            self._write(self._h11.send(h11.InformationalResponse(status_code=100, headers=[])))
        while not self._body and self._body_state == "reading" and not self._lost:
            self._wake.clear()
            await self._wake.wait()
        if self._body or self._body_state == "read":
            body = b"".join(self._body)
            self._body, self._body_size = [], 0
            self._resume()
            more = self._body_state == "reading"
            if not more:
                self._body_state = "given"  # from now on only the hangup is news
            return {"type": "http.request", "body": body, "more_body": more}
        while not self._lost:
            self._wake.clear()
            await self._wake.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: Message) -> None:
        if self._lost:
            return  # the client is gone: what it would have been told goes nowhere
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            # Held until the body's first bytes: one write, one segment for a small answer.
            self._head = self._h11.send(h11.Response(status_code=message["status"], headers=headers)) or b""
        elif message["type"] == "http.response.body":
            out = [self._head]
            self._head = b""
            body = b"" if self._no_body else message.get("body", b"")
            if body:
                out.append(self._h11.send(h11.Data(data=body)) or b"")
            if not message.get("more_body", False):
                out.append(self._h11.send(h11.EndOfMessage()) or b"")
            self._write(b"".join(out))
            if self._writable is not None:
                await self._writable

    def _plain(self, status: int, text: bytes) -> None:
        """A whole short text answer of our own (never the app's); h11 may refuse it (LocalProtocolError)."""
        if self._lost:
            return
        headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(text)).encode())]
        events = (h11.Response(status_code=status, headers=headers), h11.Data(data=text), h11.EndOfMessage())
        self._write(b"".join(self._h11.send(event) or b"" for event in events))

    # --- the transport ---------------------------------------------------------------

    def _write(self, data: bytes | None) -> None:
        if data and self._transport is not None and not self._lost:
            self._transport.write(data)

    def _refuse(self, status: int) -> None:
        """A request h11 cannot parse: one plain answer if none was started, then close."""
        if self._h11.our_state in (h11.IDLE, h11.SEND_RESPONSE) and self.task is None:
            with contextlib.suppress(h11.LocalProtocolError):
                self._plain(status, b"bad request")
        self._wake.set()
        self._close()  # a running request sees the hangup (its body can never complete)

    def _pause(self) -> None:
        if not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()

    def _resume(self) -> None:
        if self._paused and self._transport is not None and not self._lost:
            self._paused = False
            self._transport.resume_reading()

    def _arm(self, seconds: float, expired: Callable[[], None]) -> None:
        self._disarm()
        self._timer = self._loop.call_later(seconds, expired)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm_idle(self) -> None:
        self._arm(IDLE_SECONDS, self._close_if_idle)

    def _close_if_idle(self) -> None:
        if self.task is None:
            self._close()

    def close_when_idle(self) -> None:
        self._closing = True
        if self.task is None:
            self._close()

    def _close(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()

    def abort(self) -> None:
        if self.task is not None:
            self.task.cancel()
        if self._transport is not None:
            self._transport.abort()


def _where(err: BaseException) -> str:
    """An exception as one line of the log: its type, its message (cut), and the innermost line it
    came from, for a bug report."""
    frame = err.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    place = f" at {os.path.basename(frame.tb_frame.f_code.co_filename)}:{frame.tb_lineno}" if frame else ""
    return f"{type(err).__name__}: {str(err)[:200]}{place}"
