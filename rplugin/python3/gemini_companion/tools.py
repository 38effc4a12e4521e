"""The model's editor tools: diagnostics, open buffers, unsaved text, LSP answers, open_file.

Served on their own endpoint (http_guard.EDITOR_PATH) to the CLIs' MCP clients, which the
plugin registers in their settings. Python checks every argument and confines every path to
the workspace (symlinks resolved); Neovim does the work in `lua/gemini_companion/tools.lua`
without blocking (LSP requests are asynchronous) and answers with `tool_result`. Nothing
here writes anything.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .feature import Link, Tool, error, text

if TYPE_CHECKING:
    import asyncio

    from .companion import Editor

ANSWER_SECONDS = 15.0  # Neovim's own bound for a language server is 5 s (tools.lua)
SEVERITIES = ("error", "warning", "info", "hint")


class ToolError(Exception):
    """Bad input: the one line the model gets back."""


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


PATH = {"type": "string", "description": "File path, absolute or relative to the workspace root"}
LINE = {"type": "integer", "minimum": 1, "description": "1-based line"}
POSITION = _schema(
    {"path": PATH, "line": LINE, "character": {"type": "integer", "minimum": 1, "description": "1-based column"}},
    ["path", "line", "character"],
)
SPECS: dict[str, tuple[str, dict[str, Any]]] = {
    "get_diagnostics": (
        "Errors, warnings and hints Neovim's language servers and linters report, for one file or the "
        "whole workspace (at most 500, most severe first).",
        _schema({"path": PATH, "severity": {"type": "string", "enum": list(SEVERITIES)}}, []),
    ),
    "get_open_buffers": (
        "The files open in the editor: modified or not, visible, cursor, filetype, which is current.",
        _schema({}, []),
    ),
    "read_buffer": (
        "A file's text as the user sees it in the editor, unsaved edits included, and whether that "
        "differs from the file on disk.",
        _schema({"path": PATH, "start_line": LINE, "end_line": LINE}, ["path"]),
    ),
    "lsp_definition": ("Where the symbol at a position is defined (language server).", POSITION),
    "lsp_references": ("Every reference to the symbol at a position (language server).", POSITION),
    "lsp_hover": ("The language server's hover text (type, docs) for a position.", POSITION),
    "lsp_document_symbols": ("The symbols a file defines (language server).", _schema({"path": PATH}, ["path"])),
    "lsp_workspace_symbols": (
        "Symbols matching a query across the workspace (language server).",
        _schema({"query": {"type": "string"}}, ["query"]),
    ),
    "open_file": (
        "Show the user a file (and line) in the editor, without taking focus from the agent.",
        _schema({"path": PATH, "line": LINE}, ["path"]),
    ),
}


def confine(path: Any, roots: list[str]) -> str:
    """The resolved absolute path, if it lies inside a workspace root (symlinks followed)."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise ToolError("path must be a non-empty string")
    if not roots:
        raise ToolError("the editor has no workspace folder")
    absolute = path if os.path.isabs(path) else os.path.join(roots[0], path)
    resolved = os.path.realpath(absolute)
    for root in roots:
        real_root = os.path.realpath(root)
        if resolved == real_root or resolved.startswith(real_root.rstrip(os.sep) + os.sep):
            return resolved
    raise ToolError(f"{path} is outside the workspace ({', '.join(roots)})")


def check(name: str, args: dict[str, Any], roots: list[str]) -> dict[str, Any]:
    """Arguments checked against the tool's schema, paths confined; what Lua gets."""
    properties = SPECS[name][1]["properties"]
    for key in args:
        if key not in properties:
            raise ToolError(f"unknown argument {key!r} (takes: {', '.join(properties) or 'none'})")
    for key in SPECS[name][1]["required"]:
        if key not in args:
            raise ToolError(f"missing argument {key!r}")
    checked: dict[str, Any] = {"roots": roots}
    for key, value in args.items():
        kind = properties[key]["type"]
        if kind == "integer" and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ToolError(f"{key} must be an integer >= 1")
        if kind == "string" and not isinstance(value, str):
            raise ToolError(f"{key} must be a string")
        checked[key] = confine(value, roots) if key == "path" else value
    if "severity" in checked and checked["severity"] not in SEVERITIES:
        raise ToolError(f"severity must be one of {', '.join(SEVERITIES)}")
    if checked.get("start_line", 1) > checked.get("end_line", 2**31):
        raise ToolError("start_line is after end_line")
    return checked


class ToolsFeature:
    def __init__(self, editor: Editor, link: Link, workspace: Callable[[], list[str]]) -> None:
        self._editor = editor
        self._link = link
        self._workspace = workspace
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._waiting: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future[dict[str, Any]]]] = {}
        self.methods: dict[str, Callable[[dict[str, Any]], Any]] = {"tool_result": self._result}

    def tools(self) -> list[Tool]:
        return []  # nothing for the IDE client

    def model_tools(self) -> list[Tool]:
        return [Tool(name, description, schema, self._handler(name)) for name, (description, schema) in SPECS.items()]

    async def on_stream_open(self, session_id: str) -> None: ...

    def on_client_gone(self, session_id: str) -> None: ...

    def on_stop(self) -> None:
        with self._lock:
            waiting, self._waiting = self._waiting, {}
        for loop, future in waiting.values():
            loop.call_soon_threadsafe(_settle, future, {"error": "the server stopped"})

    def status(self) -> dict[str, Any]:
        return {}

    def _handler(self, name: str) -> Callable[[str, dict[str, Any]], Any]:
        async def call(_session_id: str, args: dict[str, Any]) -> dict[str, Any]:
            try:
                checked = check(name, args, self._workspace())
            except ToolError as err:
                return error(f"{name}: {err}")
            answer = await self._ask(name, checked)
            if "error" in answer:
                return error(f"{name}: {answer['error']}")
            return text(json.dumps(answer.get("result"), ensure_ascii=False))

        return call

    async def _ask(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        import asyncio  # here, not at the top: asyncio costs the host's startup 45 ms

        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        call_id = next(self._ids)
        with self._lock:
            self._waiting[call_id] = (loop, future)
        self._editor.lua("require('gemini_companion.tools').call(...)", call_id, name, args)
        try:
            return await asyncio.wait_for(future, ANSWER_SECONDS)
        except asyncio.TimeoutError:
            return {"error": f"Neovim did not answer within {ANSWER_SECONDS:.0f} s"}
        finally:
            with self._lock:
                self._waiting.pop(call_id, None)

    def _result(self, params: dict[str, Any]) -> None:
        """Lua's answer (host main thread): hand it to the waiting tool call on the server loop."""
        with self._lock:
            waiting = self._waiting.get(int(params.get("id", 0)))
        if waiting is not None:
            loop, future = waiting
            loop.call_soon_threadsafe(_settle, future, params)


def _settle(future: asyncio.Future[dict[str, Any]], answer: dict[str, Any]) -> None:
    if not future.done():
        future.set_result(answer)
