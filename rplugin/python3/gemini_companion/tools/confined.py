"""Paths a tool names, confined to the workspace, and their bytes read without leaving it.

`confine` checks a path by name (symlinks resolved); `read_inside` reads what it names, opened one
component at a time from `/` through the root as it was resolved when it was set, never through
a link: a path swapped after the check is refused, never followed. ToolError is the one line the
model gets.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Any

from gemini_companion import files
from gemini_companion.server.http_guard import MAX_PATH, quote

MAX_FILE_BYTES = 8 << 20  # what a tool reads of one file; a larger one is refused
CHUNK = 64 << 10  # one read(2): a range reads at most this much past its last line
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# A folder on the way to a file: never a link; O_PATH (Linux) needs only search permission.
FOLDER = (getattr(os, "O_PATH", 0) or os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | CLOEXEC


class ToolError(Exception):
    """Bad input: the one line the model gets back."""


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
        return _read_bounded(fd, info.st_size, lines, name)
    except OSError as err:
        raise ToolError(f"{name}: {err.strerror}") from None
    finally:
        os.close(fd)


def _root_of(path: str, roots: list[str]) -> str | None:
    """The root `path` lies in, by name. Roots are compared as stored (resolved once, when they
    were set): resolving them again would follow a link swapped in for one since."""
    for root in roots:
        if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
            return root
    return None


def _read_bounded(fd: int, size: int, lines: int | None, name: str) -> bytes:
    """The file's bytes (with `lines`: up to its last one's newline), at most MAX_FILE_BYTES."""
    too_big = f"{name} is larger than the {MAX_FILE_BYTES >> 20} MiB a tool reads"
    if lines is None and size > MAX_FILE_BYTES:
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
        raise ToolError(f"the first {lines} lines of {name} are more than the {MAX_FILE_BYTES >> 20} MiB a tool reads")
    raise ToolError(too_big)


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
