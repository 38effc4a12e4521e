"""A Neovim TUI under tmux with the plugin's agents set up for the real CLIs (the real-CLI tests of
agents and changes share it)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from conftest import Sandbox
from harness.fake_model import FakeModel, Turn
from harness.tui import (
    Tui,
)


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
