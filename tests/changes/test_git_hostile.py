"""Change review in a hostile clone, through a real Neovim and the real hook command: the
repository's config (with include.path and includeIf files), its hooks, its attributes' filters
and the user's own config all name a program that leaves a marker if run; Neovim's environment
holds GIT_* variables that would send git elsewhere. A whole turn (start snapshot, files changed
on disk, end, the list, the diff, a hunk, a file and the rest taken back) runs none of them, never
touches the user's git dir, and every file comes back as its exact bytes (CRLF, filter, ident,
working-tree-encoding)."""

from __future__ import annotations

import os

from changes.helpers import a_turn, refused
from changes.hostile_repos import TURN, hooks_dir, hostile_config, hostile_repo, marker, no_marks, on_disk, state, write
from conftest import Sandbox, git, wait_for


def test_a_hostile_clone_goes_through_a_whole_change_review_turn(sandbox: Sandbox, editor_factory):
    marks = sandbox.base / "marks"
    mark = marker(sandbox.base / "bin", marks)
    repo = hostile_repo(sandbox.project / "hostile", mark)
    (sandbox.home / ".gitconfig").write_text(hostile_config(mark, sandbox.home, "global"))
    elsewhere = sandbox.base / "elsewhere"
    sandbox.env.update(
        GIT_DIR=str(elsewhere),
        GIT_WORK_TREE="/",
        GIT_INDEX_FILE=str(elsewhere / "index"),
        GIT_OBJECT_DIRECTORY=str(elsewhere),
        GIT_ALTERNATE_OBJECT_DIRECTORIES=str(elsewhere),
        GIT_CONFIG_PARAMETERS=f"'core.fsmonitor={mark} env-fsmonitor'",
        GIT_CONFIG_COUNT="1",
        GIT_CONFIG_KEY_0="core.hooksPath",
        GIT_CONFIG_VALUE_0=str(hooks_dir(elsewhere / "hooks", mark, "env")),
        GIT_EXTERNAL_DIFF=f"{mark} env-external-diff",
        GIT_PAGER=f"{mark} env-pager",
    )
    ed = editor_factory()
    ed.wait_state("running")
    original = on_disk(repo)
    user = state(repo / ".git")

    turn = a_turn(ed, repo, lambda: write(repo, TURN))
    no_marks(marks)
    assert sorted(f["path"] for f in turn["files"]) == sorted(TURN)
    ed.nvim.command("GeminiChanges")
    qf = ed.lua("return vim.fn.getqflist({items = 1}).items")
    assert [i["module"] for i in qf] == sorted(TURN)

    # The diff of dos.txt (CRLF): the turn's start read back through our repository, and one hunk
    # taken back with `dp`.
    ed.nvim.command("cfirst")
    wait_for(lambda: ed.lua("return vim.b.gemini_changes ~= nil"), 10, "the changes window")
    assert ed.lua("return vim.b.gemini_changes.path") == "dos.txt"
    assert ed.nvim.current.buffer[:] == ["one\r", "two\r"]  # the bytes before the turn
    ed.nvim.command("call cursor(2, 1)")
    ed.nvim.feedkeys("dp")
    wait_for(lambda: (repo / "dos.txt").read_bytes() == original["dos.txt"], 10, "the hunk taken back")
    # One file, filtered as the user committed it: its bytes on disk come back, not the filtered ones.
    ed.nvim.command("tabonly | only | enew")
    ed.nvim.command(f"GeminiChanges revert {repo / 'filtered.txt'}")
    assert (repo / "filtered.txt").read_bytes() == original["filtered.txt"]
    # The rest of the turn.
    ed.nvim.command("GeminiChanges undo")
    assert on_disk(repo) == original
    assert "refused" not in ed.messages()
    no_marks(marks)
    assert state(repo / ".git") == user  # not one byte or mtime of the user's git dir changed


def test_a_revert_never_reads_or_writes_through_what_an_agent_left(sandbox: Sandbox, editor_factory):
    """After the turn a file became a symlink to a file outside, a folder a symlink to a folder
    outside, a file a FIFO: each is refused, named, and nothing outside is read or written."""
    project = sandbox.project
    outside = sandbox.base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside\n")
    (project / "d").mkdir()
    (project / "d" / "f.txt").write_text("1\n2\n")
    (project / "link.txt").write_text("1\n2\n")
    (project / "pipe.txt").write_text("1\n2\n")
    ed = editor_factory()
    ed.wait_state("running")

    def agent() -> None:
        for path in (project / "d" / "f.txt", project / "link.txt", project / "pipe.txt"):
            path.write_text("1\nTWO\n")

    turn = a_turn(ed, project, agent)
    assert sorted(f["path"] for f in turn["files"]) == ["d/f.txt", "link.txt", "pipe.txt"]
    (project / "link.txt").unlink()
    (project / "link.txt").symlink_to(outside / "secret.txt")
    (project / "d" / "f.txt").unlink()
    (project / "d").rmdir()
    (project / "d").symlink_to(outside)
    (outside / "f.txt").write_text("1\nTWO\n")  # what the revert would take back, outside
    (project / "pipe.txt").unlink()
    os.mkfifo(project / "pipe.txt")
    ed.nvim.command("GeminiChanges undo")
    assert dict(refused(ed)) == {
        "f.txt": "a folder on its way is a symlink or not a folder now: left as it is",
        "link.txt": "is a link now: left as it is",
        "pipe.txt": "is a fifo now: left as it is",
    }
    assert (outside / "f.txt").read_text() == "1\nTWO\n" and (outside / "secret.txt").read_text() == "outside\n"


def test_a_changed_file_whose_name_holds_ex_commands_opens_as_itself(sandbox: Sandbox, editor_factory):
    """Git allows a newline or `|` in a name: opening such an entry of :GeminiChanges runs nothing
    (an Ex string with the name in it ran what followed the newline) and shows that very file."""
    project = sandbox.project
    ran = sandbox.base / "ran"
    (project / ".x").write_text(f"call writefile([], '{ran}')\n")
    names = ["notes\nso .x", "a|call writefile([], 'PWNED')", "%#~$HOME"]  # no slash can be in a name
    for name in names:
        (project / name).write_text("before\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "base")
    editor = editor_factory()
    editor.wait_state("running")

    def change() -> None:
        for name in names:
            (project / name).write_text("after\n")

    turn = a_turn(editor, project, change)
    assert sorted(f["path"] for f in turn["files"]) == sorted(names)
    editor.nvim.command("GeminiChanges")
    for index in range(1, len(names) + 1):
        editor.nvim.command(f"cc {index}")
        shown = wait_for(
            lambda: editor.lua(
                "for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do"
                " if vim.w[w].gemini_changes_now then return vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w)) end"
                " end"
            ),
            what="the file's window",
        )
        assert shown in {str(project / name) for name in names}
    assert not ran.exists() and not (project / "PWNED").exists()
