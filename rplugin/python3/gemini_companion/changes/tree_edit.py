"""A snapshot's tree made from the last one and the few files that changed since, without git's
index: the trees along each changed path read in one `git cat-file --batch`, the new blobs and
trees written by us as loose objects (git's own format, in our repository). Reading and writing
the index of a 200,000-file tree takes git longer than a turn start may wait; this costs the
changed files and their folders. snapshot.py uses it where every changed path is a file or gone;
for anything else (a folder, a symlink, a repository of SHA-256 objects) git's index does the work.
Standard library and the `git` binary only.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import zlib

from gemini_companion.changes import git

__all__ = ["Tree", "ignored", "read", "write", "write_blob"]

Tree = dict[bytes, tuple[bytes, bytes]]  # name -> (mode, object id), one folder's entries
FOLDER, SUBMODULE = b"40000", b"160000"


def read(git_dir: str, root: str, folders: set[str], alternates: str) -> dict[str, Tree] | None:
    """The entries of each folder ("" the root) in the tree `root` ({} for one it does not have);
    None if they cannot be read so (a name git's batch input cannot take, a SHA-256 tree)."""
    order = sorted(folders)
    if any("\n" in folder for folder in order) or len(root) != 40:
        return None
    ours = _read_loose(git_dir, root, order)  # our own trees: no git run
    if ours is not None:
        return ours
    names = "".join(f"{root}:{folder}\n" if folder else f"{root}\n" for folder in order)
    out = git.run(git_dir, ["cat-file", "--batch"], stdin=names, alternates=alternates)
    data = out.encode("utf-8", "surrogateescape")
    trees: dict[str, Tree] = {}
    at = 0
    for folder in order:
        end = data.index(b"\n", at)
        header = data[at:end].split()
        at = end + 1
        if header[-1] == b"missing":
            trees[folder] = {}
            continue
        if header[1] != b"tree":  # a file where the folder was: git's index knows what to do
            return None
        size = int(header[2])
        trees[folder] = _entries(data[at : at + size])
        at += size + 1
    return trees


def ignored(git_dir: str, work_tree: str, paths: list[str]) -> set[str]:
    """Which of `paths` (files our tree does not have) `.gitignore` and the excludes ignore."""
    if not paths:
        return set()
    # "./": a name starting with ":" is a name, not pathspec magic (check-ignore takes no `:(literal)`).
    named = "\0".join(f"./{path}" for path in paths)
    try:
        out = git.run(git_dir, ["check-ignore", "--no-index", "-z", "--stdin"], work_tree, named)
    except git.SnapshotError as err:
        if str(err) != "git check-ignore: exit 1":  # 1: none of them is ignored
            raise
        return set()
    return {path.removeprefix("./") for path in out.split("\0") if path}


def write_blob(git_dir: str, data: bytes) -> bytes:
    return _write(git_dir, b"blob", data)


def write(git_dir: str, trees: dict[str, Tree], changed: dict[str, tuple[bytes, bytes] | None]) -> str:
    """The tree with each path of `changed` set to (mode, object id), or taken out (None): its id.
    `trees` holds the entries of every folder along those paths (`read`); a folder left empty
    goes, as git stores no empty folder."""
    for path, entry in changed.items():
        folder, _, name = path.rpartition("/")
        if entry is None:
            trees[folder].pop(os.fsencode(name), None)
        else:
            trees[folder][os.fsencode(name)] = entry
    for folder in sorted(trees, key=lambda f: f.count("/") if f else -1, reverse=True):
        if not folder:
            continue
        parent, _, name = folder.rpartition("/")
        if trees[folder]:
            trees[parent][os.fsencode(name)] = (FOLDER, _write(git_dir, b"tree", _tree_bytes(trees[folder])))
        else:
            trees[parent].pop(os.fsencode(name), None)
    return _write(git_dir, b"tree", _tree_bytes(trees[""])).hex()


def _read_loose(git_dir: str, root: str, folders: list[str]) -> dict[str, Tree] | None:
    """`read`, from the loose objects of our repository alone; None if one is not there (a tree
    the user's store had already: git did not write it into ours)."""
    cache: dict[bytes, Tree] = {}

    def tree(oid: bytes) -> Tree | None:
        if oid not in cache:
            try:
                with open(os.path.join(git_dir, "objects", oid.hex()[:2], oid.hex()[2:]), "rb") as file:
                    raw = zlib.decompress(file.read())
            except (OSError, zlib.error):
                return None
            header, _, content = raw.partition(b"\0")
            if not header.startswith(b"tree "):
                return None
            cache[oid] = _entries(content)
        return dict(cache[oid])

    trees: dict[str, Tree] = {}
    for folder in folders:  # sorted: each folder's parent before it
        if not folder:
            found = tree(bytes.fromhex(root))
        else:
            parent, _, name = folder.rpartition("/")
            entry = trees[parent].get(os.fsencode(name))
            if entry is None:
                found = {}
            elif entry[0] != FOLDER:
                return None  # a file where the folder was: `read` says what git does
            else:
                found = tree(entry[1])
        if found is None:
            return None
        trees[folder] = found
    return trees


ENTRY = re.compile(rb"([0-7]+) ([^\0]*)\0(.{20})", re.S)


def _entries(data: bytes) -> Tree:
    return {name: (mode, oid) for mode, name, oid in ENTRY.findall(data)}


def _tree_bytes(entries: Tree) -> bytes:
    """A tree object's content: entries in git's order (a folder sorts as if its name ended in /)."""

    def key(name: bytes) -> bytes:
        return name + b"/" if entries[name][0] == FOLDER else name

    return b"".join(entries[n][0] + b" " + n + b"\0" + entries[n][1] for n in sorted(entries, key=key))


def _write(git_dir: str, kind: bytes, data: bytes) -> bytes:
    """A loose object in our repository, as git writes one (whole, then renamed into place; one
    already there is freshened, as git does, so a prune running now keeps it)."""
    raw = kind + b" " + str(len(data)).encode() + b"\0" + data
    oid = hashlib.sha1(raw).digest()  # git's object id
    name = oid.hex()
    folder = os.path.join(git_dir, "objects", name[:2])
    path = os.path.join(folder, name[2:])
    if os.path.exists(path):
        with contextlib.suppress(OSError):
            os.utime(path)
        return oid
    os.makedirs(folder, exist_ok=True)
    temporary = os.path.join(folder, f"tmp_obj_{secrets.token_hex(6)}")  # git's prune takes an old one
    try:
        with open(temporary, "xb") as file:
            file.write(zlib.compress(raw, 1))
        os.chmod(temporary, 0o444)
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    return oid
