"""MCP over stdio, relayed to the companion's HTTP server: the way in from a container.

In a container (/.dockerenv) the CLIs dial host.docker.internal instead of
127.0.0.1 and fail; then they spawn the `stdio` command the discovery file (or
GEMINI_CLI_IDE_SERVER_STDIO_*) names: this script, run as

    <python> -I stdio_bridge.py [DISCOVERY_FILE]

It reads newline-delimited JSON-RPC on stdin, POSTs each message to
http://127.0.0.1:PORT/mcp, and writes every message the server sends (POST
answers, JSON or SSE, and the GET notification stream) to stdout, one per line.

Port and token come from DISCOVERY_FILE (a non-secret path: argv is world-readable,
so the token never goes there), else from GEMINI_CLI_IDE_SERVER_PORT and
GEMINI_CLI_IDE_AUTH_TOKEN. The file wins because the CLIs spawn this with a
scrubbed environment (HOME, PATH, ...), and because it names the server that
advertised this command. Standard library only: it starts on every connect.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import sys
import threading
import time
from typing import Any, NoReturn

if __name__ == "__main__":  # run by a CLI (-I): the folder holding the package goes on sys.path
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from gemini_companion import env_names, files
from gemini_companion.server.discovery import MAX_FILE_BYTES

HOST = "127.0.0.1"  # only ever loopback: the token must not leave the machine
PATH = "/mcp"
STREAM_RETRIES = 5  # the GET stream is reopened this many times in a row before we give up
PROG = "gemini-companion stdio bridge"


class BridgeError(Exception):
    """Fatal: one line for stderr."""


class Unreachable(BridgeError):
    """Nothing listens on the port: the server is gone."""


def load_target(argv: list[str], environ: dict[str, str]) -> tuple[int, str]:
    """(port, token) from the discovery file named in argv, else from the environment."""
    if len(argv) > 1:
        raise BridgeError("usage: stdio_bridge.py [DISCOVERY_FILE]")
    if argv:
        return _read_discovery_file(argv[0])
    port, token = environ.get(env_names.GEMINI_PORT), environ.get(env_names.GEMINI_TOKEN)
    if not port or not token:
        raise BridgeError(f"no discovery file given and {env_names.GEMINI_PORT}/{env_names.GEMINI_TOKEN} not set")
    return _check_port(port), token


def _read_discovery_file(path: str) -> tuple[int, str]:
    try:
        # Same rule as the CLIs: a file someone else owns could send our requests anywhere.
        text, _ = files.read(path, MAX_FILE_BYTES, follow=False, owner=os.getuid())
    except FileNotFoundError:
        raise BridgeError(f"{path} does not exist: is the Neovim companion server still running?") from None
    except files.Unreadable as err:
        raise BridgeError(f"refusing {path}: {err.reason}") from None
    except OSError as err:
        raise BridgeError(f"cannot open {path}: {err.strerror}") from None
    try:
        data = json.loads(text)
    except ValueError:
        raise BridgeError(f"{path} is not valid JSON") from None
    token = data.get("authToken") if isinstance(data, dict) else None
    if not isinstance(token, str) or not token:
        raise BridgeError(f"{path} has no authToken")
    return _check_port(data.get("port")), token


def _check_port(value: object) -> int:
    try:
        port = int(str(value))
    except ValueError:
        port = 0
    if not 0 < port < 65536:
        raise BridgeError(f"invalid port {value!r}")
    return port


class Bridge:
    def __init__(self, port: int, token: str, stdout: Any) -> None:
        self._port = port
        self._token = token
        self._stdout = stdout
        self._out_lock = threading.Lock()  # one writer at a time, or lines interleave
        self._session: str | None = None
        self._protocol: str | None = None
        self._initialize_id: object = None
        self._stream: threading.Thread | None = None
        self.closing = False

    # --- stdout -------------------------------------------------------------

    def emit(self, message: Any) -> None:
        messages = message if isinstance(message, list) else [message]
        with self._out_lock:
            for item in messages:
                self._note(item)
                self._stdout.write(json.dumps(item, separators=(",", ":")).encode() + b"\n")
            self._stdout.flush()

    def _note(self, message: Any) -> None:
        """Remember the negotiated protocol version: later requests carry it as a header."""
        if isinstance(message, dict) and message.get("id") == self._initialize_id and "result" in message:
            version = message["result"].get("protocolVersion")
            self._protocol = version if isinstance(version, str) else None

    # --- HTTP ---------------------------------------------------------------

    def _headers(self, accept: str) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self._token}", "Accept": accept}
        if self._session:
            headers["mcp-session-id"] = self._session
        if self._protocol:
            headers["mcp-protocol-version"] = self._protocol
        return headers

    def _request(self, method: str, body: bytes | None, accept: str) -> http.client.HTTPResponse:
        # No timeout: answers and the notification stream may idle for long, a refused
        # loopback connect fails at once, and the client times out its own requests.
        conn = http.client.HTTPConnection(HOST, self._port)
        headers = self._headers(accept)
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            conn.request(method, PATH, body=body, headers=headers)
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as err:
            conn.close()
            raise Unreachable(f"cannot reach the Neovim companion server at {HOST}:{self._port}: {err}") from None
        session = response.getheader("mcp-session-id")
        if session:
            self._session = session
        if response.status == 401:
            raise BridgeError(f"the server at {HOST}:{self._port} refused the token (HTTP 401): stale discovery file?")
        return response

    def post(self, line: bytes) -> None:
        """Send one client message; its answer is relayed by a thread, so a slow one blocks nothing."""
        try:
            message = json.loads(line)
        except RecursionError:  # nested deeper than Python's reader goes: relayed, the server answers it
            message = None
        except ValueError:
            print(f"{PROG}: ignoring a line that is not JSON", file=sys.stderr)
            return
        if isinstance(message, dict) and message.get("method") == "initialize":
            self._initialize_id = message.get("id")
        response = self._request("POST", line, "application/json, text/event-stream")
        if response.status == 404 and self._session:
            raise BridgeError("the server forgot this session (HTTP 404): reconnect the CLI (/ide enable)")
        if response.status >= 300:
            detail = response.read(200).decode(errors="replace").strip()
            response.close()
            if response.status >= 500:
                raise BridgeError(f"server error HTTP {response.status}: {detail}")
            self._fail_request(message, f"HTTP {response.status}: {detail}")
            return
        threading.Thread(target=self._relay, args=(response,), daemon=True).start()
        if isinstance(message, dict) and message.get("method") == "notifications/initialized":
            self._open_stream()

    def _fail_request(self, message: Any, reason: str) -> None:
        """A refused request gets a JSON-RPC error, so the client does not wait for it forever."""
        if isinstance(message, dict) and "id" in message and "method" in message:
            self.emit({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32603, "message": reason}})
        else:
            print(f"{PROG}: the server refused a message: {reason}", file=sys.stderr)

    def _relay(self, response: http.client.HTTPResponse) -> None:
        try:
            kind = (response.getheader("Content-Type") or "").split(";")[0].strip()
            if kind == "text/event-stream":
                for data in sse_messages(response):
                    self.emit(json.loads(data))
            elif kind == "application/json":
                body = response.read()
                if body.strip():
                    self.emit(json.loads(body))
            else:
                response.read()  # 202 Accepted: nothing to relay
        except (OSError, ValueError, http.client.HTTPException) as err:
            if not self.closing:
                print(f"{PROG}: lost an answer from the server: {err}", file=sys.stderr)
        finally:
            response.close()

    # --- the notification stream ------------------------------------------------

    def _open_stream(self) -> None:
        if self._stream is None:
            self._stream = threading.Thread(target=self._listen, daemon=True)
            self._stream.start()

    def _listen(self) -> None:
        """Relay the server's GET stream (ide/contextUpdate, ide/diffAccepted, ...); reopen it if it ends."""
        failures = 0
        while not self.closing:
            try:
                response = self._request("GET", None, "text/event-stream")
                if response.status == 405:
                    return  # this server pushes nothing outside answers
                if response.status != 200:
                    raise BridgeError(f"the server refused the notification stream (HTTP {response.status})")
                failures = 0
                for data in sse_messages(response):
                    self.emit(json.loads(data))
            except Unreachable as err:
                if not self.closing:
                    die(str(err))
            except (OSError, ValueError, http.client.HTTPException, BridgeError) as err:
                failures += 1
                if failures > STREAM_RETRIES and not self.closing:
                    die(f"the notification stream failed: {err}")
            if not self.closing:
                time.sleep(min(0.1 * 2**failures, 2.0))  # back off: the server may be restarting the stream

    # --- shutdown -----------------------------------------------------------

    def end_session(self) -> None:
        """Tell the server this client is gone (best effort): the CLIs never do."""
        self.closing = True
        if not self._session:
            return
        try:
            conn = http.client.HTTPConnection(HOST, self._port, timeout=2.0)
            conn.request("DELETE", PATH, headers=self._headers("application/json"))
            conn.getresponse().read()
            conn.close()
        except (OSError, http.client.HTTPException):
            pass


def sse_messages(response: Any) -> Any:
    """The `data` of each server-sent event, until the stream ends."""
    data: list[bytes] = []
    for raw in response:
        line = raw.rstrip(b"\r\n")
        if not line:
            if data:
                yield b"\n".join(data)
                data = []
        elif line.startswith(b"data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(b" ") else value)
        # Comments (":"), event, id and retry fields carry nothing the client needs.


def die(message: str) -> NoReturn:
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)
    os._exit(1)  # from any thread, without waiting for the others


def main(argv: list[str]) -> NoReturn:
    try:
        port, token = load_target(argv, dict(os.environ))
    except BridgeError as err:
        die(str(err))
    bridge = Bridge(port, token, sys.stdout.buffer)

    def stop(_signum: int, _frame: Any) -> None:
        bridge.end_session()
        os._exit(0)

    # The client ends us with SIGTERM (transport.close()) or by closing stdin; Ctrl-C in
    # the CLI's terminal is the CLI's business, not ours.
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        for line in sys.stdin.buffer:
            if line.strip():
                bridge.post(line)
    except BridgeError as err:
        bridge.end_session()
        die(str(err))
    except BrokenPipeError:
        pass  # the client is gone
    bridge.end_session()
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
