"""A path whose type a turn changed, taken back whole: a file or a symlink that became a folder
(the agent deleted `f` and made `f/` with files in it), a folder that became a file or a symlink.
changes_put (revert.py) hands it here when either version is a folder, given as
{kind = "folder", files = [{path (inside it), kind, data, mode}]}: the turn's files under it.

The old version comes back (type, bytes, execute bit) only while nothing of the user's would be
lost: what stands there is what the turn left. The folder may hold fewer of the turn's files
(one deleted since loses nothing) but no other file, and each of them the turn's bytes and
execute bit. Else it refuses in one line, naming the reason, and changes nothing. The old
version is built beside the path under a hidden name, the path is moved aside and checked again
there, the old version moved in, and only then is what the turn left deleted: nothing of the
user's is ever gone, and a failure on the way puts everything back. All I/O goes through folder
descriptors and never follows a symlink, as in changes.py.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from typing import Any

from gemini_companion import files
from gemini_companion.changes.revert import DIR_FLAGS, RevertError, as_bytes, create, open_folder, temporary

MAX_DEPTH = 200  # folders inside folders a check goes down (a path is at most 4096 bytes)


def swap(parent: int, path: str, params: dict[str, Any]) -> dict[str, Any]:
    """Make `path` (its last name in the folder `parent`) what `params.want` says, if it is what
    `params.expect` says (the turn's end, `params.ended`). `params.unsaved`: a file of it whose buffer
    has unsaved edits (refused then). Answers {}, or {already = true, since = files added since}
    when it is as before the turn already, or {left = path, why = line} when what the turn left
    could not all be deleted after the swap (kept there, hidden); raises RevertError."""
    expect, want, unsaved = params["expect"], params["want"], str(params.get("unsaved") or "")
    name, ended = path.rsplit("/", 1)[-1], float(params.get("ended") or 0)
    back = _Look(want, path, extra=[])
    if back.differs(parent, name) is None:
        return {"already": True, "since": bool(back.extra)}
    if unsaved:
        raise RevertError("has unsaved edits in Neovim: save or undo them first", unsaved)
    left = _Look(expect, path, ended=ended)
    left.check(parent, name)
    tmp, aside = temporary(name, "tmp"), temporary(name, "old")
    try:
        _build(parent, tmp, want)
        os.rename(name, aside, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException:
        _remove(parent, tmp, None)
        raise
    try:
        left.check(parent, aside)  # again: written to in between, it goes back
        _move(parent, tmp, name)
    except BaseException:
        _remove(parent, tmp, None)
        try:
            _move(parent, aside, name)
        except OSError:
            raise RevertError(f"something new stands there; what was there is kept as {_said(aside)}") from None
        raise
    why = ""
    try:
        _remove(parent, aside, expect)
    except OSError as err:  # the path is back; what stays of the turn's is named, never lost
        why = err.strerror or str(err)
    with contextlib.suppress(FileNotFoundError):
        os.lstat(aside, dir_fd=parent)
        return {"left": path[: len(path) - len(name)] + aside, "why": why or "a file appeared in it meanwhile"}
    return {}


class _Look:
    """Is a path the `version` of it? What the turn left (`extra` None): some of the folder's files
    may be gone (nothing is lost), none may be added. What was before it (`extra` a list): every
    file must be there, files added since are listed in `extra`. `ended`: when the turn ended (0:
    not known), to tell a file made since from one the snapshot left out."""

    def __init__(self, version: dict[str, Any], path: str, extra: list[bytes] | None = None, ended: float = 0):
        self.version, self.path, self.extra, self.ended = version, path, extra, ended
        self.files = {as_bytes(file["path"]): file for file in version.get("files", [])}

    def check(self, parent: int, name: str) -> None:
        why = self.differs(parent, name)
        if why is not None:
            raise RevertError(*why)

    def differs(self, parent: int, name: str) -> tuple[str, str] | None:
        """Why `name` is not it: a line, and the file inside it is about ("" for `name`); None when it is."""
        try:
            info = os.lstat(name, dir_fd=parent)
        except FileNotFoundError:
            return "changed after the turn (it is gone): left as it is", ""
        if self.version["kind"] != "folder":
            if stat.S_ISDIR(info.st_mode):
                return "is a folder now: left as it is", ""
            return None if _same(parent, name, info, self.version) else ("changed after the turn: left as it is", "")
        if not stat.S_ISDIR(info.st_mode):
            return f"is a {_kind(info)} now: left as it is", ""
        seen: set[bytes] = set()
        fd = os.open(name, DIR_FLAGS, dir_fd=parent)
        try:
            why = self._walk(fd, b"", seen)
        finally:
            os.close(fd)
        if why is None and self.extra is not None and len(seen) != len(self.files):
            return "changed after the turn: left as it is", ""
        return why

    def _walk(self, fd: int, prefix: bytes, seen: set[bytes]) -> tuple[str, str] | None:
        if prefix.count(b"/") > MAX_DEPTH:
            return "is a folder too deep to check: left as it is", ""
        for entry in sorted(os.listdir(fd)):
            rel = prefix + os.fsencode(entry)
            info = os.lstat(entry, dir_fd=fd)
            if stat.S_ISDIR(info.st_mode):
                inner = os.open(entry, DIR_FLAGS, dir_fd=fd)
                try:
                    why = self._walk(inner, rel + b"/", seen)
                finally:
                    os.close(inner)
                if why is not None:
                    return why
            elif rel not in self.files and self.extra is not None:
                self.extra.append(rel)
            elif rel not in self.files:
                return f"is now a folder holding files {self._whose(info)} ({_said(rel)}): left as it is", ""
            elif not _same(fd, entry, info, self.files[rel]):
                path = self.path
                return f"changed after the turn: {_said(path)} is left as it is", f"{path}/{os.fsdecode(rel)}"
            else:
                seen.add(rel)
        return None

    def _whose(self, info: os.stat_result) -> str:
        """A file not in the turn's snapshot: made since, or made in the turn and left out (ignored,
        too big; or yours, meanwhile): it could not come back, so it stays."""
        if not self.ended:
            return "not in the turn's snapshot"
        return "made after the turn" if max(info.st_mtime, info.st_ctime) > self.ended else "the snapshot left out"


def _same(fd: int, name: str, info: os.stat_result, version: dict[str, Any]) -> bool:
    """Is `name` (lstat `info`) the file or link `version` says: bytes or target, execute bit?"""
    data = as_bytes(version.get("data"))
    if version["kind"] == "link":
        return stat.S_ISLNK(info.st_mode) and os.fsencode(os.readlink(name, dir_fd=fd)) == data
    if not stat.S_ISREG(info.st_mode) or info.st_size != len(data):
        return False  # a FIFO or a device is never opened; a bigger file never read
    if version.get("mode") in ("100644", "100755") and bool(info.st_mode & 0o100) != (version["mode"] == "100755"):
        return False
    try:
        return files.read(name, len(data), dir_fd=fd, follow=False)[0] == data
    except files.Unreadable:  # swapped for another kind, or grown, since the lstat
        return False


def _build(parent: int, name: str, want: dict[str, Any]) -> None:
    """Create `name` (new) as `want`: a file, a link, or a folder of them (folders as mkdir makes them)."""
    if want["kind"] != "folder":
        create(parent, name, want, 0o644)
        return
    os.mkdir(name, 0o777, dir_fd=parent)
    fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    try:
        for file in want["files"]:
            *folders, last = as_bytes(file["path"]).split(b"/")
            if any(part in (b"", b".", b"..") for part in [*folders, last]):
                raise RevertError("not a path of the work tree: left as it is")
            inner = open_folder(fd, folders, True)
            try:
                create(inner, last, file, 0o644)
            finally:
                os.close(inner)
    finally:
        os.close(fd)


def _move(parent: int, src: str, dst: str) -> None:
    """Rename `src` to `dst`, never over anything there (but an empty folder): FileExistsError."""
    if stat.S_ISDIR(os.lstat(src, dir_fd=parent).st_mode):
        os.rename(src, dst, src_dir_fd=parent, dst_dir_fd=parent)  # fails over a file or a folder with files
        return
    try:
        os.link(src, dst, src_dir_fd=parent, dst_dir_fd=parent, follow_symlinks=False)
    except FileExistsError:
        raise
    except (OSError, NotImplementedError):  # no hard links here: looked at, then renamed
        with contextlib.suppress(FileNotFoundError):
            os.lstat(dst, dir_fd=parent)
            raise FileExistsError(errno.EEXIST, "exists", dst) from None
        os.rename(src, dst, src_dir_fd=parent, dst_dir_fd=parent)
        return
    os.unlink(src, dir_fd=parent)


def _remove(parent: int, name: str, version: dict[str, Any] | None) -> None:
    """Delete `name`: all of it (`version` None: ours), or only what `version` says is there (checked)."""
    try:
        folder = stat.S_ISDIR(os.lstat(name, dir_fd=parent).st_mode)
    except FileNotFoundError:
        return
    if not folder:
        os.unlink(name, dir_fd=parent)
    else:
        _clear(parent, name, None if version is None else {as_bytes(f["path"]) for f in version.get("files", [])})


def _clear(parent: int, name: str | bytes, files: set[bytes] | None, prefix: bytes = b"") -> None:
    """Delete the folder `name`: the files `files` names (every file when None) and the folders
    that end up empty. Whatever else appeared in it stays, with the folder."""
    fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    try:
        for entry in os.listdir(fd):
            rel = prefix + os.fsencode(entry)
            if stat.S_ISDIR(os.lstat(entry, dir_fd=fd).st_mode):
                _clear(fd, entry, files, rel + b"/")
            elif files is None or rel in files:
                os.unlink(entry, dir_fd=fd)
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):  # not empty: something appeared, and stays
        os.rmdir(name, dir_fd=parent)


def _kind(info: os.stat_result) -> str:
    return "symlink" if stat.S_ISLNK(info.st_mode) else "file" if stat.S_ISREG(info.st_mode) else "special file"


def _said(name: str | bytes) -> str:
    """A name as one line of a message: a control character as ^X, a byte that is not UTF-8 as \\xff."""
    text = name if isinstance(name, str) else name.decode("utf-8", "backslashreplace")
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return re.sub(r"[\x00-\x1f\x7f]", lambda m: f"^{chr(ord(m[0]) ^ 64)}", text)
