"""Fixtures the agents tests share: a private tmux server for the tmux provider."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from conftest import TIMEOUT, Sandbox


@pytest.fixture
def tmux_server(sandbox: Sandbox) -> Iterator[list[str]]:
    """A private tmux server whose first pane stands for Neovim's: a headless Neovim with $TMUX and
    $TMUX_PANE naming it runs the tmux provider as a Neovim inside tmux would. Yields the tmux command."""
    socket = sandbox.base / "tmux.sock"
    tmux = ["tmux", "-S", str(socket), "-f", "/dev/null"]
    out = subprocess.run(
        [*tmux, "new-session", "-d", "-P", "-F", "#{pid} #{pane_id}", "-x", "200", "-y", "50", "sleep 600"],
        env=sandbox.env,
        capture_output=True,
        text=True,
        check=True,
        timeout=TIMEOUT,
    ).stdout.split()
    sandbox.env.update(TMUX=f"{socket},{out[0]},0", TMUX_PANE=out[1])
    yield tmux
    subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=TIMEOUT)
