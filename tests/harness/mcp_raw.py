"""A deliberately raw MCP-over-HTTP client for adversarial tests: every byte is ours to choose."""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlparse

ACCEPT = "application/json, text/event-stream"


def parse_body(content_type: str, body: bytes) -> list[dict[str, Any]]:
    """JSON-RPC messages in a response, whether sent as JSON or as an SSE stream."""
    if not body:
        return []
    if content_type.startswith("text/event-stream"):
        lines = body.decode().splitlines()
        return [json.loads(line[5:]) for line in lines if line.startswith("data:") and line[5:].strip()]
    parsed = json.loads(body)
    return parsed if isinstance(parsed, list) else [parsed]


def initialize_request(name: str = "raw-probe") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": name, "version": "1"}},
    }


class RawSession:
    def __init__(self, port: int, token: str, path: str = "/mcp") -> None:
        self.port = port
        self.token = token
        self.path = path
        self.session_id: str | None = None

    def headers(self, **extra: str) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.token}", "Accept": ACCEPT, "Content-Type": "application/json"}
        if self.session_id:
            headers["mcp-session-id"] = self.session_id
            headers["mcp-protocol-version"] = "2025-06-18"
        headers.update(extra)
        return headers

    def post_raw(self, body: bytes, **extra: str) -> tuple[int, list[dict[str, Any]], http.client.HTTPResponse]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request("POST", self.path, body=body, headers=self.headers(**extra))
            response = conn.getresponse()
            data = response.read()
            messages = parse_body(response.getheader("content-type", ""), data) if response.status < 300 else []
            return response.status, messages, response
        finally:
            conn.close()

    def post(self, message: dict[str, Any] | list[Any]) -> tuple[int, list[dict[str, Any]]]:
        status, messages, _ = self.post_raw(json.dumps(message).encode())
        return status, messages

    def initialize(self, name: str = "raw-probe") -> None:
        status, _, response = self.post_raw(json.dumps(initialize_request(name)).encode())
        assert status == 200, status
        self.session_id = response.getheader("mcp-session-id")
        status, _ = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert status == 202, status

    def call(self, method: str, params: dict[str, Any] | None = None, request_id: int = 1) -> dict[str, Any]:
        status, messages = self.post({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}})
        assert status == 200, status
        (reply,) = [m for m in messages if m.get("id") == request_id]
        return reply

    def open_stream(self) -> http.client.HTTPResponse:
        """The client's GET stream for server notifications (caller reads and closes it)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        conn.request("GET", self.path, headers=self.headers(Accept="text/event-stream"))
        response = conn.getresponse()
        assert response.status == 200, response.status
        return response


class ToolsClient:
    """An MCP client of the editor tools endpoint, as the CLIs' MCP clients are."""

    def __init__(self, status: dict[str, Any]) -> None:
        url = urlparse(status["tools"]["url"])
        token = status["tools"]["headers"]["Authorization"].removeprefix("Bearer ")
        self.session = RawSession(url.port or 0, token, url.path)
        self.session.initialize("model-tools-test")
        self.next_id = 1

    def raw(self, name: str, **arguments: Any) -> dict[str, Any]:
        self.next_id += 1
        reply = self.session.call("tools/call", {"name": name, "arguments": arguments}, self.next_id)
        return reply["result"]

    def __call__(self, name: str, **arguments: Any) -> Any:
        result = self.raw(name, **arguments)
        assert not result.get("isError"), result
        return json.loads(result["content"][0]["text"])

    def refused(self, name: str, **arguments: Any) -> str:
        result = self.raw(name, **arguments)
        assert result.get("isError"), result
        message = result["content"][0]["text"]
        assert "\n" not in message
        return message
