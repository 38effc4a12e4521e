"""Reverts: changes_put makes a file of a work tree what a turn's snapshot says, if it is still
what the turn left (host main thread, called by changes/revert.lua and type_change.lua).

Every step goes through folder descriptors opened one name at a time with O_NOFOLLOW: a folder
an agent swaps for a symlink makes the revert refuse; it never reads, writes or deletes through
it. A type change (a file that became a folder, or back) is type_change.py's.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Sequence
from typing import Any

from gemini_companion import files

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class RevertError(Exception):
    """One line: why a revert left the file as it is (`path`: the file inside a folder it is about)."""

    def __init__(self, why: str, path: str = "") -> None:
        super().__init__(why)
        self.path = path


def put(params: dict[str, Any]) -> dict[str, Any]:
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


def as_bytes(value: Any) -> bytes:
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


def temporary(name: str, kind: str) -> str:
    """A hidden name beside `name`, ours and new (a name is at most 255 bytes: cut by bytes)."""
    short = os.fsdecode(os.fsencode(name)[:200])
    return f".{short}.gemini-companion.{secrets.token_hex(6)}.{kind}"


def create(folder: int, name: str | bytes, want: dict[str, Any], mode: int) -> None:
    """Create `name` (new) as the file or link `want` says: a file with `mode`'s bits, execute as git's mode says."""
    if want["kind"] == "link":
        os.symlink(as_bytes(want.get("data")), name, dir_fd=folder)
        return
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
    with os.fdopen(fd, "wb") as file:
        file.write(as_bytes(want.get("data")))
        os.fchmod(fd, _git_mode(mode, want.get("mode")))  # the mode asked for, whatever the umask


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
    expected = as_bytes(expect.get("data")) if expect["kind"] != "none" else b""
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
