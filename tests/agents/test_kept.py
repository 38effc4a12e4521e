"""`terminal.tmux.keep`: a record of kept agents is data. One that is not ours alone, not JSON, or
names panes that do not run what it says is used up and ignored with one line: no agent is taken
back, no port or token of it served, nothing in it run."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Sandbox
from harness.fake_model import FakeModel
from harness.tui import Tui, tmux_available

pytestmark = pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI")

SETUP = {"agents": {"fake": {"cmd": ["true"]}}, "terminal": {"provider": "tmux", "tmux": {"keep": True}}}


def record_path(sandbox: Sandbox) -> Path:
    key = hashlib.sha256(str(sandbox.project).encode()).hexdigest()[:32]
    return sandbox.base / "state" / "nvim" / "gemini-companion" / "kept" / f"{key}.json"


def hostile(sandbox: Sandbox) -> dict:
    """A record in the right place for this folder and tmux server, naming what is not a kept agent."""
    return {
        "cwd": str(sandbox.project),
        "tmux": str(sandbox.base / "tmux-e2e.sock"),
        "server": {"port": 80, "token": "$(touch pwned)", "qwen_token": "x", "tools_token": "y", "hooks_token": "z"},
        "agents": [
            {"name": "fake", "pane": "%0", "pid": os.getpid(), "process": "nvim"},  # Neovim's own pane
            {"name": "fake", "pane": "%0;kill-server", "pid": 1, "process": "init"},
            {"name": "$(touch pwned)", "pane": "%1", "pid": 1},
        ],
    }


@pytest.fixture
def model() -> Iterator[FakeModel]:
    fake = FakeModel([])
    yield fake
    fake.close()


@pytest.mark.parametrize(
    ("text", "mode", "why"),
    [
        ("{not json", 0o600, "not a record of kept agents"),
        (None, 0o600, "no agent it names runs in its pane any more"),
        (None, 0o644, "not a file private to you"),
    ],
)
def test_a_record_that_does_not_check_out_is_ignored_with_one_line(sandbox, model, text, mode, why):
    path = record_path(sandbox)
    path.parent.mkdir(parents=True)
    path.write_text(text if text is not None else json.dumps(hostile(sandbox)))
    path.chmod(mode)
    tui = Tui(sandbox, model.url, [], setup=SETUP)
    try:
        tui.wait_running()
        messages = tui.nvim.command_output("messages")
        lines = [line for line in messages.splitlines() if "kept agents" in line]
        assert len(lines) == 1 and f"not taken back ({why}" in lines[0], messages
        assert tui.status()["agents"] == [] and tui.status()["port"] != 80
        assert not path.exists()  # used up: the next Neovim is not told again
        assert not list(sandbox.base.rglob("pwned"))
    finally:
        tui.close()
