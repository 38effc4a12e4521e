"""A turn's cost follows what changed, not the tree's size (issue 34): the workspace's first
snapshot is taken in the background when the host starts in a git work tree, or an agent connects,
so the first turn waits for no full scan; and each turn's list stays exactly right."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from changes.helpers import a_turn, agent_turn, listen
from conftest import Editor, Sandbox, git, wait_for
from gemini_companion.changes import git as our_git
from gemini_companion.changes import watch
from gemini_companion.changes.changes import GC_EVERY, ChangesFeature
from gemini_companion.changes.snapshot import Snapshot, Snapshotter


def our_indexes(sandbox: Sandbox) -> list[Path]:
    """Our snapshot repositories' indexes (one per work tree snapshotted)."""
    return list((sandbox.base / "state" / "nvim" / "gemini-companion" / "changes" / "repos").glob("*/index"))


def test_the_first_snapshot_is_taken_when_the_host_starts_in_a_git_work_tree(editor_factory, repo, sandbox):
    ed: Editor = editor_factory()
    ed.wait_state("running")
    # No turn yet, no hook run: the host started in the repository, and snapshotted it on its own.
    wait_for(lambda: our_indexes(sandbox), 30, "the workspace's first snapshot")
    (repo / "b.txt").write_text("edited before the turn\n")  # not the turn's
    turn = a_turn(ed, repo, lambda: agent_turn(repo))
    got = {f["path"]: f["status"] for f in turn["files"]}
    assert got == {"a.txt": "modified", "new.txt": "created", "gone.txt": "deleted", "sed.txt": "modified"}


def test_an_agent_connecting_takes_the_first_snapshot(editor_factory, gemini_factory, sandbox):
    ed: Editor = editor_factory()
    ed.wait_state("running")
    project = sandbox.project
    (project / "a.txt").write_text("one\n")
    git(project, "init", "-q")  # a git work tree only after Neovim started: nothing taken yet
    git(project, "add", "-A")
    git(project, "commit", "-qm", "base")
    assert our_indexes(sandbox) == []
    client = gemini_factory(ed)
    assert client.call("connect")["status"] == "connected"
    wait_for(lambda: our_indexes(sandbox), 30, "the workspace's first snapshot")


# --- later snapshots cost what changed: the watcher (changes/watch.py) ----------------------


@pytest.fixture
def runs(monkeypatch) -> list[tuple[str, list[str]]]:
    """Every git command the snapshots run (our repository, arguments); each still runs."""
    seen: list[tuple[str, list[str]]] = []
    real_run = our_git.run

    def recorded(repo_dir: str, args: list[str], *rest: Any, **named: Any) -> str:
        seen.append((repo_dir, args))
        return real_run(repo_dir, args, *rest, **named)

    monkeypatch.setattr(our_git, "run", recorded)
    return seen


def rescanned(runs: list[tuple[str, list[str]]], snapshotter: Snapshotter) -> int:
    """How many times `snapshotter` listed a whole tree (not only the paths that changed)."""
    mine = str(snapshotter.state_dir)
    return sum(1 for repo, args in runs if repo.startswith(mine) and args[0] == "ls-files" and "-m" in args)


def two_snapshotters(state: Path, **kwargs: Any) -> tuple[Snapshotter, Snapshotter]:
    """One that watches the tree, and one that rescans it every time (a limit of 0 watches)."""
    return Snapshotter(state / "watched", 1000, **kwargs), Snapshotter(state / "rescans", 1000, watch_limit=0)


def same(watched: Snapshotter, rescans: Snapshotter, tree: Path) -> Snapshot:
    """Both snapshots of `tree` now: the same tree object (so the same files, bytes and modes),
    and the same files skipped."""
    ours, full = watched.take(str(tree)), rescans.take(str(tree))
    assert ours.tree == full.tree, git(tree, "status", "--porcelain", "--ignored")
    assert sorted(ours.skipped) == sorted(full.skipped)
    return ours


def test_watched_snapshots_are_exactly_full_rescans_through_every_kind_of_change(repo, tmp_path, runs):
    watched, rescans = two_snapshotters(tmp_path / "state")
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "kept").mkdir()
    (repo / "kept" / "one.txt").write_text("one\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "more")
    same(watched, rescans, repo)

    def write(name: str, text: str = "x\n") -> None:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)

    steps: list[Callable[[], object]] = [
        lambda: write("a.txt", "changed\n"),
        lambda: write("huge.txt", "z" * 5000),  # over the size limit: skipped, and still skipped later
        lambda: write("new.txt"),
        lambda: write("debug.log"),  # ignored
        lambda: (repo / "gone.txt").unlink(),
        lambda: write("deep/er/still/file.txt"),  # folders made at once, a file in the deepest
        lambda: write("deep/er/still/later.txt"),  # a folder made since the last snapshot is watched
        lambda: (repo / "deep").rename(repo / "moved"),
        lambda: write("moved/er/still/after-move.txt"),  # a moved folder is watched under its new name
        lambda: (repo / "kept").rename(outside / "kept"),  # moved out of the tree
        lambda: (outside / "kept").rename(repo / "back"),  # and in again, elsewhere
        lambda: write("back/in.txt"),
        lambda: (repo / "b.txt").chmod(0o755),
        lambda: ((repo / "sed.txt").unlink(), (repo / "sed.txt").symlink_to("a.txt")),
        lambda: ((repo / "new.txt").unlink(), write("new.txt/inside.txt")),  # a file become a folder
        lambda: write(".gitignore", "*.tmp\n"),  # debug.log is no longer ignored
        lambda: (write(".git/info/exclude", "*.me\n"), write("skip.me")),  # ignored by the user's exclude
        lambda: write(".git/info/exclude", ""),  # and no longer: no event in the tree tells it
        lambda: write("big.txt", "y" * 5000),  # over the size limit: skipped
        lambda: write("big.txt", "small\n"),
        lambda: write("a/inner.txt"),  # a folder "a" beside "a.txt": git orders it as "a/"
        lambda: write("a.txt", "again\n"),  # the root's tree written by us, in git's order
        lambda: (git(repo / "moved", "init", "-q"), write("moved/nested.txt")),  # a repository inside
        lambda: write("moved/er/again.txt"),
        lambda: shutil.rmtree(repo / "moved"),
        lambda: None,  # nothing at all
    ]
    for step in steps:
        step()
        same(watched, rescans, repo)
    # The first snapshot, and those after .gitignore or info/exclude changed, listed the whole tree.
    assert rescanned(runs, watched) == 4
    assert rescanned(runs, rescans) > len(steps)


def test_a_later_snapshot_looks_only_at_what_changed(repo, tmp_path, runs):
    watched = Snapshotter(tmp_path / "state")
    first = watched.take(str(repo))
    runs.clear()
    assert watched.take(str(repo)) == first
    assert [args[0] for _, args in runs] == ["update-ref"]  # nothing changed: no listing, no index
    (repo / "a.txt").write_text("changed\n")
    later = watched.take(str(repo))
    # A file changed: its tree made from the last one (tree_edit.py); git's index not read, not written.
    assert {args[0] for _, args in runs} <= {"cat-file", "update-ref"}  # (cat-file: a tree the user's store has)
    assert [c.path for c in watched.changes(first, later)] == ["a.txt"]
    runs.clear()
    assert watched.take(str(repo)) == later
    assert [args[0] for _, args in runs] == ["update-ref"]
    runs.clear()
    (repo / "folder").mkdir()
    (repo / "folder" / "f.txt").write_text("new\n")
    last = watched.take(str(repo))
    # A folder made: git's index lists it, and the file it has not learnt yet; nothing else.
    listings = [args for _, args in runs if args[0] in ("ls-files", "diff-files")]
    named = [":(literal)a.txt", ":(literal)folder"]
    assert listings and all(args[args.index("--") + 1 :] == named for args in listings)
    assert [c.path for c in watched.changes(later, last)] == ["folder/f.txt"]


def test_a_change_the_watcher_may_have_missed_means_a_rescan(repo, tmp_path, runs):
    watched, rescans = two_snapshotters(tmp_path / "state")
    same(watched, rescans, repo)
    (repo / "a.txt").write_text("changed\n")
    same(watched, rescans, repo)
    assert rescanned(runs, watched) == 1
    # More events than the kernel queues for us: it drops the rest, and says it overflowed.
    queued = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    for _ in range(queued // 2 + 100):
        os.utime(repo / "a.txt")
        os.utime(repo / "b.txt")
    (repo / "lost.txt").write_text("its event was dropped\n")
    before = watched._last[next(iter(watched._last))]
    after = same(watched, rescans, repo)
    assert rescanned(runs, watched) == 2  # the overflow: the whole tree listed again
    assert "lost.txt" in {c.path for c in watched.changes(before, after)}
    (repo / "next.txt").write_text("watched again\n")
    same(watched, rescans, repo)
    assert rescanned(runs, watched) == 2


def test_a_tree_with_more_folders_than_inotify_allows_is_rescanned_with_one_line(repo, tmp_path):
    notes: list[str] = []
    for i in range(5):
        (repo / f"folder{i}").mkdir()
        (repo / f"folder{i}" / "f.txt").write_text(f"{i}\n")
    snapshotter = Snapshotter(tmp_path / "state", watch_limit=6, on_note=notes.append)  # 3 folders at most
    first = snapshotter.take(str(repo))
    (repo / "folder4" / "f.txt").write_text("changed\n")
    (repo / "a.txt").write_text("changed\n")
    later = snapshotter.take(str(repo))
    assert [c.path for c in snapshotter.changes(first, later)] == ["a.txt", "folder4/f.txt"]
    assert len(notes) == 1, notes
    assert notes[0].startswith(f"changes: each turn rescans {repo}: more than 3 folders")
    assert "fs.inotify.max_user_watches = 6" in notes[0]


def test_the_user_is_told_once_why_a_tree_is_rescanned_and_its_turns_stay_exact(ed, repo, sandbox):
    for i in range(5):
        (repo / f"folder{i}").mkdir()
        (repo / f"folder{i}" / "f.txt").write_text(f"{i}\n")
    # inotify's limit as the host reads it, lowered for this Neovim (the sysctl is machine-wide).
    state = str(sandbox.base / "state" / "low-limit")
    ed.lua("require('gemini_companion.host').notify('changes_config', {state_dir = ..., watch_limit = 6})", state)
    listen(ed)
    turn = a_turn(ed, repo, lambda: agent_turn(repo))
    assert {f["path"] for f in turn["files"]} == {"a.txt", "new.txt", "gone.txt", "sed.txt"}
    told = [m for m, _ in ed.lua("return _G.said") if "rescans" in m]
    assert told == [
        f"gemini-companion: changes: each turn rescans {repo}: more than 3 folders, half of inotify's"
        " limit (fs.inotify.max_user_watches = 6)"
    ], ed.lua("return _G.said")
    turn = a_turn(ed, repo, lambda: (repo / "folder4" / "f.txt").write_text("changed\n"))
    assert [f["path"] for f in turn["files"]] == ["folder4/f.txt"]
    assert len([m for m, _ in ed.lua("return _G.said") if "rescans" in m]) == 1


def test_a_tree_on_a_file_system_inotify_cannot_hear_is_rescanned(repo, tmp_path, monkeypatch):
    kind = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "--target", str(repo)], capture_output=True, text=True)
    assert watch.filesystem(str(repo)) == kind.stdout.strip()  # read from /proc/self/mountinfo as findmnt does
    # This machine's file system taken for one other machines change too (NFS, SSHFS, 9p, ...).
    monkeypatch.setattr(watch, "REMOTE", {kind.stdout.strip()})
    notes: list[str] = []
    snapshotter = Snapshotter(tmp_path / "state", on_note=notes.append)
    first = snapshotter.take(str(repo))
    (repo / "a.txt").write_text("changed\n")
    assert [c.path for c in snapshotter.changes(first, snapshotter.take(str(repo)))] == ["a.txt"]
    assert notes == [
        f"changes: each turn rescans {repo}: it is on {kind.stdout.strip()}, where inotify does not hear"
        " of changes made elsewhere"
    ]


def test_all_trees_together_take_at_most_half_of_the_users_watches(repo, tmp_path):
    """Other programs (language servers, file managers) need inotify watches too."""
    other = tmp_path / "other"
    for i in range(3):
        (other / f"folder{i}").mkdir(parents=True)
        (other / f"folder{i}" / "f.txt").write_text(f"{i}\n")
    notes: list[str] = []
    snapshotter = Snapshotter(tmp_path / "state", watch_limit=12, on_note=notes.append)  # 6 folders in all
    snapshotter.take(str(repo))  # its root folder: 1
    first = snapshotter.take(str(other))  # 4 more would make 5: fits
    assert notes == []
    third = tmp_path / "third"
    (third / "x").mkdir(parents=True)
    (third / "x" / "f.txt").write_text("x\n")
    snapshotter.take(str(third))  # 2 more would make 7: not watched, told
    assert notes == [
        f"changes: each turn rescans {third}: more than 1 folders, half of inotify's limit"
        " (fs.inotify.max_user_watches = 12) less the 5 our other trees' watchers hold"
    ]
    (other / "folder2" / "f.txt").write_text("changed\n")
    assert [c.path for c in snapshotter.changes(first, snapshotter.take(str(other)))] == ["folder2/f.txt"]


def test_a_file_written_through_its_other_name_is_seen(repo, tmp_path):
    """inotify tells a write only to the folder of the name written through: files with other
    names (hard links, outside the tree or inside it) are looked at every time."""
    outside = tmp_path / "outside.txt"
    os.link(repo / "a.txt", outside)  # before Neovim watches
    watched, rescans = two_snapshotters(tmp_path / "state")
    same(watched, rescans, repo)
    outside.write_text("written outside\n")
    same(watched, rescans, repo)
    os.link(repo / "b.txt", repo / "b-again.txt")  # made inside, while watched
    same(watched, rescans, repo)
    (repo / "b-again.txt").write_text("written through the other name\n")
    assert same(watched, rescans, repo).tree == rescans.take(str(repo)).tree
    assert (repo / "b.txt").read_text() == "written through the other name\n"


class Quiet:
    """The feature's Editor and Link, in this process: what it tells Neovim goes nowhere."""

    def lua(self, code: str, *args: Any) -> None: ...

    def changed(self) -> None: ...


def test_a_turn_start_never_waits_for_a_prune(repo, tmp_path, monkeypatch):
    """Every GC_EVERY turns our repositories are pruned: a walk of every kept tree (~350 ms on
    50,000 files). It runs on a thread of its own, never in the boundary a turn's hook waits for."""
    monkeypatch.chdir(repo)  # the feature's first snapshot: of this repository
    feature = ChangesFeature(Quiet(), Quiet())
    feature.methods["changes_config"]({"state_dir": str(tmp_path / "state"), "max_turns": 1})
    pruned_in: list[threading.Thread] = []
    real_prune = Snapshotter.prune

    def prune(self: Snapshotter, kept: list[Snapshot]) -> None:
        pruned_in.append(threading.current_thread())
        real_prune(self, kept)

    monkeypatch.setattr(Snapshotter, "prune", prune)
    for i in range(2 * GC_EVERY + 1):  # each turn start ends the last turn and lets an older one go
        (repo / "a.txt").write_text(f"turn {i}\n")
        feature._boundary("gemini", str(repo), "hooks", True)
    wait_for(lambda: pruned_in, 30, "a prune")
    assert threading.current_thread() not in pruned_in
