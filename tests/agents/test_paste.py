"""A user's own paste into an agent's terminal (issue 35): Neovim before 0.12.2 hands a long paste,
which its UI streams in chunks, to a terminal chunk by chunk, each its own bracketed paste. A real
Neovim TUI under tmux gets a 5,000-line bracketed paste from tmux itself (`paste-buffer -p`, as a
terminal emulator sends one); the agent (tests/harness/fake_agent.py, which asked for bracketed
paste) must get it as exactly one paste holding every line."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from agents.send_helpers import PASTE_END, PASTE_START, fake_agent, received
from agents.tui_helpers import neovim_tui
from conftest import Sandbox, wait_for
from harness.fake_model import FakeModel
from harness.tui import E2E_TIMEOUT, Tui, tmux_available

pytestmark = pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI")

LINES = [f"line {i} with text, `code` and {{x}}" for i in range(1, 5001)]


@pytest.fixture
def tui(sandbox: Sandbox) -> Iterator[Tui]:
    setup = {"agents": {"fake": fake_agent(sandbox.base / "agent.log")}, "default_agent": "fake"}
    with neovim_tui(sandbox, FakeModel([]), setup) as tui:
        yield tui


def test_a_long_paste_reaches_the_agent_as_one_paste(tui, sandbox):
    log = sandbox.base / "agent.log"
    tui.ex("Gemini")
    wait_for(
        lambda: PASTE_START not in received(log) and log.with_suffix(".log.env").exists(), E2E_TIMEOUT, "the agent"
    )
    wait_for(lambda: tui.lua("return vim.api.nvim_get_mode().mode") == "t", E2E_TIMEOUT, "terminal mode")
    clipboard = sandbox.base / "clipboard.txt"
    clipboard.write_text("\n".join(LINES))
    tui.tmux("load-buffer", str(clipboard))
    tui.tmux("paste-buffer", "-p")  # bracketed, as Neovim's UI asked tmux
    wait_for(
        lambda: received(log).endswith(PASTE_END) and LINES[-1].encode() in received(log), E2E_TIMEOUT, "the paste"
    )
    data = received(log)
    pastes = re.findall(rb"\x1b\[200~(.*?)\x1b\[201~", data, re.DOTALL)
    assert len(pastes) == 1, f"{len(pastes)} pastes"
    assert data == PASTE_START + pastes[0] + PASTE_END
    assert re.split(rb"\r\n?|\n", pastes[0]) == [line.encode() for line in LINES]
