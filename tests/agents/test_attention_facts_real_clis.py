"""Facts issue 22 builds on, checked against the real CLIs (a probe, kept as a test): an agent the
plugin starts with the CLI's own resume flag comes up connected with no keystroke, its turns are
still told by the hooks, and the model's next request carries the earlier conversation, after the
first Neovim is gone."""

from __future__ import annotations

import json

import pytest

from conftest import Sandbox, wait_for
from harness.fake_model import FakeModel, Turn
from harness.tui import E2E_TIMEOUT, GEMINI_BIN, NODE22, QWEN_CLI, Tui, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]

COMMAND = {"gemini": [str(GEMINI_BIN)], "qwen": [str(NODE22), str(QWEN_CLI)]}
RESUME = {"gemini": ["--resume", "latest"], "qwen": ["--continue"]}


def asked(model: FakeModel, text: str) -> list[str]:
    """The bodies of the model requests that carry `text` (a prompt the user typed)."""
    bodies = [json.dumps(r["body"]) for r in model.requests]
    return [body for body in bodies if text in body]


def one_turn(sandbox: Sandbox, cli: str, extra: list[str], prompt: str, name: str) -> FakeModel:
    """A Neovim whose `:Gemini {cli}` runs the CLI (with `extra` arguments); one prompt, answered."""
    model = FakeModel([Turn(text=f"answer to {prompt}")])
    setup = {"agents": {cli: {"cmd": COMMAND[cli] + extra}}, "default_agent": cli, "cli_settings": "auto"}
    tui = Tui(sandbox, model.url, [], name=name, ide_enabled=False, setup=setup)
    try:
        tui.wait_running()
        tui.ex(f"Gemini {cli}")
        tui.wait_ready()
        wait_for(lambda: tui.status()["clients"], E2E_TIMEOUT, f"{cli} to connect with no keystroke in it")
        tui.ask_agent(prompt, lambda: asked(model, prompt))
        tui.wait_screen(f"answer to {prompt}")
        # The turn hooks go on as for any agent: the turn is listed for :GeminiChanges.
        turns = "return vim.tbl_map(function(t) return t.agent end, require('gemini_companion.changes').turns)"
        wait_for(lambda: tui.lua(turns), E2E_TIMEOUT, "the turn to end through the hooks")
    finally:
        tui.close()  # the terminal and the CLI in it go with Neovim, as on :qa
        model.close()
    return model


@pytest.mark.parametrize("cli", ["gemini", "qwen"])
def test_a_resumed_agent_connects_and_the_model_sees_the_earlier_conversation(sandbox, cli):
    one_turn(sandbox, cli, [], "first topic alpha", "first")
    model = one_turn(sandbox, cli, RESUME[cli], "second topic beta", "second")
    carried = asked(model, "second topic beta")
    assert carried and all("first topic alpha" in body and "answer to first topic alpha" in body for body in carried)
