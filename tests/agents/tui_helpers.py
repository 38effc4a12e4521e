"""A Neovim TUI under tmux with the plugin's agents set up for the real CLIs (the real-CLI tests of
agents and changes share it)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from conftest import Sandbox
from harness.fake_model import FakeModel, Turn
from harness.tui import (
    GEMINI_BIN,
    NODE22,
    QWEN_CLI,
    Tui,
)

COMMANDS = {"gemini": [str(GEMINI_BIN)], "qwen": [str(NODE22), str(QWEN_CLI)]}


@contextmanager
def neovim_with_agents(
    sandbox: Sandbox, target: Path, script: list[Turn], setup: dict
) -> Iterator[tuple[Tui, FakeModel, Path]]:
    """Neovim (TUI, server up) editing `target`, agents per `setup`, the scripted model behind them."""
    model = FakeModel(script)
    tui = Tui(sandbox, model.url, [str(target)], ide_enabled=False, setup=setup)
    try:
        tui.wait_running()
        yield tui, model, target
    finally:
        tui.close()
        model.close()


@contextmanager
def one_agent(sandbox: Sandbox, model: FakeModel, cli: str) -> Iterator[Tui]:
    """Neovim (TUI, server up, no file) whose one and default agent is the real `cli`, `model` behind it."""
    setup = {"agents": {cli: {"cmd": COMMANDS[cli]}}, "default_agent": cli, "cli_settings": "never"}
    tui = Tui(sandbox, model.url, [], setup=setup)
    try:
        tui.wait_running()
        yield tui
    finally:
        tui.close()
        model.close()


def agent_screen(tui: Tui, name: str) -> str:
    """What a native agent's terminal buffer shows, as text."""
    return tui.lua(
        "local a = require('gemini_companion.agents').get(...)"
        " return a and table.concat(vim.api.nvim_buf_get_lines(a.buf, 0, -1, false), '\\n') or ''",
        name,
    )
