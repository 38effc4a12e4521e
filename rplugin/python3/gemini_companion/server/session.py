"""A client's session on the MCP server (who it is, its notification stream, its state), the
server's limits, and the companion's callbacks it calls."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gemini_companion.feature import Tool
from gemini_companion.server.http_guard import MCP_PATH

if TYPE_CHECKING:
    from gemini_companion.server.access import Identity


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = 32 * 1024 * 1024
    max_sessions: int = 64
    # Only counts while a client has no request or stream open: a live CLI
    # always holds its GET stream, so this reaps clients that vanished.
    session_idle_seconds: float = 600.0


@dataclass
class Session:
    id: str
    name: str
    version: str
    last_seen: float = field(default_factory=time.monotonic)
    initialized: bool = False  # `notifications/initialized` arrived
    listed: bool = False  # shown as a client (initialized, and its stream not gone for long)
    busy: int = 0  # requests in flight
    stream: asyncio.Queue[bytes | None] | None = None  # set while the GET stream is open
    identity: Identity | None = None  # whose token opened it; only that token may use it
    path: str = MCP_PATH  # the endpoint it was opened on

    @property
    def label(self) -> str:
        return self.identity.label(self.version) if self.identity else f"{self.name} {self.version}".strip()

    def describe(self) -> dict[str, Any]:
        return {
            "session": self.id[:8],
            "name": self.name,
            "version": self.version,
            "stream": self.stream is not None,
            "label": self.label,
            "agent": self.identity.agent if self.identity else None,
        }


@dataclass
class Hooks:
    """Callbacks into the companion; all are called on the server thread."""

    on_ready: Callable[[], None]
    on_failed: Callable[[str], None]
    on_clients: Callable[[list[dict[str, Any]]], None]
    # A client's notification stream just opened: the place to send it current state.
    on_stream_open: Callable[[str], Coroutine[Any, Any, None]]
    on_client_gone: Callable[[str], None] = lambda _sid: None
    tools: list[Tool] = field(default_factory=list)  # the IDE client's (openDiff, closeDiff)
    model_tools: list[Tool] = field(default_factory=list)  # the model's, on EDITOR_PATH (tools.py)
    # A CLI hook's event on HOOKS_PATH (hook.py -> changes.py): its JSON in, the answer's out.
    on_hook: Callable[[dict[str, Any]], Coroutine[Any, Any, dict[str, Any]]] | None = None
