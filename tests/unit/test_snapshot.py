"""snapshot.py against real git repositories: exact trees (the bytes on disk, whatever attributes
and filters say), the user's git state untouched, and git running only git however hostile the
repository, its config and the environment are."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from changes.hostile_repos import (
    TURN,
    global_config,
    hostile_env,
    hostile_repo,
    marker,
    no_marks,
    on_disk,
    read_git,
    state,
    stored,
    write,
)
from conftest import git
from gemini_companion.changes import git as our_git
from gemini_companion.changes import snapshot
from gemini_companion.changes.snapshot import Snapshotter


def test_a_hostile_clone_runs_nothing_and_is_stored_as_its_bytes(tmp_path, monkeypatch):
    marks = tmp_path / "marks"
    mark = marker(tmp_path / "bin", marks)
    repo = hostile_repo(tmp_path / "hostile", mark)
    # What the user's git stored is not what is on disk (the filters ran as the user committed).
    assert git(repo, "cat-file", "blob", "HEAD:filtered.txt") == "LOWER CASE\n"
    assert git(repo, "cat-file", "blob", "HEAD:dos.txt") == "one\ntwo\n"
    global_config(tmp_path / "home", mark, monkeypatch)
    hostile_env(tmp_path, mark, monkeypatch)
    user = state(repo / ".git")

    snapshotter = Snapshotter(tmp_path / "state")
    before = snapshotter.take(str(repo / "sub"))  # from a subfolder: the work tree is the repository's
    no_marks(marks)
    assert before.work_tree == os.path.realpath(repo)
    assert stored(before) == on_disk(repo)  # the bytes on disk, not the filtered ones
    write(repo, TURN)
    after = snapshotter.take(str(repo))
    no_marks(marks)
    assert stored(after) == on_disk(repo)
    changes = {c.path: c.status for c in snapshotter.changes(before, after)}
    assert changes == {
        "dos.txt": "modified",
        "filtered.txt": "modified",
        "gone.txt": "deleted",
        "ident.txt": "modified",
        "new.crlf": "created",
        "sub/deep.txt": "modified",
        "utf16.txt": "modified",
        "win.crlf": "modified",
    }
    snapshotter.prune([after])
    assert stored(after) == on_disk(repo)
    no_marks(marks)
    assert state(repo / ".git") == user  # not one byte or mtime of the user's git dir changed


def test_a_git_work_tree_is_snapshotted_without_touching_the_users_git_state(tmp_path):
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
    (repo / "intended.txt").touch()
    git(repo, "add", "-N", "intended.txt")  # and an intent to add (its empty blob is nowhere)
    (repo / ".git" / "info" / "exclude").write_text("excluded.txt\n")
    (repo / "excluded.txt").write_text("the repository's own exclude\n")
    (repo / "ignored.txt").write_text("not tracked\n")
    (repo / "big.bin").write_bytes(b"x" * 2000)
    user = state(repo / ".git")

    snapshotter = Snapshotter(tmp_path / "state", max_file_bytes=1000)
    before = snapshotter.take(str(repo))
    assert before.skipped == ("big.bin",)
    assert stored(before) == on_disk(repo, ("ignored.txt", "excluded.txt", "big.bin"))
    # Unchanged files are not copied: the one blob in our store is the empty file's (the user's
    # blobs stay in the user's store).
    objects = [p.parent.name + p.name for p in Path(before.git_dir, "objects").glob("??/*")]
    blobs = [oid for oid in objects if read_git(before, "cat-file", "-t", oid) == b"blob\n"]
    assert len(objects) > 1 and [read_git(before, "cat-file", "blob", oid) for oid in blobs] == [b""]
    (repo / "kept.txt").write_text("one\nTWO\nthree\n")
    (repo / "gone.txt").unlink()
    (repo / "new.txt").write_text("hello\n")
    (repo / "image.png").write_bytes(b"\x89PNG\x00\x01")
    after = snapshotter.take(str(repo))

    changes = {c.path: c for c in snapshotter.changes(before, after)}
    assert sorted(changes) == ["gone.txt", "image.png", "kept.txt", "new.txt"]  # not ignored, excluded, big
    assert (changes["kept.txt"].status, changes["kept.txt"].added, changes["kept.txt"].removed) == ("modified", 2, 1)
    assert changes["gone.txt"].status == "deleted" and changes["new.txt"].status == "created"
    assert changes["image.png"].binary
    assert stored(after) == on_disk(repo, ("ignored.txt", "excluded.txt", "big.bin"))
    assert state(repo / ".git") == user  # index, stash, refs, config, objects: as they were


def test_outside_git_a_private_repository_holds_the_snapshots(tmp_path, monkeypatch):
    """A downloaded folder's .gitattributes naming the user's own git-lfs filter runs nothing either."""
    marks = tmp_path / "marks"
    global_config(tmp_path / "home", marker(tmp_path / "bin", marks), monkeypatch)
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / ".gitignore").write_text("*.log\n")
    (folder / ".gitattributes").write_text("* text eol=crlf filter=lfs diff=evil\n")
    (folder / "a.txt").write_text("a\n")
    (folder / "run.log").write_text("noise\n")
    snapshotter = Snapshotter(tmp_path / "state")
    before = snapshotter.take(str(folder))
    assert not (folder / ".git").exists()
    assert before.git_dir.startswith(str(tmp_path / "state")) and before.alternates == ""
    (folder / "a.txt").write_text("b\n")
    (folder / "run.log").write_text("more noise\n")
    after = snapshotter.take(str(folder))
    assert [(c.path, c.status) for c in snapshotter.changes(before, after)] == [("a.txt", "modified")]
    assert stored(after) == on_disk(folder, ("run.log",))
    snapshotter.prune([after])  # keeps `after`
    assert stored(after)["a.txt"] == b"b\n"
    no_marks(marks)


def test_an_edit_in_the_same_second_as_git_add_is_seen(tmp_path):
    """Our index starts from the user's blob ids only where the file's bytes hash to them."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "f.txt").write_text("staged\n")
    git(repo, "add", "f.txt")
    (repo / "f.txt").write_text("edited\n")  # same size, same second
    time.sleep(1.5)
    snap = Snapshotter(tmp_path / "state").take(str(repo))
    assert stored(snap) == {"f.txt": b"edited\n"}


def test_repository_states_are_left_as_they_are(tmp_path):
    """Mid-rebase (a conflict in the index), a linked worktree, a submodule: each snapshot holds
    the bytes on disk, and no git dir of the user's changes."""
    main = tmp_path / "main"
    main.mkdir()
    git(main, "init", "-q", "-b", "main")
    (main / "f.txt").write_text("base\n")
    git(main, "add", "-A")
    git(main, "commit", "-qm", "base")
    git(main, "checkout", "-qb", "topic")
    (main / "f.txt").write_text("topic\n")
    git(main, "commit", "-qam", "topic")
    git(main, "checkout", "-q", "main")
    (main / "f.txt").write_text("main\n")
    git(main, "commit", "-qam", "main")
    git(main, "worktree", "add", "-q", str(tmp_path / "linked"), "topic~1")
    (tmp_path / "linked" / "wt.txt").write_text("in the linked worktree\n")
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q")
    (lib / "lib.txt").write_text("lib\n")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "lib")
    git(main, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "sub")
    git(main, "commit", "-qm", "sub")
    git(main, "checkout", "-q", "topic")
    env = {**os.environ, "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    done = subprocess.run(["git", "rebase", "main"], cwd=main, env=env, capture_output=True, check=False)
    assert done.returncode != 0 and (main / ".git" / "rebase-merge").is_dir()  # stopped at the conflict
    (main / "sub" / "lib.txt").write_text("lib, edited\n")
    user = state(main / ".git")

    snapshotter = Snapshotter(tmp_path / "state")
    rebasing = snapshotter.take(str(main))
    files = stored(rebasing)
    assert files == on_disk(main)  # the submodule's files too (an agent's edits there are a turn's)
    assert b"<<<<<<<" in files["f.txt"]
    linked = snapshotter.take(str(tmp_path / "linked"))
    assert linked.work_tree == str(tmp_path / "linked") and stored(linked) == on_disk(tmp_path / "linked")
    inner = snapshotter.take(str(main / "sub"))
    assert inner.work_tree == str(main / "sub") and stored(inner) == {"lib.txt": b"lib, edited\n"}
    (main / "f.txt").write_text("resolved\n")
    again = snapshotter.take(str(main))
    assert [(c.path, c.status) for c in snapshotter.changes(rebasing, again)] == [("f.txt", "modified")]
    snapshotter.prune([again, linked, inner])
    assert state(main / ".git") == user


def test_a_git_file_or_config_pointing_elsewhere_does_not_move_the_work_tree(tmp_path):
    """A `.git` file naming another repository, and core.worktree naming another folder: the
    work tree is still the folder holding `.git`, and nothing of the other repository is stored."""
    secret = tmp_path / "secret"
    secret.mkdir()
    git(secret, "init", "-q")
    (secret / "secret.txt").write_text("private\n")
    (secret / "shared.txt").write_text("the secret version\n")
    git(secret, "add", "-A")
    git(secret, "commit", "-qm", "secret")
    git(secret, "config", "core.worktree", str(tmp_path))  # would make the whole tmp_path the work tree
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / ".git").write_text(f"gitdir: {secret / '.git'}\n")
    (clone / "shared.txt").write_text("the clone's own\n")
    user = state(secret / ".git")
    snapshotter = Snapshotter(tmp_path / "state")
    snap = snapshotter.take(str(clone))
    assert snap.work_tree == str(clone) and stored(snap) == {"shared.txt": b"the clone's own\n"}
    inside = snapshotter.take(str(secret))
    assert inside.work_tree == str(secret) and stored(inside) == on_disk(secret)
    assert state(secret / ".git") == user


def test_what_is_not_a_file_of_the_work_tree_is_never_read(tmp_path):
    """A folder swapped for a symlink to outside, a tracked file swapped for a FIFO: no outside
    byte is stored, and the snapshot neither hangs nor fails."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "d").mkdir()
    (repo / "d" / "f.txt").write_text("inside\n")
    (repo / "pipe.txt").write_text("a file, for now\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("OUTSIDE\n")  # the same size as the tracked file
    snapshotter = Snapshotter(tmp_path / "state")
    before = snapshotter.take(str(repo))
    (repo / "d" / "f.txt").unlink()
    (repo / "d").rmdir()
    (repo / "d").symlink_to(outside)
    (repo / "pipe.txt").unlink()
    os.mkfifo(repo / "pipe.txt")
    after = snapshotter.take(str(repo))
    assert stored(after) == {"d": os.fsencode(outside)}  # the symlink itself
    assert {(c.path, c.status) for c in snapshotter.changes(before, after)} == {
        ("d", "created"),
        ("d/f.txt", "deleted"),
        ("pipe.txt", "deleted"),
    }
    outside_blob = subprocess.run(["git", "hash-object", "--stdin"], input=b"OUTSIDE\n", capture_output=True)
    with pytest.raises(subprocess.CalledProcessError):  # never hashed into our store, nor read
        read_git(after, "cat-file", "-e", outside_blob.stdout.decode().strip())


@pytest.mark.parametrize("kind", ["split-index", "sha256"])
def test_an_index_we_cannot_start_from_costs_time_not_exactness(tmp_path, kind):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", *(["--object-format=sha256"] if kind == "sha256" else []))
    if kind == "split-index":
        git(repo, "config", "core.splitIndex", "true")
    (repo / ".gitattributes").write_text("*.txt text eol=crlf\n")
    (repo / "a.txt").write_bytes(b"crlf\r\n")
    (repo / "b.bin").write_bytes(b"\x00\x01")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    user = state(repo / ".git")
    snap = Snapshotter(tmp_path / "state").take(str(repo))
    assert stored(snap) == on_disk(repo)
    assert state(repo / ".git") == user


def test_the_fixed_settings_win_over_every_config_file_and_its_includes(tmp_path, monkeypatch):
    """Belt and braces, checked on the installed git: even git pointed at the hostile repository
    itself (its config includes more config naming hooks and an fsmonitor) runs none of them
    through `_git`'s command line settings. (Snapshots never point git there.)"""
    marks = tmp_path / "marks"
    mark = marker(tmp_path / "bin", marks)
    repo = hostile_repo(tmp_path / "hostile", mark)
    (repo / ".git" / "info" / "attributes").unlink()  # attributes are info/attributes' job, not this one's
    (repo / ".gitattributes").write_text("")
    (repo / "sub" / ".gitattributes").write_text("")
    global_config(tmp_path / "home", mark, monkeypatch)
    for attributes in [*(repo / ".git").glob("*-attributes"), *(tmp_path / "home").glob("*-attributes")]:
        attributes.unlink()
    (repo / "plain.txt").write_text("changed\n")
    dot = str(repo / ".git")
    assert "plain.txt" in our_git.run(dot, ["ls-files", "-m"], str(repo))  # reads the index: fsmonitor
    our_git.run(dot, ["update-index", "--add", "--", "plain.txt"], str(repo))  # post-index-change
    tree = our_git.run(dot, ["write-tree"], str(repo)).strip()
    our_git.run(dot, ["update-ref", "refs/x", tree])  # reference-transaction
    our_git.run(dot, ["diff-tree", "-p", "--no-ext-diff", "--no-textconv", "HEAD^{tree}", tree])
    no_marks(marks)


def test_a_prune_keeps_the_trees_another_neovim_still_shows(tmp_path):
    """Two Neovims share the state directory: a prune takes back only its own turns' trees (and
    those of a Neovim gone for two weeks), and no object younger than an hour."""
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "a.txt").write_text("one\n")
    mine, theirs = Snapshotter(tmp_path / "state"), Snapshotter(tmp_path / "state")
    shown = theirs.take(str(folder))
    (folder / "a.txt").write_text("two\n")
    kept = mine.take(str(folder))
    read_git(kept, "update-ref", f"refs/turns/1000-gone/{shown.tree}", shown.tree)  # a Neovim of 1970
    for path in Path(kept.git_dir, "objects").glob("??/*"):
        os.utime(path, (time.time() - 7200, time.time() - 7200))  # all over an hour old
    mine.prune([kept])
    assert stored(shown) == {"a.txt": b"one\n"} and stored(kept) == {"a.txt": b"two\n"}
    assert b"1000-gone" not in read_git(kept, "for-each-ref")
    theirs.prune([])
    with pytest.raises(subprocess.CalledProcessError):
        read_git(shown, "cat-file", "-e", shown.tree)
    assert stored(kept) == {"a.txt": b"two\n"}


def test_a_file_that_became_a_folder_and_a_folder_that_became_a_file(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    write(repo, {"a": b"file\n", "b/c": b"in a folder\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    snapshotter = Snapshotter(tmp_path / "state")
    before = snapshotter.take(str(repo))
    (repo / "a").unlink()
    (repo / "b" / "c").unlink()
    (repo / "b").rmdir()
    write(repo, {"a/x": b"now a folder\n", "b": b"now a file\n"})
    after = snapshotter.take(str(repo))
    assert stored(after) == on_disk(repo)
    assert {(c.path, c.status) for c in snapshotter.changes(before, after)} == {
        ("a", "deleted"),
        ("a/x", "created"),
        ("b", "created"),
        ("b/c", "deleted"),
    }


def test_an_index_too_big_to_copy_is_not_reused_and_every_file_is_hashed(tmp_path, monkeypatch):
    """A user's index over the bound (a huge or sparse file) is neither copied nor read: the
    snapshot is still exact, its files hashed from scratch."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    snap = Snapshotter(tmp_path / "reused").take(str(repo))
    assert os.path.exists(os.path.join(snap.git_dir, "seeded"))  # under the bound: started from theirs
    monkeypatch.setattr(snapshot, "MAX_USER_INDEX", os.path.getsize(repo / ".git" / "index") - 1)
    snap = Snapshotter(tmp_path / "state").take(str(repo))
    assert stored(snap) == on_disk(repo) == {"a.txt": b"a\n"}
    assert not os.path.exists(os.path.join(snap.git_dir, "seeded"))


def test_a_users_big_file_threshold_makes_no_text_file_binary(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[core]\n\tbigFileThreshold = 1\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg"))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("one\ntwo\n")
    snapshots = Snapshotter(tmp_path / "state")
    before = snapshots.take(str(repo))
    (repo / "a.txt").write_text("one\nTWO\nthree\n")
    changes = snapshots.changes(before, snapshots.take(str(repo)))
    assert [(c.path, c.status, c.added, c.removed, c.binary) for c in changes] == [("a.txt", "modified", 2, 1, False)]


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/usr/bin/python3"), reason="needs root to drop to nobody")
def test_a_folder_we_may_not_enter_is_skipped_not_a_failure(tmp_path):
    """As a user who may not enter a folder of the work tree (root reads everything: `nobody`
    runs the snapshots): its files are left out and the rest is snapshotted, turn after turn."""
    root = Path(tempfile.mkdtemp(prefix="gc-perm-"))  # one `nobody` may reach (tmp_path may not be)
    try:
        repo = root / "repo"
        (repo / "locked").mkdir(parents=True)
        (repo / "a.txt").write_text("a\n")
        (repo / "locked" / "s.txt").write_text("s\n")
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "base")
        package = Path(snapshot.__file__).parents[1]  # snapshot.py imports the package's files.py
        shutil.copytree(package, root / package.name, ignore=shutil.ignore_patterns("__pycache__"))
        script = (
            "import pathlib, sys\n"
            "from gemini_companion.changes import snapshot\n"
            "s = snapshot.Snapshotter(pathlib.Path(sys.argv[1]) / 'state')\n"
            "b = s.take(sys.argv[1] + '/repo')\n"
            "open(sys.argv[1] + '/repo/a.txt', 'w').write('b\\n')\n"
            "print([(c.path, c.status) for c in s.changes(b, s.take(sys.argv[1] + '/repo'))])\n"
        )
        subprocess.run(["chown", "-R", "nobody", str(root)], check=True)
        root.chmod(0o755)
        (repo / "locked").chmod(0)
        nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        env = {"PATH": os.environ["PATH"], "HOME": str(root), "PYTHONPATH": str(root)}
        done = subprocess.run(
            [*nobody, "/usr/bin/python3", "-c", script, str(root)], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0 and done.stderr == "", done.stderr
        assert done.stdout.strip() == "[('a.txt', 'modified')]"
    finally:
        (root / "repo" / "locked").chmod(0o755)
        shutil.rmtree(root)


def test_a_file_named_sdir_is_no_sparse_index(tmp_path):
    """A sparse index is told by its extension, read after the entries: a file named `sdir` (its
    entry padded with NULs) or a folder of that name makes no sparse read."""
    repo = tmp_path / "repo"
    write(repo, {"sdir": b"s\n", "docs/sdir": b"d\n", "sdir2/a": b"a\n"})
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    assert b"sdir\0\0\0\0" in (repo / ".git" / "index").read_bytes()
    snapshotter = Snapshotter(tmp_path / "state")
    before = snapshotter.take(str(repo))
    assert not Path(before.git_dir, "info", "sparse-checkout").exists()
    assert stored(before) == on_disk(repo)
    (repo / "sdir").write_text("S\n")
    after = snapshotter.take(str(repo))
    assert [(c.path, c.status) for c in snapshotter.changes(before, after)] == [("sdir", "modified")]
