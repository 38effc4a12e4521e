"""JSON-RPC as MCP's streamable HTTP carries it: the versions spoken, an error answered with an HTTP
status, the encoding of a message, and the answer of a POST."""

from __future__ import annotations

import json
from typing import Any

from gemini_companion.server.http_guard import Send, quote

# Newest first; a client asking for another gets the newest (it then decides).
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")


class RpcError(Exception):
    """A JSON-RPC error answered with an HTTP status (the request never reached a handler)."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def check_protocol_version(headers: dict[str, str]) -> None:
    version = headers.get("mcp-protocol-version")
    if version is not None and version not in PROTOCOL_VERSIONS:
        raise RpcError(400, -32600, f"unsupported mcp-protocol-version {quote(version)}")


def dumps(message: dict[str, Any]) -> bytes:
    try:
        return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()
    except UnicodeEncodeError:  # text from Neovim that was not UTF-8 (pynvim surrogate-escapes it)
        return json.dumps(message, separators=(",", ":")).encode()


def error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


async def send_json(send: Send, status: int, message: dict[str, Any], extra: list[tuple[bytes, bytes]] = []) -> None:  # noqa: B006 - never mutated
    body = dumps(message)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
