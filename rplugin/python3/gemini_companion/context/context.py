"""Context sharing: the open files, cursor and selection Neovim pushes, relayed to clients.

The Lua side (lua/gemini_companion/context/init.lua) computes the state, debounced, and
calls the "context" method only when it changed. Here it is checked, kept and
broadcast as `ide/contextUpdate`; a client whose notification stream opens gets
the current state at once (anything sent before that is dropped by the client).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from gemini_companion.feature import Link, Tool

METHOD = "ide/contextUpdate"


class ContextFeature:
    def __init__(self, link: Link) -> None:
        self._link = link
        # Updates arrive on the host's main thread, streams open on the server loop. The lock
        # also orders sends: a new client never gets an older state after a newer broadcast.
        self._lock = threading.Lock()
        self._state: dict[str, Any] | None = None
        self.methods: dict[str, Callable[[dict[str, Any]], Any]] = {"context": self.update}

    def update(self, params: dict[str, Any]) -> None:
        state = workspace_state(params)
        with self._lock:
            if state != self._state:
                self._state = state
                self._link.broadcast(METHOD, {"workspaceState": state})

    def tools(self) -> list[Tool]:
        return []

    async def on_stream_open(self, session_id: str) -> None:
        with self._lock:
            if self._state is not None:
                self._link.send(session_id, METHOD, {"workspaceState": self._state})

    def on_client_gone(self, session_id: str) -> None:
        pass

    def on_stop(self) -> None:
        with self._lock:
            self._state = None

    def status(self) -> dict[str, Any]:
        return {}


def workspace_state(params: dict[str, Any]) -> dict[str, Any]:
    """A clean copy of the `workspaceState` Lua sent; a clear error for anything malformed."""
    files = params.get("openFiles")
    if not isinstance(files, list):
        raise ValueError("gemini-companion: context needs openFiles (a list)")
    state: dict[str, Any] = {"openFiles": [_file(f) for f in files]}
    trusted = params.get("isTrusted")
    if trusted is not None:
        if not isinstance(trusted, bool):
            raise ValueError("gemini-companion: context isTrusted must be a boolean")
        state["isTrusted"] = trusted
    return state


def _file(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict) or not isinstance(raw.get("path"), str) or not _is_number(raw.get("timestamp")):
        raise ValueError(f"gemini-companion: context file needs a path and a timestamp, got {raw!r:.200}")
    file: dict[str, Any] = {"path": _utf8(raw["path"]), "timestamp": raw["timestamp"]}
    if raw.get("isActive") is True:
        file["isActive"] = True
    cursor = raw.get("cursor")
    if cursor is not None:
        if not isinstance(cursor, dict) or not all(_is_number(cursor.get(k)) for k in ("line", "character")):
            raise ValueError(f"gemini-companion: context cursor needs line and character, got {cursor!r:.200}")
        file["cursor"] = {"line": cursor["line"], "character": cursor["character"]}
    text = raw.get("selectedText")
    if text is not None:
        if not isinstance(text, str):
            raise ValueError("gemini-companion: context selectedText must be a string")
        file["selectedText"] = _utf8(text)
    return file


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _utf8(text: str) -> str:
    """Buffers may hold invalid UTF-8 (pynvim hands it over as surrogate escapes); JSON cannot carry it."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
