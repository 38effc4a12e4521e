"""Exact, cheap snapshots of a workspace as git tree objects, and what changed between two.

In a git work tree the tree is written through a private index (a copy of the user's, so
only files whose stat changed are hashed): the user's index, stash, branches and files are
untouched; the blobs land in the repository's object store as `git stash` would put them.
Outside git a private shadow repository under Neovim's state directory holds them. Either way
`.gitignore` is respected, and files over the size limit are left out (listed as skipped).
Standard library and the `git` binary only; every call is bounded. Runs off Neovim's loop.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

GIT_SECONDS = 30.0
# Our own identity and no user hooks or config surprises in what we run.
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}


class SnapshotError(Exception):
    """One line: why no snapshot could be taken."""


@dataclass(frozen=True)
class Snapshot:
    git_dir: str  # where the tree's objects are
    work_tree: str
    tree: str
    skipped: tuple[str, ...] = ()  # over the size limit: not in the tree


@dataclass
class FileChange:
    path: str  # relative to the work tree
    status: str  # "created" | "modified" | "deleted"
    added: int = 0
    removed: int = 0
    binary: bool = False


@dataclass
class Snapshotter:
    state_dir: Path  # shadow repositories and our private index copies live here
    max_file_bytes: int = 1 << 20
    _shadows: dict[str, str] = field(default_factory=dict)
    _seeded: dict[str, tuple[int, int]] = field(default_factory=dict)  # our index -> the user's (mtime, size)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, cwd: str) -> Snapshot:
        """The work tree that holds `cwd` (the git one, else `cwd` itself), as a tree object."""
        if shutil.which("git") is None:
            raise SnapshotError("git is not on PATH: changes cannot be tracked")
        top = self._git_top(cwd)
        if top is not None:
            git_dir = _git(["rev-parse", "--absolute-git-dir"], cwd=top).strip()
            user_index = _git(["rev-parse", "--path-format=absolute", "--git-path", "index"], cwd=top).strip()
            with self._lock:  # one snapshot at a time writes our index of a repository
                return self._write(git_dir, top, self._private_index(git_dir, user_index))
        work_tree = os.path.realpath(cwd)
        git_dir = self._shadow(work_tree)
        return self._write(git_dir, work_tree, os.path.join(git_dir, "index"))

    def changes(self, before: Snapshot, after: Snapshot) -> list[FileChange]:
        """Files created, modified or deleted from one tree to the other, with +/- line counts."""
        env = {"GIT_DIR": before.git_dir}
        statuses = _git(["diff-tree", "-r", "-z", "--no-renames", "--name-status", before.tree, after.tree], env=env)
        found: dict[str, FileChange] = {}
        fields = statuses.split("\0")
        kinds = {"A": "created", "M": "modified", "D": "deleted", "T": "modified"}
        for status, path in zip(fields[0::2], fields[1::2], strict=False):
            if status:
                found[path] = FileChange(path, kinds.get(status[0], "modified"))
        numstat = _git(["diff-tree", "-r", "-z", "--no-renames", "--numstat", before.tree, after.tree], env=env)
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
        """Shadow repositories keep only the trees of `kept` (the user's repository is left to
        its own gc: our objects there are unreferenced and expire as `git stash drop`'s do)."""
        for git_dir in list(self._shadows.values()):
            env = {"GIT_DIR": git_dir}
            trees = {snap.tree for snap in kept if snap.git_dir == git_dir}
            refs = _git(["for-each-ref", "--format=%(refname)", "refs/turns/"], env=env).split()
            for ref in refs:
                if ref.removeprefix("refs/turns/") not in trees:
                    _git(["update-ref", "-d", ref], env=env)
            for tree in trees:
                _git(["update-ref", f"refs/turns/{tree}", tree], env=env)
            _git(["gc", "--quiet", "--prune=now"], env=env)

    # --- inside ------------------------------------------------------------------------

    def _write(self, git_dir: str, work_tree: str, index: str) -> Snapshot:
        env = {"GIT_DIR": git_dir, "GIT_WORK_TREE": work_tree, "GIT_INDEX_FILE": index}
        # Changed, new (not ignored) and deleted files since the index was written: only these
        # are hashed. `-m` lists deleted files too; `-d` alone would miss none of them.
        listed = _git(["ls-files", "-z", "-m", "-o", "-d", "--exclude-standard", "--full-name"], cwd=work_tree, env=env)
        update: list[str] = []
        skipped: list[str] = []
        for path in dict.fromkeys(p for p in listed.split("\0") if p and not p.endswith("/")):  # "x/": a nested repo
            try:
                size = os.lstat(os.path.join(work_tree, path)).st_size
            except FileNotFoundError:
                size = 0  # deleted: update-index --remove takes it out
            (skipped if size > self.max_file_bytes else update).append(path)
        if update:
            paths = "\0".join(update)
            _git(["update-index", "--add", "--remove", "-z", "--stdin"], cwd=work_tree, env=env, stdin=paths)
        tree = _git(["write-tree"], cwd=work_tree, env=env).strip()
        return Snapshot(git_dir, work_tree, tree, tuple(skipped))

    def _private_index(self, git_dir: str, user_index: str) -> str:
        """Our own index of a repository: a copy of the user's, taken again whenever theirs
        changes, else kept from our last snapshot (its stat data is then fresh: a file whose
        edit fell in the same second as the index was written is hashed once, not each time)."""
        index = os.path.join(self._dir("indexes"), hashlib.sha256(git_dir.encode()).hexdigest()[:16])
        try:
            info = os.stat(user_index)
            theirs = (info.st_mtime_ns, info.st_size)
        except FileNotFoundError:
            theirs = (0, 0)
        if self._seeded.get(index) != theirs or not os.path.exists(index):
            if theirs == (0, 0):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(index)
            else:
                # copy2: the index's own mtime is what tells git a same-second edit may
                # hide behind clean-looking stat data ("racy git"); a fresh mtime would not.
                shutil.copy2(user_index, index)
            self._seeded[index] = theirs
        return index

    def _git_top(self, cwd: str) -> str | None:
        try:
            return _git(["rev-parse", "--show-toplevel"], cwd=cwd).strip() or None
        except SnapshotError:
            return None

    def _shadow(self, work_tree: str) -> str:
        """A private bare repository for a folder outside git (one per folder)."""
        if work_tree not in self._shadows:
            name = hashlib.sha256(work_tree.encode()).hexdigest()[:16]
            git_dir = os.path.join(self._dir("shadow"), name)
            if not os.path.exists(os.path.join(git_dir, "HEAD")):
                _git(["init", "-q", "--bare", git_dir], cwd=self._dir("shadow"))
            self._shadows[work_tree] = git_dir
        return self._shadows[work_tree]

    def _dir(self, name: str) -> str:
        path = self.state_dir / name
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        return str(path)


def _git(args: list[str], cwd: str | None = None, env: dict[str, str] | None = None, stdin: str | None = None) -> str:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    full_env.update(GIT_ENV, **(env or {}))
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=full_env,
            input=stdin,
            capture_output=True,
            encoding="utf-8",
            errors="surrogateescape",
            timeout=GIT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise SnapshotError(f"git {args[0]}: {err}") from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise SnapshotError(f"git {args[0]}: {lines[-1] if lines else f'exit {done.returncode}'}")
    return done.stdout
