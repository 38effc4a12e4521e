"""The model's editor tools: diagnostics, open buffers, unsaved text, LSP answers, open_file.

Served on their own endpoint (http_guard.EDITOR_PATH) to the CLIs' MCP clients, which the
plugin registers in their settings. Python checks every argument and confines every path to
the workspace (symlinks resolved); Neovim does the work in `lua/gemini_companion/tools/`
without blocking (LSP requests are asynchronous) and answers with `tool_result`. Nothing
here writes anything.

A checked path can be swapped (a symlink, a directory) before it is read, so the bytes a tool
gives are never read by path: `read_inside` (confined.py) opens the file one component at a time from `/`,
through the root as it was resolved when it was set (launch.clean_roots), without following any
link, and Lua gets those bytes (`file`) with the call. A root is never resolved again: a root
(or a folder above it) replaced by a link later is refused, never followed.
Resolving a path (`confine`) and reading it run off the server loop, on a thread of their own,
for at most READ_SECONDS (`Reader`, reader.py): a file on a hung mount, where even a stat never returns, is a
one-line error in time and holds up no later call. read_buffer with an end_line reads only up to
that line (a 200 MB log answers its first lines).
Lua reads no file itself; where Neovim must load one (a language server needs a buffer) it keeps
the buffer only if it holds exactly these bytes, and lets it go when the tool is done. Snippets
of other files (an LSP definition's line) come from `read_inside` too, so a location outside the
workspace never brings its text.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gemini_companion.feature import Link, Tool, error, text
from gemini_companion.server.http_guard import quote
from gemini_companion.tools.confined import MAX_FILE_BYTES, ToolError, confine, read_inside
from gemini_companion.tools.reader import Reader, settle

if TYPE_CHECKING:
    import asyncio

    from gemini_companion.companion import Editor

ANSWER_SECONDS = 15.0  # Neovim's own bound for a language server is 5 s (tools/lsp.lua)
SEVERITIES = ("error", "warning", "info", "hint")
MAX_STRING = 1000  # any other string argument (a symbol query)
MAX_INTEGER = 2**31 - 1  # lines and columns
MAX_MESSAGE = 300  # an error line the model gets
SNIPPET_CHARS = 500  # of a definition's or reference's line
# Tools whose path names a file they read: Python reads it (read_inside) and hands Lua the bytes.
READS = {"read_buffer", "open_file", "lsp_definition", "lsp_references", "lsp_hover", "lsp_document_symbols"}
SNIPPETS = {"lsp_definition": "definitions", "lsp_references": "references"}


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


def _file(path: str, roots: list[str], lines: int | None = None) -> dict[str, Any]:
    """What Lua gets of the file a tool names: its bytes (`partial` when only the first `lines`
    lines were read and the file goes on), or why there are none."""
    try:
        data = read_inside(path, roots, lines)
    except ToolError as err:
        return {"error": str(err)}
    except OSError as err:  # none is expected: still one line, never a traceback
        return {"error": f"{quote(path, 200)}: {err.strerror or err}"}
    if lines is not None and data.count(b"\n") >= lines:
        return {"data": data, "partial": True}
    return {"data": data}


def _add_snippets(items: list[dict[str, Any]], roots: list[str]) -> None:
    """A location's line, read inside the workspace (up to the last line asked for): Lua gives
    the line of a buffer with unsaved edits, and `file` (the resolved path, dropped here) for the
    others."""
    wanted: dict[str, int] = {}
    for item in items:
        path, line = item.get("file"), item.get("line")
        if isinstance(path, str) and "text" not in item and isinstance(line, int) and line >= 1:
            wanted[path] = max(wanted.get(path, 0), line)
    lines: dict[str, list[str] | None] = {}
    for item in items:
        path = item.pop("file", None)
        if not isinstance(path, str) or "text" in item or path not in wanted:
            continue
        if path not in lines:
            try:
                lines[path] = read_inside(path, roots, wanted[path]).decode("utf-8", "replace").split("\n")
            except (ToolError, OSError):  # no text then: the location stands alone
                lines[path] = None
        found = lines[path]
        line = item.get("line")
        if found is not None and isinstance(line, int) and 1 <= line <= len(found):
            item["text"] = found[line - 1].strip()[:SNIPPET_CHARS]


def one_line(message: str) -> str:
    """An error as the model gets it: one line, short."""
    flat = " ".join(message.split())
    return flat if len(flat) <= MAX_MESSAGE else flat[: MAX_MESSAGE - 3] + "..."


def clean(text: str) -> str:
    """Valid Unicode for the JSON answer: bytes that were not UTF-8 (pynvim hands them over
    surrogate-escaped) become U+FFFD. ASCII is valid as it is (a 1 MB answer is not copied twice)."""
    if text.isascii():
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a surrogate no escaping made
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def check(name: str, args: dict[str, Any], roots: list[str]) -> dict[str, Any]:
    """Arguments checked against the tool's schema, paths confined; what Lua gets."""
    properties = SPECS[name][1]["properties"]
    for key in args:
        if key not in properties:
            raise ToolError(f"unknown argument {quote(key)} (takes: {', '.join(properties) or 'none'})")
    for key in SPECS[name][1]["required"]:
        if key not in args:
            raise ToolError(f"missing argument {key!r}")
    checked: dict[str, Any] = {"roots": roots}
    for key, value in args.items():
        kind = properties[key]["type"]
        if kind == "integer" and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ToolError(f"{key} must be an integer >= 1")
        if kind == "integer" and value > MAX_INTEGER:
            raise ToolError(f"{key} must be an integer >= 1 and <= {MAX_INTEGER}")
        if kind == "string" and not isinstance(value, str):
            raise ToolError(f"{key} must be a string")
        if kind == "string" and key != "path" and len(value) > MAX_STRING:
            raise ToolError(f"{key} {quote(value)} is longer than {MAX_STRING} characters")
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
        self._reader = Reader()
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
            loop.call_soon_threadsafe(settle, future, {"error": "the server stopped"})

    def status(self) -> dict[str, Any]:
        return {}

    def _handler(self, name: str) -> Callable[[str, dict[str, Any]], Any]:
        async def call(_session_id: str, args: dict[str, Any]) -> dict[str, Any]:
            roots = self._workspace()

            def prepare() -> dict[str, Any]:
                checked = check(name, args, roots)
                if name in READS:
                    lines = checked.get("end_line") if name == "read_buffer" else None
                    checked["file"] = _file(checked["path"], roots, lines)
                    checked["max_bytes"] = MAX_FILE_BYTES  # a buffer's unsaved text is bounded alike
                return checked

            try:
                if "path" in args:  # resolving it stats, reading it reads: off the server loop, bounded
                    path = args["path"]
                    what = quote(path if isinstance(path, str) else "the path", 200)
                    checked = await self._reader.run(what, prepare)
                else:
                    checked = prepare()
            except ToolError as err:  # nothing asked of Neovim: nothing left pending there
                return error(one_line(f"{name}: {err}"))
            answer = await self._ask(name, checked)
            if "error" in answer:
                return error(clean(one_line(f"{name}: {answer['error']}")))
            result = answer.get("result")
            items = result.get(SNIPPETS[name]) if name in SNIPPETS and isinstance(result, dict) else None
            if isinstance(items, list):
                mine = [dict(item) if isinstance(item, dict) else item for item in items]
                try:  # on a copy: a read still hung after its time must change nothing sent
                    await self._reader.run("a location's file", lambda: _add_snippets(mine, roots))
                    result[SNIPPETS[name]] = mine  # type: ignore[index]  # a dict: `items` came from it
                except ToolError:  # the locations stand without their lines
                    for item in items:
                        item.pop("file", None)
            return text(clean(json.dumps(result, ensure_ascii=False)))

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
            loop.call_soon_threadsafe(settle, future, params)
