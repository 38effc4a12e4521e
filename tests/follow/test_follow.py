"""Buffers follow their files' changes on disk (issue 33), in a real Neovim with the real host: an
unmodified buffer takes the new text as one undo step, its windows' cursors and views, folds and
marks kept, and Neovim's own check says nothing after; unsaved edits are kept byte for byte,
named, and compared by `:GeminiCompanion conflict` (with the text before the turn when a turn
recorded it); a deleted file's buffer stays, marked; without hooks (outside git,
`changes.enabled = false`) the folder watch alone does it, for 200 buffers too; a tool hook's
sweep catches what no watch saw."""

from __future__ import annotations

import os

from changes.helpers import a_turn, hook
from conftest import Editor, Sandbox, git, wait_for

LINES = "".join(f"line {i}\n" for i in range(1, 101))
NO_HOOKS = {"changes": {"enabled": False}}
STATE = "return vim.b[...].gemini_companion_follow or vim.NIL"
TEXT = "return table.concat(vim.api.nvim_buf_get_lines(..., 0, -1, false), '\\n')"
# Neovim's own check with 'noautoread': a FileChangedShell would be its W11/W12/E211 question.
ASKED = """
_G.asked = 0
vim.o.autoread = false
vim.api.nvim_create_autocmd('FileChangedShell', { callback = function() _G.asked = _G.asked + 1 end })
vim.cmd('checktime')
return _G.asked
"""
VIEWS = """return vim.tbl_map(function(w) return vim.api.nvim_win_call(w, vim.fn.winsaveview) end,
  vim.api.nvim_tabpage_list_wins(0))"""

COUNT = """local what = ...
return #vim.tbl_filter(function(b)
  return what == 'modified' and vim.bo[b].modified or vim.api.nvim_buf_get_lines(b, 0, 1, false)[1]:find(what)
end, vim.api.nvim_list_bufs())"""

WRITE_COPY = "local buf, copy = ... vim.api.nvim_buf_call(buf, function() vim.cmd('silent write ' .. copy) end)"

# Each window of the tab: its label, diff mode, lines, buffer.
PANES = """return vim.tbl_map(function(w)
  local b = vim.api.nvim_win_get_buf(w)
  return {vim.wo[w].winbar, vim.wo[w].diff, vim.api.nvim_buf_get_lines(b, 0, -1, false), b}
end, vim.api.nvim_tabpage_list_wins(0))"""


def lines(editor: Editor, buf: int = 0) -> str:
    return editor.lua(TEXT, buf)


def test_an_unmodified_buffer_follows_its_file_as_one_undo_step(editor_factory, sandbox: Sandbox):
    """Outside git, no hooks: the watch. Ten lines inserted above the cursor: both windows' cursors
    and top lines, the fold and the mark move with their text; `u` takes the reload back (modified
    then), `<C-r>` gives it again (unmodified); Neovim's own check asks nothing."""
    path = sandbox.project / "a.txt"
    path.write_text(LINES)
    ed = editor_factory(NO_HOOKS, [str(path)])
    ed.wait_state("running")
    ed.lua(
        "vim.cmd('50,60fold') vim.fn.setpos(\"'a\", {0, 70, 3, 0})"
        " vim.api.nvim_win_set_cursor(0, {75, 3}) vim.fn.winrestview({topline = 40})"
        " vim.cmd('split') vim.api.nvim_win_set_cursor(0, {20, 1}) vim.fn.winrestview({topline = 10})"
    )
    wait_for(lambda: ed.lua("return require('gemini_companion.follow').watched()") == 1, 10, "the folder watched")
    before = [(v["lnum"], v["col"], v["topline"]) for v in ed.lua(VIEWS)]
    new = "".join(f"new {i}\n" for i in range(10)) + LINES.replace("line 90\n", "LINE 90\n")
    path.write_text(new)
    wait_for(lambda: lines(ed) + "\n" == new, 10, "the buffer to follow the file")
    assert ed.lua("return vim.bo.modified") is False
    assert [(v["lnum"], v["col"], v["topline"]) for v in ed.lua(VIEWS)] == [(n + 10, c, t + 10) for n, c, t in before]
    assert before[0][0] == 20 and before[1][:2] == (75, 3)
    assert ed.lua('return {vim.fn.line("\'a"), vim.fn.foldclosed(65), vim.fn.foldclosedend(65)}') == [80, 60, 70]
    assert ed.lua(ASKED) == 0
    ed.nvim.command("undo")
    assert lines(ed) + "\n" == LINES and ed.lua("return vim.bo.modified") is True
    ed.nvim.command("redo")
    assert lines(ed) + "\n" == new and ed.lua("return vim.bo.modified") is False
    ed.nvim.command("write")
    assert path.read_text() == new


def test_unsaved_edits_are_kept_named_and_compared(editor_factory, sandbox: Sandbox):
    """The buffer holds the user's edit (a NUL in it): the agent's write leaves it byte for byte,
    one line names the file, and `conflict` shows the user's buffer beside the file (two ways: no
    turn recorded it)."""
    path = sandbox.project / "mine.txt"
    path.write_text("one\ntwo\n")
    ed = editor_factory(NO_HOOKS, [str(path)])
    ed.wait_state("running")
    wait_for(lambda: ed.lua("return require('gemini_companion.follow').watched()") == 1, 10, "the folder watched")
    ed.lua("vim.api.nvim_buf_set_lines(0, 0, 1, false, {'MINE\\0x'})")
    path.write_text("agent\ntwo\n")
    wait_for(lambda: ed.lua(STATE, 0) == "conflict", 10, "the conflict mark")
    assert ed.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)") == ["MINE\0x", "two"]
    assert ed.lua("return vim.bo.modified") is True
    wait_for(lambda: "mine.txt changed on disk; your unsaved edits kept" in ed.messages(), 10, "the line")
    ed.nvim.command("GeminiCompanion conflict")
    wait_for(lambda: ed.lua("return #vim.api.nvim_tabpage_list_wins(0)") == 2, 10, "the comparison")
    panes = ed.lua(PANES)
    assert [p[0] for p in panes] == ["your unsaved edits", "on disk (the agent)"]
    assert all(p[1] for p in panes) and panes[1][2] == ["agent", "two"] and panes[0][2] == ["MINE\0x", "two"]
    assert path.read_text() == "agent\ntwo\n"  # nothing written
    ed.nvim.command("tabclose | edit!")  # the user takes the agent's file: in step with it again
    assert ed.lua(STATE, 0) is None and lines(ed) == "agent\ntwo"


def test_unsaved_edits_undone_let_the_buffer_follow_again(editor_factory, sandbox: Sandbox):
    """The agent changed the file under the user's edit; the user undoes it (the buffer unmodified
    again): the buffer takes the agent's file at once, unmarked, not at Neovim's next focus."""
    path = sandbox.project / "undone.txt"
    path.write_text("one\ntwo\n")
    ed = editor_factory(NO_HOOKS, [str(path)])
    ed.wait_state("running")
    wait_for(lambda: ed.lua("return require('gemini_companion.follow').watched()") == 1, 10, "the folder watched")
    ed.nvim.command("normal! ccmine")
    path.write_text("agent\ntwo\n")
    wait_for(lambda: ed.lua(STATE, 0) == "conflict", 10, "the conflict mark")
    ed.nvim.command("undo")
    assert ed.lua("return vim.bo.modified") is False
    wait_for(lambda: lines(ed) == "agent\ntwo", 10, "the buffer to follow the file again")
    assert ed.lua(STATE, 0) is None and ed.lua("return vim.bo.modified") is False
    assert ed.lua(ASKED) == 0


def test_a_read_only_unmodifiable_buffer_follows_without_an_error(editor_factory, sandbox: Sandbox):
    """A buffer the user cannot change ('nomodifiable', 'readonly': `nvim -M`, the log that
    `:GeminiCompanion log` opens) follows its file, stays so, and no error (a traceback that held
    Neovim at its -- More -- prompt) is shown."""
    path = sandbox.project / "ro.txt"
    path.write_text("one\n")
    ed = editor_factory(NO_HOOKS, [str(path)])
    ed.wait_state("running")
    ed.lua("vim.bo.readonly, vim.bo.modifiable = true, false")
    wait_for(lambda: ed.lua("return require('gemini_companion.follow').watched()") == 1, 10, "the folder watched")
    path.write_text("one\ntwo\n")
    wait_for(lambda: lines(ed) == "one\ntwo", 10, "the buffer to follow the file")
    assert ed.lua("return {vim.bo.readonly, vim.bo.modifiable, vim.bo.modified}") == [True, False, False]
    assert "following" not in ed.messages() and "E21" not in ed.messages()
    assert ed.lua(ASKED) == 0


def test_a_file_written_again_the_moment_after_it_was_opened_is_followed(editor_factory, sandbox: Sandbox):
    """The file changes between Neovim's read and the plugin's first look at it (an agent writing
    again as the user opens it): the buffer still comes to show the new bytes, never stays behind
    with the old ones passing for the file's. The moment is made certain: libuv's four pool
    threads are held (each opening a FIFO no one writes yet), so the plugin's look waits until
    after the write."""
    path = sandbox.project / "racy.txt"
    path.write_text("old\n")
    fifos = [sandbox.base / f"hold{i}" for i in range(4)]
    for fifo in fifos:
        os.mkfifo(fifo)
    ed = editor_factory(NO_HOOKS)
    ed.wait_state("running")
    ed.lua(
        "local path, text, fifos = ..."
        " for _, fifo in ipairs(fifos) do vim.uv.fs_open(fifo, 'r', 0, function(_, fd) vim.uv.fs_close(fd) end) end"
        " vim.cmd.edit(vim.fn.fnameescape(path))"
        " local f = assert(io.open(path, 'w')) f:write(text) f:close()",
        str(path),
        "new\nbytes\n",
        [str(fifo) for fifo in fifos],
    )
    for fifo in fifos:
        os.close(os.open(fifo, os.O_WRONLY))  # the pool thread's open returns
    wait_for(lambda: lines(ed) == "new\nbytes", 10, "the buffer to follow the file")
    assert ed.lua("return vim.bo.modified") is False and ed.lua(ASKED) == 0


def test_a_file_too_large_to_follow_opened_as_it_was_written_gets_no_line(editor_factory, sandbox: Sandbox):
    """A file over `changes.max_file_kb`, opened the moment after it was written: the look that
    confirms the buffer holds it cannot read it, and says nothing (it did not change)."""
    big = sandbox.project / "big.txt"
    big.write_bytes(b"y" * (1100 * 1024))
    witness = sandbox.project / "witness.txt"
    witness.write_text("old\n")
    ed = editor_factory(NO_HOOKS, [str(big)])
    ed.wait_state("running")
    ed.nvim.command(f"split {witness}")
    wait_for(lambda: ed.lua("return require('gemini_companion.follow').watched()") == 1, 10, "the folder watched")
    witness.write_text("new\n")  # read after the big file's look: when it is shown, that look is over
    wait_for(lambda: lines(ed, ed.lua("return vim.fn.bufnr(...)", str(witness))) == "new", 10, "the witness")
    assert "larger than" not in ed.messages() and "big.txt" not in ed.messages()


def test_a_link_and_its_target_are_both_followed(editor_factory, sandbox: Sandbox):
    """The buffer's name is a link to a file in another folder: a change of the target is
    followed, and so is the link itself replaced by a file of its own (the watch alone, no sweep)."""
    elsewhere = sandbox.base / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "target.txt").write_text("target\n")
    link = sandbox.project / "link.txt"
    link.symlink_to(elsewhere / "target.txt")
    ed = editor_factory(NO_HOOKS, [str(link)])
    ed.wait_state("running")
    wait_for(lambda: ed.lua("return require('gemini_companion.follow').watched()") == 2, 10, "both folders watched")
    (elsewhere / "target.txt").write_text("target changed\n")
    wait_for(lambda: lines(ed) == "target changed", 10, "the buffer to follow the target")
    replacement = sandbox.project / "link.txt.new"
    replacement.write_text("a file of its own\n")
    replacement.rename(link)
    wait_for(lambda: lines(ed) == "a file of its own", 10, "the buffer to follow the link's replacement")
    assert ed.lua("return vim.bo.modified") is False and ed.lua(ASKED) == 0


def test_the_comparison_reads_the_file_as_its_buffer_does(editor_factory, sandbox: Sandbox):
    """A CR LF file and a Latin-1 one under unsaved edits: the agent's side is the file's lines as
    Neovim read the buffer (no ^M on each line, é not <e9>), so the diff shows the one line the
    agent changed, not every line."""
    dos, latin = sandbox.project / "dos.txt", sandbox.project / "latin.txt"
    dos.write_bytes(b"one\r\ntwo\r\n")
    latin.write_bytes(b"caf\xe9\ntwo\n")
    ed = editor_factory(NO_HOOKS, [str(dos), str(latin)])
    ed.wait_state("running")
    wait_for(lambda: ed.lua("return require('gemini_companion.follow').watched()") == 1, 10, "the folder watched")
    mixed = b"agent\r\ntwo\nthree\r\n"  # a lone LF in a CR LF file: a line of its own, no error
    for path, agent in ((dos, b"agent\r\ntwo\r\n"), (latin, b"agent \xe9\ntwo\n"), (dos, mixed)):
        ed.lua("vim.cmd.buffer(vim.fn.bufnr(...)) vim.api.nvim_buf_set_lines(0, 0, 1, false, {'MINE'})", str(path))
        path.write_bytes(agent)
        wait_for(lambda: ed.lua(STATE, 0) == "conflict", 10, "the conflict mark")
        ed.nvim.command("GeminiCompanion conflict")
        wait_for(lambda: ed.lua("return #vim.api.nvim_tabpage_list_wins(0)") == 2, 10, "the comparison")
        theirs = {
            b"agent\r\ntwo\r\n": ["agent", "two"],
            b"agent \xe9\ntwo\n": ["agent \u00e9", "two"],
            mixed: ["agent", "two", "three"],
        }[agent]
        assert [p[2] for p in ed.lua(PANES)] == [["MINE", "two"], theirs]
        ed.nvim.command("tabclose")


def test_the_comparison_has_the_text_before_the_turn(editor_factory, sandbox: Sandbox):
    """In git, with hooks: a turn changed the file under the user's edit; the third pane is the
    file before that turn, read from its snapshot."""
    repo = sandbox.project
    git(repo, "init", "-q")
    path = repo / "b.txt"
    path.write_text("base\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    ed = editor_factory(None, [str(path)])
    ed.wait_state("running")
    ed.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, {'user'})")
    a_turn(ed, repo, lambda: path.write_text("agent\n"))
    wait_for(lambda: ed.lua(STATE, 0) == "conflict", 10, "the conflict mark")
    ed.nvim.command("GeminiCompanion conflict")
    wait_for(lambda: ed.lua("return #vim.api.nvim_tabpage_list_wins(0)") == 3, 10, "the comparison")
    panes = ed.lua(PANES)
    assert [p[2] for p in panes] == [["user"], ["agent"], ["base"]] and all(p[1] for p in panes)
    assert panes[2][0].startswith("before gemini's turn ")


def test_a_deleted_files_buffer_stays_marked_and_follows_it_back(editor_factory, sandbox: Sandbox):
    path = sandbox.project / "gone.txt"
    path.write_text("keep me\n")
    ed = editor_factory(NO_HOOKS, [str(path)])
    ed.wait_state("running")
    wait_for(lambda: ed.lua("return require('gemini_companion.follow').watched()") == 1, 10, "the folder watched")
    path.unlink()
    wait_for(lambda: ed.lua(STATE, 0) == "deleted", 10, "the deleted mark")
    assert lines(ed) == "keep me" and ed.lua("return vim.api.nvim_buf_is_loaded(0)")
    wait_for(lambda: "gone.txt deleted on disk; its buffer kept" in ed.messages(), 10, "the line")
    ed.nvim.command("set noautoread | checktime")  # Neovim's own check: the deletion is known, not said
    assert "E211" not in ed.messages() and ed.nvim.eval("v:errmsg") == ""
    path.write_text("back\n")
    wait_for(lambda: lines(ed) == "back", 10, "the file followed again")
    assert ed.lua(STATE, 0) is None and ed.lua("return vim.bo.modified") is False


def test_bytes_neovim_reads_its_own_way_are_kept_exact(editor_factory, sandbox: Sandbox):
    """CRLF, no final newline, a NUL, Latin-1: after the reload, `:w` writes the agent's bytes."""
    files = {
        "dos.txt": (b"a\r\nb\r\n", b"a\r\nB\r\nc\r\n"),
        "noeol.txt": (b"a\nb\n", b"a\nb"),
        "nul.txt": (b"a\n", b"a\x00b\nc\n"),
        "latin.txt": (b"caf\xe9\n", b"caf\xe9 cr\xe8me\n"),
    }
    for name, (old, _) in files.items():
        (sandbox.project / name).write_bytes(old)
    ed = editor_factory(NO_HOOKS, [str(sandbox.project / name) for name in files])
    ed.wait_state("running")
    ed.nvim.command("silent argdo edit | setlocal nofixeol")  # every argument loaded; :w as read
    wait_for(lambda: ed.lua("return require('gemini_companion.follow').watched()") == 1, 10, "the folder watched")
    for name, (_, new) in files.items():
        (sandbox.project / name).write_bytes(new)
    holds = "return require('gemini_companion.tools.buffer_bytes').holds(...)"
    for name, (_, new) in files.items():
        buf = ed.lua("return vim.fn.bufnr(...)", name)
        wait_for(lambda b=buf, n=new: ed.lua(holds, b, n), 10, f"{name} followed")
        copy = sandbox.base / f"copy-{name}"
        ed.lua(WRITE_COPY, buf, str(copy))
        assert copy.read_bytes() == new, name
        assert ed.lua("return vim.bo[...].modified", buf) is False


def test_two_hundred_buffers_follow_a_checkout(editor_factory, sandbox: Sandbox):
    """200 open files in 20 folders changed at once (as a `git checkout` does): every buffer
    shows its new text, none is modified."""
    folders = [sandbox.project / f"d{i:02}" for i in range(20)]
    paths = []
    for folder in folders:
        folder.mkdir()
        for i in range(10):
            (folder / f"f{i}.txt").write_text(f"{folder.name}/{i} before\n")
            paths.append(folder / f"f{i}.txt")
    ed = editor_factory(NO_HOOKS, [str(p) for p in paths])
    ed.wait_state("running")
    ed.nvim.command("silent argdo edit")
    wait_for(lambda: ed.lua("return require('gemini_companion.follow').watched()") == 20, 10, "20 folders watched")
    for path in paths:
        path.write_text(path.read_text().replace("before", "after"))
    wait_for(lambda: ed.lua(COUNT, "after") == 200, 30, "200 buffers followed")
    assert ed.lua(COUNT, "modified") == 0
    ed.nvim.command("%bwipeout")
    assert ed.lua("return require('gemini_companion.follow').watched()") == 0  # released with the buffers


def test_a_tool_hook_sweeps_what_no_watch_saw(editor_factory, sandbox: Sandbox):
    """256 folders watched, the bound: the 257th file's folder is not, and its change is followed
    at the agent's tool hook."""
    repo = sandbox.project
    git(repo, "init", "-q")
    paths = []
    for i in range(257):
        (repo / f"d{i:03}").mkdir()
        paths.append(repo / f"d{i:03}" / "f.txt")
        paths[-1].write_text("old\n")
    ed = editor_factory(None, [str(p) for p in paths[:256]])
    ed.wait_state("running")
    ed.nvim.command("silent argdo edit")
    wait_for(lambda: ed.lua("return require('gemini_companion.follow').watched()") == 256, 30, "256 folders watched")
    os.utime(paths[256], (1e9, 1e9))  # not a file that may have changed since it was opened
    ed.nvim.command(f"edit {paths[256]}")
    buf = ed.lua("return vim.api.nvim_get_current_buf()")
    paths[0].write_text("first\n")  # followed: the plugin's first look at the 257th is over
    wait_for(lambda: lines(ed, ed.lua("return vim.fn.bufnr(...)", str(paths[0]))) == "first", 10, "the watched file")
    paths[256].write_text("new\n")
    paths[0].write_text("new\n")  # a watched one, as a witness that the watch has had its chance
    wait_for(lambda: lines(ed, ed.lua("return vim.fn.bufnr(...)", str(paths[0]))) == "new", 10, "the watched file")
    assert ed.lua("return require('gemini_companion.follow').watched()") == 256 and lines(ed, buf) == "old"
    payload = {"hook_event_name": "AfterTool", "tool_name": "run_shell_command", "cwd": str(repo)}
    hook(ed, repo, "tool", payload)
    wait_for(lambda: lines(ed, buf) == "new", 10, "the buffer to follow the file")


def test_a_fifo_put_in_the_files_place_is_named_never_read(editor_factory, sandbox: Sandbox):
    """The agent swaps an open file for a FIFO (no writer): Neovim keeps answering, the buffer
    keeps its text, one line says the file was not reloaded."""
    path = sandbox.project / "pipe.txt"
    path.write_text("text\n")
    ed = editor_factory(NO_HOOKS, [str(path)])
    ed.wait_state("running")
    wait_for(lambda: ed.lua("return require('gemini_companion.follow').watched()") == 1, 10, "the folder watched")
    path.unlink()
    os.mkfifo(path)
    wait_for(lambda: "not a regular file: pipe.txt changed on disk" in ed.messages(), 10, "the line")
    assert lines(ed) == "text" and ed.lua("return vim.bo.modified") is False


def test_a_folder_removed_and_made_again_is_followed_when_neovim_gets_focus(editor_factory, sandbox: Sandbox):
    """`git checkout` of a branch without the folder, then back: the folder's watch went with
    it; the file's new text is shown when Neovim next gets focus."""
    folder = sandbox.project / "d"
    folder.mkdir()
    path = folder / "x.txt"
    path.write_text("one\n")
    ed = editor_factory(NO_HOOKS, [str(path)])
    ed.wait_state("running")
    wait_for(lambda: ed.lua("return require('gemini_companion.follow').watched()") == 1, 10, "the folder watched")
    path.unlink()
    folder.rmdir()
    wait_for(lambda: ed.lua(STATE, 0) == "deleted", 10, "the deleted mark")
    folder.mkdir()
    path.write_text("two\n")
    ed.nvim.command("doautocmd FocusGained")
    wait_for(lambda: lines(ed) == "two", 10, "the buffer to follow the file")
    assert ed.lua(STATE, 0) is None and ed.lua("return vim.bo.modified") is False
