"""What agents changed, turn by turn, whether or not it went through a review.

A turn starts and ends with the CLI's own lifecycle hooks (hook.py POSTs to the server's
/hooks path: Gemini's BeforeAgent/AfterTool/AfterAgent, Qwen's UserPromptSubmit/PostToolUse/
Stop/StopFailure; each managed agent's event also goes to Lua at once, for its state), or,
for agents without hooks, with the editor's boundaries (`:GeminiChanges mark`, a
prompt the plugin submits). Each boundary is a snapshot (snapshot.py); a turn's changes are
the difference between its two. Lua gets each ended turn (`changes.turn_ended`) and does the
rest: the list, the diffs, the reverts (changes/init.lua and the files beside it; revert.py writes).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gemini_companion.changes import git, overlap, revert
from gemini_companion.changes.snapshot import FileChange, Snapshot, SnapshotError, Snapshotter
from gemini_companion.feature import Link, Tool
from gemini_companion.programs.hook import KEPT
from gemini_companion.server.http_guard import MAX_PATH

if TYPE_CHECKING:
    from gemini_companion.editor import Editor

# The hook events we register (changes/hooks.lua), and whose they are (Notification and
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
        self._snapshotter = Snapshotter(
            Path.home() / ".local" / "state" / "nvim" / "gemini-companion", on_note=self._note
        )
        self._max_turns = 20
        self._turns: list[Turn] = []
        self._open: dict[str, Turn] = {}  # agent -> its turn in progress
        self._hooked: set[str] = set()  # agents whose hooks have been heard: their boundaries are theirs
        self._pruning = threading.Lock()  # held while a prune runs (_prune)
        self.methods: dict[str, Callable[[dict[str, Any]], Any]] = {
            "changes_config": self._config,
            "changes_mark": self._mark,
            "changes_span": self._span,
            "changes_put": revert.put,
            "changes_alternates": _alternates,
        }

    # --- Feature ----------------------------------------------------------------------

    def tools(self) -> list[Tool]:
        return []

    async def on_stream_open(self, session_id: str) -> None:
        # An agent started (its stream to us opened): the workspace's first snapshot, before its first turn.
        self._snapshotter.warm(os.getcwd())

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

    def agent_stopped(self, agent: str) -> None:
        """A managed agent stopped (its terminal closed, the CLI killed) in the middle of a turn:
        the turn ends now, with what it changed, rather than stay open (and kept) for good."""
        with self._lock:
            going = self._open.get(agent)
        if going is not None:
            args = (agent, going.before.work_tree, going.boundary, False)
            threading.Thread(target=self._boundary, args=args, daemon=True).start()

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
                # watch_limit: inotify's limit on watches as the tests lower it (else the system's).
                watches = int(params["watch_limit"]) if params.get("watch_limit") is not None else None
                # Its watchers go once a snapshot it may be taking is done: never waited for here.
                threading.Thread(target=self._snapshotter.close, daemon=True).start()
                self._snapshotter = Snapshotter(Path(str(params["state_dir"])), limit, watches, self._note)
            self._max_turns = max(1, int(params.get("max_turns") or 20))
        # The host runs in Neovim's folder: in a git work tree, its first snapshot now, off the turn.
        self._snapshotter.warm(os.getcwd())

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

    def _note(self, line: str) -> None:
        self._editor.lua("require('gemini_companion.state').notify(...)", line, "info")

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
        with self._lock:
            turn.after, turn.ended = after, time.time()
            told_again = overlap.mark(turn, [t for t in others if t.before.work_tree == turn.before.work_tree])
        for changed in [turn, *told_again]:
            told = dict(changed.describe(), again=changed is not turn)
            self._editor.lua("require('gemini_companion.changes').turn_ended(...)", told)

    def _prune(self, dropped: list[Turn]) -> None:
        """Every GC_EVERY turns, our repositories pruned on a thread of its own (one at a time): a
        prune walks every kept tree (~350 ms on 50,000 files), and a turn start must not wait for it."""
        if dropped and dropped[-1].id % GC_EVERY == 0 and self._pruning.acquire(blocking=False):
            threading.Thread(target=self._prune_now, name="changes-prune", daemon=True).start()

    def _prune_now(self) -> None:
        try:
            with self._lock:
                kept = [t.before for t in self._turns] + [t.after for t in self._turns if t.after]
                snapshotter = self._snapshotter
            with contextlib.suppress(SnapshotError, OSError):  # the next prune tries again
                snapshotter.prune(kept)
        finally:
            self._pruning.release()


def _named(turn: Turn, work_tree: str) -> list[str]:
    """The files a turn's tools named, relative to `work_tree`."""
    root = work_tree.rstrip("/") + "/"
    paths = (str(tool.get("file_path") or tool.get("path") or "") for tool in turn.tools)
    real = (os.path.realpath(path) if os.path.isabs(path) else path for path in paths if path)
    return [path[len(root) :] if path.startswith(root) else path for path in real]


def _alternates(params: dict[str, Any]) -> dict[str, str]:
    """Why git may not read the user's object store now, or "" (changes/git.lua's reads ask before
    each git run: the one judge of it is git.unsafe_alternates, as for the snapshots)."""
    return {"unsafe": git.unsafe_alternates(str(params["alternates"]))}


def _first_line(err: BaseException) -> str:
    """An error as the user is told it: its first line, short (its kind when it says nothing)."""
    return (str(err).splitlines() or [type(err).__name__])[0][:200]
