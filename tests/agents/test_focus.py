"""Focus stays where you are (issue 33): :GeminiSend, :GeminiAdd (also from a file tree) and the Lua
`send` leave the cursor, window and mode as they were, on the native and tmux providers, and a hidden
agent stays hidden unless `focus_after_send`; the agent's window: `terminal.auto_insert`, the view
kept, the Terminal-mode keys, its filetype and `User GeminiAgentOpened`. The agent is
tests/harness/fake_agent.py, which records the bytes it is sent; the real Gemini in
test_focus_real_cli.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import HARNESS, Editor, wait_for

PASTE_END = b"\x1b[201~"
USER_PLUGINS = Path("/work/shared/fixtures/user-plugins")


def setup_for(log: Path, screen: str | None = None, **options: Any) -> dict[str, Any]:
    env = {"FAKE_AGENT_LOG": str(log)}
    if screen is not None:
        env["FAKE_AGENT_SCREEN"] = screen
    agent = {"cmd": [sys.executable, str(HARNESS / "fake_agent.py")], "env": env}
    return {"agents": {"fake": agent}, "default_agent": "fake", **options}


def received(log: Path) -> bytes:
    return log.read_bytes() if log.exists() else b""


def where(editor: Editor) -> dict[str, Any]:
    """The window, cursor and mode (nvim_get_mode answers in every mode)."""
    return {
        "win": editor.nvim.api.get_current_win().handle,
        "cursor": editor.nvim.api.win_get_cursor(0),
        "mode": editor.nvim.api.get_mode()["mode"],
    }


def agent(editor: Editor) -> dict[str, Any]:
    return next(a for a in editor.status()["agents"] if a["name"] == "fake")


def tmux_focus(tmux: list[str]) -> str:
    """tmux's active window and pane."""
    return subprocess.run([*tmux, "display", "-p", "#{window_id} #{pane_id}"], capture_output=True, text=True).stdout


MAPPINGS = (
    "for key, rhs in pairs({ ['<F2>'] = '<Cmd>GeminiSend<CR>', ['<F3>'] = '<Cmd>GeminiAdd<CR>',"
    " ['<F4>'] = function() require('gemini_companion.agents').send(nil, 'from lua') end }) do"
    " vim.keymap.set({ 'n', 'x', 'i' }, key, rhs) end"
)
ENTER_MODE = {"normal": "", "visual": "vj", "insert": "i"}


@pytest.mark.parametrize("provider", ["native", "tmux"])
@pytest.mark.parametrize("mode", ["normal", "visual", "insert"])
def test_sends_leave_cursor_window_and_mode(editor_factory, sandbox, request, provider, mode):
    """The agent does not run yet: the first send starts it (shown, not focused), the next two go
    to it running; after each the user is where they were."""
    tmux = request.getfixturevalue("tmux_server") if provider == "tmux" else None
    log = sandbox.base / "agent.log"
    editor = editor_factory(setup=setup_for(log, terminal={"provider": provider}))
    editor.wait_state("running")
    source = sandbox.project / "calc.py"
    source.write_text("".join(f"value_{n} = {n}\n" for n in range(1, 21)))
    editor.nvim.command(f"edit {source}")
    editor.lua(MAPPINGS)
    editor.nvim.api.win_set_cursor(0, [5, 3])
    editor.nvim.input(ENTER_MODE[mode])
    before = where(editor)
    assert before["mode"] == {"normal": "n", "visual": "v", "insert": "i"}[mode]
    panes = tmux_focus(tmux) if tmux else None
    for count, key in enumerate(["<F2>", "<F3>", "<F4>"], start=1):
        editor.nvim.input(key)
        wait_for(lambda c=count: received(log).count(PASTE_END) == c, what=f"send {count} at the agent")
        assert where(editor) == before, key
        assert tmux is None or tmux_focus(tmux) == panes, "tmux's focus stayed on Neovim's pane"
    sent = received(log).decode()
    assert ("(lines 5-6)" if mode == "visual" else "(lines 1-20)") in sent  # the selection being made
    assert "@./calc.py " in sent and "from lua" in sent
    assert agent(editor)["visible"]


@pytest.mark.parametrize("provider", ["native", "tmux"])
def test_a_hidden_agent_stays_hidden_unless_focus_after_send(editor_factory, sandbox, request, provider):
    tmux = request.getfixturevalue("tmux_server") if provider == "tmux" else None
    log = sandbox.base / "agent.log"
    editor = editor_factory(setup=setup_for(log, terminal={"provider": provider}))
    editor.wait_state("running")
    editor.nvim.command(f"edit {sandbox.project / 'main.lua'}")
    editor.nvim.command("Gemini")
    wait_for(lambda: Path(str(log) + ".env").exists(), what="the agent to start")
    editor.lua("require('gemini_companion.agents').hide()")
    editor.lua("vim.fn.win_gotoid(vim.fn.bufwinid(vim.fn.bufnr('main.lua')))")
    wait_for(lambda: not agent(editor)["visible"], what="the agent hidden")
    panes = tmux_focus(tmux) if tmux else None
    before = where(editor)
    editor.nvim.command("GeminiSend hidden")
    wait_for(lambda: PASTE_END in received(log), what="the paste")
    assert not agent(editor)["visible"] and where(editor) == before
    assert tmux is None or tmux_focus(tmux) == panes
    # Asked for: shown and focused.
    editor.lua("require('gemini_companion.config').options.focus_after_send = true")
    editor.nvim.command("GeminiSend shown")
    wait_for(lambda: received(log).count(PASTE_END) == 2, what="the second paste")
    assert agent(editor)["visible"]
    if tmux:
        assert tmux_focus(tmux) != panes  # the agent's pane
    else:
        assert editor.lua("return vim.bo.filetype") == "gemini_companion_agent"
        wait_for(lambda: editor.nvim.api.get_mode()["mode"] == "t", what="Terminal mode")


# Each tree opened on the project, as its README says (netrw is Neovim's own).
TREES = {
    "NvimTree": ("nvim-tree.lua", "require('nvim-tree').setup({}) require('nvim-tree.api').tree.open()"),
    "oil": ("oil.nvim", "require('oil').setup({}) require('oil').open(vim.fn.getcwd())"),
    "netrw": (None, "vim.cmd.Explore(vim.fn.getcwd())"),
}


@pytest.mark.parametrize("tree", sorted(TREES))
def test_adding_from_a_file_tree_stays_in_the_tree(editor_factory, sandbox, tree):
    """:GeminiAdd on a node of a real file tree: the reference goes to the agent (which it starts),
    the tree keeps the cursor and the focus."""
    log = sandbox.base / "agent.log"
    (sandbox.project / "a.txt").write_text("a\n")
    (sandbox.project / "b.txt").write_text("b\n")
    editor = editor_factory(setup=setup_for(log))
    editor.wait_state("running")
    plugin, opening = TREES[tree]
    if plugin:
        editor.lua("vim.opt.rtp:prepend(...)", str(USER_PLUGINS / plugin))
    editor.lua(opening)
    wait_for(lambda: editor.lua("return vim.bo.filetype") == tree, what="the tree")

    def on_node() -> bool:  # (a tree may draw its lines again as it settles)
        lines = editor.nvim.current.buffer[:]
        line = next((i + 1 for i, text in enumerate(lines) if "b.txt" in text), None)
        if line:
            editor.nvim.api.win_set_cursor(0, [line, 0])
        path = editor.lua("return require('gemini_companion.agents.prompt').current_path()")
        return line is not None and path.endswith("/b.txt")

    wait_for(on_node, what="the cursor on b.txt")
    before = where(editor)
    editor.nvim.command("GeminiAdd")
    wait_for(lambda: PASTE_END in received(log), what="the reference")
    assert b"@./b.txt " in received(log)
    assert where(editor) == before and editor.lua("return vim.bo.filetype") == tree


def scrolled_agent(editor_factory, log: Path, **terminal: Any) -> Editor:
    screen = "".join(f"line {n}\r\n" for n in range(1, 301)) + "Type your message\r\n"
    editor = editor_factory(setup=setup_for(log, screen, terminal=terminal))
    editor.wait_state("running")
    editor.nvim.command("Gemini")
    wait_for(lambda: "Type your message" in "\n".join(editor.nvim.current.buffer[:]), what="the agent's screen")
    return editor


def test_auto_insert_off_keeps_normal_mode_and_the_view(editor_factory, sandbox):
    log = sandbox.base / "agent.log"
    editor = scrolled_agent(editor_factory, log, auto_insert=False)
    assert editor.nvim.api.get_mode()["mode"] == "nt"  # Normal mode, in a terminal
    editor.nvim.command("normal! 100Gzt")
    view = editor.lua("return vim.fn.winsaveview()")
    editor.nvim.command("wincmd p")
    editor.nvim.command("wincmd p")
    assert editor.lua("return vim.fn.winsaveview()") == view and editor.nvim.api.get_mode()["mode"] == "nt"
    editor.nvim.command("Gemini")  # focused: hidden
    assert not agent(editor)["visible"]
    editor.nvim.command("Gemini")  # a new window, the same view
    assert editor.lua("return vim.bo.buftype") == "terminal"
    shown = editor.lua("return vim.fn.winsaveview()")
    assert (shown["topline"], shown["lnum"]) == (view["topline"], view["lnum"])
    assert editor.nvim.api.get_mode()["mode"] == "nt"


def test_auto_insert_on_enters_terminal_mode_on_every_entry(editor_factory, sandbox):
    log = sandbox.base / "agent.log"
    editor = scrolled_agent(editor_factory, log)
    wait_for(lambda: editor.nvim.api.get_mode()["mode"] == "t", what="Terminal mode")
    editor.nvim.command("stopinsert | wincmd p")
    wait_for(lambda: editor.nvim.api.get_mode()["mode"] == "n", what="Normal mode in the editor")
    editor.nvim.command("wincmd p")
    wait_for(lambda: editor.nvim.api.get_mode()["mode"] == "t", what="Terminal mode again")


def test_window_commands_and_the_normal_key_work_from_terminal_mode(editor_factory, sandbox):
    log = sandbox.base / "agent.log"
    editor = editor_factory(setup=setup_for(log, terminal={"keys": {"normal": "<C-q>"}}))
    editor.wait_state("running")
    editor_win = editor.nvim.api.get_current_win().handle
    editor.nvim.command("Gemini")
    wait_for(lambda: Path(str(log) + ".env").exists(), what="the agent to start")
    agent_win = editor.nvim.api.get_current_win().handle
    wait_for(lambda: editor.nvim.api.get_mode()["mode"] == "t", what="Terminal mode")
    editor.nvim.input("<C-w>h")  # the agent is on the right
    wait_for(lambda: editor.nvim.api.get_current_win().handle == editor_win, what="the window command")
    assert editor.nvim.api.get_mode()["mode"] == "n" and b"\x17" not in received(log)
    editor.nvim.input("<C-w>l")
    wait_for(lambda: editor.nvim.api.get_mode()["mode"] == "t", what="back in Terminal mode")
    assert editor.nvim.api.get_current_win().handle == agent_win
    editor.nvim.input("<C-q>")
    wait_for(lambda: editor.nvim.api.get_mode()["mode"] == "nt", what="the normal key")
    assert editor.nvim.api.get_current_win().handle == agent_win and received(log) == b""


def test_window_key_off_leaves_ctrl_w_to_the_cli(editor_factory, sandbox):
    log = sandbox.base / "agent.log"
    editor = editor_factory(setup=setup_for(log, terminal={"keys": {"window": False}}))
    editor.wait_state("running")
    editor.nvim.command("Gemini")
    wait_for(lambda: Path(str(log) + ".env").exists(), what="the agent to start")
    wait_for(lambda: editor.nvim.api.get_mode()["mode"] == "t", what="Terminal mode")
    editor.nvim.input("<C-w>")
    wait_for(lambda: received(log) == b"\x17", what="CTRL-W at the CLI (delete a word)")


def test_filetype_and_opened_event_name_the_agent_buffer_and_window(editor_factory, sandbox):
    log = sandbox.base / "agent.log"
    editor = editor_factory(setup=setup_for(log))
    editor.wait_state("running")
    editor.lua(
        "_G.opened = {} vim.api.nvim_create_autocmd('User', { pattern = 'GeminiAgentOpened', callback = function(ev)"
        " table.insert(_G.opened, vim.tbl_extend('force', ev.data, { ft = vim.bo[ev.data.buf].filetype,"
        " shows = vim.api.nvim_win_get_buf(ev.data.win) })) end })"
    )
    editor.nvim.command("Gemini")
    wait_for(lambda: editor.lua("return #_G.opened") == 1, what="the event")
    buf = editor.lua("return require('gemini_companion.agents').get('fake').buf")
    win = editor.nvim.api.get_current_win().handle
    first = {"agent": "fake", "buf": buf, "win": win, "ft": "gemini_companion_agent", "shows": buf}
    assert editor.lua("return _G.opened[1]") == first
    editor.nvim.command("Gemini")  # hidden
    editor.nvim.command("Gemini")  # shown in a new window: the event again
    wait_for(lambda: editor.lua("return #_G.opened") == 2, what="the event on showing")
    second = editor.lua("return _G.opened[2]")
    assert second["win"] == editor.nvim.api.get_current_win().handle != win and second["buf"] == buf


@pytest.mark.parametrize("position", ["float", "tab", "bottom"])
def test_a_send_that_starts_the_agent_keeps_the_focus_in_each_window_preset(editor_factory, sandbox, position):
    """Started by a send from Visual mode: the agent's window (a float, a split) opens beside the
    user's, who stays in the same window, tab and Visual selection; an agent whose window is a tab
    starts hidden (opening a tab would end Visual mode), and `:Gemini` shows it."""
    log = sandbox.base / "agent.log"
    editor = editor_factory(setup=setup_for(log, terminal={"window": {"position": position}}))
    editor.wait_state("running")
    (sandbox.project / "a.txt").write_text("one\ntwo\nthree\n")
    editor.nvim.command(f"edit {sandbox.project / 'a.txt'}")
    editor.lua(MAPPINGS)
    editor.nvim.input("Vj")
    before = {**where(editor), "tab": editor.nvim.api.get_current_tabpage().handle}
    editor.nvim.input("<F2>")
    wait_for(lambda: PASTE_END in received(log), what="the paste")
    assert {**where(editor), "tab": editor.nvim.api.get_current_tabpage().handle} == before
    assert "(lines 1-2)" in received(log).decode() and agent(editor)["visible"] == (position != "tab")
    assert editor.lua("return #vim.api.nvim_list_tabpages()") == 1
    editor.nvim.input("<Esc>")
    editor.nvim.command("Gemini")
    assert agent(editor)["visible"] and editor.lua("return vim.bo.buftype") == "terminal"
    assert editor.lua("return #vim.api.nvim_list_tabpages()") == (2 if position == "tab" else 1)
