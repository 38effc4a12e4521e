"""Large files follow their changes on disk (issue 33) without holding Neovim's main loop: whether
the buffer holds the new bytes and the changed lines are worked out off the main loop, the lines
put in a slice at a time. In a real Neovim with the real host: a 3 MB file with thousands of
changes is followed byte for byte as one undo step, the cursor on its text; a user edit landing
between the read and the change is never overwritten; a buffer changed behind 'modified' is
compared, never trusted to still hold what it last matched; a file written again during the
reload is followed exactly afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import Editor, Sandbox, wait_for

LARGE = {"changes": {"enabled": False, "max_file_kb": 8192}}
WATCHED = "return require('gemini_companion.follow').watched()"
HOLDS = "return require('gemini_companion.tools.buffer_bytes').holds(...)"
STATE = "return vim.b[...].gemini_companion_follow or vim.NIL"
WRITE_COPY = "local buf, copy = ... vim.api.nvim_buf_call(buf, function() vim.cmd('silent write ' .. copy) end)"
# Neovim's own check with 'noautoread': how many times it would ask (W11/W12/E211).
ASKED = (
    "local asked = 0 vim.o.autoread = false"
    " local id = vim.api.nvim_create_autocmd('FileChangedShell', {callback = function() asked = asked + 1 end})"
    " vim.cmd('checktime') vim.api.nvim_del_autocmd(id) return asked"
)
# A user's edit made just before the plugin changes the buffer (between its read and its change).
EDIT_FIRST = """
local reload = require('gemini_companion.follow.reload')
local original = reload.apply
reload.apply = function(buf, ...)
  if not _G.edited then
    _G.edited = true
    vim.api.nvim_buf_set_lines(buf, 0, 1, true, { 'MINE' })
  end
  return original(buf, ...)
end
"""

# The agent writes the file again just as the plugin changes the buffer to the bytes it read.
WRITE_FIRST = """
local path, again = ...
local reload = require('gemini_companion.follow.reload')
local original = reload.apply
reload.apply = function(...)
  if not _G.written then
    _G.written = true
    local f = assert(io.open(path, 'wb')) f:write(again) f:close()
  end
  return original(...)
end
"""

# A user's edit made while the plugin works out the change off the main loop.
EDIT_DURING = """
local delta = require('gemini_companion.follow.delta')
local original = delta.judge
delta.judge = function(buf, ...)
  original(buf, ...)
  if not _G.edited then
    _G.edited = true
    vim.api.nvim_buf_set_lines(buf, 0, 1, true, { 'MINE' })
  end
end
"""


# `:w` of the buffer, its question (should it ask "changed since reading it") answered 'n'
# ahead: what it said, and whether the answer was left unread (nothing asked).
WRITE_ASKED = """
local buf = ...
vim.api.nvim_feedkeys('n', 'n', false)
local said = vim.api.nvim_buf_call(buf, function()
  return vim.api.nvim_exec2('write', { output = true }).output
end)
return { said, vim.fn.getchar(0) == vim.fn.char2nr('n') }
"""
# The user's autocommands around a write (a format on save, say): how many ran.
ON_WRITE = """
vim.api.nvim_create_autocmd({ 'BufWritePre', 'BufWritePost', 'FileWritePre' }, { callback = function()
  _G.on_write = (_G.on_write or 0) + 1
end })
"""
UNDO_STEPS = "return vim.api.nvim_buf_call(..., function() return #vim.fn.undotree().entries end)"
# A BufWriteCmd of the user's (or a plugin's) for the file's kind: it writes elsewhere.
FOREIGN_WRITE = """
vim.api.nvim_create_autocmd('BufWriteCmd', { pattern = '*.txt', callback = function(ev)
  _G.foreign = (_G.foreign or 0) + 1
  vim.bo[ev.buf].modified = false
end })
"""


def opened(editor_factory, sandbox: Sandbox, name: str, data: bytes) -> tuple[Editor, int]:
    path = sandbox.project / name
    path.write_bytes(data)
    ed = editor_factory(LARGE, [str(path)])
    ed.wait_state("running")
    wait_for(lambda: ed.lua(WATCHED) == 1, 10, "the folder watched")
    return ed, ed.lua("return vim.api.nvim_get_current_buf()")


def test_a_large_file_is_followed_exactly_as_one_undo_step(editor_factory, sandbox: Sandbox):
    """3 MB, 60 000 lines: ten inserted at the top, every seventh changed, the last hundred gone
    (thousands of changes: many slices of the loop). The
    buffer's bytes are the file's, it is unmodified, the cursor stays on its text, `u` once gives
    the old bytes back (modified), `<C-r>` the new (unmodified), Neovim's own check asks
    nothing, and the buffer is as modifiable as before."""
    old_lines = [f"{i:06} " + "x" * 43 for i in range(60000)]
    old = ("\n".join(old_lines) + "\n").encode()
    new_lines = [f"top {i}" for i in range(10)]
    new_lines += [line.replace("x", "y") if i % 7 == 0 else line for i, line in enumerate(old_lines[:-100])]
    new = ("\n".join(new_lines) + "\n").encode()
    ed, buf = opened(editor_factory, sandbox, "large.txt", old)
    ed.lua("vim.api.nvim_win_set_cursor(0, {40001, 5})")
    assert ed.lua("return vim.api.nvim_get_current_line()") == old_lines[40000]
    (sandbox.project / "large.txt").write_bytes(new)
    wait_for(lambda: ed.lua(HOLDS, buf, new), 60, "the buffer to follow the file")
    copy = sandbox.base / "copy.txt"
    ed.lua(WRITE_COPY, buf, str(copy))
    assert copy.read_bytes() == new
    assert ed.lua("return {vim.bo.modified, vim.bo.modifiable}") == [False, True]
    assert ed.lua("return vim.api.nvim_win_get_cursor(0)") == [40011, 5]
    assert ed.lua("return vim.api.nvim_get_current_line()") == old_lines[40000]
    assert ed.lua(ASKED) == 0
    ed.nvim.command("undo")
    assert ed.lua(HOLDS, buf, old) and ed.lua("return vim.bo.modified") is True
    ed.nvim.command("redo")
    assert ed.lua(HOLDS, buf, new) and ed.lua("return vim.bo.modified") is False


def test_a_user_edit_between_the_read_and_the_change_is_never_overwritten(editor_factory, sandbox: Sandbox):
    """The user types into the buffer after the plugin read the file and worked out its change,
    before the change is made: the user's line stays, the rest is the old text (never a mix with
    the file's), the buffer modified and marked in conflict."""
    old_lines = [f"line {i}" for i in range(20000)]
    old = ("\n".join(old_lines) + "\n").encode()
    ed, buf = opened(editor_factory, sandbox, "typed.txt", old)
    ed.lua(EDIT_FIRST)
    (sandbox.project / "typed.txt").write_bytes(b"agent\n" + old.replace(b"line 1000\n", b"LINE 1000\n"))
    wait_for(lambda: ed.lua(STATE, buf) == "conflict", 30, "the conflict mark")
    assert ed.lua("return _G.edited") is True
    assert ed.lua(HOLDS, buf, ("\n".join(["MINE", *old_lines[1:]]) + "\n").encode())
    assert ed.lua("return vim.bo.modified") is True


def test_a_user_edit_while_the_change_is_worked_out_is_never_overwritten(editor_factory, sandbox: Sandbox):
    """The user types while the plugin gathers the buffer and diffs it off the main loop: the
    plan made from the text before the edit is never applied; the buffer keeps the edit, is
    marked in conflict, and nothing else in it changed."""
    old_lines = [f"line {i}" for i in range(20000)]
    old = ("\n".join(old_lines) + "\n").encode()
    ed, buf = opened(editor_factory, sandbox, "during.txt", old)
    ed.lua(EDIT_DURING)
    (sandbox.project / "during.txt").write_bytes(old.replace(b"line 1000\n", b"LINE 1000\n"))
    wait_for(lambda: ed.lua(STATE, buf) == "conflict", 30, "the conflict mark")
    assert ed.lua("return _G.edited") is True
    assert ed.lua(HOLDS, buf, ("\n".join(["MINE", *old_lines[1:]]) + "\n").encode())


def test_a_buffer_changed_behind_modified_is_compared_not_trusted(editor_factory, sandbox: Sandbox):
    """The buffer followed its file; then a plugin changes its lines and marks it unmodified. The
    file is written again with the bytes the buffer last matched: the buffer is compared with
    them, not taken to hold them still, and shows them again."""
    text = ("\n".join(f"line {i}" for i in range(5000)) + "\n").encode()
    ed, buf = opened(editor_factory, sandbox, "behind.txt", text)
    path = sandbox.project / "behind.txt"
    new = b"first\n" + text
    path.write_bytes(new)
    wait_for(lambda: ed.lua(HOLDS, buf, new), 30, "the buffer to follow the file")
    ed.lua("vim.api.nvim_buf_set_lines(0, 100, 101, true, {'plugin'}) vim.bo.modified = false")
    path.write_bytes(new)  # the same bytes, written again
    wait_for(lambda: ed.lua(HOLDS, buf, new), 30, "the buffer to show the file again")
    assert ed.lua("return vim.bo.modified") is False and ed.lua(STATE, buf) is None


def test_a_file_written_again_during_the_reload_is_followed_exactly(editor_factory, sandbox: Sandbox):
    """The file is written again (B, a line inserted) just as the buffer is being changed to
    what was read (A): Neovim's reading after the change takes B. The buffer is never taken to
    hold A: A's diff to B or to the next change (C) is never applied to B (the line twice)."""
    lines = [f"line {i}" for i in range(1000)]
    a = [*lines[:10], "A", *lines[11:]]
    b = [*a[:500], "B", *a[500:]]
    c = [*b[:900], "C", *b[900:]]
    data = {name: ("\n".join(text) + "\n").encode() for name, text in (("a", a), ("b", b), ("c", c))}
    ed, buf = opened(editor_factory, sandbox, "again.txt", ("\n".join(lines) + "\n").encode())
    path = sandbox.project / "again.txt"
    ed.lua(WRITE_FIRST, str(path), data["b"])
    path.write_bytes(data["a"])
    wait_for(lambda: ed.lua(HOLDS, buf, data["b"]), 30, "the buffer to show the file written again")
    assert ed.lua("return _G.written") is True
    path.write_bytes(data["c"])
    wait_for(lambda: ed.lua(HOLDS, buf, data["c"]), 30, "the buffer to follow the next change")
    assert ed.lua("return vim.bo.modified") is False and ed.lua(STATE, buf) is None


def test_a_5_mb_file_followed_is_not_read_again_and_writes_without_asking(editor_factory, sandbox: Sandbox):
    """5 MB, a line inserted at the top (a new file renamed into place, as `sed -i` does): the
    buffer follows it, and Neovim's record of the file is brought up to date without reading
    the file again (a reading would leave an empty step in the undo history, and holds the
    main loop 13 ms per MB: `make bench`). Then nothing asks: `:checktime`, `:w` unmodified (the
    file's bytes written), an edit of the user's made at once and `:w` (the user's bytes
    written); `u` takes the user's edit back, then the agent's change."""
    line = "x" * 49 + "\n"
    old = ("first\n" + line * 100_000).encode()
    new = ("second\n" + line * 100_000).encode()
    ed, buf = opened(editor_factory, sandbox, "five.txt", old)
    ed.lua(ON_WRITE)
    path = sandbox.project / "five.txt"
    tmp = sandbox.project / "five.txt.tmp"
    tmp.write_bytes(new)
    tmp.replace(path)
    wait_for(lambda: ed.lua(HOLDS, buf, new), 60, "the buffer to follow the file")
    assert ed.lua("return _G.on_write") is None  # (a format on save, say)
    assert ed.lua(UNDO_STEPS, buf) == 1
    assert ed.lua("return vim.bo.modified") is False
    assert ed.lua(ASKED) == 0
    said, unasked = ed.lua(WRITE_ASKED, buf)
    assert "WARNING" not in said and unasked, said
    assert path.read_bytes() == new
    ed.lua("vim.api.nvim_buf_set_lines(..., 1, 2, true, { 'MINE' })", buf)
    assert ed.lua(ASKED) == 0
    said, unasked = ed.lua(WRITE_ASKED, buf)
    assert "WARNING" not in said and unasked, said
    mine = new.replace(line.encode(), b"MINE\n", 1)
    assert path.read_bytes() == mine and ed.lua(HOLDS, buf, mine)
    ed.nvim.command("undo")
    assert ed.lua(HOLDS, buf, new)
    ed.nvim.command("undo")
    assert ed.lua(HOLDS, buf, old) and ed.lua("return vim.bo.modified") is True


def test_a_write_command_of_the_users_never_runs_for_the_record(editor_factory, sandbox: Sandbox):
    """The user (or a plugin) has a BufWriteCmd for `*.txt`: the record of the file is not
    brought up to date with a `:write` (it would run theirs), but by Neovim's own reading, as
    before: their command never runs, and nothing asks."""
    ed, buf = opened(editor_factory, sandbox, "theirs.txt", b"one\ntwo\n")
    ed.lua(FOREIGN_WRITE)
    path = sandbox.project / "theirs.txt"
    path.write_bytes(b"zero\none\ntwo\n")
    wait_for(lambda: ed.lua(HOLDS, buf, b"zero\none\ntwo\n"), 30, "the buffer to follow the file")
    assert ed.lua("return _G.foreign") is None
    assert ed.lua(ASKED) == 0
    assert ed.lua("return vim.bo.modified") is False


@pytest.mark.parametrize("option", ["eventignore", "eventignorewin"])
def test_events_ignored_never_let_the_record_write_the_file(editor_factory, sandbox: Sandbox, option: str):
    """'eventignore' (or the window's 'eventignorewin') holds BufWriteCmd while the buffer
    follows its file (a plugin's doing): a `:write` would write the file itself, so Neovim reads
    it instead. The file keeps the agent's bytes and its time (never written by us), and nothing
    asks."""
    ed, buf = opened(editor_factory, sandbox, "ignored.txt", b"one\ntwo\n")
    ed.lua(f"vim.o.{option} = 'BufWriteCmd'")
    path = sandbox.project / "ignored.txt"
    path.write_bytes(b"zero\none\ntwo\n")
    written = path.stat().st_mtime_ns
    wait_for(lambda: ed.lua(HOLDS, buf, b"zero\none\ntwo\n"), 30, "the buffer to follow the file")
    ed.lua(f"vim.o.{option} = ''")
    assert path.stat().st_mtime_ns == written and path.read_bytes() == b"zero\none\ntwo\n"
    assert ed.lua(ASKED) == 0


def followed_with_undofile(editor_factory, sandbox: Sandbox, name: str) -> tuple[Editor, Path, Path, bytes, bytes]:
    """A 5 MB file open with 'undofile', changed on disk and followed: its undo file not written
    yet. The editor, the file, the undo folder, the old and the new bytes."""
    line = "x" * 49 + "\n"
    old = ("first\n" + line * 100_000).encode()
    new = ("second\n" + line * 100_000).encode()
    ed, buf = opened(editor_factory, sandbox, name, old)
    undodir = sandbox.base / "undo"
    undodir.mkdir()
    ed.lua("vim.o.undodir = ... vim.o.undofile = true", str(undodir))
    path = sandbox.project / name
    path.write_bytes(new)
    wait_for(lambda: ed.lua(HOLDS, buf, new), 60, "the buffer to follow the file")
    assert list(undodir.iterdir()) == []
    return ed, path, undodir, old, new


def test_a_large_buffers_undo_file_is_written_when_it_is_let_go(editor_factory, sandbox: Sandbox):
    """'undofile', 5 MB: the undo file is not written at each change the buffer follows (that
    hashes the whole text on the main loop), but when the buffer is let go (`:bd`), holding the
    file still; opened again, `u` takes the agent's change back."""
    ed, path, undodir, old, new = followed_with_undofile(editor_factory, sandbox, "undo.txt")
    ed.nvim.command("bdelete")
    assert len(list(undodir.iterdir())) == 1
    ed.nvim.command(f"edit {path}")
    buf = ed.lua("return vim.api.nvim_get_current_buf()")
    assert ed.lua(HOLDS, buf, new)
    ed.nvim.command("undo")
    assert ed.lua(HOLDS, buf, old)


def test_a_one_line_file_is_followed_without_being_read_again(editor_factory, sandbox: Sandbox):
    """A minified file, 1 MB on one line (its change worked out on the main loop, not in the
    thread): Neovim's record of it is brought up to date with a stat too, no reading (which
    leaves an empty step in the undo history); nothing asks, `u` takes the change back."""
    old, new = b'{"a": "' + b"x" * 1_000_000 + b'"}\n', b'{"b": "' + b"y" * 1_000_000 + b'"}\n'
    ed, buf = opened(editor_factory, sandbox, "min.json", old)
    (sandbox.project / "min.json").write_bytes(new)
    wait_for(lambda: ed.lua(HOLDS, buf, new), 30, "the buffer to follow the file")
    assert ed.lua(UNDO_STEPS, buf) == 1
    assert ed.lua(ASKED) == 0 and ed.lua("return vim.bo.modified") is False
    ed.nvim.command("undo")
    assert ed.lua(HOLDS, buf, old)


def test_a_large_buffers_undo_file_is_written_when_neovim_leaves(editor_factory, sandbox: Sandbox):
    """'undofile', 5 MB followed, then Neovim quits with the buffer loaded: the undo file is
    written as it leaves, and a new Neovim opening the file can take the agent's change back."""
    ed, path, undodir, old, _ = followed_with_undofile(editor_factory, sandbox, "leave.txt")
    ed.close()
    wait_for(lambda: len(list(undodir.iterdir())) == 1, 10, "the undo file written as Neovim left")
    again = editor_factory(LARGE, [str(path)])
    again.lua("vim.o.undodir = ... vim.o.undofile = true vim.cmd('edit!')", str(undodir))
    again.nvim.command("undo")
    assert again.lua(HOLDS, again.lua("return vim.api.nvim_get_current_buf()"), old)


def test_a_file_over_8_mib_is_named_not_followed_whatever_the_limit(editor_factory, sandbox: Sandbox):
    """`changes.max_file_kb` raised to 32 MiB: a 9 MB file changed on disk is not reloaded (its
    bytes would become one Lua string on the main loop: a stall past 16 ms), one line says so and
    the buffer keeps its text, unmodified; `:e` still loads it."""
    path = sandbox.project / "huge.txt"
    path.write_bytes(b"first\n" + b"y" * 49 + b"\n" + b"z\n" * 10)
    ed = editor_factory({"changes": {"enabled": False, "max_file_kb": 32768}}, [str(path)])
    ed.wait_state("running")
    wait_for(lambda: ed.lua(WATCHED) == 1, 10, "the folder watched")
    new = sandbox.project / "huge.txt.new"  # renamed into place, as an agent's write is: never seen half-written
    new.write_bytes(b"second\n" + b"y" * 49 * 9 * 1024 * 20 + b"\n")
    new.rename(path)
    wait_for(lambda: "larger than 8192 KiB: huge.txt changed on disk" in ed.messages(), 30, "the line")
    assert ed.lua("return vim.api.nvim_buf_get_lines(0, 0, 1, false)[1]") == "first"
    assert ed.lua("return vim.bo.modified") is False


# The record made from a callback that runs while an autocommand waits (a format on save that
# waits with vim.wait): autocommands do not nest there, so ours would not run.
STAMP_INSIDE_AUTOCMD = """
local buf = ...
local stamp, disk = require('gemini_companion.follow.stamp'), require('gemini_companion.review.disk')
local result = 'not run'
vim.api.nvim_create_autocmd('User', { pattern = 'Waits', callback = function()
  vim.schedule(function() result = stamp.stamp(buf, disk.signature(vim.api.nvim_buf_get_name(buf))) end)
  vim.wait(5000, function() return result ~= 'not run' end)
end })
vim.api.nvim_exec_autocmds('User', { pattern = 'Waits' })
return result == nil and 'refused' or tostring(result)
"""


def test_the_record_is_never_a_real_write_inside_an_autocommand(editor_factory, sandbox: Sandbox):
    """Made while an autocommand runs, the record's `:write` would find our BufWriteCmd skipped and
    write the file for real ('fixeol' adding a newline, a new mtime): it is not made there, and the
    file's bytes and time stay as they were."""
    ed, buf = opened(editor_factory, sandbox, "noeol.txt", b"abc")
    path = sandbox.project / "noeol.txt"
    before = path.stat().st_mtime_ns
    assert ed.lua(STAMP_INSIDE_AUTOCMD, buf) == "refused"
    assert path.read_bytes() == b"abc" and path.stat().st_mtime_ns == before
