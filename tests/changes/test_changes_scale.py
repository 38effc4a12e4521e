"""A turn's cost follows what changed, not the tree's size (issue 34): the workspace's first
snapshot is taken in the background when the host starts in a git work tree, or an agent connects,
so the first turn waits for no full scan; and each turn's list stays exactly right."""

from __future__ import annotations

from pathlib import Path

from changes.helpers import a_turn, agent_turn
from conftest import Editor, Sandbox, git, wait_for


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
