"""`:GeminiPrompt` (issue 35): a buffer for a prompt of many lines, sent whole on `:w` or <C-s>
and submitted, its placeholders filled from the window it was opened from; `@` files and `{`
placeholders completed; the prompts sent recalled with <C-p>/<C-n>, kept across sessions in a
0600 file, every byte (NUL, bytes that are not UTF-8) kept; a history file that is not ours is
never written over. The receiving end is tests/harness/fake_agent.py."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pynvim
import pytest

from agents.send_helpers import editing_with_agent, fake_agent, pastes, received
from conftest import Editor, Sandbox, wait_for

LINES = "return vim.api.nvim_buf_get_lines(0, 0, -1, false)"
HISTORY = "return require('gemini_companion.agents.prompt_history').path()"


def composing(editor_factory, sandbox: Sandbox) -> tuple[Editor, Path]:
    """Neovim on project/app.py with the fake agent running, the cursor on line 2."""
    editor, log = editing_with_agent(editor_factory, sandbox)
    editor.nvim.command("call cursor(2, 1)")
    return editor, log


def submitted(log: Path, count: int) -> list[bytes]:
    """The pastes, once `count` of them have been submitted (an Enter after each)."""
    wait_for(lambda: received(log).count(b"\x1b[201~\r") >= count, what=f"submit {count}")
    return pastes(received(log).replace(b"\x1b[201~\r", b"\x1b[201~"))


def test_a_prompt_of_many_lines_is_sent_whole_filled_and_kept(editor_factory, sandbox):
    editor, log = composing(editor_factory, sandbox)
    editor.nvim.command("2,3GeminiPrompt")
    assert editor.lua("return vim.api.nvim_buf_get_name(0)") == "gemini-prompt://last"
    editor.lua(
        "vim.api.nvim_buf_set_lines(0, 0, -1, false, ...)", ["explain", "{selection}", "", "  at {position}", ""]
    )
    editor.nvim.command("write")
    expected = "explain\nFrom app.py (lines 2-3):\n```python\nx = 1\ny = 2\n```\n\n\n  at `app.py` line 2, column 1"
    assert submitted(log, 1) == [expected.encode()]
    assert editor.lua(LINES) == [""] and editor.lua("return vim.bo.modified") is False
    # Kept: the history file, 0600, holds what was written (placeholders as typed).
    history = Path(editor.lua(HISTORY))
    wait_for(history.exists, what="the history file")
    assert stat.S_IMODE(history.stat().st_mode) == 0o600
    assert json.loads(history.read_text()) == ["explain\n{selection}\n\n  at {position}"]
    # <C-s> in Insert mode sends too; :wq sends and closes the window.
    editor.nvim.input("isecond<C-s>")
    assert submitted(log, 2)[1] == b"second"
    editor.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'third' })")
    editor.nvim.command("wq")
    assert submitted(log, 3)[2] == b"third" and editor.lua("return vim.fn.bufwinid('gemini-prompt://last')") == -1


def test_earlier_prompts_are_recalled_every_byte_kept(editor_factory, sandbox):
    """Two sessions: the second recalls what the first sent (a NUL and bytes that are not UTF-8
    included), with <C-p> back and <C-n> forward to the draft being written."""
    editor, log = composing(editor_factory, sandbox)
    odd = "nul\x00byte and \udcff raw"  # surrogateescape: the byte 0xFF
    editor.nvim.command("GeminiPrompt fake")
    for text in ("first\nprompt", odd.encode("utf-8", "surrogateescape")):
        editor.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, vim.split(..., '\\n'))", text)
        editor.nvim.command("write")
    assert submitted(log, 2)[1] == "nul\u2400byte and \ufffd raw".encode()
    history = Path(editor.lua(HISTORY))
    wait_for(lambda: history.exists() and len(json.loads(history.read_bytes().decode("utf-8", "surrogateescape"))) == 2)
    editor.close()

    again = Editor(sandbox, {"agents": {"fake": fake_agent(log)}, "default_agent": "fake"}, None)
    try:
        again.wait_state("running")
        again.nvim.command("GeminiPrompt fake")
        again.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'a draft' })")
        again.nvim.input("<C-p>")
        raw = "return vim.api.nvim_buf_get_lines(0, 0, -1, false)"
        wait_for(lambda: again.lua(raw) != ["a draft"], what="the newest prompt")
        assert [
            line.encode("utf-8", "surrogateescape") if isinstance(line, str) else line for line in again.lua(raw)
        ] == [odd.encode("utf-8", "surrogateescape")]
        again.nvim.input("<C-p>")
        wait_for(lambda: again.lua(raw) == ["first", "prompt"], what="the older prompt")
        again.nvim.input("<C-p>")  # nothing older: stays
        again.nvim.input("<C-n><C-n>")
        wait_for(lambda: again.lua(raw) == ["a draft"], what="the draft back")
    finally:
        again.close()


def test_a_history_file_not_ours_is_never_written_over(editor_factory, sandbox):
    editor, log = composing(editor_factory, sandbox)
    history = Path(editor.lua(HISTORY))
    history.parent.mkdir(parents=True, exist_ok=True)
    history.write_text("my notes, not JSON\n")
    editor.nvim.command("GeminiPrompt")
    editor.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'hello' })")
    editor.nvim.command("write")
    assert submitted(log, 1) == [b"hello"]
    editor.nvim.command("GeminiPrompt")  # a later read of the history: the file is still what it was
    assert history.read_text() == "my notes, not JSON\n"


def test_nothing_to_send_and_a_placeholder_unfilled_keep_the_prompt(editor_factory, sandbox):
    editor, log = composing(editor_factory, sandbox)
    editor.nvim.command("GeminiPrompt")
    editor.nvim.command("write")
    assert "GeminiPrompt: nothing to send" in editor.messages()
    editor.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'why {selection}' })")
    with pytest.raises(pynvim.NvimError) as refused:
        editor.nvim.command("write")
    assert "GeminiPrompt: {selection}: nothing selected" in str(refused.value)
    assert editor.lua(LINES) == ["why {selection}"] and b"\x1b[200~" not in received(log)


def test_completion_offers_placeholders_and_files(editor_factory, sandbox):
    editor, _ = composing(editor_factory, sandbox)
    (sandbox.project / "my file.txt").write_text("x\n")
    editor.nvim.command("GeminiPrompt")
    complete = (
        "local line, col = ... vim.api.nvim_set_current_line(line) vim.api.nvim_win_set_cursor(0, {1, col})"
        " local c = require('gemini_companion.agents.compose').complete local start = c(1, '')"
        " return { start, c(0, line:sub(start + 1, col)) }"
    )
    start, words = editor.lua(complete, "see {di", 7)
    assert start == 4 and words == ["{diagnostics}"]
    start, items = editor.lua(complete, "read @my", 8)
    assert start == 5 and [item["word"] for item in items] == ["@my\\ file.txt"]
    assert editor.lua(complete, "no token here", 13)[0] == -3
