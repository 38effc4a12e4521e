"""A CLI's settings file, read and written as the user's own act (settings_edit.py edits it): read
only if it is a regular file of this user's, writable, with one link and at most MAX_BYTES, and
remembered by its identity; written only over that version, by a rename of a new file (the
target of a symlink, keeping its mode and group) or, in a folder the user cannot create files in,
in place as the CLIs save it, so that it holds JSON at every moment and gets its old bytes back
if the write fails. Standard library only."""

from __future__ import annotations

import os
import stat
import tempfile
import time
from collections.abc import Callable
from typing import Any

from gemini_companion import files
from gemini_companion.programs.jsonc import jsonc
from gemini_companion.programs.settings_errors import Changed, Refused

# A settings file larger than this is refused: every edit re-reads the text (a few KB, usually).
MAX_BYTES = 1024 * 1024
SETTLE_SECONDS = 0.05


def read_settings(path: str, target: str) -> tuple[str, tuple[int, ...] | None]:
    """The settings text, after the checks that make writing it the user's own act, and the
    identity of the version read (the edit is written only over that version)."""
    where = path if target == path else f"{path} (a link to {target})"

    def judge(st: os.stat_result) -> None:  # the file opened is the one judged and read
        yours(where, st)
        if not st.st_mode & stat.S_IWUSR:
            raise Refused(f"{where} is read-only: nothing was changed")
        if st.st_nlink > 1:  # a new file renamed into place would leave the other names behind
            raise Refused(
                f"{where} has {st.st_nlink} hard links, which a rewrite would split (a symlink is kept):"
                " nothing was changed"
            )
        if st.st_size > MAX_BYTES:
            raise Refused(f"{where} is larger than {MAX_BYTES // 1024 // 1024} MiB: nothing was changed")

    try:
        # Never waits: a FIFO would for a writer (and is refused, as any non-regular file).
        data, st = files.read(target, MAX_BYTES, check=judge)
    except FileNotFoundError:
        if target != path:
            raise Refused(f"{where} points at nothing: nothing was changed") from None
        ancestor = os.path.dirname(os.path.abspath(target))
        while not os.path.isdir(ancestor) and ancestor != os.path.dirname(ancestor):
            ancestor = os.path.dirname(ancestor)
        yours(ancestor, os.stat(ancestor))
        return "", None
    except files.Unreadable as err:
        if err.info is not None and stat.S_ISREG(err.info.st_mode):
            raise Changed from None  # grew past the bound as it was read: a CLI writing
        raise Refused(f"{where} is not a regular file: nothing was changed") from None
    seen = current(target)
    if seen != identity(st) or len(data) != st.st_size:
        raise Changed  # written to while it was read: a CLI truncates, then writes
    try:
        text, value = parse_settings(data)
    except ValueError:
        settled(target, seen)  # half written, perhaps: if so, read again
        raise Refused(f"{path} is not valid JSON, comments allowed (a trailing comma?): nothing was changed") from None
    except RecursionError:
        raise Refused(f"{path} is nested too deeply: nothing was changed") from None
    if not text.strip():
        settled(target, seen)  # emptied by a save that is still writing, perhaps
    if text.strip() and not isinstance(value, dict):
        raise Refused(f"{path} does not hold a JSON object: nothing was changed")
    return text, seen


def replace(
    path: str,
    data: bytes,
    mode: int,
    group: int | None = None,
    still: Callable[[], None] = lambda: None,
    in_place: Callable[[], None] | None = None,
) -> None:
    """Write `data` beside `path`, with `mode` (and `group`), and rename it into place; `still`
    raises when `path` should no longer be replaced (checked last, after the slow part). In a
    folder the user cannot create files in, `in_place` writes instead (when given)."""
    directory = os.path.dirname(path) or "."
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".gemini-companion.", suffix=".tmp")
    except PermissionError:
        if in_place is None:
            raise
        return in_place()
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if group is not None and os.fstat(f.fileno()).st_gid != group:
                os.fchown(f.fileno(), -1, group)
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        still()
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def rewrite(path: str, target: str, seen: tuple[int, ...] | None, data: bytes, before: bytes) -> None:
    """Write `data` over the file itself, as the CLIs' own save does: for a file (reached through
    a link, say) in a folder the user cannot create files in, where no new file can be renamed
    over it. Owner, mode and links stay by themselves. The same guarantees as the rename: only
    over the version read (looked at on the descriptor written, the last thing before the write),
    in one write padded with spaces to the old length, so that the file holds JSON at every
    moment (then cut to its length); if the write fails part way, the old bytes go back."""
    fd = os.open(target, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if identity(os.fstat(fd)) != seen or (target != path and os.path.realpath(path) != target):
            raise Changed
        padded = data + b" " * (len(before) - len(data))
        try:
            write_at_start(fd, padded)
            os.ftruncate(fd, len(data))
            os.fsync(fd)
        except OSError as e:
            try:
                write_at_start(fd, before)
                os.ftruncate(fd, len(before))
                os.fsync(fd)
            except OSError:
                raise Refused(f"cannot write {target} ({e.strerror}) nor put its bytes back: check it") from None
            raise
    finally:
        os.close(fd)


def current(target: str) -> tuple[int, ...] | None:
    try:
        return identity(os.stat(target))
    except FileNotFoundError:
        return None


def identity(st: os.stat_result | None) -> tuple[int, ...] | None:
    """What tells one version of a file from the next (None: no file)."""
    return None if st is None else (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def yours(where: str, st: os.stat_result) -> None:
    """Refused unless the file (or the folder a new one goes into) is this user's: a file left
    owned by root (`sudo nvim` with the user's HOME) is one the user's own CLI cannot rewrite."""
    if st.st_uid != os.geteuid():
        raise Refused(
            f"{where} belongs to {owner(st.st_uid)}, not to you ({owner(os.geteuid())}): "
            "run Neovim as that user; nothing was changed"
        )


def owner(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def parse_settings(data: bytes) -> tuple[str, Any]:
    text = data.decode("utf-8")
    return text, jsonc(text) if text.strip() else {}


def settled(target: str, seen: tuple[int, ...] | None) -> None:
    """Changed unless the file stays as it was read for a moment: a save that truncates and then
    writes (the CLIs') can be read in between, empty or cut short. (The modification time moves in
    ticks of a few ms: within one, identity alone cannot tell.)"""
    time.sleep(SETTLE_SECONDS)
    if current(target) != seen:
        raise Changed


def write_at_start(fd: int, data: bytes) -> None:
    done = 0
    while done < len(data):  # one write but for a full disk or a size limit: then it raises
        done += os.pwrite(fd, data[done:], done)
