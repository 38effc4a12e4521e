"""The CLIs' conversations, listed (and Gemini's resume orphan swept) off Neovim's main loop: run
by agents/sessions/lister.lua.

`python sessions_list.py gemini CHATS LIMIT` reads Gemini CLI's session files in CHATS, newest
first, each only as far as its first prompt (and its last 64 KiB, for the summary and the time of
its last change); `python sessions_list.py qwen SECONDS LIMIT CMD...` runs Qwen's lister (`CMD
sessions list --json …`) in a process group of its own, ended whole at the time limit or as soon
as the lister exits (a child of it holding the output open is not waited for).

`python sessions_list.py sweep CHATS [FILE]` deletes Gemini CLI 0.61's resume orphan (see sweep)
and prints `{"deleted": [names]}`.

Prints one JSON object a line: a session `{"id", "title", "prompt", "updated"}` (newest first, at
most LIMIT; `updated` in seconds since the epoch), or `{"error": "..."}` (one line, never a
traceback). Every text is made safe to show here, whatever the file held: NUL and other control
characters, lone surrogate escapes, invalid UTF-8 and format characters (bidi overrides) become
visible marks, whitespace one space, the length bounded. Standard library (and the package's
files.py) only: this runs in the plugin's venv Python, outside the host.
"""

from __future__ import annotations

import calendar
import json
import os
import re
import selectors
import signal
import stat
import subprocess
import sys
import time
import unicodedata
from collections.abc import Callable
from typing import Any, TypeVar

if __name__ == "__main__":  # run with -I: the folder holding the package goes on sys.path
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from gemini_companion import files

T = TypeVar("T")

MAX_FILE = 64 * 1024 * 1024  # a session file larger than this is not listed
LINE_MAX = 1024 * 1024  # a longer line is skipped undecoded (a tool's output, a pasted file)
TAIL = 64 * 1024  # the summary and the last change are appended: read from the end
CHUNK = 256 * 1024
TEXT_MAX = 400  # characters of a title or prompt kept (Lua shows fewer)
OUTPUT_MAX = 16 * 1024 * 1024  # of a lister's output
READ_MAX = 512 * 1024 * 1024  # read by one listing at most (files whose first prompt follows huge lines)
ORPHAN_MAX = 1024 * 1024  # an orphan holds a header and the preamble: a few KB
NAME = re.compile(r"^session-.+-([0-9a-f]{8})\.jsonl?$")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)
# User messages gemini-cli 0.61 does not resume from (its isIgnoredUserContent).
IGNORED = ("/", "?", "<session_context>", "<hook_context>")
# Text a CLI sends as a user message that the user did not type: never a session's title.
NOT_TYPED = (
    *IGNORED,
    "Here is the user's editor context",  # Gemini CLI in IDE mode
    "Here is the user's current editor context",  # Qwen Code in IDE mode
    "Here is a summary of changes in the user's current editor context",
)


def shown(value: Any) -> str | None:
    """A text from a session as one safe line: None unless a non-empty string."""
    if not isinstance(value, str):
        return None
    text = " ".join(value[: TEXT_MAX * 4].split())[:TEXT_MAX]
    out = []
    for char in text:
        code = ord(char)
        if 0xD800 <= code <= 0xDFFF:
            out.append("\ufffd")  # a lone surrogate (JSON allows the escape; UTF-8 cannot hold it)
        elif code < 0x20 or code == 0x7F:
            out.append("^" + chr(code ^ 0x40))
        elif 0x80 <= code < 0xA0 or unicodedata.category(char) in ("Cf", "Co", "Cn"):
            out.append(f"<{code:x}>")
        else:
            out.append(char)
    return "".join(out) or None


def epoch(iso: Any) -> float | None:
    """Seconds since the epoch of an ISO 8601 UTC time ('2026-11-25T22:14:31.820Z')."""
    if not isinstance(iso, str):
        return None
    try:
        return float(calendar.timegm(time.strptime(iso[:19], "%Y-%m-%dT%H:%M:%S")))
    except (ValueError, OverflowError):
        return None


def decode(line: bytes) -> Any:
    try:
        return json.loads(line.decode("utf-8", "replace"))
    except (ValueError, RecursionError):  # nested deeper than Python's reader goes: not understood
        return None


def typed_text(record: Any) -> str | None:
    """A user's prompt in a Gemini message record (as the CLI lists it), unless the CLI wrote it."""
    if not isinstance(record, dict) or record.get("type") != "user":
        return None
    content = record.get("content")
    if isinstance(content, list):
        content = "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    if not isinstance(content, str) or not content.strip() or content.strip().startswith(NOT_TYPED):
        return None
    return content


spent = [0]  # bytes read so far


def lines(fd: int, start: int, end: int) -> Any:
    """The lines of the file between `start` and `end` (bytes); a line over LINE_MAX is skipped."""
    pos, buf, skipping = start, b"", False
    while pos < end:
        chunk = os.pread(fd, min(CHUNK, end - pos), pos)
        if not chunk:
            break
        pos += len(chunk)
        spent[0] += len(chunk)
        parts = (buf + chunk).split(b"\n")
        buf = parts.pop()
        for part in parts:
            if not skipping:
                yield part
            skipping = False
        if len(buf) > LINE_MAX:
            buf, skipping = b"", True
    if buf and not skipping:
        yield buf


def gemini_file(fd: int, info: os.stat_result) -> dict[str, Any] | None:
    """One session file: its id, first prompt, summary and last change (None: not listed)."""
    size = info.st_size
    if size > MAX_FILE:
        return None
    meta: dict[str, Any] = {}
    prompt = None
    for line in lines(fd, 0, size):
        record = decode(line)
        if not isinstance(record, dict):
            continue
        if "sessionId" in record and not meta:
            meta = dict(record)
        update = record.get("$set")
        messages = update.get("messages") if isinstance(update, dict) else [record]
        for message in messages if isinstance(messages, list) else []:
            prompt = prompt or typed_text(message)
        if prompt and meta:
            break
    if not prompt or meta.get("kind") == "subagent" or not UUID.match(str(meta.get("sessionId"))):
        return None
    summary, updated = None, None
    for line in lines(fd, max(size - TAIL, 0), size):
        update = decode(line)
        update = update.get("$set") if isinstance(update, dict) else None
        if isinstance(update, dict):
            summary, updated = update.get("summary", summary), update.get("lastUpdated", updated)
    return {
        "id": meta["sessionId"],
        "title": shown(summary),
        "prompt": shown(prompt),
        "updated": epoch(updated) or info.st_mtime,
    }


def read(path: str, use: Callable[[int, os.stat_result], T]) -> T | None:
    """`use(fd, stat)` on the regular file at `path` (not through a link; opening never waits on a
    FIFO, only a regular file is read: files.open_judged); None when it cannot be read."""
    try:
        fd, info = files.open_judged(path, follow=False)
    except OSError:
        return None
    try:
        return use(fd, info)
    except OSError:
        return None
    finally:
        os.close(fd)


def list_gemini(chats: str, limit: int) -> list[dict[str, Any]]:
    """The newest `limit` sessions: files newest first, one entry per id (its newest file)."""
    newest = []
    try:
        with os.scandir(chats) as entries:
            for entry in entries:
                if NAME.match(entry.name) and entry.is_file(follow_symlinks=False):
                    try:
                        newest.append((entry.stat(follow_symlinks=False).st_mtime, entry.path))
                    except OSError:
                        continue
    except OSError:
        return []
    newest.sort(reverse=True)
    sessions: dict[str, dict[str, Any]] = {}
    for _, path in newest:
        if len(sessions) >= limit or spent[0] > READ_MAX:
            break
        session = read(path, gemini_file)
        if session and session["id"] not in sessions:
            sessions[session["id"]] = session
    return sorted(sessions.values(), key=lambda s: (-(s["updated"] or 0), s["id"]))


def run(cmd: list[str], seconds: float) -> tuple[bytes, bytes, int | None]:
    """Run a lister in a process group of its own: its output, and its exit code (None: no answer
    in time). The group is ended whole, at the time limit or once the lister has exited."""
    proc = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    assert proc.stdout and proc.stderr
    stdout, stderr = proc.stdout.fileno(), proc.stderr.fileno()
    out = {stdout: bytearray(), stderr: bytearray()}
    deadline = time.monotonic() + seconds
    with selectors.DefaultSelector() as sel:
        for fd in out:
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map() and time.monotonic() < deadline:
            if proc.poll() is not None:
                end_group(proc.pid)  # what it left behind holds the output open: not waited for
            for key, _ in sel.select(min(0.2, max(deadline - time.monotonic(), 0))):
                data = os.read(key.fd, CHUNK)
                if not data or len(out[key.fd]) > OUTPUT_MAX:
                    sel.unregister(key.fd)
                else:
                    out[key.fd] += data
    finished = time.monotonic() < deadline
    end_group(proc.pid)
    code = proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    return bytes(out[stdout]), bytes(out[stderr]), code if finished else None


def end_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def list_qwen(cmd: list[str], seconds: float, limit: int) -> list[dict[str, Any]] | str:
    """Qwen's own listing, one object a line; a string: why there is none."""
    try:
        stdout, stderr, code = run(cmd, seconds)
    except OSError as err:
        return f"cannot run {cmd[0]}: {err.strerror}"
    if code is None:
        return f"no answer in {seconds:g} s"
    if code != 0:
        return shown(stderr.decode("utf-8", "replace").strip()[-2000:]) or f"exit code {code}"
    sessions = []
    for line in stdout.split(b"\n"):
        item = decode(line)
        if isinstance(item, dict) and isinstance(item.get("sessionId"), str) and UUID.match(item["sessionId"]):
            mtime = item.get("mtime")
            sessions.append(
                {
                    "id": item["sessionId"],
                    "title": shown(item.get("customTitle")),
                    "prompt": shown(item.get("prompt")),
                    "updated": mtime / 1000 if isinstance(mtime, (int, float)) else epoch(item.get("startTime")),
                }
            )
    return sessions[:limit]


def sweep(chats: str, only: str | None) -> list[str]:
    """Gemini CLI 0.61.0's resume bug (google-gemini/gemini-cli#27368): a resumed run opens a second
    file of the same session (the minute of the resume in its name) that never gets a message; the
    next start of any `gemini` takes it for corrupted and deletes every file of that session's
    short id, the conversation with it. Delete only a file proven to be that orphan: in the chats
    folder (ours, not a link), a regular file of ours, whole (small), every line understood, with
    nothing the CLI would resume from, whose session id another file of the same short id holds
    with something it would. `only`: that file alone. Returns the names deleted."""
    try:
        folder = os.lstat(chats)
    except OSError:
        return []
    if not stat.S_ISDIR(folder.st_mode) or folder.st_uid != os.getuid():
        return []
    groups: dict[str, list[str]] = {}
    with os.scandir(chats) as entries:
        for entry in entries:
            named = NAME.match(entry.name)
            if named and entry.is_file(follow_symlinks=False):
                groups.setdefault(named.group(1), []).append(entry.name)
    deleted = []
    for short, names in sorted(groups.items()):
        if len(names) < 2 or (only and only not in names):
            continue
        found = {name: read(os.path.join(chats, name), orphan_facts) for name in names}
        facts = {name: f for name, f in found.items() if f and f["id"][:8] == short}
        for name, orphan in sorted(facts.items()):
            kept = any(o != name and f["id"] == orphan["id"] and f["resumable"] for o, f in facts.items())
            if (only in (None, name)) and orphan["proven_empty"] and kept and unchanged(chats, name, orphan["stat"]):
                os.unlink(os.path.join(chats, name))
                deleted.append(name)
    return deleted


def orphan_facts(fd: int, info: os.stat_result) -> dict[str, Any] | None:
    """A session file's id, whether the CLI would resume from it, and whether it is proven empty:
    ours, whole, every line a JSON object (what is not understood is kept), nothing resumable."""
    if info.st_uid != os.getuid():
        return None
    understood, resumable, session_id = info.st_size <= ORPHAN_MAX, False, None
    for line in lines(fd, 0, min(info.st_size, ORPHAN_MAX)):
        if not line.strip():
            continue
        record = decode(line)
        if not isinstance(record, dict):
            understood = False
            continue
        update = record.get("$set")
        session_id = session_id or (record.get("sessionId") if update is None else None)
        messages = update.get("messages") if isinstance(update, dict) else [record]
        resumable = resumable or any(resumable_record(m) for m in (messages if isinstance(messages, list) else []))
    if not isinstance(session_id, str) or not UUID.match(session_id):
        return None
    stamp = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    empty = understood and not resumable
    return {"id": session_id, "resumable": resumable, "proven_empty": empty, "stat": stamp}


def resumable_record(record: Any) -> bool:
    """Would gemini-cli 0.61 resume from this message (its isResumableMessageRecord)?"""
    if not isinstance(record, dict):
        return False
    content = record.get("content")
    if record.get("type") == "user":
        parts = content if isinstance(content, list) else [content]
        text = "".join(p if isinstance(p, str) else p.get("text", "") if isinstance(p, dict) else "" for p in parts)
        return bool(text.strip()) and not text.strip().startswith(IGNORED)
    if record.get("type") == "gemini":
        return any(v not in (None, "", [], {}) for v in (content, record.get("toolCalls"), record.get("thoughts")))
    return False


def unchanged(chats: str, name: str, stamp: tuple[int, ...]) -> bool:
    """The file is still the one read (not written to, nor swapped, since)."""
    try:
        info = os.lstat(os.path.join(chats, name))
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns) == stamp


def main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["sweep"] and len(argv) in (2, 3):
            print(json.dumps({"deleted": sweep(argv[1], argv[2] if len(argv) == 3 else None)}))
            return 0
        if len(argv) == 3 and argv[0] == "gemini":
            result: list[dict[str, Any]] | str = list_gemini(argv[1], int(argv[2]))
        elif len(argv) >= 4 and argv[0] == "qwen":
            result = list_qwen(argv[3:], float(argv[1]), int(argv[2]))
        else:
            result = "usage: sessions_list.py gemini CHATS LIMIT | qwen SECONDS LIMIT CMD..."
    except Exception as err:  # noqa: BLE001 - one line, never a traceback
        result = shown(f"{type(err).__name__}: {err}") or "?"
    if isinstance(result, str):
        print(json.dumps({"error": result}))
    else:
        sys.stdout.write("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
