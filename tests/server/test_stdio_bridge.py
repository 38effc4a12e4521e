"""The stdio bridge: how a CLI in a container reaches Neovim.

In a container (/.dockerenv) without SSH_CONNECTION or REMOTE_CONTAINERS the Gemini
client dials host.docker.internal, fails, and then runs the `stdio` command from the
discovery file or GEMINI_CLI_IDE_SERVER_STDIO_*. The real client is driven through
both routes here (only where HTTP fails, i.e. in a container); the bridge itself is
also driven directly, against the real server and against a scripted one.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, TIMEOUT, Editor, NodeClient, client_env, wait_for
from harness.mcp_raw import initialize_request

BRIDGE = ROOT / "rplugin" / "python3" / "gemini_companion" / "programs" / "stdio_bridge.py"
IN_CONTAINER = os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv")
needs_container = pytest.mark.skipif(
    not IN_CONTAINER, reason="outside a container the client reaches 127.0.0.1 over HTTP and never runs the bridge"
)
STDIO_KEYS = ("GEMINI_CLI_IDE_SERVER_STDIO_COMMAND", "GEMINI_CLI_IDE_SERVER_STDIO_ARGS")
# What the MCP SDK's StdioClientTransport passes to the command it spawns: nothing else.
SDK_INHERITED = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
INITIALIZE = initialize_request("bridge-test")
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


# --- helpers ----------------------------------------------------------------------


class BridgeProcess:
    """stdio_bridge.py run the way the CLIs run it, with a newline-delimited JSON-RPC pipe."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", str(BRIDGE), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env if env is not None else sdk_env(),
        )
        self._inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self.received: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._inbox.put(json.loads(line))

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def expect(self, predicate: Callable[[dict[str, Any]], Any], what: str) -> dict[str, Any]:
        """The first message (seen before or arriving now) for which `predicate` holds."""

        def find() -> dict[str, Any] | None:
            while not self._inbox.empty():
                self.received.append(self._inbox.get())
            return next((m for m in self.received if predicate(m)), None)

        return wait_for(find, what=what)

    def finish(self) -> tuple[int, str]:
        """Close stdin (the client went away); the exit code and stderr."""
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        code = self.proc.wait(TIMEOUT)
        return code, self.proc.stderr.read().decode()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(TIMEOUT)


@pytest.fixture
def bridges() -> Iterator[Callable[..., BridgeProcess]]:
    started: list[BridgeProcess] = []

    def start(*args: str, env: dict[str, str] | None = None) -> BridgeProcess:
        started.append(BridgeProcess(*args, env=env))
        return started[-1]

    yield start
    for bridge in started:
        bridge.kill()


@pytest.fixture
def clients() -> Iterator[Callable[..., NodeClient]]:
    started: list[NodeClient] = []

    def start(env: dict[str, str], cwd: Path) -> NodeClient:
        started.append(NodeClient("gemini_client.mjs", env, cwd))
        return started[-1]

    yield start
    for client in started:
        client.close()


def sdk_env() -> dict[str, str]:
    return {key: os.environ[key] for key in SDK_INHERITED if key in os.environ}


def container_env(editor: Editor, with_stdio_env: bool) -> dict[str, str]:
    """What a CLI in the editor's :terminal sees in a plain dev container."""
    env = client_env(editor)
    for key in ("SSH_CONNECTION", "REMOTE_CONTAINERS", "VSCODE_REMOTE_CONTAINERS_SESSION"):
        env.pop(key, None)
    for key in STDIO_KEYS:
        value = editor.env(key)
        if with_stdio_env and value:
            env[key] = value
        else:
            env.pop(key, None)
    return env


def gemini_file(editor: Editor) -> Path:
    files = [Path(p) for p in editor.status()["discovery_files"] if Path(p).name.startswith("gemini-ide-server-")]
    assert len(files) == 1, files
    return files[0]


def server_clients(editor: Editor) -> list[dict[str, Any]]:
    return editor.status()["clients"]


def bridge_children(client: NodeClient) -> list[int]:
    """PIDs of the bridge processes the client spawned."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == client.proc.pid and str(BRIDGE).encode() in cmdline:
            pids.append(int(entry.name))
    return pids


def connect_through_bridge(editor: Editor, client: NodeClient) -> int:
    """Connect; check that it went through a bridge (not HTTP) and return the bridge's PID."""
    state = client.call("connect")
    assert state["status"] == "connected", (state, client.stderr[-5:])
    assert state["ide"] == "Neovim"
    clients = wait_for(lambda: (c := server_clients(editor)) and all(x["stream"] for x in c) and c, what="the client")
    assert [c["name"] for c in clients] == ["stdio-client"]  # the HTTP transport calls itself streamable-http-client
    pids = bridge_children(client)
    assert len(pids) == 1, pids
    return pids[0]


def active_file(client: NodeClient) -> str | None:
    context = client.call("context") or {}
    files = (context.get("workspaceState") or {}).get("openFiles") or []
    return files[0]["path"] if files and files[0].get("isActive") else None


def discovery_file(directory: Path, port: int, token: str) -> Path:
    path = directory / f"gemini-ide-server-1-{port}.json"
    path.write_text(json.dumps({"port": port, "authToken": token}))
    path.chmod(0o600)
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- advertisement ------------------------------------------------------------------


def test_both_routes_are_advertised_without_the_token(editor: Editor, sandbox: Any) -> None:
    python = editor.status()["python"]
    gemini_path = gemini_file(editor)
    qwen_path = sandbox.qwen_dir / f"{editor.status()['port']}.lock"
    token = json.loads(gemini_path.read_text())["authToken"]
    for path, prefix in ((gemini_path, "GEMINI_CLI"), (qwen_path, "QWEN_CODE")):
        expected = {"command": python, "args": ["-I", str(BRIDGE), str(path)]}
        assert json.loads(path.read_text())["stdio"] == expected
        assert editor.env(f"{prefix}_IDE_SERVER_STDIO_COMMAND") == python
        assert json.loads(editor.env(f"{prefix}_IDE_SERVER_STDIO_ARGS") or "") == expected["args"]
        assert token not in json.dumps(expected)


# --- the real Gemini client -----------------------------------------------------------


@needs_container
def test_file_route_connects_and_relays_context(editor: Editor, sandbox: Any, clients: Callable[..., NodeClient]):
    client = clients(container_env(editor, with_stdio_env=False), sandbox.project)
    bridge_pid = connect_through_bridge(editor, client)

    tools = set(client.call("tools"))
    assert {"openDiff", "closeDiff"} <= tools
    assert client.call("status")["diffing"] is True

    token = json.loads(gemini_file(editor).read_text())["authToken"]
    argv = Path(f"/proc/{bridge_pid}/cmdline").read_bytes().split(b"\0")
    assert str(gemini_file(editor)).encode() in argv
    assert token.encode() not in b"\0".join(argv)

    # ide/contextUpdate comes on the server's GET stream, relayed by the bridge.
    path = Path(os.path.realpath(sandbox.project)) / "notes.txt"
    path.write_text("hello\n")
    editor.lua("vim.cmd.edit(vim.fn.fnameescape(...))", str(path))
    wait_for(lambda: active_file(client) == str(path), what="the active file in the client's context")


@needs_container
def test_env_route_round_trips_a_diff_and_ends_cleanly(
    editor: Editor, sandbox: Any, clients: Callable[..., NodeClient]
) -> None:
    # A discovery file without `stdio` (as older plugins wrote): only the environment names the bridge.
    file = gemini_file(editor)
    file.write_text(json.dumps({k: v for k, v in json.loads(file.read_text()).items() if k != "stdio"}))
    client = clients(container_env(editor, with_stdio_env=True), sandbox.project)
    bridge_pid = connect_through_bridge(editor, client)

    # openDiff's answer is a notification (ide/diffAccepted) on the relayed GET stream.
    target = Path(os.path.realpath(sandbox.project)) / "a.txt"
    target.write_text("old\n")
    request = client.send("openDiff", filePath=str(target), newContent="new\n")
    review = "require('gemini_companion.review')"
    wait_for(lambda: editor.lua(f"return {review}.files()") == [str(target)], what="the review tab")
    editor.lua(f"{review}.accept(...)", str(target))
    reply = client.reply(request)
    assert reply == {"id": request, "ok": True, "result": {"status": "accepted", "content": "new\n"}}

    # The client ends its transport with SIGTERM: the bridge ends the session and exits.
    assert client.call("disconnect")["status"] == "disconnected"
    wait_for(lambda: not Path(f"/proc/{bridge_pid}").exists(), what="the bridge to exit")
    wait_for(lambda: server_clients(editor) == [], what="the server to drop the session")


# --- the bridge against the real server -------------------------------------------------


def test_relays_a_session_and_ends_it_on_eof(editor: Editor, sandbox: Any, bridges: Callable[..., BridgeProcess]):
    bridge = bridges(str(gemini_file(editor)))
    bridge.send(INITIALIZE)
    init = bridge.expect(lambda m: m.get("id") == 0, "the initialize result")
    assert init["result"]["serverInfo"]["name"] == "gemini-companion.nvim"
    bridge.send(INITIALIZED)
    bridge.send(TOOLS_LIST)
    tools = bridge.expect(lambda m: m.get("id") == 1, "the tools/list result")
    assert {"openDiff", "closeDiff"} <= {t["name"] for t in tools["result"]["tools"]}
    wait_for(lambda: [c["stream"] for c in server_clients(editor)] == [True], what="the bridge's GET stream")

    path = Path(os.path.realpath(sandbox.project)) / "seen.txt"
    path.write_text("x\n")
    editor.lua("vim.cmd.edit(vim.fn.fnameescape(...))", str(path))

    def is_context_for_path(message: dict[str, Any]) -> bool:
        files = message.get("params", {}).get("workspaceState", {}).get("openFiles", [])
        return message.get("method") == "ide/contextUpdate" and any(f["path"] == str(path) for f in files)

    bridge.expect(is_context_for_path, "ide/contextUpdate with the edited file")

    code, stderr = bridge.finish()
    assert (code, stderr) == (0, "")
    wait_for(lambda: server_clients(editor) == [], what="the session to end")


def test_a_line_nested_deeper_than_pythons_reader_is_not_the_end_of_the_session(
    editor: Editor, bridges: Callable[..., BridgeProcess]
) -> None:
    """A line of the client's nested 100,000 deep: json.loads raised RecursionError, not ValueError,
    and the bridge died with it (every later call of the session unanswered). It is relayed as it is
    (the server answers it) and the session goes on."""
    bridge = bridges(str(gemini_file(editor)))
    bridge.send(INITIALIZE)
    bridge.expect(lambda m: m.get("id") == 0, "the initialize result")
    bridge.send(INITIALIZED)
    assert bridge.proc.stdin is not None
    bridge.proc.stdin.write(b"[" * 100_000 + b"]" * 100_000 + b"\n")
    bridge.proc.stdin.flush()
    bridge.send(TOOLS_LIST)
    tools = bridge.expect(lambda m: m.get("id") == 1, "the tools/list result")
    assert {"openDiff", "closeDiff"} <= {t["name"] for t in tools["result"]["tools"]}
    assert bridge.proc.poll() is None


def test_exits_when_neovim_goes_away(editor: Editor, bridges: Callable[..., BridgeProcess]) -> None:
    bridge = bridges(str(gemini_file(editor)))
    bridge.send(INITIALIZE)
    bridge.expect(lambda m: m.get("id") == 0, "the initialize result")
    bridge.send(INITIALIZED)
    wait_for(lambda: [c["stream"] for c in server_clients(editor)] == [True], what="the bridge's GET stream")
    editor.close()
    # The client sees its transport close (and reports Disconnected) instead of a bridge that hangs.
    assert bridge.proc.wait(TIMEOUT) == 1
    assert bridge.proc.stderr is not None
    stderr = bridge.proc.stderr.read().decode()
    assert stderr.count("\n") == 1 and "cannot reach the Neovim companion server" in stderr, stderr


def test_environment_is_the_fallback(editor: Editor, bridges: Callable[..., BridgeProcess]) -> None:
    ad = json.loads(gemini_file(editor).read_text())
    env = dict(sdk_env(), GEMINI_CLI_IDE_SERVER_PORT=str(ad["port"]), GEMINI_CLI_IDE_AUTH_TOKEN=ad["authToken"])
    bridge = bridges(env=env)
    bridge.send(INITIALIZE)
    assert "result" in bridge.expect(lambda m: m.get("id") == 0, "the initialize result")
    assert bridge.finish() == (0, "")


# --- refusals ----------------------------------------------------------------------------


def refusal(bridge: BridgeProcess) -> str:
    """Send initialize; the bridge must exit non-zero with one clear line on stderr."""
    bridge.send(INITIALIZE)
    code = bridge.proc.wait(TIMEOUT)
    assert bridge.proc.stderr is not None
    stderr = bridge.proc.stderr.read().decode()
    assert code != 0
    assert stderr.count("\n") == 1 and stderr.startswith("gemini-companion stdio bridge: "), stderr
    return stderr


def test_refuses_when_no_server_listens(sandbox: Any, bridges: Callable[..., BridgeProcess]) -> None:
    port = free_port()
    assert f"cannot reach the Neovim companion server at 127.0.0.1:{port}" in refusal(
        bridges(str(discovery_file(sandbox.tmp, port, "whatever")))
    )


def test_refuses_a_wrong_token(editor: Editor, sandbox: Any, bridges: Callable[..., BridgeProcess]) -> None:
    file = discovery_file(sandbox.tmp, editor.status()["port"], "not-the-token")
    assert "refused the token (HTTP 401)" in refusal(bridges(str(file)))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["/nonexistent/gemini-ide-server-1-2.json"], "does not exist: is the Neovim companion server still running?"),
        ([], "no discovery file given"),
        (["a", "b"], "usage: stdio_bridge.py [DISCOVERY_FILE]"),
    ],
)
def test_refuses_without_a_target(bridges: Callable[..., BridgeProcess], args: list[str], message: str) -> None:
    assert message in refusal(bridges(*args))


def test_refuses_a_discovery_file_behind_a_symlink(sandbox: Any, bridges: Callable[..., BridgeProcess]) -> None:
    link = sandbox.tmp / "link.json"
    link.symlink_to(discovery_file(sandbox.tmp, free_port(), "t"))
    assert f"cannot open {link}" in refusal(bridges(str(link)))


@pytest.mark.parametrize("kind", ["fifo", "device", "huge"])
def test_a_discovery_file_that_is_no_small_file_is_refused_without_waiting(
    sandbox: Any, bridges: Callable[..., BridgeProcess], kind: str
) -> None:
    """A FIFO in the file's place held the bridge for ever (opened without O_NONBLOCK), and a huge
    file was read whole: both are refused in one line, as the CLIs' own readers refuse them."""
    path = sandbox.tmp / "gemini-ide-server-1-2.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "huge":
        path.write_bytes(b" " * (1 << 20) + b'{"port": 1, "authToken": "t"}')
    why = {"fifo": "not a regular file", "device": "not a regular file", "huge": "larger than"}[kind]
    target = "/dev/zero" if kind == "device" else str(path)
    assert f"refusing {target}: {why}" in refusal(bridges(target))


# --- the bridge against a scripted server: headers, JSON and SSE answers, DELETE -------------


class ScriptedServer(BaseHTTPRequestHandler):
    """Answers initialize with JSON, tools/list with SSE, and holds one GET stream open."""

    seen: list[tuple[str, dict[str, str], Any]]
    release: threading.Event

    def log_message(self, *args: Any) -> None:
        pass

    def _record(self, body: Any = None) -> None:
        self.seen.append((self.command, {k.lower(): v for k, v in self.headers.items()}, body))

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self._record(message)
        if message.get("method") == "initialize":
            result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "scripted"}}
            body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("mcp-session-id", "session-1")
            self.end_headers()
            self.wfile.write(body)
        elif message.get("method") == "tools/list":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            progress = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "working"}}
            # A comment, a field we ignore, and one message split over two data lines.
            self.wfile.write(b": hello\r\nid: 7\r\ndata: " + json.dumps(progress).encode() + b"\r\n\r\n")
            self.wfile.write(b'data: {"jsonrpc": "2.0", "id": 1,\ndata:  "result": {"tools": []}}\n\n')
        else:
            self.send_response(202)
            self.end_headers()

    def do_GET(self) -> None:
        self._record()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        update = {"jsonrpc": "2.0", "method": "ide/contextUpdate", "params": {"workspaceState": {"openFiles": []}}}
        self.wfile.write(b"event: message\ndata: " + json.dumps(update).encode() + b"\n\n")
        self.wfile.flush()
        self.release.wait(TIMEOUT)

    def do_DELETE(self) -> None:
        self._record()
        self.release.set()
        self.send_response(200)
        self.end_headers()


@pytest.fixture
def scripted() -> Iterator[tuple[int, list[tuple[str, dict[str, str], Any]]]]:
    seen: list[tuple[str, dict[str, str], Any]] = []
    release = threading.Event()
    handler = type("Handler", (ScriptedServer,), {"seen": seen, "release": release})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], seen
    release.set()
    server.shutdown()
    server.server_close()


def test_protocol_details(scripted: Any, sandbox: Any, bridges: Callable[..., BridgeProcess]) -> None:
    port, seen = scripted
    bridge = bridges(str(discovery_file(sandbox.tmp, port, "secret-token")))
    bridge.send(INITIALIZE)
    bridge.expect(lambda m: m.get("id") == 0, "the JSON answer")
    bridge.send(INITIALIZED)
    bridge.send(TOOLS_LIST)
    assert bridge.expect(lambda m: m.get("id") == 1, "the SSE answer")["result"] == {"tools": []}
    bridge.expect(lambda m: m.get("method") == "notifications/message", "the SSE notification before it")
    bridge.expect(lambda m: m.get("method") == "ide/contextUpdate", "the GET stream's notification")
    assert bridge.finish() == (0, "")

    methods = [(verb, body.get("method") if body else None) for verb, _, body in seen]
    assert methods[:2] == [("POST", "initialize"), ("POST", "notifications/initialized")]
    assert sorted(methods[2:4], key=str) == [("GET", None), ("POST", "tools/list")]  # either order
    assert methods[4:] == [("DELETE", None)]
    for verb, headers, body in seen:
        assert headers["authorization"] == "Bearer secret-token"
        assert headers["host"] == f"127.0.0.1:{port}"
        first = body is not None and body.get("method") == "initialize"
        assert headers.get("mcp-session-id") == (None if first else "session-1")
        assert headers.get("mcp-protocol-version") == (None if first else "2025-06-18")
        if verb == "POST":
            assert headers["accept"] == "application/json, text/event-stream"
            assert headers["content-type"] == "application/json"
        elif verb == "GET":
            assert headers["accept"] == "text/event-stream"
