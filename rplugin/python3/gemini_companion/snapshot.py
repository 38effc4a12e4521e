"""Exact, cheap snapshots of a workspace as git tree objects, and what changed between two.

Git here runs only git, on a private repository of ours (one per work tree, under the state
directory), never on the user's: every command goes through `_git`, which sets GIT_DIR to ours,
so the repository's config, includes and hooks are never read; fixed settings switch off every
program git could start (hooks, fsmonitor) and our info/attributes every conversion (filters,
CRLF/eol, ident, encodings): a snapshot holds the bytes on disk. Of the user's repository only
files are read: its `.git` file (and `commondir`), a copy of its index, its info/exclude, and its
object store, as a read-only alternate. Our index starts as the user's list of paths and blob ids,
each kept only when git has hashed the file and found those very bytes (so an unchanged file costs
no copy); from then on only files whose stat changed are hashed. `.gitignore` is respected; files
over the size limit are left out (listed as skipped). Standard library and the `git` binary only;
every call is bounded. Runs off Neovim's loop.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import stat
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

GIT_SECONDS = 30.0
# On every command line (they win over every config file and its includes) and in our
# repositories' config (for changes.lua's reads): no hook (update-index runs post-index-change,
# update-ref reference-transaction) and no fsmonitor program or daemon; and every file's stat data
# checked, as a snapshot must be exact (a user's global core.ignoreStat would take a file's next
# change for none).
SAFE_CONFIG = {
    "core.hooksPath": "/dev/null",
    "core.fsmonitor": "false",
    "core.checkStat": "default",
    "core.trustctime": "true",
    "core.ignoreStat": "false",
    "core.autocrlf": "false",
    # git's default: a user's small global value would take every file over it for binary (no diff).
    "core.bigFileThreshold": "512m",
}
# The bytes on disk are the blob, whatever .gitattributes says ($GIT_DIR/info/attributes has the
# highest precedence): no filter driver (clean, smudge, process), no CRLF, eol, ident or
# working-tree-encoding conversion; binary or not by content only.
RAW_ATTRIBUTES = "* -text -filter -ident -working-tree-encoding !diff\n"
# Which config files git reads is the user's choice; every other GIT_* variable (GIT_DIR,
# GIT_WORK_TREE, GIT_INDEX_FILE, GIT_OBJECT_DIRECTORY, GIT_CONFIG_PARAMETERS, ...) is dropped.
USER_GIT_ENV = ("GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_GLOBAL")
GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_NO_LAZY_FETCH": "1", "LC_ALL": "C"}
OTHERS_KEPT_SECONDS = 14 * 86400  # another Neovim's turns (it may still run) keep their trees this long
EMPTY_BLOBS = (
    "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
    "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813",
)
SMALL_FILE = 1 << 20  # a `.git` file, commondir, info/exclude: read at most this much
# The user's index is copied to start ours only up to this size (about a million paths): a bigger
# one (or a sparse file posing as one) is not reused, every file is hashed from scratch instead,
# rather than copying and reading gigabytes.
MAX_USER_INDEX = 128 << 20


class SnapshotError(Exception):
    """One line: why no snapshot could be taken."""


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


@dataclass(frozen=True)
class _Repo:
    git_dir: str  # ours
    work_tree: str
    alternates: str  # see Snapshot
    user_index: str | None  # the user's index, to start ours from
    user_exclude: str | None  # the user's info/exclude, kept in step with ours


@dataclass
class Snapshotter:
    state_dir: Path  # our repositories live here
    max_file_bytes: int = 1 << 20
    _repos: dict[str, _Repo] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # This Neovim's refs (refs/turns/<ns>/<tree>): a prune takes back only its own, and other
    # Neovims' once they are old.
    _ns: str = field(default_factory=lambda: f"{int(time.time())}-{secrets.token_hex(4)}")

    def take(self, cwd: str) -> Snapshot:
        """The work tree that holds `cwd` (the folder with the nearest `.git`, else `cwd`
        itself), as a tree object."""
        if shutil.which("git") is None:
            raise SnapshotError("git is not on PATH: changes cannot be tracked")
        with self._lock:  # one snapshot at a time writes our index of a repository
            repo = self._repo(os.path.realpath(cwd))
            return self._write(repo)

    def changes(self, before: Snapshot, after: Snapshot) -> list[FileChange]:
        """Files created, modified or deleted from one tree to the other, with +/- line counts."""
        diff = ["diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", "--no-textconv"]
        statuses = _git(before.git_dir, [*diff, "--name-status", before.tree, after.tree], alternates=before.alternates)
        found: dict[str, FileChange] = {}
        fields = statuses.split("\0")
        kinds = {"A": "created", "M": "modified", "D": "deleted", "T": "modified"}
        for status, path in zip(fields[0::2], fields[1::2], strict=False):
            if status:
                found[path] = FileChange(path, kinds.get(status[0], "modified"))
        numstat = _git(before.git_dir, [*diff, "--numstat", before.tree, after.tree], alternates=before.alternates)
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
            for ref in _git(repo.git_dir, ["for-each-ref", "--format=%(refname)", "refs/turns/"]).split():
                ns, _, tree = ref.removeprefix("refs/turns/").partition("/")
                if ns == self._ns:
                    unused = tree not in trees
                else:  # another Neovim's: kept two weeks from its start (it may still show them)
                    started = ns.partition("-")[0]
                    unused = not started.isdigit() or int(started) < others_since
                if unused:
                    gone.append(ref)
            if gone:
                _git(repo.git_dir, ["update-ref", "-z", "--stdin"], stdin="".join(f"delete {r}\0\0" for r in gone))
            _git(repo.git_dir, ["prune", "--expire=1.hour.ago"])

    # --- inside ------------------------------------------------------------------------

    def _write(self, repo: _Repo) -> Snapshot:
        if repo.user_exclude is not None:
            _sync(repo.user_exclude, os.path.join(repo.git_dir, "info", "exclude"))
        if repo.user_index is not None and not os.path.exists(os.path.join(repo.git_dir, "index")):
            self._seed(repo, repo.user_index)
        # Only an index started from the user's refers to blobs in the user's store.
        alternates = repo.alternates if os.path.exists(os.path.join(repo.git_dir, "seeded")) else ""
        # Changed, new (not ignored) and deleted files since our index was written: only these
        # are hashed. `-m` lists deleted files too; `-d` alone would miss none of them.
        listed = _git(
            repo.git_dir, ["ls-files", "-z", "-m", "-o", "-d", "--exclude-standard", "--full-name"], repo.work_tree
        )
        update: list[str] = []
        gone: list[str] = []
        skipped: list[str] = []
        kinds = {"file": update, "absent": update, "big": skipped, "other": gone}
        parents: dict[str, bool] = {}
        for path in dict.fromkeys(p for p in listed.split("\0") if p and not p.endswith("/")):  # "x/": a nested repo
            kinds[self._kind(repo.work_tree, path, parents)].append(path)
        if gone:  # not a file of the work tree (behind a symlink, a folder, a FIFO): out of the index
            _git(repo.git_dir, ["update-index", "--force-remove", "-z", "--stdin"], repo.work_tree, "\0".join(gone))
        if update:
            args = ["update-index", "--add", "--remove", "--replace", "-z", "--stdin"]
            _git(repo.git_dir, args, repo.work_tree, "\0".join(update))
        # Blobs that are the user's are in its store, which only reads see: no existence check.
        tree = _git(repo.git_dir, ["write-tree", "--missing-ok"], repo.work_tree).strip()
        _git(repo.git_dir, ["update-ref", f"refs/turns/{self._ns}/{tree}", tree])
        return Snapshot(repo.git_dir, repo.work_tree, tree, tuple(skipped), alternates)

    def _seed(self, repo: _Repo, user_index: str) -> None:
        """Our first index of a git work tree: the user's paths, modes and blob ids (never its stat
        data or extensions), each kept only if the file's bytes hash to that id (the refresh);
        the others are hashed as changed. Without a readable index of theirs: none."""
        copy = os.path.join(repo.git_dir, "user-index")
        try:
            if not _copy_file(user_index, copy, MAX_USER_INDEX):
                return
            entries = _git(repo.git_dir, ["ls-files", "-s", "-z"], index=copy, alternates=repo.alternates)
        except SnapshotError:
            return  # theirs is split, of another hash, or unreadable: every file is hashed once
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(copy)
        records = []
        parents: dict[str, bool] = {}
        for entry in entries.split("\0"):
            meta, _, path = entry.partition("\t")
            mode, _, rest = meta.partition(" ")
            oid, _, stage = rest.partition(" ")
            # Stage 0 only (a conflict's stages are hashed as they are now); no submodule; not the
            # empty blob (`git add -N` lists it without writing it).
            if (
                stage == "0"
                and mode != "160000"
                and oid not in EMPTY_BLOBS
                and self._kind(repo.work_tree, path, parents) == "file"
            ):
                records.append(f"{mode} {oid}\t{path}")
        if records and repo.alternates:
            Path(repo.git_dir, "seeded").touch()  # first: an index that may refer to theirs says so
            _git(repo.git_dir, ["update-index", "-z", "--index-info"], repo.work_tree, "\0".join(records) + "\0")
            _git(repo.git_dir, ["update-index", "-q", "--refresh"], repo.work_tree)

    def _kind(self, work_tree: str, path: str, parents: dict[str, bool]) -> str:
        """ "file" (to hash), "big" (over the limit, or unreadable), "absent" (deleted) or "other": behind a
        symlinked folder (outside, maybe) or not a file git stores."""
        parent = os.path.dirname(path)
        if parent not in parents:
            full = os.path.join(work_tree, parent)
            parents[parent] = os.path.realpath(full) == os.path.normpath(full)
        if not parents[parent]:
            return "other"
        try:
            info = os.lstat(os.path.join(work_tree, path))
        except (FileNotFoundError, NotADirectoryError):
            return "absent"
        except OSError:
            return "big"  # unreadable (a folder without search permission): left as it was, skipped
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
            return "other"  # a folder now (its files are listed on their own), a FIFO, ...
        return "big" if info.st_size > self.max_file_bytes else "file"

    def _repo(self, cwd: str) -> _Repo:
        """Our repository for the work tree holding `cwd`, made on first use."""
        work_tree, user = _work_tree(cwd)
        key = f"{work_tree}\0{user[0] if user else ''}"
        if key in self._repos:
            return self._repos[key]
        git_dir = os.path.join(
            self._dir("repos"), hashlib.sha256(key.encode(errors="surrogateescape")).hexdigest()[:16]
        )
        attributes = os.path.join(git_dir, "info", "attributes")
        if not os.path.exists(attributes):  # written last: a repository without it is unfinished
            _git(git_dir, ["init", "-q", "--bare", "--template="])
            with open(os.path.join(git_dir, "config"), "a", encoding="utf-8") as config:
                for key_name, value in SAFE_CONFIG.items():
                    section, _, name = key_name.partition(".")
                    config.write(f"[{section}]\n\t{name} = {value}\n")
            os.makedirs(os.path.dirname(attributes), exist_ok=True)
            Path(attributes).write_text(RAW_ATTRIBUTES, encoding="utf-8")
        if user is None:
            repo = _Repo(git_dir, work_tree, "", None, None)
        else:
            user_git_dir, common = user
            objects = os.path.join(common, "objects")
            alternates = _quoted(objects) if os.path.isdir(objects) else ""
            exclude = os.path.join(common, "info", "exclude")
            repo = _Repo(git_dir, work_tree, alternates, os.path.join(user_git_dir, "index"), exclude)
        self._repos[key] = repo
        return repo

    def _dir(self, name: str) -> str:
        path = self.state_dir / name
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        return str(path)


def _work_tree(cwd: str) -> tuple[str, tuple[str, str] | None]:
    """The folder holding the nearest `.git` at or above `cwd` (else `cwd`), and that repository's
    git dir and common dir (linked worktrees and submodules have a `.git` file naming it), read
    as files as git itself would: git is told where the work tree is, never asked."""
    folder = cwd
    while True:
        dotgit = os.path.join(folder, ".git")
        if os.path.isdir(dotgit):
            git_dir = dotgit
            break
        if os.path.isfile(dotgit):
            text = _read_small(dotgit)
            if text is None or not text.startswith(b"gitdir: "):
                return folder, None
            git_dir = os.path.join(folder, os.fsdecode(text[8:].rstrip(b"\r\n")))
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            return cwd, None
        folder = parent
    common = _read_small(os.path.join(git_dir, "commondir"))
    common_dir = os.path.join(git_dir, os.fsdecode(common.rstrip(b"\r\n"))) if common else git_dir
    return folder, (os.path.normpath(git_dir), os.path.normpath(common_dir))


def _read_small(path: str) -> bytes | None:
    """A regular file's first bytes (never a FIFO, a device or a symlink); None if not one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        return file.read(SMALL_FILE) if stat.S_ISREG(os.fstat(fd).st_mode) else None


def _copy_file(source: str, target: str, max_bytes: int) -> bool:
    """Copy a regular file (never a FIFO, a device or a symlink) of at most `max_bytes`; False if
    it is not one, or bigger (or grew past that as it was read)."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return False
        data = file.read(max_bytes + 1)
    if len(data) > max_bytes:
        return False
    Path(target).write_bytes(data)
    return True


def _sync(source: str, target: str) -> None:
    """`target` holds what the regular file `source` holds (or nothing)."""
    text = _read_small(source) or b""
    with contextlib.suppress(FileNotFoundError):
        if Path(target).read_bytes() == text:
            return
    Path(target).write_bytes(text)


def _quoted(path: str) -> str:
    """`path` as a GIT_ALTERNATE_OBJECT_DIRECTORIES entry: C-quoted, as it may hold a `:`."""
    raw = os.fsencode(path)
    return '"' + "".join(chr(b) if 32 <= b < 127 and b not in b'"\\' else f"\\{b:03o}" for b in raw) + '"'


def _git(
    repo: str,
    args: list[str],
    work_tree: str | None = None,
    stdin: str | None = None,
    *,
    index: str | None = None,
    alternates: str = "",
) -> str:
    """git on our repository `repo`, the only way this module runs git: its config and the
    user's (system, global) with SAFE_CONFIG over both; of the environment's GIT_* variables only
    the user's choice of config files; in `work_tree` (else our state directory)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in USER_GIT_ENV}
    env.update(GIT_ENV, GIT_DIR=repo)
    if work_tree:
        env["GIT_WORK_TREE"] = work_tree
    if index:
        env["GIT_INDEX_FILE"] = index
    if alternates:
        env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = alternates
    overrides = [arg for key, value in SAFE_CONFIG.items() for arg in ("-c", f"{key}={value}")]
    try:
        done = subprocess.run(
            ["git", "--no-pager", *overrides, *args],
            cwd=work_tree or os.path.dirname(repo),
            env=env,
            input=stdin,
            capture_output=True,
            encoding="utf-8",
            errors="surrogateescape",
            timeout=GIT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:  # its message is the whole command line: name the problem
        raise SnapshotError(f"git {args[0]} gave no answer in {GIT_SECONDS:g} s") from None
    except OSError as err:
        raise SnapshotError(f"git {args[0]}: {err.strerror or err}") from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise SnapshotError(f"git {args[0]}: {lines[-1] if lines else f'exit {done.returncode}'}")
    return done.stdout
