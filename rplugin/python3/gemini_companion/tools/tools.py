"""The model's editor tools: diagnostics, open buffers, unsaved text, LSP answers, open_file.

Served on their own endpoint (http_guard.EDITOR_PATH) to the CLIs' MCP clients, which the
plugin registers in their settings. Python checks every argument and confines every path to
the workspace (symlinks resolved); Neovim does the work in `lua/gemini_companion/tools/`
without blocking (LSP requests are asynchronous) and answers with `tool_result`. Nothing
here writes anything.

A checked path can be swapped (a symlink, a directory) before it is read, so the bytes a tool
gives are never read by path: `read_inside` opens the file one component at a time from `/`,
through the root as it was resolved when it was set (launch.clean_roots), without following any
link, and Lua gets those bytes (`file`) with the call. A root is never resolved again: a root
(or a folder above it) replaced by a link later is refused, never followed.
Resolving a path (`confine`) and reading it run off the server loop, on a thread of their own,
for at most READ_SECONDS (`Reader`): a file on a hung mount, where even a stat never returns, is a
one-line error in time and holds up no later call. read_buffer with an end_line reads only up to
that line (a 200 MB log answers its first lines).
Lua reads no file itself; where Neovim must load one (a language server needs a buffer) it keeps
the buffer only if it holds exactly these bytes, and lets it go when the tool is done. Snippets
of other files (an LSP definition's line) come from `read_inside` too, so a location outside the
workspace never brings its text.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import os
import stat
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gemini_companion import files
from gemini_companion.feature import Link, Tool, error, text
from gemini_companion.server.http_guard import MAX_PATH, quote

if TYPE_CHECKING:
    import asyncio

    from gemini_companion.companion import Editor

ANSWER_SECONDS = 15.0  # Neovim's own bound for a language server is 5 s (tools/lsp.lua)
READ_SECONDS = 5.0  # a file that gives no bytes in this time (a hung mount) is an error
MAX_HUNG_READS = 16  # reads still stuck after their time: more refuse at once (threads are not free)
SEVERITIES = ("error", "warning", "info", "hint")
MAX_FILE_BYTES = 8 << 20  # what a tool reads of one file; a larger one is refused
CHUNK = 64 << 10  # one read(2): a range reads at most this much past its last line
MAX_STRING = 1000  # any other string argument (a symbol query)
MAX_INTEGER = 2**31 - 1  # lines and columns
MAX_MESSAGE = 300  # an error line the model gets
SNIPPET_CHARS = 500  # of a definition's or reference's line
# Tools whose path names a file they read: Python reads it (read_inside) and hands Lua the bytes.
READS = {"read_buffer", "open_file", "lsp_definition", "lsp_references", "lsp_hover", "lsp_document_symbols"}
SNIPPETS = {"lsp_definition": "definitions", "lsp_references": "references"}
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# A folder on the way to a file: never a link; O_PATH (Linux) needs only search permission.
FOLDER = (getattr(os, "O_PATH", 0) or os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | CLOEXEC


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
    """The resolved absolute path, if it lies inside a workspace root (symlinks followed). A
    check only: what is read is read by `read_inside`, which holds even if the path changes."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise ToolError("path must be a non-empty string without NUL")
    if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH:
        raise ToolError(f"path {quote(path)} is longer than {MAX_PATH} bytes")
    if not roots:
        raise ToolError("the editor has no workspace folder")
    absolute = path if os.path.isabs(path) else os.path.join(roots[0], path)
    try:
        resolved = os.path.realpath(absolute)
    except OSError:  # a link that vanished between realpath's lstat and readlink
        raise ToolError(f"{quote(path)} changed while it was being resolved") from None
    if _root_of(resolved, roots) is None:
        raise ToolError(f"{quote(path)} is outside the workspace ({quote(', '.join(roots), 200)})")
    return resolved


def _root_of(path: str, roots: list[str]) -> str | None:
    """The root `path` lies in, by name. Roots are compared as stored (resolved once, when they
    were set): resolving them again would follow a link swapped in for one since."""
    for root in roots:
        if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
            return root
    return None


def read_inside(path: str, roots: list[str], lines: int | None = None) -> bytes:
    """The bytes of the regular file `path` (absolute, resolved: what `confine` returns), opened
    one component at a time from `/` through its root as stored, never through a symlink
    (O_NOFOLLOW): a link or directory swapped in after the check, for a folder of the file or of
    the root, makes the open fail instead of leaving the workspace. FIFOs and devices are refused
    without blocking (O_NONBLOCK, then fstat), large files by size. With `lines`, only the file's
    first `lines` lines are read (the bytes end after the last one's newline, or at the end of the
    file): the size limit is then on those bytes, not on the file. ToolError (one line) for all
    of that."""
    root = _root_of(path, roots)
    if root is None:
        raise ToolError(f"{quote(path)} is outside the workspace")
    relative = os.path.relpath(path, root)
    name = quote(relative, 200)
    parts = [part for part in relative.split(os.sep) if part not in ("", ".")]
    if not parts or ".." in parts:
        raise ToolError(f"{name} is not a file")
    dir_fd = _open_root(root)
    try:
        for part in parts[:-1]:
            try:
                fd = os.open(part, FOLDER, dir_fd=dir_fd)
            except OSError as err:
                raise ToolError(f"{name}: {_why(err, part, dir_fd)}") from None
            os.close(dir_fd)
            dir_fd = fd
        try:  # the leaf judged on what was opened: never through a link, never waiting on a FIFO
            fd, info = files.open_judged(parts[-1], dir_fd=dir_fd, follow=False)
        except files.Unreadable as err:
            what = "is a directory" if err.reason == "a folder" else "is not a regular file (a FIFO, socket or device)"
            raise ToolError(f"{name} {what}") from None
        except OSError as err:
            raise ToolError(f"{name}: {_why(err, parts[-1], dir_fd)}") from None
    finally:
        os.close(dir_fd)
    try:
        too_big = f"{name} is larger than the {MAX_FILE_BYTES >> 20} MiB a tool reads"
        if lines is None and info.st_size > MAX_FILE_BYTES:
            raise ToolError(too_big)
        data = bytearray()
        found = 0  # newlines in `data`
        while len(data) <= MAX_FILE_BYTES:
            chunk = os.read(fd, min(CHUNK, MAX_FILE_BYTES + 1 - len(data)))
            if not chunk:
                return bytes(data)
            if lines is not None and found + chunk.count(b"\n") >= lines:
                end = -1
                for _ in range(lines - found):
                    end = chunk.index(b"\n", end + 1)
                return bytes(data + chunk[: end + 1])
            found += chunk.count(b"\n")
            data += chunk
        if lines is not None:
            raise ToolError(
                f"the first {lines} lines of {name} are more than the {MAX_FILE_BYTES >> 20} MiB a tool reads"
            )
        raise ToolError(too_big)
    except OSError as err:
        raise ToolError(f"{name}: {err.strerror}") from None
    finally:
        os.close(fd)


def _open_root(root: str) -> int:
    """A descriptor of the folder `root` names, walked from `/` without following any link: the
    root was resolved when it was set, so a link on its way now is one swapped in since."""
    parts = [part for part in root.split(os.sep) if part]
    if not os.path.isabs(root) or ".." in parts:
        raise ToolError(f"the workspace folder {quote(root, 200)} is not a resolved path")
    try:
        dir_fd = os.open(os.sep, FOLDER)
    except OSError as err:
        raise ToolError(f"the workspace folder cannot be opened: {err.strerror}") from None
    for part in parts:
        try:
            fd = os.open(part, FOLDER, dir_fd=dir_fd)
        except OSError as err:
            raise ToolError(f"the workspace folder {quote(root, 200)}: {_why(err, part, dir_fd)}") from None
        finally:
            os.close(dir_fd)
        dir_fd = fd
    return dir_fd


def _why(err: OSError, part: str, dir_fd: int) -> str:
    """Why opening `part` (in `dir_fd`) failed, in words."""
    try:
        link = stat.S_ISLNK(os.stat(part, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        link = False
    if link:  # O_NOFOLLOW met a symlink where the check had resolved none
        return "changed while it was being opened (a symlink appeared)"
    if err.errno in (errno.ENOENT, errno.ENOTDIR):
        return "no such file"
    if err.errno == errno.ENXIO:  # what open(2) says of a socket (and of a device with no driver)
        return "is not a regular file (a socket or device)"
    return err.strerror or str(err)


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


class Reader:
    """Runs file reads off the server loop, each on a thread of its own, for at most
    READ_SECONDS: a read stuck in the kernel (a hung mount) cannot be cancelled, so it keeps only
    its own thread and never holds up later calls (the shared executor would, once its few workers
    all hang). While MAX_HUNG_READS reads are still stuck past their time, reads are refused at
    once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._hung = 0

    async def run(self, what: str, read: Callable[[], Any]) -> Any:
        """read()'s value, or ToolError (one line) when it does not return in time."""
        import asyncio  # here, not at the top: asyncio costs the host's startup 45 ms

        with self._lock:
            if self._hung >= MAX_HUNG_READS:
                raise ToolError(f"{self._hung} earlier file reads are still hung (a stuck mount?)")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        state = {"ended": False, "late": False}

        def work() -> None:
            try:
                value: Any = ("ok", read())
            except Exception as err:  # noqa: BLE001 - handed to the caller, who raises it
                value = ("raise", err)
            with self._lock:
                state["ended"] = True
                self._hung -= state["late"]
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
                loop.call_soon_threadsafe(_settle, future, value)

        threading.Thread(target=work, name="gemini-companion-read", daemon=True).start()
        try:
            kind, value = await asyncio.wait_for(asyncio.shield(future), READ_SECONDS)
        except asyncio.TimeoutError:
            with self._lock:
                if not state["ended"]:
                    state["late"] = True
                    self._hung += 1
            raise ToolError(f"{what} gave nothing within {READ_SECONDS:g} s (a hung mount?)") from None
        if kind == "raise":
            raise value
        return value


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
    surrogate-escaped) become U+FFFD."""
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
            loop.call_soon_threadsafe(_settle, future, {"error": "the server stopped"})

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
            loop.call_soon_threadsafe(_settle, future, params)


def _settle(future: asyncio.Future[Any], answer: Any) -> None:
    if not future.done():
        future.set_result(answer)
