"""Agent state and attention with the real Gemini CLI and Qwen Code (scripted model on loopback):
a turn that asks to run a shell command while the agent is hidden gives one line naming the
command; `:Gemini` lands on the question; approving goes on; the state goes working → waiting →
working → idle; a turn that ends while the agent is shown says nothing, one that ends hidden says
how many files it changed; the statusline follows each state."""

from __future__ import annotations

import pytest

from conftest import Sandbox, git, wait_for
from e2e.fake_model import FakeModel, Turn
from e2e.tui import E2E_TIMEOUT, GEMINI_BIN, NODE22, QWEN_CLI, Tui, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]

COMMAND = {"gemini": [str(GEMINI_BIN)], "qwen": [str(NODE22), str(QWEN_CLI)]}
DIALOG = "Allow execution of"  # both CLIs' shell dialog

# What Neovim tells the user, each state, and the statusline as it was at each state.
WATCH = """
_G.notes, _G.states = {}, {}
vim.notify = function(msg, level) table.insert(_G.notes, msg) end
vim.api.nvim_create_autocmd('User', {pattern = 'GeminiAgentState', callback = function(ev)
  local state = ev.data.state
  vim.schedule(function()
    table.insert(_G.states, {state, require('gemini_companion').statusline({plain = true})})
  end)
end})
"""

SUBMIT = """
local agent = require('gemini_companion.agents').get(...)
agent.provider.paste(agent, select(2, ...))
"""
ENTER = "local agent = require('gemini_companion.agents').get(...) agent.provider.enter(agent)"
DEFERRED_ENTER = """
local agent = require('gemini_companion.agents').get(...)
vim.defer_fn(function() agent.provider.enter(agent) end, 300)
"""
SCREEN = "local agent = require('gemini_companion.agents').get(...) return agent.provider.screen(agent)"


def shell(command: str) -> Turn:
    return Turn(call="run_shell_command", args={"command": command, "description": "make", "is_background": False})


def submit_hidden(tui: Tui, cli: str, text: str, model: FakeModel) -> None:
    """Type a prompt into the hidden agent's terminal (as :GeminiSend! does, without showing it)."""
    tui.lua(SUBMIT, cli, text)
    for _ in range(5):  # an Enter right behind a paste is taken as a newline: again until taken
        tui.lua(DEFERRED_ENTER, cli)
        try:
            wait_for(lambda: any(text in str(r["body"]) for r in model.requests), 10, "the prompt taken")
            return
        except AssertionError:
            continue
    raise AssertionError(f"the CLI never took {text!r}:\n{tui.screen()}")


def turn_states(tui: Tui, since: int) -> list[str]:
    return [s[0] for s in tui.lua("return _G.states")[since:]]


def count(tui: Tui, code: str) -> int:
    return int(tui.lua(f"return #{code}"))


@pytest.mark.parametrize("cli", ["gemini", "qwen"])
def test_a_hidden_agent_asks_and_finishes(sandbox: Sandbox, cli: str):
    project = sandbox.project
    git(project, "init", "-q")
    (project / "a.txt").write_text("a\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "base")
    model = FakeModel(
        [shell("touch made.txt && echo made"), Turn(text="Made it."), shell("touch b.txt c.txt"), Turn(text="Both.")]
    )
    setup = {"agents": {cli: {"cmd": COMMAND[cli]}}, "default_agent": cli, "cli_settings": "auto"}
    tui = Tui(sandbox, model.url, [str(project / "a.txt")], ide_enabled=False, setup=setup)
    try:
        tui.wait_running()
        tui.lua(WATCH)
        tui.ex("Gemini")
        tui.wait_ready()
        wait_for(lambda: tui.status()["agents"][0]["state"] == "idle", E2E_TIMEOUT, "idle (SessionStart)")
        tui.ex("Gemini")  # focused: hidden
        wait_for(lambda: not tui.status()["agents"][0]["visible"], 30, "the agent hidden")
        since = count(tui, "_G.states")

        submit_hidden(tui, cli, "please make a file", model)
        wait_for(lambda: tui.lua("return _G.notes"), E2E_TIMEOUT, "the waiting line")
        assert tui.lua("return _G.notes") == [f"gemini-companion: {cli} asks to run: `touch made.txt && echo made`"]
        assert tui.status()["agents"][0]["state"] == "waiting"
        # :Gemini goes to the agent that asked: its question is on screen; approving goes on.
        tui.ex("Gemini")
        tui.wait_screen(DIALOG)
        assert tui.status()["agents"][0]["visible"]
        tui.keys("Enter")
        wait_for(lambda: (project / "made.txt").exists(), E2E_TIMEOUT, "the approved command run")
        ended = "require('gemini_companion.changes').turns"
        wait_for(lambda: count(tui, ended) == 1, E2E_TIMEOUT, "the turn's end")
        wait_for(lambda: turn_states(tui, since)[-1:] == ["idle"], E2E_TIMEOUT, "idle")
        assert turn_states(tui, since) == ["working", "waiting", "working", "idle"]
        statuslines = {s[0]: s[1] for s in tui.lua("return _G.states")}
        for state in ("idle", "working", "waiting"):
            assert statuslines[state].startswith(f"{cli} {state}"), statuslines
        assert len(tui.lua("return _G.notes")) == 1  # it ended while shown: nothing said

        # Hidden again: a turn that asks (approved from Neovim without showing it) and ends.
        tui.ex("Gemini")
        wait_for(lambda: not tui.status()["agents"][0]["visible"], 30, "the agent hidden")
        submit_hidden(tui, cli, "please make two files", model)
        wait_for(lambda: len(tui.lua("return _G.notes")) == 2, E2E_TIMEOUT, "the second waiting line")
        wait_for(lambda: DIALOG in tui.lua(SCREEN, cli), 30, "the hidden agent's dialog drawn")
        tui.lua(ENTER, cli)
        wait_for(lambda: len(tui.lua("return _G.notes")) == 3, E2E_TIMEOUT, "the finished line")
        assert tui.lua("return _G.notes")[1:] == [
            f"gemini-companion: {cli} asks to run: `touch b.txt c.txt`",
            f"gemini-companion: {cli} finished: 2 files changed — :GeminiChanges",
        ]
        line = "return require('gemini_companion').statusline({plain = true})"
        wait_for(lambda: tui.lua(line) == f"{cli} idle · 2 files", 30, "the statusline")
    finally:
        tui.close()
        model.close()
