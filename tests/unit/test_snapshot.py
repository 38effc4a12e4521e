"""snapshot.py against real git repositories: exact trees, the user's git state untouched."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from conftest import git
from gemini_companion.snapshot import Snapshotter


def user_state(repo: Path) -> tuple[bytes, str, str, str]:
    """Everything of the user's git state a snapshot must not touch."""
    index = (repo / ".git" / "index").read_bytes()
    return index, git(repo, "stash", "list"), git(repo, "for-each-ref"), git(repo, "status", "--porcelain")


def test_a_git_work_tree_is_snapshotted_through_a_temporary_index(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / ".gitignore").write_text("ignored.txt\n")
    (repo / "kept.txt").write_text("one\ntwo\n")
    (repo / "gone.txt").write_text("bye\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    (repo / "kept.txt").write_text("one\ntwo\nstashed\n")
    git(repo, "stash", "-q")  # the user has a stash
    (repo / "staged.txt").write_text("staged\n")
    git(repo, "add", "staged.txt")  # and something staged
    (repo / "ignored.txt").write_text("not tracked\n")
    (repo / "big.bin").write_bytes(b"x" * 2000)
    before_state = user_state(repo)

    snapshotter = Snapshotter(tmp_path / "state", max_file_bytes=1000)
    before = snapshotter.take(str(repo))
    assert before.skipped == ("big.bin",)
    (repo / "kept.txt").write_text("one\nTWO\nthree\n")
    (repo / "gone.txt").unlink()
    (repo / "new.txt").write_text("hello\n")
    (repo / "image.png").write_bytes(b"\x89PNG\x00\x01")
    after = snapshotter.take(str(repo))

    changes = {c.path: c for c in snapshotter.changes(before, after)}
    assert sorted(changes) == ["gone.txt", "image.png", "kept.txt", "new.txt"]  # not ignored.txt, not big.bin
    assert (changes["kept.txt"].status, changes["kept.txt"].added, changes["kept.txt"].removed) == ("modified", 2, 1)
    assert changes["gone.txt"].status == "deleted" and changes["new.txt"].status == "created"
    assert changes["image.png"].binary
    # The exact bytes are in the snapshot.
    assert git(repo, "cat-file", "blob", f"{before.tree}:kept.txt") == "one\ntwo\n"
    assert git(repo, "cat-file", "blob", f"{before.tree}:staged.txt") == "staged\n"
    # The user's index, stash, refs and status are as they were (status: for the files we changed).
    index, stash, refs, _status = user_state(repo)
    assert (index, stash, refs) == before_state[:3]


def test_outside_git_a_private_shadow_repository_holds_the_snapshots(tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / ".gitignore").write_text("*.log\n")
    (folder / "a.txt").write_text("a\n")
    (folder / "run.log").write_text("noise\n")
    snapshotter = Snapshotter(tmp_path / "state")
    before = snapshotter.take(str(folder))
    assert not (folder / ".git").exists()
    assert before.git_dir.startswith(str(tmp_path / "state"))
    (folder / "a.txt").write_text("b\n")
    (folder / "run.log").write_text("more noise\n")
    after = snapshotter.take(str(folder))
    assert [(c.path, c.status) for c in snapshotter.changes(before, after)] == [("a.txt", "modified")]
    snapshotter.prune([after])  # keeps only `after`: `before` may go
    env = {**os.environ, "GIT_DIR": after.git_dir}
    done = subprocess.run(["git", "cat-file", "-e", after.tree], env=env, check=False)
    assert done.returncode == 0


def test_an_edit_in_the_same_second_as_git_add_is_seen(tmp_path):
    """The temporary index keeps the user's index mtime, so git's racy-file check still works."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "f.txt").write_text("staged\n")
    git(repo, "add", "f.txt")
    (repo / "f.txt").write_text("edited\n")  # same size, same second
    time.sleep(1.5)
    snap = Snapshotter(tmp_path / "state").take(str(repo))
    assert git(repo, "cat-file", "blob", f"{snap.tree}:f.txt") == "edited\n"
