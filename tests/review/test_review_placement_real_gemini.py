"""A review from the real `gemini` (the plugin's own agent, Neovim a real TUI under tmux, the
scripted model) opened in the current tab (`diff.open_in_new_tab = false`, issue 33): beside the
agent's window, which stays visible; `:w` lands the proposal's bytes and the tab's windows come
back as they were."""

from __future__ import annotations

import pytest

from agents.tui_helpers import neovim_with_agents
from conftest import Sandbox, wait_for
from harness.fake_model import Turn
from harness.tui import E2E_TIMEOUT, GEMINI_BIN, READY, Tui, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]

WINDOWS = (
    "local out = {} for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do local b = vim.api.nvim_win_get_buf(w)"
    " out[#out + 1] = { win = w, name = vim.api.nvim_buf_get_name(b), terminal = vim.bo[b].buftype == 'terminal',"
    " width = vim.api.nvim_win_get_width(w), height = vim.api.nvim_win_get_height(w), diff = vim.wo[w].diff }"
    " end return out"
)


def agent_screen(tui: Tui) -> str:
    return tui.lua(
        "local a = require('gemini_companion.agents').get('gemini')"
        " return a and table.concat(vim.api.nvim_buf_get_lines(a.buf, 0, -1, false), '\\n') or ''"
    )


def test_a_real_gemini_review_opens_beside_the_agent_and_w_lands_it(sandbox: Sandbox):
    greeting = sandbox.project / "greeting.txt"
    greeting.write_bytes(b"hello\nworld\n")
    replace = {"file_path": str(greeting), "instruction": "-", "old_string": "world", "new_string": "there"}
    agents = {"gemini": {"cmd": [str(GEMINI_BIN)]}}
    setup = {"agents": agents, "cli_settings": "auto", "diff": {"open_in_new_tab": False}}
    script = [Turn(call="replace", args=replace), Turn(text="All done.")]
    with neovim_with_agents(sandbox, greeting, script, setup) as (tui, model, _):
        tui.ex("Gemini")
        wait_for(lambda: READY in agent_screen(tui), E2E_TIMEOUT, "gemini's prompt")
        before = tui.lua(WINDOWS)
        assert [w["terminal"] for w in before] == [False, True], "the user's file, then the agent"
        tui.prompt("greet there instead of world", lambda: model.requests)
        tui.wait_diff()

        during = tui.lua(WINDOWS)
        assert tui.lua("return #vim.api.nvim_list_tabpages()") == 1, "no tab of its own"
        assert [w for w in during if w["win"] in {b["win"] for b in before}] == [
            {**b, "width": w["width"], "height": w["height"]} for b in before for w in during if w["win"] == b["win"]
        ], "the user's window and the agent's are still there, showing what they showed"
        review = [w for w in during if w["name"].startswith("gemini://") and w["diff"]]
        assert [w["name"].split("/")[2] for w in review] == ["original", "proposed"]
        assert tui.lua("return vim.api.nvim_buf_get_name(0)").startswith("gemini://proposed")

        tui.ex("w")
        wait_for(lambda: greeting.read_bytes() == b"hello\nthere\n", E2E_TIMEOUT, "the CLI to write the file")
        wait_for(lambda: "All done." in agent_screen(tui), E2E_TIMEOUT, "the turn to end")
        assert tui.status()["diffs"] == []
        wait_for(lambda: tui.lua(WINDOWS) == before, E2E_TIMEOUT, "the tab's windows and sizes as before")
