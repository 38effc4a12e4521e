"""Which paths of a work tree changed between two snapshots, as inotify tells it (inotify_simple),
so that a snapshot looks at those alone instead of the whole tree (snapshot.py).

Whenever a change may have been missed (the kernel's queue overflowed, a watch could not be added,
the tree itself moved, more changed paths than one listing takes), the answer is "anything": the
snapshot rescans the tree. A tree that needs more folder watches than its share of the user's
inotify limit (fs.inotify.max_user_watches) is not watched at all: each snapshot rescans it, and
`why` says so. No thread of its own: the kernel queues the events between two snapshots, and the
Snapshotter reads them under its lock, before it lists. Folders named `.git` are not watched (git's
own churn); a `.git` coming or going counts as a change to the whole folder holding it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from typing import Any

try:
    import inotify_simple
except ImportError:  # a venv built before the dependency: every snapshot rescans, with one line
    inotify_simple = None

__all__ = ["MAX_CHANGED", "Watcher", "filesystem", "watch_limit"]

MAX_CHANGED = 2000  # changed paths one snapshot lists by name; more: a rescan
WATCH_SHARE = 2  # one tree may take this fraction (1/n) of the user's inotify watches, no more
LIMIT_FILES = ("/proc/sys/fs/inotify/max_user_watches", "/proc/sys/user/max_inotify_watches")
# File systems whose files other machines (or the host of a VM) change without inotify hearing of it.
REMOTE = {"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "glusterfs", "lustre", "gpfs", "virtiofs"}


def watch_limit() -> int:
    """The inotify watches this user may hold (the smaller of the system's and this user
    namespace's limit); 0 if neither can be read."""
    limits = []
    for path in LIMIT_FILES:
        with contextlib.suppress(OSError, ValueError), open(path, encoding="ascii") as file:
            limits.append(int(file.read().strip()))
    return min(limits) if limits else 0


def filesystem(path: str) -> str:
    """The type of the file system holding `path` (the mount with the longest matching mount
    point in /proc/self/mountinfo); "" if unknown."""
    best, kind = -1, ""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as mounts:
            for line in mounts:
                fields = line.split()
                if " - " not in line or len(fields) < 5:
                    continue
                point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[4])
                inside = path == point or path.startswith(point.rstrip("/") + "/")
                if inside and len(point) > best:
                    best, kind = len(point), line.split(" - ", 1)[1].split()[0]
    except OSError:
        return ""
    return kind


class Watcher:
    def __init__(self, root: str, limit: int | None = None, others: int = 0) -> None:
        """Watch every folder under `root` (not following symlinks), or say in `why` why not;
        `limit`: the user's inotify watch limit, if not the one the system says (tests); `others`:
        the folders our other trees' watchers hold (all of ours together take at most the share)."""
        self.root = root
        self.why = ""  # why the tree is not (or no longer) watched; "" while it is
        limit = watch_limit() if limit is None else limit
        self._max = limit // WATCH_SHARE - others
        self._too_many = (
            f"more than {self._max} folders, half of inotify's limit (fs.inotify.max_user_watches = {limit})"
            + (f" less the {others} our other trees' watchers hold" if others else "")
        )
        self._inotify: Any = None
        self._dirs: dict[int, str] = {}  # watch -> its folder, relative to root ("" the root)
        self._unwatched: set[str] = set()  # folders we could not watch: named as changed every time
        # Files with other names (hard links): written through a name elsewhere, inotify tells the
        # folder of that name only; named as changed every time.
        self._linked: set[str] = set()
        self._changed: set[str] = set()
        self._anything = True  # nothing was watched before now: the first answer is "rescan"
        if inotify_simple is None:
            self.why = "inotify_simple is not installed (run the plugin's build: make install)"
            return
        kind = filesystem(root)
        if kind in REMOTE or kind.startswith("fuse"):
            self.why = f"it is on {kind}, where inotify does not hear of changes made elsewhere"
            return
        try:
            self._inotify = inotify_simple.INotify(nonblocking=True)
        except (OSError, AttributeError) as err:  # AttributeError: a libc without inotify
            self.why = f"inotify cannot be used: {getattr(err, 'strerror', None) or err}"
            return
        self._add_tree("")

    def changed(self) -> set[str] | None:
        """The paths (relative to the root) that changed since the last call; None if anything
        may have (then the caller lists the whole tree)."""
        if self._inotify is not None:
            self._drain()
        if self._inotify is None:
            return None
        known = set(self._linked)
        for path in self._changed if len(self._changed) <= MAX_CHANGED else ():
            self._note_links(path)
        if self._linked - known:
            # A new name of a file: its other names, wherever in the tree, changed unseen with it.
            self._find_links()
            self._anything = True
        if len(self._linked) > MAX_CHANGED:
            self._give_up(f"more than {MAX_CHANGED} of its files have other names too (hard links)")
            return None
        changed, anything = self._changed | self._unwatched | self._linked, self._anything
        self._changed, self._anything = set(), False
        return None if anything or len(changed) > MAX_CHANGED else changed

    def watching(self) -> int:
        """How many folders this watcher holds a watch on."""
        return len(self._dirs)

    def rescan_next(self) -> None:
        """What the last answer named was not all looked at (the snapshot failed): the next is "anything"."""
        self._anything = True

    def close(self) -> None:
        if self._inotify is not None:
            with contextlib.suppress(OSError):
                self._inotify.close()
        self._inotify = None
        self._dirs.clear()

    # --- inside ------------------------------------------------------------------------

    def _give_up(self, why: str) -> None:
        self.close()
        self.why = why

    def _add_tree(self, top: str) -> None:
        """Watch `top` and every folder under it (a folder created or moved in: what is in it
        already is named by its own path, changed)."""
        flags = inotify_simple.flags
        mask = (
            flags.CREATE
            | flags.DELETE
            | flags.MODIFY
            | flags.ATTRIB
            | flags.CLOSE_WRITE
            | flags.MOVED_FROM
            | flags.MOVED_TO
            | flags.DELETE_SELF
            | flags.MOVE_SELF
            | flags.DONT_FOLLOW
            | flags.ONLYDIR
            | flags.EXCL_UNLINK
        )
        stack = [top]
        while stack and self._inotify is not None:
            folder = stack.pop()
            full = os.path.join(self.root, folder) if folder else self.root
            if len(self._dirs) >= self._max:
                self._give_up(self._too_many)
                return
            try:
                self._dirs[self._inotify.add_watch(full, mask)] = folder
                with os.scandir(full) as entries:
                    for entry in entries:
                        path = f"{folder}/{entry.name}" if folder else entry.name
                        if entry.name != ".git" and entry.is_dir(follow_symlinks=False):
                            stack.append(path)
                        elif entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_nlink > 1:
                            self._linked.add(path)
            except OSError as err:
                if err.errno == errno.ENOSPC:
                    self._give_up("inotify's limit on watches was reached (fs.inotify.max_user_watches)")
                    return
                if err.errno not in (errno.ENOENT, errno.ENOTDIR):  # gone again: its parent names it
                    self._unwatched.add(folder)  # unreadable: looked at every time
                    if not folder:
                        self._give_up(f"its folder cannot be watched ({err.strerror})")

    def _note_links(self, path: str) -> None:
        """Keep `path` among the files with other names while it is one."""
        try:
            info = os.lstat(os.path.join(self.root, path))
        except OSError:
            self._linked.discard(path)
            return
        if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            self._linked.add(path)
        else:
            self._linked.discard(path)

    def _find_links(self) -> None:
        """Every file of the watched folders that has other names (one stat each)."""
        self._linked = set()
        for folder in list(self._dirs.values()):
            with contextlib.suppress(OSError), os.scandir(os.path.join(self.root, folder)) as entries:
                for entry in entries:
                    if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_nlink > 1:
                        self._linked.add(f"{folder}/{entry.name}" if folder else entry.name)

    def _drain(self) -> None:
        while self._inotify is not None:
            try:
                events = self._inotify.read(timeout=0)
            except OSError as err:
                self._give_up(f"inotify failed: {err.strerror or err}")
                return
            if not events:
                return
            for event in events:
                self._event(event.wd, event.mask, event.name)

    def _event(self, wd: int, mask: int, name: str) -> None:
        flags = inotify_simple.flags
        if mask & flags.Q_OVERFLOW:  # events were dropped: anything may have changed
            self._anything = True
            return
        folder = self._dirs.get(wd)
        if folder is None:  # a watch taken off already (its folder moved or went)
            return
        if mask & (flags.IGNORED | flags.DELETE_SELF | flags.MOVE_SELF | flags.UNMOUNT):
            if folder == "":
                self._give_up("its folder was moved or deleted")
            elif mask & flags.IGNORED:
                del self._dirs[wd]
            return  # a folder's own going: its parent's event names it
        if name == ".gitignore" or (name == ".git" and folder == ""):  # what is ignored changed
            self._anything = True
            return
        if name == ".git":  # a repository came or went: its whole folder
            self._changed.add(folder)
            return
        path = f"{folder}/{name}" if folder else name
        self._changed.add(path)
        if mask & flags.ISDIR:
            if mask & (flags.MOVED_FROM | flags.DELETE):
                self._unwatch(path)
            if mask & (flags.CREATE | flags.MOVED_TO):
                self._add_tree(path)

    def _unwatch(self, top: str) -> None:
        """Stop watching `top` and the folders under it (moved away, or gone): a folder moved
        elsewhere in the tree is watched again under its new name."""
        inside = top + "/"
        for wd, folder in list(self._dirs.items()):
            if folder == top or folder.startswith(inside):
                del self._dirs[wd]
                with contextlib.suppress(OSError):
                    self._inotify.rm_watch(wd)
        self._unwatched = {f for f in self._unwatched if f != top and not f.startswith(inside)}
        self._linked = {f for f in self._linked if not f.startswith(inside)}
