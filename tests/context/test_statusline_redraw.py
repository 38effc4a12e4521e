"""The statusline shows an agent's new state as it changes (issue 35): on the plugin's User events
lualine (the real one, pinned in /work/shared/fixtures/user-plugins/) is asked to refresh (its
statusline and its winbar: the component may be in either), a plain
'statusline' is drawn again. Read from the screen a UI gets; lualine's own timer is set to an hour,
so nothing but the event can bring the new state (before the fix: lualine's timer, ~0.5 s late on
average; a plain 'statusline' not until the user moved)."""

from __future__ import annotations

import pytest

from agents.attention_helpers import setup_for, started
from conftest import Editor, wait_for

LUALINE = "/work/shared/fixtures/user-plugins/lualine.nvim"
INPUT_BOX = "─" * 60 + "\n>   Type your message or @path/to/file\n" + "─" * 60 + "\n  ➜ project · fake-model\n"

# The lualine component and the plain 'statusline' as :h gemini-companion-attention documents them.
WITH_LUALINE = """
local path, place = ...
vim.opt.rtp:prepend(path)
local component = {
  function() return require('gemini_companion').statusline({ plain = true }) end,
  cond = function() return require('gemini_companion').statusline() ~= '' end,
}
local none = {}
local hour = 3600000
require('lualine').setup({
  options = { icons_enabled = false, refresh = { statusline = hour, winbar = hour, tabline = hour } },
  [place] = { lualine_a = none, lualine_b = none, lualine_c = none, lualine_x = { component },
    lualine_y = none, lualine_z = none },
})
"""
PLAIN = "vim.o.laststatus = 2 vim.o.statusline = \"%f %m%=%{%v:lua.require'gemini_companion'.statusline()%} %l:%c\""

# The last statusline (or the first row: the winbar) as the UI shows it.
DRAWN = """
local row = ... == 'winbar' and 1 or vim.o.lines - vim.o.cmdheight
local cells = {}
for col = 1, vim.o.columns do cells[col] = vim.fn.screenstring(row, col) end
return table.concat(cells)
"""


def drawn_state(editor: Editor) -> str:
    return next((a["state"] for a in editor.status()["agents"] if a["name"] == "drawn"), "gone")


@pytest.mark.parametrize("statusline", ["lualine", "lualine-winbar", "plain"])
def test_a_new_state_is_drawn_on_its_event(editor_factory, sandbox, statusline):
    screen = sandbox.base / "screen.txt"
    screen.write_text("Qwen Code\n")
    ed = editor_factory(setup_for(sandbox))
    ed.nvim.ui_attach(120, 20, ext_linegrid=True)
    if statusline.startswith("lualine"):
        ed.lua(WITH_LUALINE, LUALINE, "winbar" if statusline.endswith("winbar") else "sections")
    else:
        ed.lua(PLAIN)
    started(ed, sandbox, "drawn")
    row = statusline.removeprefix("lualine-")  # the winbar, or the statusline
    for text, state in [(INPUT_BOX, "idle"), ("⠋ Thinking... (esc to cancel, 1s)\n" + INPUT_BOX, "working")]:
        screen.write_text("Done.\n" + text)
        wait_for(lambda s=state: drawn_state(ed) == s, 30, f"drawn {state}")
        wait_for(lambda s=state: f"drawn {s}" in ed.lua(DRAWN, row), 30, f"'drawn {state}' on the screen")
    if statusline.startswith("lualine"):
        assert ed.lua("return package.loaded.lualine ~= nil")
    else:
        assert ed.lua("return package.loaded.lualine") is None  # nothing loaded it
