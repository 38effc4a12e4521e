"""A user's own long paste into the real Gemini CLI and Qwen Code, in a real Neovim TUI under tmux
(tmux's `paste-buffer -p` is the terminal emulator's bracketed paste), then Enter: the model's
next request holds every line, once, in order, as one prompt. Qwen takes 5,000 lines; Gemini CLI
0.61 takes about 8 lines a second into its prompt on this machine (its input redraws as it reads),
so it gets 300."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from agents.tui_helpers import agent_screen, answering_seen, open_agent, turns
from conftest import Sandbox, wait_for
from harness.fake_model import FakeModel
from harness.tui import E2E_TIMEOUT, Tui, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]

COUNT = {"gemini": 300, "qwen": 5000}


@pytest.fixture(params=["gemini", "qwen"])
def running(request: pytest.FixtureRequest, sandbox: Sandbox) -> Iterator[tuple[str, Tui, FakeModel]]:
    with answering_seen(sandbox, request.param) as running:
        yield running


def test_a_long_paste_reaches_the_model_whole(running, sandbox):
    cli, tui, model = running
    open_agent(tui, cli)
    wait_for(lambda: tui.lua("return vim.api.nvim_get_mode().mode") == "t", E2E_TIMEOUT, "terminal mode")
    clipboard = sandbox.base / "clipboard.txt"
    lines = [f"pasted line {i:04} of the user's text" for i in range(1, COUNT[cli] + 1)]
    clipboard.write_text("\n".join(lines))
    tui.tmux("load-buffer", str(clipboard))
    tui.tmux("paste-buffer", "-p")
    # Taken whole: the prompt shows its end, or the CLI's note for a long paste.
    wait_for(
        lambda: re.search(re.escape(lines[-1]) + "|Pasted", agent_screen(tui, cli)), E2E_TIMEOUT, "the paste taken"
    )
    screen = agent_screen(tui, cli)
    sent = submit(tui, cli, model, "pasted line 0001")
    text = "\n".join(sent[-1])
    found = [line for line in text.split("\n") if line.startswith("pasted line ")]
    assert found == lines, (len(found), screen[-600:])


def submit(tui: Tui, cli: str, model: FakeModel, marker: str) -> list[list[str]]:
    """Enter, as a user presses it after a paste: again while nothing went. Gemini CLI makes an
    Enter that reaches it within 40 ms of a paste a newline, and a loaded machine can hand it a late
    Enter that soon (the plugin's own sends do the same: agents/submit.lua). An Enter on an empty
    prompt, or while the model answers, does nothing."""
    for _ in range(3):
        tui.keys("Enter")
        try:
            return wait_for(lambda: turns(cli, model, marker), E2E_TIMEOUT / 3, "the prompt to reach the model")
        except AssertionError:
            continue
    raise AssertionError("the prompt never reached the model:\n" + agent_screen(tui, cli)[-600:])
