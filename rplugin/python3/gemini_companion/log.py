"""The host's log file (`log.level`, `:GeminiCompanion log`): what the server did, for when something is wrong.

A line costs its caller a level check and a queue put; a thread of its own formats and writes it,
so neither Neovim nor the server's loop ever waits on the disk. The file is bounded: past
MAX_BYTES it becomes `<name>.1` (the one old file kept) and a new one starts. It lives in a folder
of ours (0700), is 0600, and is opened without following a link planted at its name. Every token
the server accepts is replaced by `<token>` in each line before it is written, whatever carried it.
Standard library only (boot.py configures it once the port file is out, before pynvim loads).
"""

from __future__ import annotations

import atexit
import os
import queue
import stat
import threading
import time

from gemini_companion import env_names

TRACE, DEBUG, INFO, WARN, ERROR, OFF = 5, 10, 20, 30, 40, 100
LEVELS = {"trace": TRACE, "debug": DEBUG, "info": INFO, "warn": WARN, "error": ERROR, "off": OFF}
NAMES = {number: name.upper() for name, number in LEVELS.items()}
MAX_BYTES = int(os.environ.get(env_names.LOG_MAX_BYTES) or 1024 * 1024)  # then rotated: twice this on disk
MIN_SECRET = 16
CLOSE_SECONDS = 0.5  # at exit, for the last lines
# Lines waiting for the writer, at most: a disk that stalls (a hung home mount) costs memory only
# this far; later lines are dropped, and counted in the next line written.
MAX_WAITING = 10_000
# A line's control characters are shown, never acted on (a terminal that `cat`s the log: C1's U+009B
# is a CSI) nor a new line (U+2028/9 are to editors and splitlines), nor a line shown reversed (bidi).
VISIBLE = (
    {c: f"\\x{c:02x}" for c in (*range(32), *range(127, 160)) if c != 9}
    | {c: f"\\u{c:04x}" for c in (0x061C, 0x200E, 0x200F, *range(0x2028, 0x202F), *range(0x2066, 0x206A))}
    | {10: "\\n", 13: "\\r"}
)

_threshold = OFF + 1  # a line below this is not even built (off: every line)
_lock = threading.Lock()
_path: str | None = None
_queue: queue.SimpleQueue[tuple[float, int, str] | None] = queue.SimpleQueue()
_writer: threading.Thread | None = None
_secrets: set[str] = set()
_waiting = 0  # queued, not yet written (approximate: += from several threads, good enough for a bound)
_dropped = 0


def enabled(level: int) -> bool:
    """Whether a line at `level` is written: check it before building a costly line."""
    return level >= _threshold


def write(level: int, text: str) -> None:
    """One line (any thread; never waits)."""
    global _waiting, _dropped
    if level >= _threshold:
        if _waiting >= MAX_WAITING:
            _dropped += 1
            return
        _waiting += 1
        _queue.put((time.time(), level, text))


def secret(*tokens: str) -> None:
    """Never write these (the server's tokens): each becomes `<token>` in every line. Ours are 43
    characters or more; a short one (a test's "tok") would only garble the lines."""
    with _lock:
        _secrets.update(token for token in tokens if len(token) >= MIN_SECRET)


def configure(settings: object) -> str | None:
    """Apply `log` from the `start` parameters ({level, path}); the reason when the file cannot be used.
    Called by one thread at a time (boot.py, then the host's main thread)."""
    global _threshold, _path, _writer
    level, path = _settings(settings)
    if level >= OFF or path is None:
        _threshold = OFF + 1
        return None
    if level == _threshold and path == _path:
        return None
    try:  # not under _lock: a folder that hangs holds this caller only, never the writer or secret()
        os.close(_open(path))  # the writer opens it again as it writes: one owner of the descriptor
    except OSError as err:
        _threshold = OFF + 1
        return f"log off: cannot write {path}: {err.strerror or err}"
    _threshold, _path = level, path
    if _writer is None:
        _writer = threading.Thread(target=_write_loop, name="gemini-log", daemon=True)
        _writer.start()
    return None


def _settings(settings: object) -> tuple[int, str | None]:
    if not isinstance(settings, dict):
        return OFF, None
    level = LEVELS.get(str(settings.get("level")), OFF)
    where = settings.get("path")
    return level, where if isinstance(where, str) and os.path.isabs(where) else None


def _open(path: str) -> int:
    """The log, for appending: in a folder of ours (made 0700), 0600, never through a link, never a
    FIFO or device (O_NONBLOCK: a FIFO planted there would hold the open)."""
    folder, name = os.path.split(path)
    os.makedirs(os.path.dirname(folder), exist_ok=True)  # Neovim's log directory
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if os.fstat(dir_fd).st_uid != os.getuid():
            raise OSError(0, f"{folder} is not yours")
        os.fchmod(dir_fd, 0o700)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(name, flags, 0o600, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_nlink != 1:
        os.close(fd)
        raise OSError(0, "not a file of yours alone")
    os.fchmod(fd, 0o600)
    return fd


def _write_loop() -> None:
    global _waiting, _dropped
    fd: int | None = None
    opened: str | None = None
    while True:
        batch = [_queue.get()]
        while not _queue.empty():  # what came meanwhile: one write
            batch.append(_queue.get())
        items = [item for item in batch if item is not None]
        _waiting -= len(items)
        stop = len(items) < len(batch)
        lines = "".join(_format(item) for item in items)
        if _dropped:
            dropped, _dropped = _dropped, 0
            lines += _format((time.time(), WARN, f"{dropped} lines dropped: the log's disk was slow"))
        try:
            if opened != _path and fd is not None:
                os.close(fd)
                fd = None
            if lines and _path is not None:
                if fd is None:
                    fd, opened = _open(_path), _path
                fd = _append(fd, _path, lines.encode("utf-8", "backslashreplace"))
        except OSError:  # the folder went away or was replaced: tried again with the next lines
            if fd is not None:
                os.close(fd)
            fd = None
        if stop:
            return


def _append(fd: int, path: str, data: bytes) -> int:
    """Write, rotating first when the file would pass MAX_BYTES; the descriptor now written to."""
    info = os.fstat(fd)
    try:
        named = os.lstat(path).st_ino
    except FileNotFoundError:
        named = None
    if info.st_nlink == 0 or named != info.st_ino:  # deleted, or rotated by another Neovim's host
        os.close(fd)
        fd = _open(path)
        info = os.fstat(fd)
    if info.st_size + len(data) > MAX_BYTES:
        os.close(fd)
        folder, name = os.path.split(path)
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:  # rename moves the name, never a link's target
            os.rename(name, name + ".1", src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        finally:
            os.close(dir_fd)
        fd = _open(path)
    os.write(fd, data[-MAX_BYTES:])
    return fd


def _format(item: tuple[float, int, str]) -> str:
    when, level, text = item
    with _lock:
        for token in _secrets:
            if token in text:
                text = text.replace(token, "<token>")
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when))
    # One line per entry, always; the host's PID tells apart the hosts of several Neovims.
    return f"{stamp}.{int(when * 1000) % 1000:03d} {NAMES[level]:5} [{_PID}] {text.translate(VISIBLE)}\n"


_PID = os.getpid()


def _close() -> None:
    """At exit: the last lines (the stop, an error) out, briefly."""
    if _writer is not None and _writer.is_alive():
        _queue.put(None)
        _writer.join(CLOSE_SECONDS)


atexit.register(_close)
