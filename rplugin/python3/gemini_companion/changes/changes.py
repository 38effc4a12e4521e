"""What agents changed, turn by turn, whether or not it went through a review.

A turn starts and ends with the CLI's own lifecycle hooks (hook.py POSTs to the server's
/hooks path: Gemini's BeforeAgent/AfterTool/AfterAgent, Qwen's UserPromptSubmit/PostToolUse/
Stop/StopFailure; each managed agent's event also goes to Lua at once, for its state), or,
for agents without hooks, with the editor's boundaries (`:GeminiChanges mark`, a
prompt the plugin submits). Each boundary is a snapshot (snapshot.py); a turn's changes are
the difference between its two. Lua gets each ended turn (`changes.turn_ended`) and does the
rest: the list, the diffs, the reverts (changes/init.lua).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import secrets
import stat
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gemini_companion import files
from gemini_companion.changes.snapshot import FileChange, Snapshot, SnapshotError, Snapshotter
from gemini_companion.feature import Link, Tool
from gemini_companion.programs.hook import KEPT
from gemini_companion.server.http_guard import MAX_PATH

if TYPE_CHECKING:
    from gemini_companion.editor import Editor

# The hook events we register (changes/init.lua `hooks`), and whose they are (Notification and
# SessionStart are both CLIs': a terminal's hook names no agent, and they tell no turn).
HOOK_CLI = {
    "BeforeAgent": "gemini",
    "AfterTool": "gemini",
    "AfterAgent": "gemini",
    "UserPromptSubmit": "qwen",
    "PostToolUse": "qwen",
    "Stop": "qwen",
    "StopFailure": "qwen",
    "PermissionRequest": "qwen",
    "PreToolUse": "qwen",
}
# What a managed agent's hook events tell Lua of its state (attention.lua): hook.py's kept
# fields, less the turn's folder.
ATTENTION_FIELDS = tuple(key for key in KEPT if key != "cwd")
GC_EVERY = 10  # turns between prunes of our snapshot repositories


@dataclass
class Turn:
    id: int
    agent: str  # the managed agent's name, "external gemini", or "you" (a manual mark)
    boundary: str  # "hooks" | "mark" | "send": what started it
    before: Snapshot
    after: Snapshot | None = None
    files: list[FileChange] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)  # what the agent's tools named
    started: float = field(default_factory=time.time)
    ended: float | None = None

    def describe(self) -> dict[str, Any]:
        after = self.after or self.before
        return {
            "id": self.id,
            "agent": self.agent,
            "boundary": self.boundary,
            "git_dir": self.before.git_dir,
            "alternates": self.before.alternates,
            "work_tree": self.before.work_tree,
            "before": self.before.tree,
            "after": after.tree,
            "open": self.after is None,
            "files": [asdict(change) for change in self.files],
            "skipped": sorted(set(self.before.skipped) | set(after.skipped)),
            "tools": self.tools[-50:],
            "started": self.started,
            "ended": self.ended,
        }


class ChangesFeature:
    def __init__(self, editor: Editor, link: Link) -> None:
        self._editor = editor
        self._link = link
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._snapshotter = Snapshotter(Path.home() / ".local" / "state" / "nvim" / "gemini-companion")
        self._max_turns = 20
        self._turns: list[Turn] = []
        self._open: dict[str, Turn] = {}  # agent -> its turn in progress
        self._hooked: set[str] = set()  # agents whose hooks have been heard: their boundaries are theirs
        self.methods: dict[str, Callable[[dict[str, Any]], Any]] = {
            "changes_config": self._config,
            "changes_mark": self._mark,
            "changes_span": self._span,
            "changes_put": _put,
        }

    # --- Feature ----------------------------------------------------------------------

    def tools(self) -> list[Tool]:
        return []

    async def on_stream_open(self, session_id: str) -> None: ...

    def on_client_gone(self, session_id: str) -> None: ...

    def on_stop(self) -> None: ...

    def status(self) -> dict[str, Any]:
        with self._lock:
            last = self._turns[-1] if self._turns else None
            return {
                "changes": {
                    "turns": len(self._turns),
                    "last": None
                    if last is None
                    else {"id": last.id, "agent": last.agent, "files": len(last.files), "open": last.after is None},
                }
            }

    # --- from the CLIs' hooks (server loop) ---------------------------------------------

    async def on_hook(self, event: dict[str, Any]) -> dict[str, Any]:
        import asyncio  # here, not at the top: asyncio costs the host's startup 45 ms

        name = str(event.get("hook_event_name") or "")
        kind = str(event.get("event") or "")
        cli = HOOK_CLI.get(name, "gemini")
        agent = str(event.get("agent") or f"external {cli}")
        cwd = str(event.get("cwd") or "")
        if "\0" in cwd or len(cwd) > MAX_PATH:  # no path can be this: the sender's 4xx, not a dropped turn
            raise ValueError("cwd is not a path")
        if event.get("agent"):  # a managed agent's state: Lua hears every event at once, before any snapshot
            told = {key: event[key] for key in ATTENTION_FIELDS if key in event}
            self._editor.lua("require('gemini_companion.agents.attention').event(...)", dict(told, agent=agent))
        if kind == "attention":  # tells no turn; the CLI waits on it
            return {}
        with self._lock:
            self._hooked.add(agent)
            # Qwen fires its prompt hook again for each round of tool results (Stop only at the
            # real end): a turn the hooks opened goes on until its end hook. A turn the plugin
            # opened as it submitted this very prompt (:GeminiSend!) becomes the hooks' turn.
            going_on = self._open.get(agent)
            if kind == "turn-start" and going_on is not None and going_on.boundary in ("hooks", "send"):
                going_on.boundary = "hooks"
                return {}
        if kind == "turn-start":
            await asyncio.to_thread(self._boundary, agent, cwd, "hooks", True)
        elif kind == "turn-end":
            await asyncio.to_thread(self._boundary, agent, cwd, "hooks", False)
        elif kind == "tool":
            self._tool(agent, event)
            # Buffers follow what the tool changed by the end of it (follow/init.lua).
            self._editor.lua("require('gemini_companion.follow').sweep()")
        return {}

    def _tool(self, agent: str, event: dict[str, Any]) -> None:
        tool_input = event.get("tool_input") if isinstance(event.get("tool_input"), dict) else {}
        named = {k: str(v)[:500] for k, v in (tool_input or {}).items() if k in ("file_path", "path", "command")}
        with self._lock:
            turn = self._open.get(agent)
            if turn is not None:
                turn.tools.append({"tool": str(event.get("tool_name") or "?"), **named})

    # --- from Lua (host main thread) ------------------------------------------------------

    def _config(self, params: dict[str, Any]) -> None:
        with self._lock:
            if params.get("state_dir"):
                limit = int(params.get("max_file_bytes") or 1 << 20)
                self._snapshotter = Snapshotter(Path(str(params["state_dir"])), limit)
            self._max_turns = max(1, int(params.get("max_turns") or 20))

    def _mark(self, params: dict[str, Any]) -> None:
        """A boundary from the editor: `:GeminiChanges mark`, or a prompt the plugin submitted
        (ignored for an agent whose own hooks tell its turns)."""
        agent = str(params.get("agent") or "you")
        reason = "send" if params.get("reason") == "send" else "mark"
        with self._lock:
            if reason == "send" and agent in self._hooked:
                return
        cwd = str(params.get("cwd") or ".")
        threading.Thread(target=self._boundary, args=(agent, cwd, reason, True), daemon=True).start()

    def _span(self, params: dict[str, Any]) -> None:
        """The changes from one turn's start to another's end (or now), for `:GeminiChanges all`:
        answered with `changes.show`."""
        threading.Thread(target=self._answer_span, args=(params,), daemon=True).start()

    def _answer_span(self, params: dict[str, Any]) -> None:
        with self._lock:
            turns = [t for t in self._turns if int(params.get("first", 0)) <= t.id <= int(params.get("last", 1 << 30))]
        if not turns:
            self._show(None, "no turn recorded yet")
            return
        turns = [t for t in turns if t.before.work_tree == turns[-1].before.work_tree]  # one tree: one diff
        first, last = turns[0], turns[-1]
        try:
            after = last.after or self._snapshotter.take(last.before.work_tree)
            files = self._snapshotter.changes(first.before, after)
        except (SnapshotError, OSError) as err:
            self._show(None, _first_line(err))
            return
        span = Turn(0, ", ".join(dict.fromkeys(t.agent for t in turns)), "span", first.before, after, files)
        self._show(span.describe(), None)

    def _show(self, turn: dict[str, Any] | None, why: str | None) -> None:
        self._editor.lua("require('gemini_companion.changes').show(...)", turn, why)

    # --- boundaries (worker threads) ------------------------------------------------------

    def _boundary(self, agent: str, cwd: str, reason: str, starting: bool) -> None:
        """End the agent's open turn (if any); start a new one when `starting`. Whatever fails
        (git, an unreadable folder, a file racing us), the open turn is dropped with one line,
        never left open for good, and the next boundary starts afresh."""
        with self._lock:
            if not starting and agent not in self._open:
                return
            ending = self._open.get(agent)
        try:
            self._step(agent, cwd, reason, starting)
        except Exception as err:  # noqa: BLE001 - one line to the user; the worker thread lives on
            with self._lock:
                self._open.pop(agent, None)
                lost = ending is not None and ending.after is None
                if lost:
                    self._turns = [t for t in self._turns if t is not ending]
            why = _first_line(err)
            what = f"{agent}'s turn {ending.id} dropped" if lost and ending else f"{agent}'s turn not tracked"
            self._editor.lua("require('gemini_companion.state').notify(...)", f"changes: {what}: {why}", "warn")
            self._link.changed()

    def _step(self, agent: str, cwd: str, reason: str, starting: bool) -> None:
        snap = self._snapshotter.take(cwd or ".")
        with self._lock:
            ending = self._open.pop(agent, None)
        if ending is not None:
            self._end(ending, snap)
        if starting:
            turn = Turn(next(self._ids), agent, reason, snap)
            with self._lock:
                self._open[agent] = turn
                self._turns.append(turn)
                # Keep as many ended turns as Neovim does (changes.max_turns), and every open one.
                ended = [t for t in self._turns if t.after is not None]
                dropped = ended[: -self._max_turns]
                self._turns = [t for t in self._turns if t not in dropped]
            self._prune(dropped)
        self._link.changed()

    def _end(self, turn: Turn, after: Snapshot) -> None:
        if after.work_tree != turn.before.work_tree:  # the agent moved to another tree: no diff
            after = self._snapshotter.take(turn.before.work_tree)
        files = self._snapshotter.changes(turn.before, after)
        # Another agent's turn at the same time: a file only its tools named is its change.
        with self._lock:
            others = [t for t in self._turns if t.agent != turn.agent and (t.ended is None or t.ended >= turn.started)]
        theirs = {path for other in others for path in _named(other, turn.before.work_tree)}
        mine = set(_named(turn, turn.before.work_tree))
        turn.files = [change for change in files if change.path not in theirs or change.path in mine]
        turn.after, turn.ended = after, time.time()
        self._editor.lua("require('gemini_companion.changes').turn_ended(...)", turn.describe())

    def _prune(self, dropped: list[Turn]) -> None:
        if dropped and dropped[-1].id % GC_EVERY == 0:
            with self._lock:
                kept = [t.before for t in self._turns] + [t.after for t in self._turns if t.after]
            with contextlib.suppress(SnapshotError, OSError):  # the next prune tries again
                self._snapshotter.prune(kept)


def _named(turn: Turn, work_tree: str) -> list[str]:
    """The files a turn's tools named, relative to `work_tree`."""
    root = work_tree.rstrip("/") + "/"
    paths = (str(tool.get("file_path") or tool.get("path") or "") for tool in turn.tools)
    real = (os.path.realpath(path) if os.path.isabs(path) else path for path in paths if path)
    return [path[len(root) :] if path.startswith(root) else path for path in real]


# --- reverts (host main thread, called by changes/init.lua) --------------------------------------

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class RevertError(Exception):
    """One line: why a revert left the file as it is (`path`: the file inside a folder it is about)."""

    def __init__(self, why: str, path: str = "") -> None:
        super().__init__(why)
        self.path = path


def _put(params: dict[str, Any]) -> dict[str, Any]:
    """Make `path` (relative to `work_tree`) what `want` says, if it is still what `expect` says.

    Each is {kind = "file" | "link" | "none", data = bytes or link target, mode = git mode or nil},
    or a folder of them, {kind = "folder", files = [{path (inside it), kind, data, mode}]} (type_change.py).
    All I/O goes through folder descriptors opened one name at a time from the work tree with
    O_NOFOLLOW: a folder an agent swaps for a symlink at any moment makes the revert refuse, it never
    reads, writes or deletes through it (checking a path, then using it, would). Answers {} or
    {error = one line, path = the file inside a folder it is about, or ""} (a type change: also
    {already = true, since = bool})."""
    try:
        parts = str(params["path"]).split("/")
        if any(part in ("", ".", "..") for part in parts):
            raise RevertError("not a path of the work tree: left as it is")
        want, expect = params["want"], params["expect"]
        retyped = "folder" in (want["kind"], expect["kind"])  # a type change, taken back whole: it stands there
        folder = open_folder(str(params["work_tree"]), parts[:-1], want["kind"] != "none" and not retyped)
        try:
            if retyped:
                from gemini_companion.changes import type_change  # here: it imports this module

                return type_change.swap(folder, str(params["path"]), params)
            _replace(folder, parts[-1], expect, want)
        finally:
            os.close(folder)
    except RevertError as err:
        return {"error": str(err), "path": err.path}
    except (OSError, KeyError, TypeError, ValueError) as err:
        return {"error": f"cannot write: {getattr(err, 'strerror', None) or err}"}
    return {}


def _bytes(value: Any) -> bytes:
    # Lua's strings reach us as str with undecodable bytes surrogate-escaped (pynvim).
    return value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogateescape")


def open_folder(root: str | int, names: Sequence[str | bytes], make: bool) -> int:
    """The folder `names` below `root` (a path, or a folder's descriptor), opened without following
    a symlink at any step (made, like mkdir -p, when `make`)."""
    fd = os.open(root, DIR_FLAGS) if isinstance(root, str) else os.dup(root)
    try:
        for name in names:
            try:
                try:
                    inner = os.open(name, DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not make:
                        raise RevertError("its folder is gone: left as it is") from None
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o777, dir_fd=fd)
                    inner = os.open(name, DIR_FLAGS, dir_fd=fd)
            except OSError as err:
                if err.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise RevertError("a folder on its way is a symlink or not a folder now: left as it is") from None
                raise
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _state(folder: int, name: str, limit: int) -> tuple[str, bytes, int]:
    """What `name` is now: ("none" | "file" | "link", its bytes or target, its mode bits). A file
    of more than `limit` bytes (what the turn left: it is not that) is not read."""
    try:
        info = os.lstat(name, dir_fd=folder)
    except FileNotFoundError:
        return "none", b"", 0
    if stat.S_ISLNK(info.st_mode):
        return "link", os.fsencode(os.readlink(name, dir_fd=folder)), 0
    if not stat.S_ISREG(info.st_mode):
        kind = "folder" if stat.S_ISDIR(info.st_mode) else "special file"
        raise RevertError(f"is a {kind} now: left as it is")
    try:
        data, opened = files.read(name, limit, dir_fd=folder, follow=False)
    except files.Unreadable:  # swapped for another kind, or larger than what the turn left
        raise RevertError("changed after the turn: left as it is") from None
    return "file", data, stat.S_IMODE(opened.st_mode)


def _git_mode(mode: int, git_mode: Any) -> int:
    """`mode` with its execute bits as git's `git_mode` says (100755: x where r; 100644: none)."""
    if git_mode == "100755":
        return mode | (mode & 0o444) >> 2
    if git_mode == "100644":
        return mode & ~0o111
    return mode


def _replace(folder: int, name: str, expect: dict[str, Any], want: dict[str, Any]) -> None:
    expected = _bytes(expect.get("data")) if expect["kind"] != "none" else b""
    kind, data, mode = _state(folder, name, len(expected))
    same = kind == expect["kind"] and (kind == "none" or data == expected)
    if same and kind == "file" and expect.get("mode") in ("100644", "100755"):
        same = bool(mode & 0o100) == (expect["mode"] == "100755")  # git's own test of "executable"
    if not same:
        raise RevertError("changed after the turn: left as it is")
    if want["kind"] == "none":
        if kind != "none":
            os.unlink(name, dir_fd=folder)
        return
    tmp = temporary(name, "tmp")
    try:
        create(folder, tmp, want, 0o644 if kind != "file" else mode)  # a file's own mode is kept, a new one's is git's
        os.rename(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=folder)
        raise


def temporary(name: str, kind: str) -> str:
    """A hidden name beside `name`, ours and new (a name is at most 255 bytes: cut by bytes)."""
    short = os.fsdecode(os.fsencode(name)[:200])
    return f".{short}.gemini-companion.{secrets.token_hex(6)}.{kind}"


def create(folder: int, name: str | bytes, want: dict[str, Any], mode: int) -> None:
    """Create `name` (new) as the file or link `want` says: a file with `mode`'s bits, execute as git's mode says."""
    if want["kind"] == "link":
        os.symlink(_bytes(want.get("data")), name, dir_fd=folder)
        return
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
    with os.fdopen(fd, "wb") as file:
        file.write(_bytes(want.get("data")))
        os.fchmod(fd, _git_mode(mode, want.get("mode")))  # the mode asked for, whatever the umask


def _first_line(err: BaseException) -> str:
    """An error as the user is told it: its first line, short (its kind when it says nothing)."""
    return (str(err).splitlines() or [type(err).__name__])[0][:200]
