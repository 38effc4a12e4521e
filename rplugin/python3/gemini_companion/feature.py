"""The seam between the server core and what it offers (context sharing, reviews).

A feature is a plain object: Lua-callable methods, MCP tools, and reactions to
clients coming and going. It talks to clients through `Link`, which is safe to
use from any thread. Light on purpose: importing this costs nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

# A tool handler returns a CallToolResult as a dict: {"content": [...], "isError"?: bool}.
ToolHandler = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    handler: ToolHandler  # (session_id, arguments) -> result; runs on the server loop


def text(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}]}


def error(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


class Link(Protocol):
    """The running server, as features see it."""

    def broadcast(self, method: str, params: dict[str, Any]) -> None:
        """Notify every connected client (fire and forget; any thread)."""

    def send(self, session_id: str, method: str, params: dict[str, Any]) -> None:
        """Notify one client (fire and forget; any thread)."""

    def changed(self) -> None:
        """The feature's status() changed: push the status to Neovim."""

    def label(self, session_id: str) -> str | None:
        """Who the client is ("qwen (Qwen Code 0.24.4)", "external Gemini CLI 0.61.0")."""


class Feature(Protocol):
    methods: dict[str, Callable[[dict[str, Any]], Any]]
    """Calls from Lua by name; a method returning None answers with the status."""

    def tools(self) -> list[Tool]: ...

    async def on_stream_open(self, session_id: str) -> None:
        """A client's notification stream opened: send it what it should know."""

    def on_client_gone(self, session_id: str) -> None: ...

    def on_stop(self) -> None:
        """The server is stopping (or Neovim exiting)."""

    def status(self) -> dict[str, Any]:
        """Fields merged into the status table (e.g. {"diffs": [...]})."""
