"""Focus stays where you are, with the real `gemini` (issue 33): a Neovim TUI under tmux, the agent
in a Neovim terminal or a tmux pane; `:GeminiSend` from the file lands in Gemini's prompt and the
user is still in the file's window, in Normal mode, with tmux's focus on Neovim's pane; a hidden
agent gets `:GeminiAdd`'s reference and stays hidden. The fake agent's twin: test_focus.py."""

from __future__ import annotations

from typing import Any

import pytest

from agents.tui_helpers import neovim_with_agents
from conftest import Sandbox, wait_for
from harness.fake_model import Turn
from harness.tui import E2E_TIMEOUT, GEMINI_BIN, Tui, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]


def agent_screen(tui: Tui) -> str:
    agent = tui.lua("local a = require('gemini_companion.agents').get('gemini') return { buf = a.buf, pane = a.pane }")
    if agent.get("pane"):
        return tui.tmux("capture-pane", "-p", "-t", agent["pane"])
    return "\n".join(tui.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", agent["buf"]))


def on_screen(tui: Tui, text: str) -> None:
    try:
        wait_for(lambda: text in agent_screen(tui), E2E_TIMEOUT, f"{text!r} in the CLI's prompt")
    except AssertionError as err:
        raise AssertionError(f"{err}; the agent's screen:\n{agent_screen(tui)}") from None


@pytest.mark.parametrize("provider", ["native", "tmux"])
def test_send_to_the_real_gemini_keeps_the_focus(sandbox: Sandbox, provider):
    target = sandbox.project / "greeting.txt"
    target.write_text("hello\nworld\n")
    agents = {"gemini": {"cmd": [str(GEMINI_BIN)]}}
    setup = {"agents": agents, "cli_settings": "auto", "terminal": {"provider": provider}}
    with neovim_with_agents(sandbox, target, [Turn(text="Seen it.")], setup) as running:
        tui = running[0]
        here = tui.lua("return { win = vim.api.nvim_get_current_win(), pane = vim.env.TMUX_PANE }")

        def focus() -> dict[str, Any]:
            return {
                "win": tui.lua("return vim.api.nvim_get_current_win()"),
                "mode": tui.lua("return vim.api.nvim_get_mode().mode"),
                "pane": tui.tmux("display", "-p", "#{pane_id}").strip(),
            }

        before = {"win": here["win"], "mode": "n", "pane": here["pane"]}
        tui.ex("Gemini")
        wait_for(lambda: tui.status()["agents"], E2E_TIMEOUT, "the agent started")
        wait_for(lambda: "Type your message" in agent_screen(tui), E2E_TIMEOUT, "Gemini's prompt")
        tui.tmux("select-pane", "-t", here["pane"])  # (tmux: :Gemini focused the pane)
        tui.ex(f"call win_gotoid({here['win']})")
        wait_for(lambda: focus() == before, E2E_TIMEOUT, "back in the file")
        tui.ex("1,2GeminiSend explain this")
        on_screen(tui, "[Pasted Text: 6 lines]")  # the snippet, in Gemini's prompt
        assert focus() == before and tui.status()["agents"][0]["visible"]
        tui.lua("require('gemini_companion.agents').hide()")
        wait_for(lambda: not tui.status()["agents"][0]["visible"], E2E_TIMEOUT, "the agent hidden")
        tui.ex("GeminiAdd")
        on_screen(tui, "@./greeting.txt")
        assert focus() == before and not tui.status()["agents"][0]["visible"]
