"""`:GeminiChanges` in a real Neovim: turns told by the real hook command (as the CLIs' settings run
it), snapshots of a real git work tree (and of a plain folder), the list, per-hunk and whole-turn
reverts that never clobber what changed after the turn, and the user's git state untouched."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from changes.helpers import a_turn, agent_turn, hook, refused, turns
from conftest import git, wait_for
from gemini_companion.programs.hook import KEY_ENV, read_key
from harness.mcp_raw import RawSession


def test_a_turn_lists_what_changed_and_undo_restores_it_byte_for_byte(ed, repo):
    before = {p.name: p.read_bytes() for p in repo.iterdir() if p.is_file()}
    git_state = (git(repo, "status", "--porcelain"), git(repo, "stash", "list"), git(repo, "for-each-ref"))
    index = (repo / ".git" / "index").read_bytes()
    turn = a_turn(ed, repo, lambda: agent_turn(repo))
    files = {f["path"]: f for f in turn["files"]}
    assert sorted(files) == ["a.txt", "gone.txt", "new.txt", "sed.txt"]
    assert files["a.txt"]["status"] == "modified" and (files["a.txt"]["added"], files["a.txt"]["removed"]) == (2, 2)
    assert files["new.txt"]["status"] == "created" and files["gone.txt"]["status"] == "deleted"
    assert turn["agent"] == "gemini" and turn["tools"][0]["tool"] == "write_file"
    assert ed.status()["changes"]["last"] == {"id": turn["id"], "agent": "gemini", "files": 4, "open": False}
    ed.nvim.command("GeminiChanges")
    qf = ed.lua("return vim.fn.getqflist({title = 1, items = 1})")
    assert qf["title"] == f"Gemini changes: turn {turn['id']} (gemini)"
    assert [i["module"] for i in qf["items"]] == ["a.txt", "gone.txt", "new.txt", "sed.txt"]
    assert qf["items"][0]["text"] == "modified +2 -2 (gemini)"
    ed.nvim.command("GeminiChanges undo")
    after = {p.name: p.read_bytes() for p in repo.iterdir() if p.is_file()}
    assert after == before
    # The user's git state: as it was (the index byte for byte).
    assert (repo / ".git" / "index").read_bytes() == index
    assert (git(repo, "status", "--porcelain"), git(repo, "stash", "list"), git(repo, "for-each-ref")) == git_state


def test_one_hunk_reverts_exactly_and_a_later_edit_is_never_clobbered(ed, repo):
    turn = a_turn(ed, repo, lambda: agent_turn(repo))
    # The user changes line 9 (the turn's second hunk) after the turn.
    (repo / "a.txt").write_text("1\nTWO\n3\n4\n5\n6\n7\n8\nnine, mine\n10\n")
    ed.nvim.command("GeminiChanges")
    ed.nvim.command("cfirst")  # a.txt: before the turn, beside the file now
    wait_for(lambda: ed.lua("return #vim.api.nvim_tabpage_list_wins(0)") >= 2, 10, "the diff pair")
    assert ed.lua("return vim.b.gemini_changes") == {"turn": turn["id"], "path": "a.txt"}
    ed.nvim.command("call cursor(2, 1)")  # the first hunk: TWO <- 2
    ed.nvim.feedkeys("dp")
    wait_for(lambda: (repo / "a.txt").read_text().startswith("1\n2\n"), 10, "the hunk reverted")
    assert (repo / "a.txt").read_text() == "1\n2\n3\n4\n5\n6\n7\n8\nnine, mine\n10\n"
    # The whole file now: the second hunk was changed after the turn: refused, named, untouched.
    ed.nvim.command("GeminiChanges revert")
    assert (repo / "a.txt").read_text() == "1\n2\n3\n4\n5\n6\n7\n8\nnine, mine\n10\n"
    assert "a.txt:9 changed after the turn" in ed.messages()
    qf = ed.lua("return vim.fn.getqflist({title = 1, items = 1})")
    assert [(i["lnum"], i["text"]) for i in qf["items"]] == [(9, "changed after the turn: left as it is")]


def test_unsaved_edits_are_never_overwritten(ed, repo):
    turn = a_turn(ed, repo, lambda: agent_turn(repo))
    assert turn["files"]
    ed.nvim.command(f"edit {repo / 'b.txt'}")  # b.txt is not in the turn; a.txt is
    ed.nvim.command(f"edit {repo / 'a.txt'}")
    ed.nvim.command("normal! Gounsaved")
    ed.nvim.command("GeminiChanges undo")
    assert (repo / "a.txt").read_text() == "1\nTWO\n3\n4\n5\n6\n7\n8\nNINE\n10\n"  # left alone
    assert ed.lua("return vim.bo.modified") and ed.nvim.current.buffer[-1] == "unsaved"
    assert "a.txt:1 has unsaved edits" in ed.messages()
    assert (repo / "sed.txt").read_text() == "colour\ncolour\n"  # the rest was undone


def test_undo_reads_files_in_batches_and_gives_back_a_path_become_a_folder(ed, repo):
    """`undo` reads the turn's files 64 at a time, three git runs a batch (three runs per file held
    Neovim 650 ms for 100 files). Across two batches: a path the turn made a folder comes back as the
    file it was (it was refused, with "the snapshot holds no file here", and its folder left behind),
    and every file around it byte for byte (a folder's object is never read)."""
    before = {name: (repo / name).read_bytes() for name in ("a.txt", "b.txt", "sed.txt")}
    (repo / "m").write_text("was a file\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "m")

    def agent() -> None:
        agent_turn(repo)
        (repo / "b.txt").write_text("changed\n")
        (repo / "m").unlink()
        (repo / "m").mkdir()
        (repo / "m" / "inside.txt").write_text("in a folder now\n")
        for i in range(70):
            (repo / f"n{i:02}.txt").write_text(f"new {i}\n")

    turn = a_turn(ed, repo, agent)
    assert {"m", "m/inside.txt", "a.txt", "b.txt", "n69.txt"} <= {f["path"] for f in turn["files"]}
    assert len(turn["files"]) > 64
    ed.nvim.command("GeminiChanges undo")
    assert {name: (repo / name).read_bytes() for name in before} == before
    assert not (repo / "new.txt").exists() and (repo / "gone.txt").read_text() == "bye\n"
    assert not any(repo.glob("n*.txt")) and not (repo / "m" / "inside.txt").exists()
    assert (repo / "m").read_text() == "was a file\n"
    assert "refused" not in ed.messages()


@pytest.mark.parametrize(
    ("ending", "why"),
    [("kill -9 $$", "git was stopped (signal 9)"), ("exec sleep 30", "git gave no answer in 5 s")],
)
def test_a_cut_short_read_of_the_snapshot_writes_nothing(ed, repo, tmp_path, ending, why):
    """A `git cat-file` that stops partway (killed, or at the time limit) leaves a partial file in
    its output: nothing of it is taken, the file is refused, never written back cut short."""
    whole = "".join(f"precious line {i}\n" for i in range(20000)).encode()
    (repo / "big.txt").write_bytes(whole)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "big")
    a_turn(ed, repo, lambda: (repo / "big.txt").unlink())
    real = shutil.which("git")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text(
        f'#!/bin/bash\ncase " $* " in *" cat-file "*) "{real}" "$@" | head -c 100000; {ending} ;; esac\n'
        f'exec "{real}" "$@"\n'
    )
    (fake / "git").chmod(0o755)
    ed.lua("vim.env.PATH = ... .. ':' .. vim.env.PATH", str(fake))
    ed.nvim.command("GeminiChanges undo")
    assert not (repo / "big.txt").exists()
    assert [text for _, text in refused(ed)] == [f"{why}: left as it is"]


def test_a_folder_gone_from_the_snapshot_refuses_only_the_files_in_it(ed, repo):
    """git cannot list a batch whose paths cross a folder object that is gone from the snapshot:
    the batch is read again one file at a time, so only the files under that folder are refused."""
    original = (repo / "a.txt").read_bytes()

    def agent() -> None:
        (repo / "a.txt").write_text("changed\n")
        (repo / "newdir" / "sub").mkdir(parents=True)
        (repo / "newdir" / "sub" / "z.txt").write_text("z\n")

    turn = a_turn(ed, repo, agent)
    folder = git(repo, "--git-dir", turn["git_dir"], "rev-parse", f"{turn['after']}:newdir/sub").strip()
    (Path(turn["git_dir"]) / "objects" / folder[:2] / folder[2:]).unlink()  # a loose object: ours
    ed.nvim.command("GeminiChanges undo")
    assert (repo / "a.txt").read_bytes() == original
    assert (repo / "newdir" / "sub" / "z.txt").read_text() == "z\n"
    assert refused(ed) == [("z.txt", "the turn's snapshot is gone (pruned): left as it is")]


def test_a_revert_through_a_loaded_buffer_can_be_undone(ed, repo):
    a_turn(ed, repo, lambda: agent_turn(repo))
    ed.nvim.command(f"edit {repo / 'a.txt'}")
    ed.nvim.command("GeminiChanges revert")
    assert (repo / "a.txt").read_text() == "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
    ed.nvim.command("undo")
    assert ed.nvim.current.buffer[1] == "TWO"  # the agent's version, back in the buffer


def test_a_file_changed_on_disk_behind_an_unmodified_buffer_is_not_clobbered(ed, repo):
    a_turn(ed, repo, lambda: agent_turn(repo))
    ed.nvim.command(f"edit {repo / 'a.txt'}")  # shows the agent's version, unmodified
    (repo / "a.txt").write_text("1\nTWO\n3\n4\n5\n6\n7\n8\nmine now\n10\n")  # then another program
    ed.nvim.command("GeminiChanges undo")
    assert (repo / "a.txt").read_text() == "1\n2\n3\n4\n5\n6\n7\n8\nmine now\n10\n"  # only the free hunk


def test_a_folder_outside_git_and_a_second_agent(ed, sandbox):
    folder = sandbox.project / "plain"
    folder.mkdir()
    (folder / "x.txt").write_text("x\n")
    first = a_turn(ed, folder, lambda: (folder / "x.txt").write_text("y\n"), agent="gemini")
    second = a_turn(ed, folder, lambda: (folder / "z.txt").write_text("z\n"), agent="qwen")
    assert [f["path"] for f in first["files"]] == ["x.txt"] and first["agent"] == "gemini"
    assert [f["path"] for f in second["files"]] == ["z.txt"] and second["agent"] == "qwen"
    assert not (folder / ".git").exists()
    ed.nvim.command("GeminiChanges all")  # both turns, from the first start to the last end
    qf = wait_for(lambda: (q := ed.lua("return vim.fn.getqflist({title = 1, items = 1})"))["items"] and q, 30, "all")
    assert qf["title"] == "Gemini changes: gemini, qwen"
    assert [(i["module"], i["text"]) for i in qf["items"]] == [
        ("x.txt", "modified +1 -1 (gemini, qwen)"),
        ("z.txt", "created +1 -0 (gemini, qwen)"),
    ]
    ed.nvim.command("GeminiChanges undo")  # the last turn: qwen's
    assert not (folder / "z.txt").exists() and (folder / "x.txt").read_text() == "y\n"


def test_the_hook_is_silent_and_instant_outside_neovim(ed, repo):
    command = ed.lua("return require('gemini_companion.changes').hooks('qwen').Stop.hooks[1].command")
    env = {key: value for key, value in os.environ.items() if not key.startswith("GEMINI_COMPANION")}
    done = subprocess.run(["bash", "-c", command], input="{}", env=env, capture_output=True, text=True, cwd=repo)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_the_hooks_endpoint_takes_only_the_hooks_token(ed):
    port = ed.status()["port"]
    hooks_token = (read_key(ed.env(KEY_ENV) or "") or (0, ""))[1]
    ide_token = ed.env("GEMINI_CLI_IDE_AUTH_TOKEN") or ""
    assert RawSession(port, ide_token, "/hooks").post_raw(b"{}")[0] == 403
    assert RawSession(port, "nope", "/hooks").post_raw(b"{}")[0] == 401
    assert RawSession(port, hooks_token, "/mcp").post_raw(b"{}")[0] == 403
    assert RawSession(port, hooks_token, "/hooks").post_raw(b"[1]")[0] == 400
    assert RawSession(port, hooks_token, "/hooks").post_raw(b'{"event": "tool"}')[0] == 200


def test_a_prompt_the_plugin_submitted_and_the_agents_own_hook_make_one_turn(ed, repo):
    ed.lua(
        "require('gemini_companion.host').notify('changes_mark', {agent = 'gemini', cwd = ..., reason = 'send'})",
        str(repo),
    )
    wait_for(lambda: (ed.status()["changes"]["last"] or {}).get("open"), 30, "the turn the send opened")
    turn = a_turn(ed, repo, lambda: agent_turn(repo))
    assert len(turns(ed)) == 1 and turn["boundary"] == "hooks" and len(turn["files"]) == 4


def test_two_agents_at_once_each_get_the_files_their_tools_named(ed, repo):
    def start(agent: str) -> None:
        hook(ed, repo, "turn-start", {"hook_event_name": "BeforeAgent", "cwd": str(repo)}, agent)

    def wrote(agent: str, name: str) -> None:
        (repo / name).write_text(f"{agent}\n")
        payload = {
            "hook_event_name": "AfterTool",
            "tool_name": "write_file",
            "tool_input": {"file_path": str(repo / name)},
        }
        hook(ed, repo, "tool", payload, agent)

    def end(agent: str) -> None:
        hook(ed, repo, "turn-end", {"hook_event_name": "AfterAgent", "cwd": str(repo)}, agent)

    start("gemini")
    start("qwen")
    wrote("qwen", "by_qwen.txt")
    wrote("gemini", "by_gemini.txt")
    end("qwen")
    end("gemini")
    ended = wait_for(lambda: len(t := turns(ed)) == 2 and t, 30, "both turns")
    assert {t["agent"]: [f["path"] for f in t["files"]] for t in ended} == {
        "qwen": ["by_qwen.txt"],
        "gemini": ["by_gemini.txt"],
    }


def test_reverts_touch_only_the_file_itself_and_keep_its_bytes(ed, repo):
    (repo / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    git(repo, "add", "dos.txt")
    git(repo, "commit", "-qm", "dos")
    (repo / "a.txt.orig").write_text("precious\n")
    ed.nvim.command(f"edit {repo / 'a.txt.orig'}")  # a buffer whose name contains a.txt
    ed.nvim.command(f"edit {repo / 'dos.txt'}")  # a CRLF file, loaded
    assert ed.lua("return vim.bo.fileformat") == "dos"
    a_turn(
        ed, repo, lambda: ((repo / "a.txt").write_text("agent\n"), (repo / "dos.txt").write_bytes(b"ONE\r\ntwo\r\n"))
    )
    ed.nvim.command("checktime")
    ed.nvim.command("GeminiChanges undo")
    assert (repo / "a.txt").read_text() == "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
    assert (repo / "a.txt.orig").read_text() == "precious\n"
    assert (repo / "dos.txt").read_bytes() == b"one\r\ntwo\r\n"
    assert ed.nvim.current.buffer[:] == ["one", "two"]  # the buffer shows it
    ed.nvim.command("undo")
    assert ed.nvim.current.buffer[:] == ["ONE", "two"]  # and `u` takes the revert back


def test_a_pruned_snapshot_is_never_taken_for_an_absent_file(ed, repo):
    a_turn(ed, repo, lambda: agent_turn(repo))
    ed.lua("local t = require('gemini_companion.changes').turns t[#t].before = string.rep('0', 40)")
    ed.nvim.command("GeminiChanges undo")
    assert (repo / "a.txt").read_text() == "1\nTWO\n3\n4\n5\n6\n7\n8\nNINE\n10\n"  # left, not deleted
    assert (repo / "new.txt").exists()
    assert "snapshot is gone" in ed.messages()


SWAP = r"""
import os, sys
link, inside, outside = sys.argv[1:4]
tmp, i = link + ".swap", 0
while True:
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(outside if i % 2 else inside, tmp)
    os.replace(tmp, link)
    i += 1
"""


def test_a_revert_never_writes_or_deletes_outside_while_a_folder_is_swapped_for_a_link(ed, sandbox):
    """A folder on the file's way is a symlink, retargeted between the work tree and a folder
    outside as fast as it can go while reverts run: never a write, a delete or a temporary file
    outside; once it is a folder again, the revert goes through."""
    project = sandbox.project
    (project / "d").mkdir()
    (project / "d" / "f.txt").write_text("1\n2\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "base")

    def agent() -> None:
        (project / "d" / "f.txt").write_text("1\nTWO\n")
        (project / "d" / "new.txt").write_text("created\n")

    turn = a_turn(ed, project, agent)
    assert sorted(f["path"] for f in turn["files"]) == ["d/f.txt", "d/new.txt"]
    outside = sandbox.base / "outside"
    outside.mkdir()
    (project / "d").rename(project / "real")
    (project / "d").symlink_to(project / "real")
    swapper = subprocess.Popen([sys.executable, "-c", SWAP, str(project / "d"), str(project / "real"), str(outside)])
    try:
        for _ in range(150):
            for folder in (project / "real", outside):
                (folder / "f.txt").write_text("1\nTWO\n")
                (folder / "new.txt").write_text("created\n")
            ed.nvim.command("silent! GeminiChanges undo")
            assert sorted(os.listdir(outside)) == ["f.txt", "new.txt"]
            assert (outside / "f.txt").read_text() == "1\nTWO\n" and (outside / "new.txt").read_text() == "created\n"
            assert sorted(os.listdir(project / "real")) == ["f.txt", "new.txt"]
    finally:
        swapper.kill()
        swapper.wait()
    ed.nvim.command("GeminiChanges undo")  # still a link: refused, and said why
    why = "a folder on its way is a symlink or not a folder now: left as it is"
    assert [text for _, text in refused(ed)] == [why] * 2
    (project / "d").unlink()
    (project / "real").rename(project / "d")
    ed.nvim.command("GeminiChanges undo")
    assert sorted(os.listdir(project / "d")) == ["f.txt"] and (project / "d" / "f.txt").read_text() == "1\n2\n"


def test_modes_and_symlinks_come_back_exactly(ed, sandbox):
    """Each kind of change is undone exactly (bytes, type, link target, execute bit), or refused
    with the true reason when it changed after the turn."""
    project = sandbox.project
    for name, data in {"mode.sh": "echo\n", "both.sh": "a\n", "gone.sh": "#!/bin/sh\n", "t": "t\n", "o": "o\n"}.items():
        (project / name).write_text(data)
    (project / "to_link.txt").write_bytes(b"\xff\x00 not utf-8\r\n")
    (project / "gone.sh").chmod(0o755)
    (project / "group.sh").write_text("g\n")
    (project / "group.sh").chmod(0o664)
    for name in ("retarget", "to_file", "unlinked", "later"):
        (project / name).symlink_to("t")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "base")

    def state() -> dict[str, Any]:
        return {
            p.name: os.readlink(p) if p.is_symlink() else (oct(p.stat().st_mode & 0o7777), p.read_bytes())
            for p in project.iterdir()
            if p.name != ".git"
        }

    start = state()

    def agent() -> None:
        (project / "mode.sh").chmod(0o755)
        (project / "group.sh").chmod(0o775)
        (project / "both.sh").write_text("b\n")
        (project / "both.sh").chmod(0o755)
        (project / "gone.sh").unlink()
        for name, target in (("retarget", "o"), ("later", "o")):
            (project / name).unlink()
            (project / name).symlink_to(target)
        (project / "to_file").unlink()
        (project / "to_file").write_text("t\n")  # the link's target, as a file
        (project / "unlinked").unlink()
        (project / "to_link.txt").unlink()
        (project / "to_link.txt").symlink_to("o")
        (project / "new.sh").write_text("new\n")
        (project / "new.sh").chmod(0o755)

    turn = a_turn(ed, project, agent)
    assert len(turn["files"]) == 10
    (project / "later").unlink()
    (project / "later").symlink_to("t2")  # retargeted again after the turn
    ed.nvim.command("GeminiChanges undo")
    assert refused(ed) == [("later", "changed after the turn: left as it is")]
    assert "9 taken back, 1 refused" in ed.messages()
    end = state()
    assert end.pop("later") == "t2"
    start.pop("later")
    assert end == start


def test_a_boundary_that_fails_drops_the_turn_in_one_line_and_the_next_turns_work(ed, repo, sandbox):
    """The folder a turn started in is gone at its end (the agent removed it): taking its tree
    fails inside the turn's end. The turn is dropped with one line, not left open for good, and
    the next turns are recorded as ever."""
    scratch = sandbox.base / "scratch"
    scratch.mkdir()
    hook(ed, scratch, "turn-start", {"hook_event_name": "BeforeAgent", "cwd": str(scratch)}, "gemini")
    wait_for(lambda: ed.status()["changes"]["last"], 30, "the turn to open")
    scratch.rmdir()
    hook(ed, repo, "turn-end", {"hook_event_name": "AfterAgent", "cwd": str(repo)}, "gemini")
    line = wait_for(lambda: [m for m in ed.messages().splitlines() if "turn 1 dropped" in m], 30, "the drop")
    assert len(line) == 1 and line[0].startswith("gemini-companion: changes: gemini's turn 1 dropped: git ")
    assert ed.status()["changes"]["turns"] == 0 and turns(ed) == []
    # The same agent's next turn (a failed start in a folder that is gone, then real turns).
    hook(ed, repo, "turn-start", {"hook_event_name": "BeforeAgent", "cwd": str(scratch)}, "gemini")
    wait_for(lambda: "gemini's turn not tracked" in ed.messages(), 30, "the failed start")
    turn = a_turn(ed, repo, lambda: agent_turn(repo))
    assert len(turn["files"]) == 4 and not turn["open"]
    assert len(a_turn(ed, repo, lambda: (repo / "b.txt").write_text("B\n"))["files"]) == 1
