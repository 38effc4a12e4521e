"""How a snapshot's tree is written (snapshot.py's inside): from the watcher's changed paths
as a copy of the last tree (tree_edit.py), or through our index, after git lists what changed,
is new or is gone (of the changed paths alone, or the whole tree), our index first seeded from the
user's. Each function takes the Snapshotter whose state (limits, refs, what is left out) it uses;
the copy limits (MAX_NEW_FILES, _too_much) stay in snapshot.py, read from there when called.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from gemini_companion import files
from gemini_companion.changes import git, snapshot, tree_edit
from gemini_companion.changes.git import SnapshotError

if TYPE_CHECKING:
    from gemini_companion.changes.snapshot import Snapshot, Snapshotter, _Repo

EMPTY_BLOBS = (
    "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
    "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813",
)
# A nested repository (a submodule, a clone inside the tree) is entered through a placeholder
# entry under it in our index: git lists the files of a folder that has index entries, `.git` or not.
NESTED_MARK = ".gemini-companion-nested"
MAX_NESTED_DEPTH = 8  # repositories inside repositories inside ...: listed this deep


def edited(snapper: Snapshotter, repo: _Repo, last: Snapshot, changed: set[str]) -> Snapshot | None:
    """The last snapshot's tree with the `changed` paths as they are now, made without our index
    (tree_edit.py), where each is a file, or gone; None where git's index has to do it (a
    folder, a symlink, a file over the limits, in a repository left out)."""
    left_out = tuple(snapper._left_out.get(repo.git_dir, ()))
    if any(path.startswith(left_out) or path.endswith("/" + NESTED_MARK) for path in changed):
        return None
    folders = {path.rpartition("/")[0] for path in changed}
    folders |= {"/".join(f.split("/")[:i]) for f in folders for i in range(f.count("/") + 1)}
    trees = tree_edit.read(repo.git_dir, last.tree, folders, last.alternates)
    if trees is None:
        return None
    found: dict[str, os.stat_result | None] = {}
    for path in changed:
        folder, _, name = path.rpartition("/")
        had = trees[folder].get(os.fsencode(name))
        if had is not None and had[0] in (tree_edit.FOLDER, tree_edit.SUBMODULE):
            return None
        if _kind(snapper, repo.work_tree, path, {})[0] == "other":
            return None  # a folder now, behind a symlinked folder, a FIFO, ...
        try:
            info = os.lstat(os.path.join(repo.work_tree, path))
        except (FileNotFoundError, NotADirectoryError):
            found[path] = None
            continue
        if not stat.S_ISREG(info.st_mode) or info.st_size > snapper.max_file_bytes:
            return None
        found[path] = info

    def known(path: str) -> bool:
        folder, _, name = path.rpartition("/")
        return os.fsencode(name) in trees[folder]

    leave = tree_edit.ignored(repo.git_dir, repo.work_tree, [p for p, i in found.items() if i and not known(p)])
    if snapshot._too_much({p: i.st_size for p, i in found.items() if i is not None and p not in leave}):
        return None
    entries: dict[str, tuple[bytes, bytes] | None] = {}
    for path, now in found.items():
        if path in leave:
            continue
        if now is None:
            entries[path] = None
            continue
        data = _copy_bytes(os.path.join(repo.work_tree, path), snapper.max_file_bytes)
        if data is None:  # grew past the limit, or is no file now: git's index decides
            return None
        mode = b"100755" if now.st_mode & stat.S_IXUSR else b"100644"
        entries[path] = (mode, tree_edit.write_blob(repo.git_dir, data))
    tree = tree_edit.write(repo.git_dir, trees, entries)
    git.run(repo.git_dir, ["update-ref", f"refs/turns/{snapper._ns}/{tree}", tree])
    snapper._stale.setdefault(repo.git_dir, set()).update(changed)
    skipped = [p for p in last.skipped if not _under(p, changed)]
    return snapshot.Snapshot(repo.git_dir, repo.work_tree, tree, tuple(skipped), last.alternates)


def write_changed(
    snapper: Snapshotter, repo: _Repo, tracked: list[str], entries: str | None, changed: set[str] | None
) -> Snapshot:
    if repo.user_index is not None and not os.path.exists(os.path.join(repo.git_dir, "index")):
        changed = None
        _seed(snapper, repo, entries if entries is not None else snapper._user_entries(repo, repo.user_index))
    last = snapper._last.get(repo.git_dir)
    if last is None or not changed:  # (nothing changed, and the last tree was pruned: written again)
        changed = None
    # Only an index started from the user's refers to blobs in the user's store.
    alternates = repo.alternates if os.path.exists(os.path.join(repo.git_dir, "seeded")) else ""
    paths, entered, left_out = listed(snapper, repo, changed)
    if tracked:  # a dotfiles tree: what the user tracks now that our index lost or never had
        ours = set(git.run(repo.git_dir, ["ls-files", "-z", "--full-name"], repo.work_tree).split("\0"))
        paths += [path for path in tracked if path not in ours and not path.endswith("/")]
    update: list[str] = []
    gone: list[str] = []
    skipped: list[str] = []
    kinds = {"file": update, "absent": update, "big": skipped, "other": gone}
    parents: dict[str, bool] = {}
    sizes: dict[str, int] = {}  # the files to hash: counted before a byte is written
    for path in paths:
        kind, size = _kind(snapper, repo.work_tree, path, parents)
        kinds[kind].append(path)
        if kind == "file":
            sizes[path] = size
    if snapshot._too_much(sizes) and entered:
        # Nested repositories first seen now do not fit: left out (listed as skipped), for good,
        # if the snapshot fits without them; else refused, and tried again next time.
        marks = "\0".join(root + NESTED_MARK for root in entered)
        git.run(repo.git_dir, ["update-index", "--force-remove", "-z", "--stdin"], repo.work_tree, marks)
        inside = tuple(entered)
        if too_much := snapshot._too_much({path: size for path, size in sizes.items() if not path.startswith(inside)}):
            raise SnapshotError(f"{too_much} in {repo.work_tree}")
        snapper._left_out.setdefault(repo.git_dir, set()).update(entered)
        for group in (update, gone, skipped):
            group[:] = [path for path in group if not path.startswith(inside)]
        sizes = {path: size for path, size in sizes.items() if not path.startswith(inside)}
        left_out += [root for root in entered if not any(root.startswith(o) and root != o for o in entered)]
    if too_much := snapshot._too_much(sizes):
        raise SnapshotError(f"{too_much} in {repo.work_tree}")
    if gone:  # not a file of the work tree (behind a symlink, a folder, a FIFO): out of the index
        git.run(repo.git_dir, ["update-index", "--force-remove", "-z", "--stdin"], repo.work_tree, "\0".join(gone))
    if update:
        args = ["update-index", "--add", "--remove", "--replace", "-z", "--stdin"]
        git.run(repo.git_dir, args, repo.work_tree, "\0".join(update))
    # Blobs that are the user's are in its store, which only reads see: no existence check.
    tree = git.run(repo.git_dir, ["write-tree", "--missing-ok"], repo.work_tree).strip()
    git.run(repo.git_dir, ["update-ref", f"refs/turns/{snapper._ns}/{tree}", tree])
    if last is not None and changed is not None:
        # What was skipped and has not changed since still is (it was not listed now).
        skipped = [p for p in last.skipped if not _under(p, changed)] + skipped
    return snapshot.Snapshot(repo.git_dir, repo.work_tree, tree, tuple(dict.fromkeys(skipped + left_out)), alternates)


def listed(
    snapper: Snapshotter, repo: _Repo, changed: set[str] | None = None
) -> tuple[list[str], list[str], list[str]]:
    """Changed, new (not ignored) and deleted files since our index was written (of the
    `changed` paths alone, unless None): only these are hashed. `-m` lists deleted files too;
    `-d` alone would miss none of them. A nested repository git lists as "x/" gets a
    placeholder entry, and the listing is done again, now with its files; the placeholder is
    listed too, to be taken out (or hashed if it exists). Also the nested repositories entered
    now, and those left out ("x/" each)."""
    args = ["ls-files", "-z", "-m", "-d", "--exclude-standard", "--full-name", *(["-o"] if repo.untracked else [])]
    named = ["--", *(f":(literal){path}" for path in sorted(changed or ()))]
    if changed is not None:
        # Only the named paths: new ones from `ls-files -o`, changed and deleted ones from
        # diff-files (`ls-files -m -d` would stat every file of the index, named or not;
        # diff-files without a refresh lists a file whose stat changed, as `-m` does).
        args = ["ls-files", "-z", "-o", "--exclude-standard", "--full-name", *named]
    left_out = snapper._left_out.get(repo.git_dir, set())
    entered: list[str] = []
    for _ in range(MAX_NESTED_DEPTH):
        listed = [p for p in git.run(repo.git_dir, args, repo.work_tree).split("\0") if p]
        if changed is not None:
            diff = ["diff-files", "--name-only", "-z", "--no-renames", "--no-ext-diff", *named]
            listed += [p for p in git.run(repo.git_dir, diff, repo.work_tree).split("\0") if p]
        # "x/": an untracked one; "x" a folder with `.git` now: a file of ours became one.
        nested = [p.rstrip("/") + "/" for p in listed if _nested(repo.work_tree, p)]
        nested = [root for root in nested if root not in left_out]
        if not nested:
            break
        records = "".join(f"100644 {EMPTY_BLOBS[0]}\t{root}{NESTED_MARK}\0" for root in nested)
        git.run(repo.git_dir, ["update-index", "--replace", "-z", "--index-info"], repo.work_tree, records)
        entered += nested
    # A placeholder an interrupted snapshot left in our index: its repository counts as entered now.
    leftover = [p.removesuffix(NESTED_MARK) for p in listed if p.endswith("/" + NESTED_MARK)]
    entered = list(dict.fromkeys([*entered, *leftover]))  # `-m -d` lists a deleted one twice
    marks = [root + NESTED_MARK for root in entered]
    paths = list(dict.fromkeys(p for p in [*listed, *marks] if not p.endswith("/")))
    return paths, entered, [p for p in listed if p in left_out]


def _seed(snapper: Snapshotter, repo: _Repo, entries: str) -> None:
    """Our first index of a git work tree: the user's paths, modes and blob ids (`entries`, their
    index's `ls-files -s`; never its stat data or extensions), each kept only if the file's
    bytes hash to that id (the refresh); the others are hashed as changed. Without a readable
    index of theirs: none."""
    records = []
    parents: dict[str, bool] = {}
    for entry in entries.split("\0"):
        meta, _, path = entry.partition("\t")
        mode, _, rest = meta.partition(" ")
        oid, _, stage = rest.partition(" ")
        # Stage 0 only (a conflict's stages are hashed as they are now); no submodule or sparse
        # folder; not the empty blob (`git add -N` lists it without writing it).
        if (
            stage == "0"
            and mode not in ("160000", "040000")
            and oid not in EMPTY_BLOBS
            and _kind(snapper, repo.work_tree, path, parents)[0] == "file"
        ):
            records.append(f"{mode} {oid}\t{path}")
    if records and repo.alternates:
        Path(repo.git_dir, "seeded").touch()  # first: an index that may refer to theirs says so
        git.run(repo.git_dir, ["update-index", "-z", "--index-info"], repo.work_tree, "\0".join(records) + "\0")
        git.run(repo.git_dir, ["update-index", "-q", "--refresh"], repo.work_tree)


def _kind(snapper: Snapshotter, work_tree: str, path: str, parents: dict[str, bool]) -> tuple[str, int]:
    """ "file" (to hash), "big" (over the limit, or unreadable), "absent" (deleted) or "other": behind a
    symlinked folder (outside, maybe) or not a file git stores; and its size."""
    parent = os.path.dirname(path)
    if parent not in parents:
        full = os.path.join(work_tree, parent)
        parents[parent] = os.path.realpath(full) == os.path.normpath(full)
    if not parents[parent]:
        return "other", 0
    try:
        info = os.lstat(os.path.join(work_tree, path))
    except (FileNotFoundError, NotADirectoryError):
        return "absent", 0
    except OSError:
        return "big", 0  # unreadable (a folder without search permission): left as it was, skipped
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
        return "other", 0  # a folder now (its files are listed on their own), a FIFO, ...
    return "big" if info.st_size > snapper.max_file_bytes else "file", info.st_size


def _under(path: str, changed: set[str]) -> bool:
    """Whether `path` ("x/" for a folder) is one of the `changed` paths or inside one."""
    parts = path.rstrip("/").split("/")
    return any("/".join(parts[:i]) in changed for i in range(1, len(parts) + 1))


def _nested(work_tree: str, path: str) -> bool:
    """Whether git listed `path` as a nested repository ("x/"), or it is one (a folder with `.git`)."""
    if path.endswith("/"):
        return True
    full = os.path.join(work_tree, path)
    return os.path.lexists(os.path.join(full, ".git")) and not os.path.islink(full)


def _copy_bytes(path: str, max_bytes: int) -> bytes | None:
    """A regular file's bytes (never a FIFO, a device or a symlink), if at most `max_bytes`."""
    try:
        data, _ = files.read(path, max_bytes + 1, follow=False)
    except OSError:
        return None
    return data if len(data) <= max_bytes else None
