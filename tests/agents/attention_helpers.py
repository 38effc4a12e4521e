"""An agent the attention tests start and the screens they draw and read (tests/agents/test_attention.py,
its real-CLI twin and benchmarks/bench_attention.py share them)."""

from __future__ import annotations

import json
import sys
from typing import Any

from conftest import HARNESS, Editor, Sandbox, wait_for

# A program that shows what a file says (the test draws the agent's screen): each new text is
# printed below 25 blank lines, so the screen's bottom is that text alone.
DRAW = r"""
import os, sys, time, tty
tty.setraw(0)
path, last = sys.argv[1], None
while True:
    try:
        text = open(path).read()
    except OSError:
        text = ''
    if text != last:
        last = text
        sys.stdout.write('\r\n' * 25 + text.replace('\n', '\r\n'))
        sys.stdout.flush()
    time.sleep(0.05)
"""


WATCH = """
_G.notes, _G.states = {}, {}
vim.notify = function(msg, level) table.insert(_G.notes, {msg, level}) end
vim.api.nvim_create_autocmd('User', {pattern = 'GeminiAgentState', callback = function(ev)
  table.insert(_G.states, {ev.data.agent, ev.data.state, ev.data.detail or vim.NIL})
end})
"""


def setup_for(sandbox: Sandbox, **extra: Any) -> dict[str, Any]:
    fake = {
        "cmd": [sys.executable, str(HARNESS / "fake_agent.py")],
        "env": {"FAKE_AGENT_LOG": str(sandbox.base / "agent.log")},
    }
    screen = str(sandbox.base / "screen.txt")
    drawn = {"cmd": [sys.executable, "-c", DRAW, screen], "window": {"position": "bottom"}}  # wide: no wrap
    return {"agents": {"fake": fake, "drawn": drawn}, "default_agent": "fake", "cli_settings": "never", **extra}


def started(editor: Editor, sandbox: Sandbox, name: str = "fake") -> dict[str, str]:
    """Start the agent (shown, as :Gemini does), then hide it; its environment (the hook key)."""
    editor.wait_state("running")
    editor.lua(WATCH)
    editor.lua("require('gemini_companion.agents').open(...)", name)
    wait_for(lambda: editor.lua("return #require('gemini_companion').status().agents") == 1, 30, "the agent")
    editor.lua("vim.cmd.stopinsert(); require('gemini_companion.agents').hide(...)", name)
    if name != "fake":
        return {}
    env_file = sandbox.base / "agent.log.env"
    return wait_for(lambda: env_file.exists() and json.loads(env_file.read_text() or "null"), 30, "the agent's env")


# Counts the screen reads that show `_G.marker` (a barrier: the screen was read this often).
READS = """
local attention = require('gemini_companion.agents.attention')
local classify = attention.classify
_G.marker, _G.reads = nil, 0
attention.classify = function(lines)
  if _G.marker and table.concat(lines, '\\n'):find(_G.marker, 1, true) then
    _G.reads = _G.reads + 1
  end
  return classify(lines)
end
"""
