"""`:GeminiChanges` on a path whose type a turn changed, in a real Neovim with real git: a file that
became a folder, a folder that became a file, a symlink that became a folder and back, a file deep
inside, an execute bit alongside. `undo`, `revert` of the path and of a file inside it give it back
whole (type, bytes, execute bit) when nothing of the user's would be lost; else one line names the
reason and nothing changes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from changes.helpers import INFO, WARN, a_turn, listen, refused, said
from conftest import git, wait_for


def snapshot(root: Path) -> dict[str, Any]:
    """Every entry under `root` but .git: a folder, a link's target, or a file's mode and bytes."""
    found: dict[str, Any] = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in dirs + names:
            path = Path(folder, name)
            rel = str(path.relative_to(root))
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                found[rel] = "folder"
            else:
                found[rel] = (oct(path.stat().st_mode & 0o777), path.read_bytes())
    return found


def committed(project: Path, build: Any) -> dict[str, Any]:
    build()
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "base")
    return snapshot(project)


def base(project: Path) -> None:
    """f: an executable file; d/: a folder of files (one executable, one a link); l: a link; a/b:
    a file deep down; x.sh: an executable; k: a link; keep.txt: a file no turn touches."""
    (project / "f").write_text("#!/bin/sh\necho f\n")
    (project / "f").chmod(0o755)
    (project / "d" / "sub").mkdir(parents=True)
    (project / "d" / "x.txt").write_bytes(b"x\r\n\xff\x00")
    (project / "d" / "sub" / "run.sh").write_text("run\n")
    (project / "d" / "sub" / "run.sh").chmod(0o755)
    (project / "d" / "to_x").symlink_to("x.txt")
    (project / "l").symlink_to("keep.txt")
    (project / "a").mkdir()
    (project / "a" / "b").write_text("deep\n")
    (project / "keep.txt").write_text("keep\n")
    (project / "x.sh").write_text("x\n")
    (project / "x.sh").chmod(0o755)
    (project / "k").symlink_to("keep.txt")


def retype(project: Path) -> None:
    """The agent: f a folder, d a file (executable), l a folder, a/b a folder two deep, x.sh a link
    to a folder, k an executable file (these two were taken back already: kept so)."""
    (project / "f").unlink()
    (project / "f" / "inner").mkdir(parents=True)
    (project / "f" / "one.txt").write_text("agent one\n")
    (project / "f" / "inner" / "two.sh").write_text("agent two\n")
    (project / "f" / "inner" / "two.sh").chmod(0o755)
    (project / "f" / "empty" / "folders").mkdir(parents=True)  # git keeps no folder: nothing lost
    for path in ((project / "d" / "sub" / "run.sh"), (project / "d" / "to_x"), (project / "d" / "x.txt")):
        path.unlink()
    (project / "d" / "sub").rmdir()
    (project / "d").rmdir()
    (project / "d").write_text("agent d\n")
    (project / "d").chmod(0o755)
    (project / "l").unlink()
    (project / "l").mkdir()
    (project / "l" / "in_l.txt").write_text("agent l\n")
    (project / "a" / "b").unlink()
    (project / "a" / "b" / "c").mkdir(parents=True)
    (project / "a" / "b" / "c" / "deep.txt").write_text("agent deep\n")
    (project / "x.sh").unlink()
    (project / "x.sh").symlink_to("a")
    (project / "k").unlink()
    (project / "k").write_text("agent k\n")
    (project / "k").chmod(0o755)


def test_undo_gives_every_type_change_back_whole_and_a_second_undo_finds_nothing(ed, sandbox):
    project = sandbox.project
    start = committed(project, lambda: base(project))
    turn = a_turn(ed, project, lambda: retype(project))
    paths = {f["path"] for f in turn["files"]}
    assert {"f", "f/one.txt", "d", "d/x.txt", "d/sub/run.sh", "l", "l/in_l.txt", "a/b", "a/b/c/deep.txt"} <= paths
    listen(ed)
    what = f"turn {turn['id']} (gemini)"
    ed.nvim.command("GeminiChanges undo")
    assert said(ed) == (f"{what}: {len(paths)} taken back", INFO)
    assert snapshot(project) == start
    ed.nvim.command("GeminiChanges undo")
    assert said(ed) == (f"{what}: nothing left to take back (every file is as before the turn)", INFO)
    assert not [p for p in project.iterdir() if "gemini-companion" in p.name]  # no temporary left


def test_revert_of_the_path_or_a_file_inside_takes_the_type_change_back_whole(ed, sandbox):
    project = sandbox.project
    start = committed(project, lambda: base(project))
    a_turn(ed, project, lambda: retype(project))
    ed.nvim.chdir(str(project))
    listen(ed)
    ed.nvim.command("GeminiChanges revert f")  # the folder the file became
    assert said(ed) == ("f: 3 taken back", INFO)
    ed.nvim.command("GeminiChanges revert a/b/c/deep.txt")  # a file inside the new folder
    assert said(ed) == ("a/b: 2 taken back", INFO)
    ed.nvim.command("GeminiChanges revert d/sub/run.sh")  # a file of the folder that became a file
    assert said(ed) == ("d: 4 taken back", INFO)
    ed.nvim.command("GeminiChanges revert l/in_l.txt")  # a link that became a folder
    assert said(ed) == ("l: 2 taken back", INFO)
    for name in ("x.sh", "k"):  # a file become a link to a folder, a link become a file
        ed.nvim.command(f"GeminiChanges revert {name}")
        assert said(ed) == (f"{name}: 1 taken back", INFO)
    assert snapshot(project) == start
    ed.nvim.command("GeminiChanges revert d/x.txt")
    assert said(ed) == ("d: nothing left to take back (it is as before the turn)", INFO)
    (project / "d" / "sub" / "mine.txt").write_text("the user's, since\n")
    ed.nvim.command("GeminiChanges revert d")
    since = "what the turn changed is back; the rest was changed since"
    assert said(ed) == (f"d: nothing left to take back ({since})", INFO)


def test_a_folder_that_became_a_symlink_comes_back(ed, sandbox):
    project = sandbox.project
    start = committed(project, lambda: base(project))

    def agent() -> None:
        for path in ((project / "d" / "sub" / "run.sh"), (project / "d" / "to_x"), (project / "d" / "x.txt")):
            path.unlink()
        (project / "d" / "sub").rmdir()
        (project / "d").rmdir()
        (project / "d").symlink_to("a")

    turn = a_turn(ed, project, agent)
    assert sorted(f["path"] for f in turn["files"]) == ["d", "d/sub/run.sh", "d/to_x", "d/x.txt"]
    ed.nvim.command("GeminiChanges undo")
    assert snapshot(project) == start
    assert (project / "a" / "b").read_text() == "deep\n"  # nothing written through the link


def refuses(editor: Any, project: Path, command: str, where: str, why: str) -> None:
    """`command` refuses the type change at f in one line naming `why` at `where`, and changes
    nothing there (`undo` takes the turn's other changes back)."""
    listen(editor)
    now = {rel: what for rel, what in snapshot(project).items() if rel == "f" or rel.startswith("f/")}
    editor.nvim.command(command)
    message, level = said(editor)
    assert level == WARN and message.endswith(f"1 refused (:copen lists them): {where}:1 {why}"), message
    assert refused(editor) == [(Path(where).name, why)]
    assert {rel: what for rel, what in snapshot(project).items() if rel == "f" or rel.startswith("f/")} == now


def test_a_file_made_inside_after_the_turn_keeps_the_folder(ed, sandbox):
    project = sandbox.project
    committed(project, lambda: base(project))
    a_turn(ed, project, lambda: retype(project))
    (project / "f" / "inner" / "mine.txt").write_text("the user's\n")
    ed.nvim.chdir(str(project))
    why = "is now a folder holding files made after the turn (inner/mine.txt): left as it is"
    refuses(ed, project, "GeminiChanges undo", "f", why)
    # Once the user's file is gone, the file comes back.
    (project / "f" / "inner" / "mine.txt").unlink()
    ed.nvim.command("GeminiChanges revert f")
    assert (project / "f").read_text() == "#!/bin/sh\necho f\n" and (project / "f").stat().st_mode & 0o777 == 0o755


def test_a_file_inside_edited_after_the_turn_keeps_the_folder(ed, sandbox):
    project = sandbox.project
    committed(project, lambda: base(project))
    a_turn(ed, project, lambda: retype(project))
    (project / "f" / "one.txt").write_text("agent one, edited\n")
    ed.nvim.chdir(str(project))
    why = "changed after the turn: f is left as it is"
    refuses(ed, project, "GeminiChanges revert f/inner/two.sh", "f/one.txt", why)


def test_an_execute_bit_changed_inside_after_the_turn_keeps_the_folder(ed, sandbox):
    project = sandbox.project
    committed(project, lambda: base(project))
    a_turn(ed, project, lambda: retype(project))
    (project / "f" / "inner" / "two.sh").chmod(0o644)
    ed.nvim.chdir(str(project))
    refuses(ed, project, "GeminiChanges revert f", "f/inner/two.sh", "changed after the turn: f is left as it is")


def test_the_file_a_folder_became_edited_after_the_turn_is_kept(ed, sandbox):
    project = sandbox.project
    committed(project, lambda: base(project))
    a_turn(ed, project, lambda: retype(project))
    (project / "d").write_text("agent d, and mine\n")
    ed.nvim.chdir(str(project))
    listen(ed)
    ed.nvim.command("GeminiChanges revert d/x.txt")
    why = "changed after the turn: left as it is"
    assert said(ed) == (f"d: 0 taken back, 1 refused (:copen lists them): d:1 {why}", WARN)
    assert (project / "d").read_text() == "agent d, and mine\n"


def test_a_buffer_with_unsaved_edits_inside_keeps_the_folder_and_loaded_buffers_follow(ed, sandbox):
    project = sandbox.project
    committed(project, lambda: base(project))
    ed.nvim.command(f"edit {project / 'd' / 'sub' / 'run.sh'}")  # loaded before the turn
    a_turn(ed, project, lambda: retype(project))
    ed.nvim.command(f"edit {project / 'f' / 'one.txt'}")
    ed.nvim.command("normal! Aunsaved")
    ed.nvim.command(f"edit {project / 'd'}")  # the agent's file, unmodified
    ed.nvim.chdir(str(project))
    refuses(ed, project, "GeminiChanges undo", "f/one.txt", "has unsaved edits in Neovim: save or undo them first")
    assert ed.lua("return vim.fn.getbufline(vim.fn.bufnr(...), 1)[1]", str(project / "f" / "one.txt")) == (
        "agent oneunsaved"
    )
    ed.nvim.command(f"buffer {project / 'f' / 'one.txt'}")
    ed.nvim.command("edit!")  # the edit dropped: now f comes back, and the buffers follow
    ed.nvim.command("GeminiChanges undo")
    assert (project / "f").is_file() and (project / "d" / "sub" / "run.sh").read_text() == "run\n"
    buffers = ed.lua("return vim.tbl_map(vim.api.nvim_buf_get_name, vim.api.nvim_list_bufs())")
    assert str(project / "f" / "one.txt") not in buffers  # its file gone: its buffer too
    assert str(project / "d") not in buffers
    lines = "return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)"
    assert ed.lua(lines, str(project / "d" / "sub" / "run.sh")) == ["run"]


def test_a_folder_inside_swapped_for_a_link_outside_is_never_followed(ed, sandbox):
    project = sandbox.project
    committed(project, lambda: base(project))
    a_turn(ed, project, lambda: retype(project))
    outside = sandbox.base / "outside"
    (project / "f" / "inner").rename(outside)
    (project / "f" / "inner").symlink_to(outside)
    ed.nvim.chdir(str(project))
    why = "is now a folder holding files made after the turn (inner): left as it is"
    refuses(ed, project, "GeminiChanges revert f", "f", why)
    assert (outside / "two.sh").read_text() == "agent two\n"


def test_a_pruned_file_of_a_type_change_refuses_all_of_it(ed, sandbox):
    project = sandbox.project
    committed(project, lambda: base(project))
    turn = a_turn(ed, project, lambda: retype(project))
    blob = git(project, "--git-dir", turn["git_dir"], "rev-parse", f"{turn['after']}:f/one.txt").strip()
    (Path(turn["git_dir"]) / "objects" / blob[:2] / blob[2:]).unlink()  # a loose object: ours
    ed.nvim.chdir(str(project))
    now = snapshot(project)
    ed.nvim.command("GeminiChanges revert f")
    assert refused(ed) == [("one.txt", "the turn's snapshot is gone (pruned): left as it is")]
    assert snapshot(project)["f"] == "folder" and snapshot(project) == now


def test_dp_in_a_file_inside_takes_the_whole_type_change_back(ed, sandbox):
    project = sandbox.project
    start = committed(project, lambda: base(project))
    a_turn(ed, project, lambda: retype(project))
    ed.nvim.command("GeminiChanges")
    index = ed.lua("for i, item in ipairs(vim.fn.getqflist()) do if item.module == 'f/one.txt' then return i end end")
    ed.nvim.command(f"cc {index}")
    wait_for(lambda: ed.lua("return vim.b.gemini_changes ~= nil"), 10, "the changes window")
    wait_for(lambda: ed.lua("return #vim.api.nvim_tabpage_list_wins(0)") >= 2, 10, "the diff pair")
    listen(ed)
    ed.lua("require('gemini_companion.changes').revert_hunk()")
    assert said(ed) == ("f: 3 taken back", INFO)
    assert snapshot(project)["f"] == start["f"]


def test_a_file_the_snapshot_left_out_keeps_the_folder(ed, sandbox):
    """A file in the new folder that git ignores was not snapshotted: it could not come back, so the
    folder stays, and the line says why (not "made after the turn": the agent made it)."""
    project = sandbox.project
    committed(project, lambda: (base(project), (project / ".gitignore").write_text("*.pyc\n")))

    def agent() -> None:
        retype(project)
        (project / "f" / "inner" / "cache.pyc").write_bytes(b"\x00pyc")

    a_turn(ed, project, agent)
    ed.nvim.chdir(str(project))
    why = "is now a folder holding files the snapshot left out (inner/cache.pyc): left as it is"
    refuses(ed, project, "GeminiChanges revert f", "f", why)
    assert (project / "f" / "inner" / "cache.pyc").read_bytes() == b"\x00pyc"


def test_odd_names_in_and_of_a_type_change(ed, sandbox):
    """Any bytes in the names (a newline, not UTF-8, `*`), each said in one line."""
    project = sandbox.project
    root = Path(os.fsdecode(bytes(project) + b"/odd\nroot"))
    inside = [b"new\nline", b"bad\xff\xfe", b"sub/*", b"-x"]
    start = committed(project, lambda: root.write_bytes(b"was a file\n"))

    def agent() -> None:
        root.unlink()
        (root / "sub").mkdir(parents=True)
        for name in inside:
            Path(os.fsdecode(bytes(root) + b"/" + name)).write_bytes(name)

    turn = a_turn(ed, project, agent)
    assert len(turn["files"]) == 5
    mine = Path(os.fsdecode(bytes(root) + b"/sub/mine\n\xff"))
    mine.write_text("the user's\n")
    listen(ed)
    ed.nvim.command("GeminiChanges undo")
    message, level = said(ed)
    assert level == WARN and "\n" not in message
    assert message.endswith("is now a folder holding files made after the turn (sub/mine^J\\xff): left as it is")
    mine.unlink()
    ed.nvim.command("GeminiChanges undo")
    assert said(ed) == (f"turn {turn['id']} (gemini): 5 taken back", INFO)
    assert snapshot(project) == start


def test_a_type_change_whose_folder_above_is_gone_makes_no_folder(ed, sandbox):
    project = sandbox.project
    committed(project, lambda: base(project))
    a_turn(ed, project, lambda: retype(project))
    for path in ((project / "a" / "b" / "c" / "deep.txt"), (project / "a" / "b" / "c"), (project / "a" / "b")):
        path.unlink() if path.is_file() else path.rmdir()
    (project / "a").rmdir()  # the user removed a/ after the turn
    ed.nvim.chdir(str(project))
    listen(ed)
    ed.nvim.command("GeminiChanges revert a/b")
    why = "its folder is gone: left as it is"
    assert said(ed) == (f"a/b: 0 taken back, 1 refused (:copen lists them): a/b:1 {why}", WARN)
    assert not (project / "a").exists()


def test_what_the_turn_left_that_cannot_be_deleted_is_named_where_it_is_kept(ed, sandbox):
    """A file of the turn's that cannot be deleted (immutable here; read-only folder for a user):
    the path is back, and the folder holding the rest of the turn's is named, not lost or hidden."""
    project = sandbox.project
    committed(project, lambda: base(project))
    a_turn(ed, project, lambda: retype(project))
    stuck = project / "f" / "inner" / "two.sh"
    if subprocess.run(["chattr", "+i", str(stuck)], capture_output=True, check=False).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        ed.nvim.chdir(str(project))
        listen(ed)
        ed.nvim.command("GeminiChanges revert f")
        message, level = said(ed)
        assert (project / "f").read_text() == "#!/bin/sh\necho f\n"
        kept = [p for p in project.iterdir() if p.name.startswith(".f.gemini-companion.")]
        assert len(kept) == 1 and (kept[0] / "inner" / "two.sh").read_text() == "agent two\n"
        assert not (kept[0] / "one.txt").exists()  # the rest of it deleted
        why = "taken back; what the turn left there is kept here (Operation not permitted)"
        assert level == WARN and message == f"f: 3 taken back, 1 refused (:copen lists them): {kept[0].name}:1 {why}"
    finally:
        for path in [stuck, *project.glob(".f.gemini-companion.*/inner/two.sh")]:
            if path.exists():
                subprocess.run(["chattr", "-i", str(path)], check=False)
