"""The HTTP gate: every request must be local, ours, and carry the token (issue 2's security)."""

from __future__ import annotations

import http.client
import json
import socket

import pytest

INIT_BODY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "0"},
        },
    }
)
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def post(port: int, headers: dict[str, str], body: str = INIT_BODY, path: str = "/mcp") -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", path, body=body.encode(), headers={**MCP_HEADERS, **headers})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@pytest.fixture
def server(editor):
    status = editor.status()
    return status["port"], editor.env("GEMINI_CLI_IDE_AUTH_TOKEN")


def test_valid_token_initializes_a_session(server):
    port, token = server
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/mcp", body=INIT_BODY.encode(), headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})
    response = conn.getresponse()
    assert response.status == 200
    assert response.getheader("mcp-session-id")
    conn.close()


@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer", "Bearer ", "Bearer wrong", "bearer {token}", "Bearer {prefix}", "Bearer {token}x", "{token}"],
)
def test_bad_authorization_is_401_with_the_same_short_body(server, authorization):
    port, token = server
    headers = {}
    if authorization is not None:
        headers["Authorization"] = authorization.format(token=token, prefix=token[:-1])
    status, body = post(port, headers)
    assert status == 401
    assert body == b'{"error": "unauthorized"}'


def test_non_ascii_and_huge_authorization_headers_are_401_not_500(server):
    port, token = server
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer \xff\xfe%s\r\n"
            b"Content-Length: 2\r\n\r\n{}" % (port, token.encode())
        )
        assert sock.recv(64).startswith(b"HTTP/1.1 401")
    status, _ = post(port, {"Authorization": "Bearer " + "a" * 65536})
    assert status == 401


def test_any_origin_is_403_even_with_the_token(server):
    port, token = server
    for origin in ("http://evil.example", "http://127.0.0.1", "null"):
        status, _ = post(port, {"Authorization": f"Bearer {token}", "Origin": origin})
        assert status == 403, origin


@pytest.mark.parametrize("host", ["evil.example:{port}", "127.0.0.1:1", "localhost", "127.0.0.1"])
def test_foreign_host_header_is_rejected(server, host):
    port, token = server
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.putrequest("POST", "/mcp", skip_host=True)
    conn.putheader("Host", host.format(port=port))
    conn.putheader("Authorization", f"Bearer {token}")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(len(INIT_BODY)))
    conn.endheaders(INIT_BODY.encode())
    status = conn.getresponse().status
    conn.close()
    assert 400 <= status < 500


def test_localhost_host_header_is_accepted(server):
    port, token = server
    conn = http.client.HTTPConnection("localhost", port, timeout=30)
    conn.request("POST", "/mcp", body=INIT_BODY.encode(), headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})
    assert conn.getresponse().status == 200
    conn.close()


def test_unauthenticated_huge_body_is_refused_before_it_is_read(server):
    port, _ = server
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 52428800\r\n\r\n" % port)
        # The answer arrives without the server waiting for 50 MB that never come.
        assert sock.recv(64).startswith(b"HTTP/1.1 401")


def test_authenticated_oversized_body_is_413(server):
    port, token = server
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
            b"Content-Type: application/json\r\nContent-Length: 52428800\r\n\r\n" % (port, token.encode())
        )
        assert sock.recv(64).startswith(b"HTTP/1.1 413")


def test_websocket_upgrade_is_never_101(server):
    port, _ = server
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(
            b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Origin: http://evil.example\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            b"Sec-WebSocket-Version: 13\r\n\r\n" % port
        )
        status_line = sock.recv(64)
    assert not status_line.startswith(b"HTTP/1.1 101")
    assert status_line.startswith(b"HTTP/1.1 4")


def test_other_paths_are_not_served(server):
    port, token = server
    status, _ = post(port, {"Authorization": f"Bearer {token}"}, path="/")
    assert status == 404


def listening_addresses(port: int) -> list[str]:
    """Local addresses of LISTEN sockets on `port`, from /proc/net/tcp{,6} (hex, as the kernel writes them)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                address, hex_port = fields[1].rsplit(":", 1)
                if int(hex_port, 16) == port and fields[3] == "0A":
                    found.append(address)
    return found


def test_server_listens_on_loopback_only(editor):
    port = editor.status()["port"]
    assert listening_addresses(port) == ["0100007F"]  # 127.0.0.1, nothing else, no IPv6


def test_session_id_is_not_authentication(server):
    """A valid session id with a missing or wrong token is still 401, on every method."""
    port, token = server
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/mcp", body=INIT_BODY.encode(), headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})
    response = conn.getresponse()
    session = response.getheader("mcp-session-id")
    response.read()
    conn.close()
    for method in ("POST", "GET", "DELETE"):
        for authorization in (None, "Bearer wrong"):
            headers = {**MCP_HEADERS, "mcp-session-id": session}
            if authorization:
                headers["Authorization"] = authorization
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request(method, "/mcp", body=b"{}" if method == "POST" else None, headers=headers)
            assert conn.getresponse().status == 401, (method, authorization)
            conn.close()
