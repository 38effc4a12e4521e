"""The one way the Python side reads a file it does not control (files.lua is the Lua side's).

Opened without waiting (a FIFO put in a file's place would hold the reader until a writer came),
judged on what was opened (fstat: a regular file, of the expected owner and mode, within the
bound), then read up to the bound and no further, so a file swapped, grown or made huge can
neither hang nor flood the reader. The differences between readers are arguments: links followed
or not, a folder handle to open from, the owner and mode required, a caller's own checks on the
file opened. Standard library only (os, stat): the standalone programs import it too.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # typing is not imported: the hook program imports this file at every CLI event
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Unreadable", "open_judged", "read"]


class Unreadable(OSError):
    """The file opened is not one to read: `reason` says why, in words for a one-line message."""

    def __init__(self, reason: str, info: os.stat_result | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.info = info

    def __str__(self) -> str:
        return self.reason


def read(
    path: str,
    limit: int,
    *,
    dir_fd: int | None = None,
    follow: bool = True,
    owner: int | None = None,
    private: bool = False,
    prefix: bool = False,
    check: Callable[[os.stat_result], None] | None = None,
) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file at `path` (at most `limit`) and the fstat of what was opened.

    `follow=False` refuses a link in the last component (ELOOP); `dir_fd` opens `path` relative to
    a folder handle; `owner` requires that uid; `private` requires no group or other permission
    bits; `check` may raise its own refusal on the file opened, before any byte is read.
    A larger file is refused, and so is one that grew past `limit` while it was read, unless
    `prefix` asks for its first `limit` bytes. Errors: OSError from the open (FileNotFoundError,
    ...) and `Unreadable`, an OSError too, for a file judged and refused."""
    fd, info = open_judged(path, dir_fd=dir_fd, follow=follow, owner=owner, private=private, check=check)
    try:
        if info.st_size > limit and not prefix:
            raise Unreadable(f"larger than {limit} bytes", info)
        data = _read_up_to(fd, limit if prefix else limit + 1)
        if len(data) > limit:
            raise Unreadable(f"larger than {limit} bytes (it grew as it was read)", info)
        return data, info
    finally:
        os.close(fd)


def open_judged(
    path: str,
    *,
    dir_fd: int | None = None,
    follow: bool = True,
    owner: int | None = None,
    private: bool = False,
    check: Callable[[os.stat_result], None] | None = None,
) -> tuple[int, os.stat_result]:
    """The descriptor of the regular file at `path`, judged as `read` judges it, and its fstat, for
    a reader that takes only parts of a file (its head, its tail). The caller closes it."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags, dir_fd=dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise Unreadable(kind, info)
        if owner is not None and info.st_uid != owner:
            raise Unreadable("not yours", info)
        if private and info.st_mode & 0o077:
            raise Unreadable("open to other users", info)
        if check is not None:
            check(info)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def _read_up_to(fd: int, count: int) -> bytes:
    """Up to `count` bytes from `fd`: a read may return fewer than asked before the end."""
    chunks: list[bytes] = []
    left = count
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
