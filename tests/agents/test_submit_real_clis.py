"""A submitting send (`:GeminiSend!`, `send(..., true)`) reaches the model even when the machine
holds the CLI back: the real `gemini` then reads the paste and the Enter together, and takes the
Enter for a newline (its ~40 ms paste window), however late Neovim sent it."""

from __future__ import annotations

import os
import signal

import pytest

from agents.tui_helpers import agent_screen, one_agent
from conftest import Sandbox, wait_for
from harness.fake_model import FakeModel, Turn
from harness.tui import E2E_TIMEOUT, READY, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]

# Counts the Enters the provider sends (the agent's own table: the provider module is not changed).
COUNT_ENTERS = """
local agent = require('gemini_companion.agents').get(...)
local provider = agent.provider
_G.enters = 0
agent.provider = setmetatable({ enter = function(a) _G.enters = _G.enters + 1 return provider.enter(a) end },
  { __index = provider })
return agent.pid
"""


def test_a_send_to_a_gemini_held_back_by_the_machine_is_still_submitted(sandbox: Sandbox):
    model = FakeModel([Turn(text="Held back, still heard.")])
    with one_agent(sandbox, model, "gemini") as tui:
        tui.ex("Gemini")
        wait_for(lambda: READY in agent_screen(tui, "gemini"), E2E_TIMEOUT, "gemini's prompt")
        pid = tui.lua(COUNT_ENTERS, "gemini")
        os.killpg(pid, signal.SIGSTOP)  # the machine holds gemini back: it reads nothing meanwhile
        try:
            tui.lua("require('gemini_companion.agents').send('gemini', 'please answer', true)")
            wait_for(lambda: tui.lua("return _G.enters") >= 1, E2E_TIMEOUT, "the send's Enter")
        finally:
            os.killpg(pid, signal.SIGCONT)  # it reads the paste and the Enter at once
        wait_for(lambda: any("please answer" in str(r) for r in model.requests), E2E_TIMEOUT, "the prompt sent")
        assert tui.lua("return _G.enters") >= 2  # the first Enter became a newline: pressed again
