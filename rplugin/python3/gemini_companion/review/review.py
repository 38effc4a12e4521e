"""Reviews: the `openDiff` / `closeDiff` tools and the user's answers from the review tab.

Python owns the protocol (which client asked, what to notify) and validates and
reads files; `lua/gemini_companion/review/` owns the tab and its buffers. Each
review has an id, so an answer for a review that was already closed or replaced is
ignored instead of settling its successor. Tools run on the server loop, Lua
calls on the host's main thread: the state is guarded by a lock.
"""

from __future__ import annotations

import itertools
import json
import os
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gemini_companion import files
from gemini_companion.feature import Link, Tool, error, text

if TYPE_CHECKING:
    from gemini_companion.editor import Editor

# Both the proposal and the file it replaces; the HTTP body limit (32 MiB) comes first.
MAX_CONTENT_BYTES = 16 * 1024 * 1024
SMALL_BYTES = 256 * 1024  # below this, reading and splitting takes well under a millisecond
CLOSE_TIMEOUT_SECONDS = 10.0
REVIEW_LUA = "require('gemini_companion.review')"


class ReviewError(Exception):
    """Bad input: the message is the one line the client shows."""


@dataclass
class Review:
    id: int
    file_path: str  # exactly as the client sent it: the client matches our notifications on it
    key: str  # normalised path: one review per file
    session_id: str
    agent: str  # who proposed it, as the status lists clients: "qwen (Qwen Code 0.24.4)"
    new_content: str  # closeDiff's answer if Neovim cannot give the proposal's text
    signature: tuple[int, ...] | None  # the file on disk when we last read it (None: missing)


class ReviewFeature:
    def __init__(self, editor: Editor, link: Link) -> None:
        self._editor = editor
        self._link = link
        self._lock = threading.Lock()
        self._reviews: dict[str, Review] = {}
        self._ids = itertools.count(1)
        self.methods: dict[str, Callable[[dict[str, Any]], Any]] = {
            "review_accepted": self._accepted,
            "review_rejected": self._rejected,
            "review_refresh": self._refresh,
        }

    # --- Feature ------------------------------------------------------------

    def tools(self) -> list[Tool]:
        path = {"type": "string", "description": "Absolute path of the file."}
        return [
            Tool(
                name="openDiff",
                description="Open a diff view in Neovim for the user to review, edit and accept or reject "
                "a proposed new content of a file. Returns at once; the outcome arrives as an "
                "ide/diffAccepted or ide/diffRejected notification.",
                input_schema={
                    "type": "object",
                    "properties": {
                        "filePath": path,
                        "newContent": {"type": "string", "description": "The proposed new content."},
                    },
                    "required": ["filePath", "newContent"],
                },
                handler=self._open_diff,
            ),
            Tool(
                name="closeDiff",
                description='Close the diff view of a file; returns {"content": <text of the proposal>}, '
                'or {"content": null} when the file has no open diff.',
                input_schema={
                    "type": "object",
                    "properties": {
                        "filePath": path,
                        "suppressNotification": {
                            "type": "boolean",
                            "description": "Send no ide/diffRejected for this diff.",
                        },
                    },
                    "required": ["filePath"],
                },
                handler=self._close_diff,
            ),
        ]

    async def on_stream_open(self, session_id: str) -> None:
        # A client that listens may propose an edit next: its first review opens without
        # loading the review's Lua first (~2 ms of the first open's 16).
        self._editor.lua(REVIEW_LUA)

    def on_client_gone(self, session_id: str) -> None:
        with self._lock:
            gone = [d for d in self._reviews.values() if d.session_id == session_id]
            for review in gone:
                del self._reviews[review.key]
        if gone:  # an edited proposal stays in Neovim, orphaned; the others close
            self._editor.lua(f"{REVIEW_LUA}.close_all(...)", [d.id for d in gone], "the agent disconnected")
            self._link.changed()

    def on_stop(self) -> None:
        with self._lock:
            closing = list(self._reviews.values())
            self._reviews.clear()
        for review in closing:  # best effort: lets a waiting CLI go on instead of waiting 10 minutes
            self._link.send(review.session_id, "ide/diffRejected", {"filePath": review.file_path})
        if closing:
            self._editor.lua(f"{REVIEW_LUA}.close_all(...)", [d.id for d in closing], "the server was stopped")

    def status(self) -> dict[str, Any]:
        with self._lock:
            return {
                "diffs": [
                    {"id": d.id, "file": d.key, "session": d.session_id[:8], "agent": d.agent}
                    for d in sorted(self._reviews.values(), key=lambda d: d.id)
                ]
            }

    # --- tools (server loop) ------------------------------------------------

    async def _open_diff(self, session_id: str, args: dict[str, Any]) -> dict[str, Any]:
        import asyncio  # here, not at the top: asyncio costs the host's startup 45 ms

        try:
            file_path, new_content = args.get("filePath"), args.get("newContent")
            if not isinstance(file_path, str):
                raise ReviewError("filePath must be a string")
            if not isinstance(new_content, str):
                raise ReviewError("newContent must be a string")
            if _small(file_path, new_content):
                view = _prepare(file_path, new_content)  # no thread hop for what takes microseconds
            else:  # reading and splitting 16 MB takes a while: keep the loop serving other clients
                view = await asyncio.to_thread(_prepare, file_path, new_content)
        except ReviewError as err:
            return error(f"openDiff: {err}")
        key, signature = view.pop("path"), view.pop("signature")
        agent = self._link.label(session_id) or "unknown client"
        review = Review(next(self._ids), file_path, key, session_id, agent, new_content, signature)
        with self._lock:
            replaced = self._reviews.get(review.key)
            self._reviews[review.key] = review
        # The same client has already forgotten its old review of this file: a rejection now
        # would settle the new one.
        if replaced is not None and replaced.session_id != session_id:
            self._link.send(replaced.session_id, "ide/diffRejected", {"filePath": replaced.file_path})
        spec = {"id": review.id, "path": review.key, "agent": agent, "signature": signature_text(signature), **view}
        self._editor.lua(f"{REVIEW_LUA}.open(...)", spec)
        self._link.changed()
        return {"content": []}

    async def _close_diff(self, session_id: str, args: dict[str, Any]) -> dict[str, Any]:
        import asyncio

        file_path = args.get("filePath")
        if not isinstance(file_path, str):
            return error("closeDiff: filePath must be a string")
        try:
            _check_path(file_path)
        except ReviewError as err:
            return error(f"closeDiff: {err}")
        with self._lock:
            review = self._reviews.pop(_key(file_path), None)
        if review is None:
            return text(json.dumps({"content": None}))
        self._link.changed()
        content: Any = None
        try:
            future = self._editor.request(f"return {REVIEW_LUA}.close(...)", review.id)
            content = await asyncio.wait_for(asyncio.wrap_future(future), CLOSE_TIMEOUT_SECONDS)
        except (asyncio.TimeoutError, Exception):  # noqa: BLE001 - the client still deserves an answer
            pass
        if not isinstance(content, str):  # the tab was already gone (or Neovim stuck)
            content = review.new_content
        if not args.get("suppressNotification"):
            self._link.send(review.session_id, "ide/diffRejected", {"filePath": review.file_path})
        return text(json.dumps({"content": content}, ensure_ascii=False))

    # --- from Lua (host main thread) ------------------------------------------

    def _take(self, review_id: Any) -> Review | None:
        with self._lock:
            for key, review in self._reviews.items():
                if review.id == review_id:
                    del self._reviews[key]
                    return review
        return None

    def _accepted(self, params: dict[str, Any]) -> None:
        review = self._take(params.get("id"))
        content = params.get("content")
        if review is not None and isinstance(content, str):
            self._link.send(review.session_id, "ide/diffAccepted", {"filePath": review.file_path, "content": content})
            self._link.changed()

    def _rejected(self, params: dict[str, Any]) -> None:
        review = self._take(params.get("id"))
        if review is not None:
            self._link.send(review.session_id, "ide/diffRejected", {"filePath": review.file_path})
            self._link.changed()

    def _refresh(self, params: dict[str, Any]) -> None:
        """The file changed on disk while its review was open: show what is there now."""
        with self._lock:
            review = next((d for d in self._reviews.values() if d.id == params.get("id")), None)
        if review is None:
            return
        try:
            signature = _signature(review.key)
            if signature == review.signature:
                return
            original = _read_original(review.key)
        except ReviewError as err:
            self._editor.lua(f"{REVIEW_LUA}.original_changed(...)", review.id, None, str(err))
            return
        review.signature = signature
        changed = {**_split(original or ""), "is_new": original is None}
        self._editor.lua(f"{REVIEW_LUA}.original_changed(...)", review.id, changed)


# --- files and text ---------------------------------------------------------------


def _key(file_path: str) -> str:
    """One review per real file: symlinks resolved (a new file's missing tail kept as given)."""
    return os.path.realpath(file_path)


def signature_text(signature: tuple[int, ...] | None) -> str:
    """The version as review/disk.lua computes it from a stat: "ino:size:sec:nsec", or "missing"."""
    if signature is None:
        return "missing"
    ino, size, mtime_ns = signature
    return f"{ino}:{size}:{mtime_ns // 1_000_000_000}:{mtime_ns % 1_000_000_000}"


def _check_path(file_path: str) -> None:
    if not file_path:
        raise ReviewError("filePath is empty")
    if any(ord(c) < 32 or ord(c) == 127 for c in file_path):
        raise ReviewError(f"filePath contains a control character: {file_path!r}")
    if not os.path.isabs(file_path):
        raise ReviewError(f"filePath must be absolute: {file_path!r}")
    if ".." in file_path.split(os.sep):
        raise ReviewError(f"filePath must not contain '..': {file_path!r}")


def _signature(path: str) -> tuple[int, ...] | None:
    """What identifies the file's current version; None if it does not exist. Never opens it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        parent = os.path.dirname(path)
        while not os.path.lexists(parent):  # a new file in new folders is fine...
            parent = os.path.dirname(parent)
        if not os.path.isdir(parent):  # ...under a file is not
            raise ReviewError(f"a parent of filePath is not a directory: {path!r}") from None
        return None
    except NotADirectoryError:
        raise ReviewError(f"a parent of filePath is not a directory: {path!r}") from None
    except OSError as err:
        raise ReviewError(f"cannot read {path!r}: {err.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ReviewError(f"filePath is a directory: {path!r}")
    if not stat.S_ISREG(st.st_mode):
        raise ReviewError(f"filePath is not a regular file (a device, FIFO or socket): {path!r}")
    if st.st_size > MAX_CONTENT_BYTES:
        raise ReviewError(f"the file is too large to diff ({st.st_size} bytes, limit {MAX_CONTENT_BYTES}): {path!r}")
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _read_original(path: str) -> str | None:
    """The file's text, None if it does not exist. Safe on anything `_signature` let through."""
    if _signature(path) is None:
        return None
    try:
        data, _ = files.read(path, MAX_CONTENT_BYTES)  # a FIFO put in its place since: refused, never waited on
    except files.Unreadable as err:
        raise ReviewError(f"filePath is {err.reason}: {path!r}") from None
    except OSError as err:
        raise ReviewError(f"cannot read {path!r}: {err.strerror}") from None
    # surrogateescape: undecodable bytes reach Neovim unchanged (pynvim encodes them back).
    return data.decode("utf-8", "surrogateescape")


def _split(content: str) -> dict[str, Any]:
    """The text as review/view.lua takes it: one string (a list of many strings is slow to hand to
    Neovim) without its final line ending, the line ending ("\r\n" only if every line ends
    so) and whether the last line ends too. Joining the lines back gives `content` exactly."""
    crlf = content.count("\r\n")
    eol = "\r\n" if crlf and crlf == content.count("\n") else "\n"
    final_newline = content.endswith(eol)
    return {"text": content[: -len(eol)] if final_newline else content, "eol": eol, "final_newline": final_newline}


def _first_change(old: dict[str, Any], new: dict[str, Any]) -> int:
    """1-based line of the proposal where it first differs from the original (both as `_split`
    gives them). Found on the strings themselves: a list of every line of a large file would
    leave its many small strings' memory with the host after the review is closed."""
    # A "\r\n" text has no other "\n" (see _split): as "\n" lines it splits the same way.
    a, b = (side["text"].replace("\r\n", "\n") if side["eol"] == "\r\n" else side["text"] for side in (old, new))
    lines = b.count("\n") + 1
    same = _common_prefix(a, b)
    line = a.count("\n", 0, same)  # the line the first difference is in
    if same in (len(a), len(b)) and (len(a) == len(b) or (a if len(a) > len(b) else b).startswith("\n", same)):
        line += 1  # one text ends where the other only ends its line: that line is the same in both
    return max(1, min(line + 1, lines))


def _common_prefix(a: str, b: str, block: int = 4096) -> int:
    """How many characters `a` and `b` share from the start (compared a block at a time, in C)."""
    end, same = min(len(a), len(b)), 0
    while same < end and a[same : same + block] == b[same : same + block]:
        same += block
    same = min(same, end)
    while same < end and a[same] == b[same]:
        same += 1
    return same


def _small(file_path: str, new_content: str) -> bool:
    """Both sides small enough to prepare on the server loop without holding it up."""
    if len(new_content) >= SMALL_BYTES:
        return False
    try:
        return os.stat(file_path).st_size < SMALL_BYTES
    except (OSError, ValueError):
        return True  # a new file (or a bad path, which _prepare refuses at once)


def _prepare(file_path: str, new_content: str) -> dict[str, Any]:
    """Validate, read the original, and build what review/init.lua needs. Raises ReviewError."""
    _check_path(file_path)
    try:
        size = len(new_content.encode("utf-8"))
    except UnicodeEncodeError:
        raise ReviewError("newContent is not valid Unicode text") from None
    if size > MAX_CONTENT_BYTES:
        raise ReviewError(f"newContent is too large ({size} bytes, limit {MAX_CONTENT_BYTES})")
    path = _key(file_path)
    signature = _signature(path)
    original = _read_original(path) if signature is not None else None
    proposal = _split(new_content)
    current = _split(original or "")
    first_change = _first_change(current, proposal)
    return {
        "path": path,
        "signature": signature,
        "proposal": proposal,
        "original": current,
        "is_new": original is None,
        "first_change": first_change,
    }
