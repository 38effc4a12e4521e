"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in tests/node)
against both MCP endpoints of the real server in a real Neovim.

The suite's client sends no token, and has no option to add a header. A small loopback proxy
(`AuthProxy`) adds ours. It changes nothing else: a Host or Origin naming the proxy itself
(what any client dialing the proxy's URL sends) is mapped to the server's own, as if the client
had dialed the server; every other value, such as the DNS-rebinding scenario's foreign Host,
goes through byte for byte. That scenario then reaches the guard with a valid token, so its
refusal is the Host check's, not the token's.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from conftest import NODE_DIR, Editor, Sandbox
from harness.mcp_raw import RawSession, initialize_request
from harness.tui import NODE22

SUITE = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
RUN_TIMEOUT = 120.0  # one scenario; its own waits are at most 10 s each

# What applies to a server whose tools are openDiff/closeDiff (/mcp) or the model's editor tools
# (/mcp/editor): the lifecycle, ping, listing tools, a failing call, the streams, the Host check.
APPLIES = (
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-error",
    "server-sse-polling",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
)
# Each needs a capability or a test fixture the server does not have, by design.
TEST_TOOL = "calls a test tool of the suite's reference server; these endpoints serve only their own tools"
SKIPPED = {
    "logging-set-level": "no logging capability: the server sends the client no log messages",
    "completion-complete": "no completions capability: there are no prompts or resource templates to complete",
    "tools-call-simple-text": TEST_TOOL,
    "tools-call-image": TEST_TOOL,
    "tools-call-audio": TEST_TOOL,
    "tools-call-embedded-resource": TEST_TOOL,
    "tools-call-mixed-content": TEST_TOOL,
    "tools-call-with-logging": TEST_TOOL + " (and there is no logging capability)",
    "tools-call-with-progress": TEST_TOOL,
    "tools-call-sampling": TEST_TOOL + " (and the server never asks the client to sample)",
    "tools-call-elicitation": TEST_TOOL + " (and the server never elicits input)",
    "json-schema-2020-12": TEST_TOOL,
    "elicitation-sep1034-defaults": "no elicitation: the server never asks the client for input",
    "elicitation-sep1330-enums": "no elicitation: the server never asks the client for input",
    "resources-list": "no resources capability",
    "resources-read-text": "no resources capability",
    "resources-read-binary": "no resources capability",
    "resources-templates-read": "no resources capability",
    "resources-subscribe": "no resources capability",
    "resources-unsubscribe": "no resources capability",
    "prompts-list": "no prompts capability",
    "prompts-get-simple": "no prompts capability",
    "prompts-get-with-args": "no prompts capability",
    "prompts-get-embedded-resource": "no prompts capability",
    "prompts-get-with-image": "no prompts capability",
}
HEAD_LIMIT = 256 * 1024  # the server's own limit for a request head


class AuthProxy:
    """Loopback TCP proxy: per request, adds `Authorization: Bearer <token>` and maps its own
    authority in Host/Origin to the server's; bodies and responses pass through untouched, so
    SSE streams flow as the server writes them."""

    def __init__(self, server_port: int, token: str) -> None:
        self.server_port = server_port
        self.token = token.encode()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._mine = {b"127.0.0.1:%d" % self.port: b"127.0.0.1:%d" % server_port}
        self._mine[b"localhost:%d" % self.port] = b"localhost:%d" % server_port
        self.errors: list[str] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client, socket.create_connection(("127.0.0.1", self.server_port)) as upstream:
            threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()
            try:
                buffer = b""
                while True:  # one request after another on a kept-alive connection
                    head, buffer = _read_head(client, buffer)
                    if head is None:
                        return
                    head, length = self._rewrite(head)
                    upstream.sendall(head)
                    while len(buffer) < length:
                        chunk = client.recv(65536)
                        if not chunk:
                            return
                        buffer += chunk
                    upstream.sendall(buffer[:length])
                    buffer = buffer[length:]
            except OSError:  # either side hung up (the suite resets streams it is done with)
                pass
            except ValueError as err:  # framing the proxy does not carry: the test must say so
                self.errors.append(str(err))
            finally:
                _shut(upstream)

    def _rewrite(self, head: bytes) -> tuple[bytes, int]:
        request_line, *fields = head.split(b"\r\n")
        out, length = [request_line], 0
        for field in fields:
            name, _, value = field.partition(b":")
            key, value = name.strip().lower(), value.strip()
            if key == b"transfer-encoding":
                raise ValueError("chunked request bodies are not proxied (the suite sends none)")
            if key == b"authorization":
                continue
            if key == b"content-length":
                length = int(value)
            elif key == b"host":
                value = self._mine.get(value, value)
            elif key == b"origin" and value.startswith(b"http://"):
                value = b"http://" + self._mine.get(value[7:], value[7:])
            out.append(name + b": " + value)
        out.append(b"Authorization: Bearer " + self.token)
        return b"\r\n".join(out) + b"\r\n\r\n", length


def _read_head(sock: socket.socket, buffer: bytes) -> tuple[bytes | None, bytes]:
    while b"\r\n\r\n" not in buffer:
        if len(buffer) > HEAD_LIMIT:
            raise ValueError("request head too large")
        chunk = sock.recv(65536)
        if not chunk:
            return None, b""
        buffer += chunk
    head, _, rest = buffer.partition(b"\r\n\r\n")
    return head, rest


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        _shut(sink)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def run_scenario(sandbox: Sandbox, url: str, scenario: str, out: Path) -> list[dict[str, Any]]:
    """One scenario's checks, as the suite wrote them."""
    out.mkdir()
    argv = [str(NODE22), str(SUITE), "server", "--url", url, "--scenario", scenario, "-o", str(out)]
    done = subprocess.run(argv, env=sandbox.env, cwd=out, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    written = list(out.glob("*/checks.json"))
    assert len(written) == 1, f"{scenario}: no results (exit {done.returncode}): {done.stderr[-2000:]}"
    checks: list[dict[str, Any]] = json.loads(written[0].read_text())
    failed = any(check["status"] == "FAILURE" for check in checks)
    assert done.returncode == (1 if failed else 0), f"{scenario}: exit {done.returncode}: {done.stdout[-2000:]}"
    return checks


def endpoints(editor: Editor) -> dict[str, tuple[int, str, str]]:
    """Each MCP endpoint: its port, path and token."""
    status = editor.status()
    tools = urlparse(status["tools"]["url"])
    tools_token = status["tools"]["headers"]["Authorization"].removeprefix("Bearer ")
    return {
        "/mcp": (status["port"], "/mcp", editor.env("GEMINI_CLI_IDE_AUTH_TOKEN") or ""),
        "/mcp/editor": (tools.port or 0, tools.path, tools_token),
    }


@pytest.fixture
def proxies(editor: Editor) -> Iterator[dict[str, tuple[AuthProxy, str]]]:
    made = {name: AuthProxy(port, token) for name, (port, _, token) in endpoints(editor).items()}
    paths = {name: path for name, (_, path, _) in endpoints(editor).items()}
    yield {name: (proxy, f"http://127.0.0.1:{proxy.port}{paths[name]}") for name, proxy in made.items()}
    for proxy in made.values():
        proxy.close()


def test_every_scenario_of_the_pinned_suite_is_run_or_skipped_with_a_reason(sandbox):
    listed = subprocess.run(
        [str(NODE22), str(SUITE), "list", "--server"], env=sandbox.env, capture_output=True, text=True, timeout=60
    )
    names = set(re.findall(r"^\s+- (\S+)", listed.stdout, re.MULTILINE))
    assert names, listed.stdout + listed.stderr
    assert names == set(APPLIES) | set(SKIPPED), "classify the new scenarios: APPLIES or SKIPPED"
    assert not set(APPLIES) & set(SKIPPED)


@pytest.mark.parametrize("endpoint", ["/mcp", "/mcp/editor"])
def test_the_suite_passes(endpoint, editor, sandbox, proxies, tmp_path):
    proxy, url = proxies[endpoint]
    failures, results = [], {}
    for scenario in APPLIES:
        checks = run_scenario(sandbox, url, scenario, tmp_path / scenario)
        results[scenario] = checks
        bad = [c for c in checks if c["status"] in ("FAILURE", "WARNING")]  # a warning is a SHOULD missed
        failures += [f"{scenario}: {c['status']} {c['name']}: {c.get('errorMessage')}" for c in bad]
    assert not failures, "\n".join(failures)
    assert not proxy.errors, proxy.errors
    # The suite passes what it could not observe; these must have been seen, not assumed.
    seen = {(s, c["id"]): c for s, checks in results.items() for c in checks if c["status"] == "SUCCESS"}
    for scenario in ("server-initialize", "ping", "tools-list", "tools-call-error"):
        assert (scenario, scenario) in seen, scenario
    assert ("server-sse-multiple-streams", "server-accepts-multiple-post-streams") in seen
    # The foreign Host came with a valid token: refused by the Host check (421), not the token's (401).
    refused = seen[("dns-rebinding-protection", "localhost-host-rebinding-rejected")]
    assert refused["details"]["statusCode"] == 421, refused
    assert ("dns-rebinding-protection", "localhost-host-valid-accepted") in seen


# Foreign origins, some one character from the server's own.
FOREIGN_ORIGINS = (
    "http://evil.example",
    "null",
    "http://127.0.0.1",
    "https://127.0.0.1:{port}",
    "http://127.0.0.1:{other}",
    "http://127.0.0.1:{port}/",
    "http://127.0.0.2:{port}",
    "http://localhost.evil.example:{port}",
    "http://[::1]:{port}",
    "http://127.0.0.1:{port}.evil.example",
    "",
)


def test_the_servers_own_origin_is_the_only_one_let_in(editor):
    """The suite sends the server's own Origin and needs it accepted; nothing near it is."""
    for port, path, token in endpoints(editor).values():
        session = RawSession(port, token, path)
        for origin in FOREIGN_ORIGINS:
            assert session.post_raw(b"{}", Origin=origin.format(port=port, other=port + 1))[0] == 403, origin
        for own in (f"http://127.0.0.1:{port}", f"http://localhost:{port}"):
            assert session.post_raw(json.dumps(initialize_request()).encode(), Origin=own)[0] == 200, own
