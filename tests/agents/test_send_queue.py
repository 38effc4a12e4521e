"""Sends to one agent go one at a time (agents/send_queue.lua): a send that raises (its paste, its
Enter) ends its turn with one line naming the reason, and the sends after it still go. The agent is
tests/harness/fake_agent.py, which records the bytes it is sent."""

from __future__ import annotations

import os
import signal

import pytest

from agents.send_helpers import PASTE_END, PASTE_START, editing_with_agent, received
from conftest import wait_for

# The agent's provider, made to raise once at `step` (then behave): as a provider's bug would.
BREAK_ONCE = """
local step = ...
local agent = require('gemini_companion.agents').get('fake')
local real = agent.provider
agent.provider = setmetatable({ [step] = function(...)
  agent.provider = real
  error('broken ' .. step .. '\\nsecond line')
end }, { __index = real })
"""


@pytest.mark.parametrize("step", ["paste", "enter"])
def test_a_send_that_raises_ends_its_turn_and_later_sends_go(editor_factory, sandbox, step):
    editor, log = editing_with_agent(editor_factory, sandbox)
    editor.lua(BREAK_ONCE, step)
    editor.lua("require('gemini_companion.agents').send(nil, 'first', true)")
    editor.lua("require('gemini_companion.agents').send(nil, 'second', false)")
    editor.lua("require('gemini_companion.agents').send(nil, 'third', true)")
    second = PASTE_START + b"second" + PASTE_END
    third = PASTE_START + b"third" + PASTE_END + b"\r"
    wait_for(lambda: received(log).endswith(third), what="the sends after the broken one")
    data = received(log)
    first = PASTE_START + b"first" + PASTE_END
    assert data == (second if step == "paste" else first + second) + third, data
    lines = [line for line in editor.messages().splitlines() if "did not go" in line]
    assert len(lines) == 1 and lines[0].startswith("gemini-companion: fake: a send did not go: "), lines
    assert lines[0].endswith(f"broken {step}"), lines  # its first line only


def test_sends_waiting_for_an_agent_that_exits_are_dropped_with_one_line(editor_factory, sandbox):
    # An agent whose screen never settles: the sends wait for it to take input (when_ready).
    busy = {"cmd": ["sh", "-c", "while :; do date +%s%N; sleep 0.05; done"]}
    editor = editor_factory(setup={"agents": {"busy": busy}, "default_agent": "busy"})
    editor.wait_state("running")
    editor.nvim.command("Gemini")
    pid = wait_for(lambda: (editor.status()["agents"] or [{}])[0].get("pid"), what="the agent")
    editor.lua("require('gemini_companion.agents').send(nil, 'first', true)")
    editor.lua("require('gemini_companion.agents').send(nil, 'second', true)")
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not editor.status()["agents"], what="the agent to be gone")
    assert editor.lua("return 1 + 1") == 2
    said = wait_for(lambda: [line for line in editor.messages().splitlines() if "did not go" in line], what="the line")
    assert said == ["gemini-companion: busy exited: 2 send(s) did not go"], said
