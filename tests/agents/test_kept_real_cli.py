"""`terminal.tmux.keep`: a real Gemini CLI (and Qwen Code) in its tmux pane outlives `:qa`, and the next Neovim in
that folder takes it back: the same port and tokens served again, the agent listed, its IDE
connection back (the plugin types `/ide enable` into its empty prompt: neither CLI reconnects by
itself), and an openDiff review from it opens in the new Neovim and `:w` accepts it."""

from __future__ import annotations

import json
import os
import stat

import psutil
import pytest

from agents.tui_helpers import COMMANDS, neovim_again
from conftest import wait_for
from harness.fake_model import FakeModel, Turn
from harness.tui import E2E_TIMEOUT, Tui, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]

LABELS = {"gemini": "gemini (Gemini CLI 0.61.0)", "qwen": "qwen (Qwen Code 0.24.4)"}


def pane_screen(tui: Tui, pane: str) -> str:
    return tui.tmux("capture-pane", "-p", "-t", pane)


def clients(tui: Tui) -> list[str]:
    return [c["label"] for c in tui.status()["clients"]]


@pytest.mark.parametrize("cli", ["gemini", "qwen"])
def test_a_kept_agent_survives_qa_and_reviews_in_the_next_neovim(sandbox, cli):
    target = sandbox.project / "greeting.txt"
    target.write_text("hello\nworld\n")
    replace = {"file_path": str(target), "instruction": "-", "old_string": "world", "new_string": "there"}
    model = FakeModel([Turn(text="Noted."), Turn(call="replace", args=replace), Turn(text="All done.")])
    setup = {
        "agents": {cli: {"cmd": COMMANDS[cli]}},
        "default_agent": cli,
        "cli_settings": "auto",
        "terminal": {"provider": "tmux", "tmux": {"keep": True}},
    }
    label = LABELS[cli]
    tui = Tui(sandbox, model.url, [str(target)], ide_enabled=False, setup=setup)
    try:
        tui.wait_running()
        tui.ex("Gemini")
        wait_for(lambda: clients(tui) == [label], E2E_TIMEOUT, f"{cli} connected")
        tui.ask_agent("remember the word kiwi", lambda: model.requests)
        pane_pid = tui.status()["agents"][0]["pid"]
        port = tui.status()["port"]
        tui.tmux("select-pane", "-t", tui.lua("return vim.env.TMUX_PANE"))
        tui.ex("qa")
        wait_for(lambda: not tui.tmux("list-panes", "-a", "-F", "#{pane_current_command}").count("nvim"), 30, ":qa")
        assert psutil.pid_exists(pane_pid)  # the agent outlived Neovim
        records = list((sandbox.base / "state" / "nvim" / "gemini-companion" / "kept").iterdir())
        assert len(records) == 1 and stat.S_IMODE(records[0].stat().st_mode) == 0o600
        assert json.loads(records[0].read_text())["agents"][0]["pid"] == pane_pid

        neovim_again(tui, sandbox, [str(target)])
        tui.wait_running()
        assert tui.status()["port"] == port  # the port its editor tools and hooks know
        assert [a["name"] for a in tui.status()["agents"]] == [cli]
        assert tui.status()["agents"][0]["pid"] == pane_pid  # the same process, not a new one
        assert not os.path.exists(records[0])  # used up
        agent_pane = tui.lua("return require('gemini_companion.agents').get(...).pane", cli)
        try:
            wait_for(lambda: clients(tui) == [label], E2E_TIMEOUT, f"{cli} reconnected to the new Neovim")
        except AssertionError:
            print("MSGS", tui.nvim.command_output("messages"), pane_screen(tui, agent_pane))
            raise
        agent_pane = tui.lua("return require('gemini_companion.agents').get(...).pane", cli)
        screen = wait_for(lambda: (s := pane_screen(tui, agent_pane)).count("/ide enable") and s, 30, "typed")
        assert screen.count("/ide enable") == 1  # typed by the plugin, once
        if cli == "qwen":  # (its side requests after an answer take the scripted turns: reconnected is enough)
            return
        # A review from it opens in the new Neovim; :w accepts it; the conversation is the one before.
        asked = len(model.requests)
        tui.lua("require('gemini_companion.agents').send(nil, ..., true)", "greet there instead of world")
        try:
            wait_for(lambda: tui.status()["diffs"], E2E_TIMEOUT, "the diff to open in the new Neovim")
        except AssertionError:
            print("SCREEN", pane_screen(tui, agent_pane))
            raise
        assert tui.status()["diffs"][0]["agent"] == label
        assert "remember the word kiwi" in json.dumps(model.requests[asked]["body"])
        tui.ex("w")
        wait_for(lambda: target.read_text() == "hello\nthere\n", E2E_TIMEOUT, f"{cli} to write the file")
        # Its turn hooks found the new Neovim (the same key, served again): attention and :GeminiChanges.
        heard = "return require('gemini_companion.agents').get(...).heard"
        wait_for(lambda: tui.lua(heard, cli), 30, "its hooks heard by the new Neovim")
        last = wait_for(lambda: tui.status()["changes"]["last"], 30, "a turn recorded")
        assert last["agent"] == cli
    finally:
        tui.close()
        model.close()
