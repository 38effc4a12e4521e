"""Exact, cheap snapshots of a workspace as git tree objects, and what changed between two.

Git here runs only git, on a private repository of ours (one per work tree, under the state
directory), never on the user's: every command goes through `git.run`, which sets GIT_DIR to ours,
so the repository's config, includes and hooks are never read; fixed settings switch off every
program git could start (hooks, fsmonitor) and our info/attributes every conversion (filters,
CRLF/eol, ident, encodings): a snapshot holds the bytes on disk. Of the user's repository only
files are read: its `.git` file (and `commondir`), a copy of its index, its info/exclude, and its
object store, as a read-only alternate. Our index starts as the user's list of paths and blob ids,
each kept only when git has hashed the file and found those very bytes (so an unchanged file costs
no copy); from then on only files whose stat changed are hashed. `.gitignore` is respected; files
over the size limit are left out (listed as skipped); files inside a submodule or a nested clone are
the tree's own (see snapshot_write.listed); a snapshot that would copy more than MAX_NEW_FILES /
MAX_NEW_BYTES is refused. After a tree's first snapshot, its watcher (watch.py) names the paths
changed since the last one, and only those are looked at: files changed or gone go into a copy of
the last tree without our index (tree_edit.py; our index learns them at the next listing), anything
else is listed by git with those paths named (snapshot_write.py writes both); nothing changed: the
last snapshot again. Whatever the watcher may have missed, or a change to what is ignored, lists
the whole tree again.
Standard library, the `git` binary and inotify_simple only; every call is bounded. Runs off Neovim's loop.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gemini_companion import files
from gemini_companion.changes import git, git_index, snapshot_write, user_repo
from gemini_companion.changes.git import SnapshotError
from gemini_companion.changes.watch import MAX_CHANGED, Watcher

# The bytes on disk are the blob, whatever .gitattributes says ($GIT_DIR/info/attributes has the
# highest precedence): no filter driver (clean, smudge, process), no CRLF, eol, ident or
# working-tree-encoding conversion; binary or not by content only.
RAW_ATTRIBUTES = "* -text -filter -ident -working-tree-encoding !diff\n"
OTHERS_KEPT_SECONDS = 14 * 86400  # another Neovim's turns (it may still run) keep their trees this long
# The user's index is copied to start ours only up to this size (about a million paths): a bigger
# one (or a sparse file posing as one) is not reused, every file is hashed from scratch instead,
# rather than copying and reading gigabytes.
MAX_USER_INDEX = 128 << 20
# How a sparse index of the user's is read without expanding it (with our info/sparse-checkout).
SPARSE_READ = ("-c", "core.sparseCheckout=true", "-c", "core.sparseCheckoutCone=true", "-c", "index.sparse=true")
# What one snapshot may hash into our store (new or changed files): a turn in a home folder, or any
# folder holding a whole file system, is refused in one line rather than copied into the state
# directory. A project's first snapshot (every untracked file, or every file outside git) fits.
MAX_NEW_FILES = 20_000
MAX_NEW_BYTES = 256 << 20


@dataclass(frozen=True)
class Snapshot:
    git_dir: str  # our repository, where the tree is
    work_tree: str
    tree: str
    skipped: tuple[str, ...] = ()  # over the size limit: not in the tree
    alternates: str = ""  # GIT_ALTERNATE_OBJECT_DIRECTORIES to read it: the user's object store, quoted


@dataclass
class FileChange:
    path: str  # relative to the work tree
    status: str  # "created" | "modified" | "deleted"
    added: int = 0
    removed: int = 0
    binary: bool = False
    also: list[str] = field(default_factory=list)  # other agents that changed it at the same time (overlap.py)


@dataclass(frozen=True)
class _Repo:
    git_dir: str  # ours
    work_tree: str
    alternates: str  # see Snapshot
    user_index: str | None  # the user's index, to start ours from
    user_exclude: str | None  # the user's info/exclude, kept in step with ours
    untracked: bool = True  # list files the user's index does not track (not for a dotfiles tree)


@dataclass
class Snapshotter:
    state_dir: Path  # our repositories live here
    max_file_bytes: int = 1 << 20
    watch_limit: int | None = None  # the user's inotify watch limit if not the system's (tests lower it)
    on_note: Callable[[str], None] | None = None  # one line for the user (a tree each turn rescans)
    _repos: dict[str, _Repo] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # This Neovim's refs (refs/turns/<ns>/<tree>): a prune takes back only its own, and other
    # Neovims' once they are old.
    _ns: str = field(default_factory=lambda: f"{int(time.time())}-{secrets.token_hex(4)}")
    # Per repository of ours: nested repositories too big to enter ("x/"), left out while we run.
    _left_out: dict[str, set[str]] = field(default_factory=dict)
    _warmed: set[str] = field(default_factory=set)  # work trees `warm` has started a snapshot of
    # Per repository of ours: what changed in its work tree (watch.py), the global excludes file's
    # stat when last listed, and its last snapshot (what a snapshot with nothing changed returns again).
    _watchers: dict[str, Watcher] = field(default_factory=dict)
    _excludes: dict[str, tuple[str, tuple[int, ...]]] = field(default_factory=dict)
    _last: dict[str, Snapshot] = field(default_factory=dict)
    _told: set[str] = field(default_factory=set)  # trees whose watcher's `why` the user was told
    # Per repository of ours: paths whose change went into a tree (tree_edit.py) but not our index yet.
    _stale: dict[str, set[str]] = field(default_factory=dict)

    def take(self, cwd: str) -> Snapshot:
        """The work tree that holds `cwd` (the folder with the nearest `.git`, else `cwd`
        itself), as a tree object."""
        if shutil.which("git") is None:
            raise SnapshotError("git is not on PATH: changes cannot be tracked")
        with self._lock:  # one snapshot at a time writes our index of a repository
            real = os.path.realpath(cwd)
            repo = self._repo(real)
            tracked: list[str] = []
            entries = None  # the user's index, read once a snapshot: our list and our seed
            if not repo.untracked:  # a dotfiles tree: its files are those the user's index lists now
                entries = self._user_entries(repo, repo.user_index) if repo.user_index else ""
                tracked = _paths(entries)
                below = os.path.relpath(real, repo.work_tree)
                if below != "." and not any(path.startswith(below + "/") for path in tracked):
                    # A folder of it the dotfiles do not track (a project in the home folder):
                    # its own work tree outside git, every file of it followed.
                    repo, tracked, entries = self._repo(real, alone=True), [], None
            return self._write(repo, tracked, entries)

    def warm(self, cwd: str) -> None:
        """The first snapshot of the git work tree holding `cwd`, on a worker thread (the turn
        that comes next finds our index made, and waits only for what changed since). Nothing
        for a folder outside git or a dotfiles tree (a home folder is no project), nor for a tree
        this Snapshotter has taken already; a failure is the next turn's to tell."""
        real = os.path.realpath(cwd)
        work_tree, user, dotfiles = user_repo.find(real)
        key = f"{work_tree}\0{user[0] if user else ''}"
        if user is None or dotfiles or key in self._repos or key in self._warmed:
            return
        self._warmed.add(key)

        def first() -> None:
            with contextlib.suppress(SnapshotError, OSError):
                self.take(real)

        threading.Thread(target=first, name="changes-warm", daemon=True).start()

    def changes(self, before: Snapshot, after: Snapshot) -> list[FileChange]:
        """Files created, modified or deleted from one tree to the other, with +/- line counts."""
        diff = ["diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", "--no-textconv"]
        statuses = git.run(
            before.git_dir, [*diff, "--name-status", before.tree, after.tree], alternates=before.alternates
        )
        found: dict[str, FileChange] = {}
        fields = statuses.split("\0")
        kinds = {"A": "created", "M": "modified", "D": "deleted", "T": "modified"}
        for status, path in zip(fields[0::2], fields[1::2], strict=False):
            if status:
                found[path] = FileChange(path, kinds.get(status[0], "modified"))
        numstat = git.run(before.git_dir, [*diff, "--numstat", before.tree, after.tree], alternates=before.alternates)
        for record in numstat.split("\0"):
            parts = record.split("\t", 2)
            if len(parts) == 3 and parts[2] in found:
                change = found[parts[2]]
                change.binary = parts[0] == "-"
                change.added = 0 if change.binary else int(parts[0])
                change.removed = 0 if change.binary else int(parts[1])
        skipped = set(before.skipped) | set(after.skipped)
        return [change for path, change in sorted(found.items()) if path not in skipped]

    def prune(self, kept: list[Snapshot]) -> None:
        """Our repositories keep the trees of `kept` (and other Neovims' recent ones); objects
        nothing refers to go once an hour old (a snapshot being taken has newer ones). Blobs
        that are the user's stay in the user's store, left to its own gc."""
        with self._lock:
            repos = list(self._repos.values())
        others_since = time.time() - OTHERS_KEPT_SECONDS
        for repo in repos:
            trees = {snap.tree for snap in kept if snap.git_dir == repo.git_dir}
            gone = []
            for ref in git.run(repo.git_dir, ["for-each-ref", "--format=%(refname)", "refs/turns/"]).split():
                ns, _, tree = ref.removeprefix("refs/turns/").partition("/")
                if ns == self._ns:
                    unused = tree not in trees
                else:  # another Neovim's: kept two weeks from its start (it may still show them)
                    started = ns.partition("-")[0]
                    unused = not started.isdigit() or int(started) < others_since
                if unused:
                    gone.append(ref)
            if gone:
                git.run(repo.git_dir, ["update-ref", "-z", "--stdin"], stdin="".join(f"delete {r}\0\0" for r in gone))
            git.run(repo.git_dir, ["prune", "--expire=1.hour.ago"])

    def close(self) -> None:
        """Stop watching (this Snapshotter is replaced)."""
        with self._lock:
            for watcher in self._watchers.values():
                watcher.close()
            self._watchers.clear()

    # --- inside ------------------------------------------------------------------------

    def _write(self, repo: _Repo, tracked: list[str], entries: str | None) -> Snapshot:
        changed = self._changed(repo)  # None: the whole tree is listed
        if repo.user_exclude is not None and _sync(repo.user_exclude, os.path.join(repo.git_dir, "info", "exclude")):
            changed = None  # what is ignored changed
        last = self._last.get(repo.git_dir)
        try:
            snap = None
            if last is not None and changed is not None:
                snap = snapshot_write.edited(self, repo, last, changed) if changed else self._again(repo, last)
            if snap is None:
                stale = self._stale.pop(repo.git_dir, set())  # our index learns them now
                if changed is not None and len(changed | stale) > MAX_CHANGED:
                    changed = None  # (a full listing finds them all by their stat)
                try:
                    snap = snapshot_write.write_changed(
                        self, repo, tracked, entries, None if changed is None else changed | stale
                    )
                except BaseException:
                    self._stale.setdefault(repo.git_dir, set()).update(stale)
                    raise
        except BaseException:
            if repo.git_dir in self._watchers:  # what changed was not all looked at
                self._watchers[repo.git_dir].rescan_next()
            raise
        self._last[repo.git_dir] = snap
        return snap

    def _again(self, repo: _Repo, last: Snapshot) -> Snapshot | None:
        """Nothing changed since the last snapshot: the same, its ref made again (a prune may have
        taken it); None if its tree was pruned meanwhile."""
        try:
            git.run(repo.git_dir, ["update-ref", f"refs/turns/{self._ns}/{last.tree}", last.tree])
        except SnapshotError:
            return None
        return last

    def _changed(self, repo: _Repo) -> set[str] | None:
        """The paths changed in the work tree since its last snapshot, as its watcher saw them;
        None if anything may have (no watcher, a change it may have missed, the global excludes
        file changed): then the whole tree is listed. A tree that cannot be watched says so once."""
        if not repo.untracked:
            return None  # a dotfiles tree: its list is what the user's index names now
        watcher = self._watchers.get(repo.git_dir)
        if watcher is None:  # watching before the first listing: nothing falls in between
            others = sum(w.watching() for w in self._watchers.values())
            watcher = self._watchers[repo.git_dir] = Watcher(repo.work_tree, self.watch_limit, others)
        changed = watcher.changed()
        if watcher.why and repo.git_dir not in self._told:
            self._told.add(repo.git_dir)
            if self.on_note:
                self.on_note(f"changes: each turn rescans {repo.work_tree}: {watcher.why}")
        path, stamp = self._excludes.get(repo.git_dir) or (self._excludes_file(repo), ())
        now = _stamp(path)
        self._excludes[repo.git_dir] = (path, now)
        return changed if now == stamp else None

    def _excludes_file(self, repo: _Repo) -> str:
        """The user's global excludes file (core.excludesFile, else git's default)."""
        with contextlib.suppress(SnapshotError):
            named = git.run(repo.git_dir, ["config", "--path", "core.excludesFile"]).strip()
            if named:
                return named
        config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        return os.path.join(config, "git", "ignore")

    def _listed(self, repo: _Repo, changed: set[str] | None = None) -> tuple[list[str], list[str], list[str]]:
        """See snapshot_write.listed."""
        return snapshot_write.listed(self, repo, changed)

    def _user_entries(self, repo: _Repo, user_index: str) -> str:
        """`ls-files -s -z` of a copy of the user's index; "" if it cannot be read."""
        copy = os.path.join(repo.git_dir, "user-index")
        shared = ""
        try:
            data = _copy_file(user_index, copy, MAX_USER_INDEX)
            if data is None:
                return ""
            # A split index (core.splitIndex) names its shared part, which git looks for in our git
            # dir: a copy goes there too (none found: the read below fails, every file is hashed).
            extensions, hash_size = git_index.extensions(data)
            shared = git_index.shared_index(extensions, hash_size)
            if shared:
                _copy_file(
                    os.path.join(os.path.dirname(user_index), shared),
                    os.path.join(repo.git_dir, shared),
                    MAX_USER_INDEX,
                )
            # A sparse index (its "sdir" extension) is read as it is, folders outside the cone as
            # one entry each: expanding it would write their trees again, and git freshens (touches)
            # the user's copies of them.
            sparse = b"sdir" in extensions
            if sparse:
                Path(repo.git_dir, "info", "sparse-checkout").write_text("/*\n!/*/\n", encoding="utf-8")
            args = [*SPARSE_READ, "ls-files", "-s", "-z", "--sparse"] if sparse else ["ls-files", "-s", "-z"]
            return git.run(repo.git_dir, args, index=copy, alternates=repo.alternates)
        except SnapshotError:
            return ""  # theirs is of another hash, or unreadable: every file is hashed once
        finally:
            for name in [copy, *([os.path.join(repo.git_dir, shared)] if shared else [])]:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name)

    def _repo(self, cwd: str, *, alone: bool = False) -> _Repo:
        """Our repository for the work tree holding `cwd` (`alone`: `cwd` itself, outside git),
        made on first use."""
        work_tree, user, dotfiles = (cwd, None, False) if alone else user_repo.find(cwd)
        key = f"{work_tree}\0{user[0] if user else ''}"
        if key in self._repos:
            return self._repos[key]
        git_dir = os.path.join(
            self._dir("repos"), hashlib.sha256(key.encode(errors="surrogateescape")).hexdigest()[:16]
        )
        attributes = os.path.join(git_dir, "info", "attributes")
        if not os.path.exists(attributes):  # written last: a repository without it is unfinished
            git.run(git_dir, ["init", "-q", "--bare", "--template="])
            with open(os.path.join(git_dir, "config"), "a", encoding="utf-8") as config:
                for key_name, value in git.SAFE_CONFIG.items():
                    section, _, name = key_name.partition(".")
                    config.write(f"[{section}]\n\t{name} = {value}\n")
            os.makedirs(os.path.dirname(attributes), exist_ok=True)
            Path(attributes).write_text(RAW_ATTRIBUTES, encoding="utf-8")
        if user is None:
            repo = _Repo(git_dir, work_tree, "", None, None)
        else:
            user_git_dir, common = user
            objects = os.path.join(common, "objects")
            alternates = git.quoted(objects) if os.path.isdir(objects) else ""
            exclude = os.path.join(common, "info", "exclude")
            index = os.path.join(user_git_dir, "index")
            repo = _Repo(git_dir, work_tree, alternates, index, exclude, untracked=not dotfiles)
        self._repos[key] = repo
        return repo

    def _dir(self, name: str) -> str:
        path = self.state_dir / name
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        return str(path)


def _too_much(sizes: dict[str, int]) -> str:
    """Why the files to hash are more than one snapshot copies; "" if they are not."""
    if len(sizes) > MAX_NEW_FILES:
        return f"more than {MAX_NEW_FILES} new files to copy"
    if sum(sizes.values()) > MAX_NEW_BYTES:
        return f"more than {MAX_NEW_BYTES >> 20} MB of new files to copy"
    return ""


def _stamp(path: str) -> tuple[int, ...]:
    """A file's identity and stat as far as a change to it shows; () if there is none."""
    try:
        info = os.stat(path)
    except OSError:
        return ()
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _paths(entries: str) -> list[str]:
    """The paths of the user's index (`ls-files -s -z`; a sparse folder as "x/")."""
    return list(dict.fromkeys(entry.partition("\t")[2] for entry in entries.split("\0") if entry))


def _copy_file(source: str, target: str, max_bytes: int) -> bytes | None:
    """Copy a regular file (never a FIFO, a device or a symlink) of at most `max_bytes`: its bytes;
    None if it is not one, or bigger (or grew past that as it was read)."""
    try:
        data, _ = files.read(source, max_bytes, follow=False)
    except OSError:
        return None
    Path(target).write_bytes(data)
    return data


def _sync(source: str, target: str) -> bool:
    """`target` holds what the regular file `source` holds (or nothing); whether it changed."""
    text = user_repo.read_small(source) or b""
    with contextlib.suppress(FileNotFoundError):
        if Path(target).read_bytes() == text:
            return False
    Path(target).write_bytes(text)
    return True
