"""Agent state and attention with the real Gemini CLI and Qwen Code (scripted model on loopback):
a turn that asks to run a shell command while the agent is hidden gives one line naming the
command; `:Gemini` lands on the question; approving goes on; the state goes working → waiting →
working → idle; a turn that ends while the agent is shown says nothing, one that ends hidden says
how many files it changed; the statusline follows each state."""

from __future__ import annotations

import pytest

from agents.attention_helpers import READS
from conftest import Sandbox, git, wait_for
from harness.fake_model import FakeModel, PromptModel, Turn
from harness.tui import E2E_TIMEOUT, GEMINI_BIN, NODE22, QWEN_CLI, READY, Tui, tmux_available

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


def start_hidden(tui: Tui) -> None:
    """Watch what Neovim says; `:Gemini` starts the agent, shown; once idle, `:Gemini` hides it."""
    tui.wait_running()
    tui.lua(WATCH)
    tui.ex("Gemini")
    tui.wait_ready()
    wait_for(lambda: tui.status()["agents"][0]["state"] == "idle", E2E_TIMEOUT, "idle (SessionStart, or its screen)")
    tui.ex("Gemini")  # focused: hidden
    wait_for(lambda: not tui.status()["agents"][0]["visible"], 30, "the agent hidden")


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
        start_hidden(tui)
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


SEND_BYTES = (
    "local agent = require('gemini_companion.agents').get(...) vim.api.nvim_chan_send(agent.job, select(2, ...))"
)
DRAFT = "Allow execution of: 'rm'? Do you want to proceed? Waiting for user confirmation... Apply this change? DRAFT"
# The model's answer quotes both CLIs' dialog and spinner words, the input box's placeholder and
# Gemini's "? for shortcuts" hint, each on a line of its own.
QUOTED = (
    "Their dialogs read:\n\nAllow execution of: 'rm'?\n\n? Shell rm -rf / ←\n\nDo you want to proceed?\n\n"
    "● 1. Allow once\n\nWaiting for user confirmation...\n\nApply this change?\n\nAnswer Questions\n\n"
    "Type your message or @path/to/file\n\n⠋ Thinking... (esc to cancel, 3s)\n\n? for shortcuts"
)
SOURCE = "return require('gemini_companion.agents.attention').source(require('gemini_companion.agents').get(...))"


@pytest.mark.parametrize("cli", ["gemini", "qwen"])
def test_an_agent_told_by_its_screen_reads_only_its_dialog(sandbox: Sandbox, cli: str):
    """No hook heard (the turn hooks off): the state comes from where each CLI draws its input box
    and its dialog. A draft with dialog words, an answer quoting them, the hint: none is a
    question; the real dialog under them is, named without its border; an answered dialog goes
    to working, and its turn's end is said once."""
    project = sandbox.project
    git(project, "init", "-q")
    model = PromptModel({"please quote": Turn(text=QUOTED), "please make a file": shell("touch made.txt && echo made")})
    setup = {
        "agents": {cli: {"cmd": COMMAND[cli]}},
        "default_agent": cli,
        "cli_settings": "never",
        "changes": {"enabled": False},
    }
    tui = Tui(sandbox, model.url, [], setup=setup)
    try:
        tui.wait_running()
        tui.lua(READS)
        start_hidden(tui)  # idle: its input box drawn

        # The user's draft holds the dialogs' words: read many times, it is no question.
        tui.lua("_G.marker = ...", "DRAFT")
        tui.lua(SUBMIT, cli, DRAFT)
        wait_for(lambda: tui.lua("return _G.reads") >= 6, E2E_TIMEOUT, "the draft read from the screen")
        assert tui.status()["agents"][0]["state"] == "idle" and tui.lua("return _G.notes") == []
        tui.lua(SEND_BYTES, cli, "\x15")  # Ctrl-U: the draft cleared
        wait_for(lambda: READY in tui.lua(SCREEN, cli), 30, "the draft cleared")

        # An answer quoting them: a turn (held until its spinner is seen), said once when it ends.
        model.gate.clear()
        submit_hidden(tui, cli, "please quote", model)
        wait_for(lambda: tui.status()["agents"][0]["state"] == "working", E2E_TIMEOUT, "working (its spinner)")
        model.gate.set()
        wait_for(lambda: tui.lua("return _G.notes"), E2E_TIMEOUT, "the finished line")
        assert tui.lua("return _G.notes") == [f"gemini-companion: {cli} finished"]

        # The real dialog below that answer.
        since = count(tui, "_G.states")
        model.gate.clear()
        submit_hidden(tui, cli, "please make a file", model)
        wait_for(lambda: tui.status()["agents"][0]["state"] == "working", E2E_TIMEOUT, "working (its spinner)")
        model.gate.set()
        wait_for(lambda: len(tui.lua("return _G.notes")) == 2, E2E_TIMEOUT, "the waiting line")
        asked = tui.lua("return _G.notes")[1]
        assert asked.startswith(f"gemini-companion: {cli} asks to run: `touch made.txt && echo made"), asked
        assert "│" not in asked and asked.endswith("`")
        tui.lua(ENTER, cli)  # approved from Neovim
        wait_for(lambda: (project / "made.txt").exists(), E2E_TIMEOUT, "the approved command run")
        wait_for(lambda: len(tui.lua("return _G.notes")) == 3, E2E_TIMEOUT, "the finished line")
        assert tui.lua("return _G.notes")[2] == f"gemini-companion: {cli} finished"
        wait_for(lambda: turn_states(tui, since)[-1:] == ["idle"], 30, "idle")
        assert turn_states(tui, since) == ["working", "waiting", "working", "idle"]
        assert tui.lua(SOURCE, cli) == "screen"
    finally:
        tui.close()
        model.close()


@pytest.mark.parametrize("cli", ["gemini", "qwen"])
def test_a_nul_in_the_command_the_model_names_is_shown_as_text(sandbox: Sandbox, cli: str):
    """The model chooses the command: a NUL in it (valid JSON, and both CLIs ask about it) is
    shown as ^@ in the one line, the agent waits, and Neovim shows no error."""
    git(sandbox.project, "init", "-q")
    model = PromptModel({"please run it": shell("touch a\0b")})
    setup = {"agents": {cli: {"cmd": COMMAND[cli]}}, "default_agent": cli, "cli_settings": "auto"}
    tui = Tui(sandbox, model.url, [], ide_enabled=False, setup=setup)
    try:
        start_hidden(tui)
        submit_hidden(tui, cli, "please run it", model)
        wait_for(lambda: tui.lua("return _G.notes"), E2E_TIMEOUT, "the waiting line")
        assert tui.lua("return _G.notes") == [f"gemini-companion: {cli} asks to run: `touch a^@b`"]
        assert tui.status()["agents"][0]["state"] == "waiting"
        assert tui.lua("return vim.v.errmsg") == ""
    finally:
        tui.close()
        model.close()
