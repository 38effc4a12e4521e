"""server/http.py on a real loopback socket, driven by raw bytes: what clients and bad actors send."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import wait_for
from gemini_companion import log
from gemini_companion.server import http, launch

TIMEOUT = 30.0


class Served:
    """http.Server with a small app on its own loop and thread."""

    def __init__(self) -> None:
        self.sock = launch.listening(launch.bind_loopback())
        self.port = self.sock.getsockname()[1]
        self.loop = asyncio.new_event_loop()
        self.disconnects: list[str] = []
        self.disconnected = threading.Event()
        started = threading.Event()

        async def main() -> None:
            self.server = http.Server(self.app, self.sock)
            await self.server.start()
            started.set()

        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(main(), self.loop).result(TIMEOUT)
        assert started.is_set()

    async def app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["path"] == "/fail":
            raise RuntimeError("boom")
        if scope["path"] == "/stream":  # an event stream: open until the client hangs up
            await receive()
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"open\n", "more_body": True})
            message = await receive()
            self.disconnects.append(message["type"])
            self.disconnected.set()
            return
        if scope["path"] == "/partial":  # reads until the body fails
            message = await receive()
            while message.get("more_body"):
                message = await receive()
            self.disconnects.append(message["type"])
            self.disconnected.set()
            return
        if scope["path"] == "/refuse":  # answers without reading the body
            await send({"type": "http.response.start", "status": 413, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        chunks, parts = [], 0
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            parts += 1
            if not message.get("more_body"):
                break
        body = json.dumps({"path": scope["path"], "size": len(b"".join(chunks)), "parts": parts}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def connect(self) -> socket.socket:
        conn = socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT)
        return conn

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.close(), self.loop).result(TIMEOUT)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(TIMEOUT)


@pytest.fixture
def served() -> Iterator[Served]:
    server = Served()
    try:
        yield server
    finally:
        server.close()


def request(path: str, body: bytes = b"", extra: str = "") -> bytes:
    return f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


def read_response(conn: socket.socket, buffer: bytearray) -> tuple[int, bytes]:
    """One Content-Length response from `buffer` + the socket; what follows it stays in `buffer`."""
    while b"\r\n\r\n" not in buffer:
        data = conn.recv(65536)
        if not data:
            raise ConnectionError(f"closed; got {bytes(buffer)[:200]!r}")
        buffer += data
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        data = conn.recv(65536)
        if not data:
            raise ConnectionError("closed mid-body")
        rest += data
    buffer[:] = rest[length:]
    return status, rest[:length]


def closed(conn: socket.socket) -> bool:
    try:
        while True:
            data = conn.recv(65536)
            if not data:
                return True
    except ConnectionResetError:
        return True


def test_keep_alive_and_pipelined_requests_are_answered_in_order(served: Served):
    with served.connect() as conn:
        buffer = bytearray()
        conn.sendall(request("/one", b"x" * 10))
        status, body = read_response(conn, buffer)
        assert status == 200 and json.loads(body) == {"path": "/one", "size": 10, "parts": 1}
        conn.sendall(request("/two", b"y" * 3) + request("/three"))  # two in one write
        assert json.loads(read_response(conn, buffer)[1])["path"] == "/two"
        assert json.loads(read_response(conn, buffer)[1])["path"] == "/three"


def test_a_chunked_body_and_a_large_one_arrive_whole(served: Served):
    with served.connect() as conn:
        buffer = bytearray()
        chunked = b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
        conn.sendall(b"POST /c HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked)
        assert json.loads(read_response(conn, buffer)[1])["size"] == 11
        big = b"z" * (3 * http.BODY_BUFFER + 7)  # more than the read-ahead: reading pauses and resumes
        conn.sendall(request("/big", big))
        answer = json.loads(read_response(conn, buffer)[1])
        assert answer["size"] == len(big) and answer["parts"] >= 1


def test_expect_100_continue_is_answered_before_the_body(served: Served):
    with served.connect() as conn:
        conn.sendall(b"POST /e HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        interim = conn.recv(65536)
        assert interim.startswith(b"HTTP/1.1 100 "), interim
        conn.sendall(b"abcd")
        assert json.loads(read_response(conn, bytearray())[1])["size"] == 4


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (http.MAX_HEADER_BYTES + 10), 431),  # never ending
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 TLS hello\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
        (b"GET /\x00 HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    ],
    ids=["headers too large", "tls", "negative length", "two lengths", "nul in target"],
)
def test_what_cannot_be_parsed_gets_one_answer_and_the_connection_ends(served: Served, raw: bytes, status: int):
    with served.connect() as conn:
        conn.sendall(raw)
        got, _ = read_response(conn, bytearray())
        assert got == status
        assert closed(conn)
    with served.connect() as conn:  # and the server goes on
        conn.sendall(request("/after"))
        assert read_response(conn, bytearray())[0] == 200


def test_a_failing_app_gives_500_and_the_server_goes_on(served: Served, tmp_path: Path):
    log_file = tmp_path / "log" / "companion.log"
    assert log.configure({"level": "error", "path": str(log_file)}) is None
    try:
        with served.connect() as conn:
            conn.sendall(request("/fail"))
            assert read_response(conn, bytearray())[0] == 500
        with served.connect() as conn:
            conn.sendall(request("/ok"))
            assert read_response(conn, bytearray())[0] == 200
        # The log says what failed and where, in one line.
        failed = r"ERROR \[\d+\] request POST '/fail' failed: RuntimeError: boom at test_http\.py:\d+$"
        wait_for(lambda: log_file.exists() and re.search(failed, log_file.read_text(), re.M), 30, "the failure logged")
    finally:
        log.configure({"level": "off"})


def test_a_refusal_without_reading_the_body_closes_the_connection(served: Served):
    with served.connect() as conn:
        conn.sendall(request("/refuse", b"q" * 100)[:-50])  # half the body sent
        assert read_response(conn, bytearray())[0] == 413
        assert closed(conn)  # the rest of that body must never be read as a request


def test_connection_close_is_honoured(served: Served):
    with served.connect() as conn:
        conn.sendall(request("/bye", extra="Connection: close\r\n"))
        assert read_response(conn, bytearray())[0] == 200
        assert closed(conn)


def test_a_stream_is_chunked_and_its_hangup_reaches_the_app(served: Served):
    conn = served.connect()
    conn.sendall(b"GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    head = b""
    while b"open\n" not in head:
        head += conn.recv(65536)
    assert b"transfer-encoding: chunked" in head.lower(), head
    conn.close()
    assert served.disconnected.wait(TIMEOUT)
    assert served.disconnects == ["http.disconnect"]


def test_close_ends_idle_connections_and_stops_accepting():
    server = Served()
    conn = server.connect()
    conn.sendall(request("/one"))
    assert read_response(conn, bytearray())[0] == 200
    server.close()
    assert closed(conn)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT)


def test_head_gets_the_head_alone_and_the_connection_goes_on(served: Served):
    with served.connect() as conn:
        conn.sendall(b"HEAD /h HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + request("/after"))
        data = b""
        while data.count(b"HTTP/1.1 200") < 2 or not data.endswith(b"}"):
            chunk = conn.recv(65536)
            assert chunk, data
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        assert b"content-length:" in head.lower() and rest.startswith(b"HTTP/1.1 200"), (
            data
        )  # no body after HEAD's head


def test_a_body_that_turns_malformed_ends_the_request(served: Served):
    with served.connect() as conn:
        conn.sendall(b"POST /partial HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")
        conn.sendall(b"zz\r\nnot a chunk\r\n")
        assert served.disconnected.wait(TIMEOUT)
        assert served.disconnects == ["http.disconnect"]
        assert closed(conn)


def test_a_head_that_never_ends_is_cut_at_its_deadline(served: Served, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(http, "HEAD_SECONDS", 0.5)
    with served.connect() as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # and nothing more
        assert closed(conn)
    with served.connect() as conn:  # a whole head in time is served
        conn.sendall(request("/ok"))
        assert read_response(conn, bytearray())[0] == 200


def test_a_stalled_body_ends_its_request_and_a_slow_one_does_not(served: Served, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(http, "BODY_STALL_SECONDS", 1.0)
    with served.connect() as conn:
        conn.sendall(b"POST /slow HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 30\r\n\r\n")
        for _ in range(30):  # 3 s in all, never 1 s without a byte
            conn.sendall(b"x")
            time.sleep(0.1)
        assert json.loads(read_response(conn, bytearray())[1])["size"] == 30
    with served.connect() as conn:
        conn.sendall(b"POST /partial HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\nx")
        assert served.disconnected.wait(TIMEOUT)
        assert served.disconnects == ["http.disconnect"]
        assert closed(conn)
