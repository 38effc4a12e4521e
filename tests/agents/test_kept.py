"""`terminal.tmux.keep`: a record of kept agents is data. One that is not ours alone, not JSON, or
names panes that do not run what it says is used up and ignored with one line: no agent is taken
back, no port or token of it served, nothing in it run."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.tui_helpers import neovim_again
from conftest import HARNESS, Sandbox, wait_for
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


def test_a_kept_hidden_agent_comes_back_hidden_and_shows_beside_the_new_neovim(sandbox, model):
    """The fake agent (no CLI screen: /ide enable is not typed, the line says to): kept hidden in
    tmux's background window, taken back hidden, and `:Gemini` joins its pane to the new Neovim's."""
    tui = Tui(sandbox, model.url, [], setup=fake_setup(sandbox))
    try:
        tui.wait_running()
        tui.ex("Gemini")
        wait_for(lambda: tui.status()["agents"], 30, "the agent")
        pid = tui.status()["agents"][0]["pid"]
        hidden_through_qa(tui, sandbox, "fake")
        listed = tui.status()["agents"][0]
        assert (listed["name"], listed["pid"], listed["visible"]) == ("fake", pid, False)
        wait_for(lambda: "type /ide enable" in tui.nvim.command_output("messages"), 30, "the line")
        tui.ex("Gemini")
        panes = lambda: tui.tmux("list-panes", "-F", "#{pane_pid}").split()  # noqa: E731 - Neovim's window
        wait_for(lambda: str(pid) in panes() and len(panes()) == 2, 30, "its pane beside the new Neovim")
    finally:
        tui.close()


def test_a_kept_second_session_comes_back_with_its_name(sandbox, model):
    """`fake@2` (`:Gemini fake new`) kept at `:qa` is taken back by the next Neovim with its name and
    process (a record's name may hold the `@` of a session: it was read as no agent's)."""
    tui = Tui(sandbox, model.url, [], setup=fake_setup(sandbox))
    try:
        tui.wait_running()
        tui.ex("Gemini fake")
        wait_for(lambda: len(tui.status()["agents"]) == 1, 30, "the agent")
        tui.ex("Gemini fake new")
        wait_for(lambda: len(tui.status()["agents"]) == 2, 30, "its second session")
        tui.lua("require('gemini_companion.agents').stop('fake')")
        wait_for(lambda: [a["name"] for a in tui.status()["agents"]] == ["fake@2"], 30, "the first stopped")
        pid = tui.status()["agents"][0]["pid"]
        hidden_through_qa(tui, sandbox, "fake@2")
        assert [(a["name"], a["pid"]) for a in tui.status()["agents"]] == [("fake@2", pid)]
    finally:
        tui.close()


def fake_setup(sandbox) -> dict:
    """Tmux agents kept at `:qa`; the one agent entry is the fake agent."""
    fake = {"cmd": [sys.executable, str(HARNESS / "fake_agent.py")], "env": {"FAKE_AGENT_LOG": str(sandbox.base / "a")}}
    return {**SETUP, "agents": {"fake": fake}, "default_agent": "fake"}


def hidden_through_qa(tui: Tui, sandbox, name: str) -> None:
    """Hide the one running agent `name`, `:qa`, start the next Neovim in the same pane and wait for
    it to take an agent back."""
    tui.lua("require('gemini_companion.agents').hide(...)", name)
    wait_for(lambda: not tui.status()["agents"][0]["visible"], 30, "hidden")
    tui.ex("qa")
    wait_for(lambda: "nvim" not in tui.tmux("list-panes", "-a", "-F", "#{pane_current_command}"), 30, ":qa")
    neovim_again(tui, sandbox, [])
    tui.wait_running()
    wait_for(lambda: tui.status()["agents"], 30, "the agent taken back")
