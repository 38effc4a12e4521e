"""The real `qwen` binary (Node 22) in Neovim's :terminal, Neovim a real TUI under tmux (issue 5).

Qwen's model endpoint is OpenAI-compatible; the stand-in answers with a read_file call
(Qwen refuses to edit a file it has not read), an edit call, then a final text.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Sandbox, wait_for
from harness.fake_model import FakeModel, Turn, qwen_edit
from harness.tui import E2E_TIMEOUT, NODE22, QWEN_CLI, Tui, launch, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]


@pytest.fixture
def session(sandbox: Sandbox) -> Iterator[tuple[Tui, FakeModel, Path]]:
    target = sandbox.project / "notes.txt"
    target.write_text("alpha\nbeta\n")
    model = FakeModel(qwen_edit(target))
    try:
        tui = launch(sandbox, model.url, [str(target)], f"{NODE22} {QWEN_CLI}")
        yield tui, model, target
        tui.close()
    finally:
        model.close()


def ask_for_edit(tui: Tui, model: FakeModel) -> None:
    tui.prompt("change beta to gamma in notes.txt", lambda: model.requests)
    tui.wait_diff()


def test_qwen_connects_and_sees_the_open_file(session):
    tui, _model, target = session
    tui.prompt("/ide status", lambda: "Neovim" in tui.screen())
    screen = tui.wait_screen("Connected to Neovim")
    assert target.name in screen
    assert [c["name"] for c in tui.status()["clients"]]


def test_qwen_accept_with_w(session):
    tui, model, target = session
    ask_for_edit(tui, model)
    tui.ex("w")
    wait_for(lambda: target.read_text() == "alpha\ngamma\n", E2E_TIMEOUT, "Qwen to write the file")
    tui.wait_screen("Edited.")


def test_qwen_reject_with_q(session):
    tui, model, target = session
    ask_for_edit(tui, model)
    tui.ex("q")
    wait_for(lambda: tui.status()["diffs"] == [], E2E_TIMEOUT, "the diff to close")
    wait_for(lambda: "cancel" in tui.screen().lower() or "reject" in tui.screen().lower(), E2E_TIMEOUT, "Qwen shows it")
    assert target.read_text() == "alpha\nbeta\n"


# A terminal opened the moment Neovim names its defaults file (at the start; or at the first
# status that names it), running a real `qwen` that reads the file as it was at that moment.
EARLIEST = """
local snap, node, cli = ...
local function open()
  local path = vim.env.QWEN_CODE_SYSTEM_DEFAULTS_PATH
  if path and not _G.opened then
    _G.opened = true
    vim.cmd('tabnew')
    local pin = 'cp -- "$QWEN_CODE_SYSTEM_DEFAULTS_PATH" "$1" && QWEN_CODE_SYSTEM_DEFAULTS_PATH="$1" exec "$2" "$3"'
    vim.fn.jobstart({ 'bash', '-c', pin, '_', snap, node, cli }, { term = true })
    vim.cmd('startinsert')
  end
end
vim.api.nvim_create_autocmd('User', { pattern = 'GeminiStatusChanged', callback = open })
vim.cmd('GeminiCompanion start')
open()
"""


def test_a_qwen_started_the_moment_neovim_names_its_defaults_gets_the_editor_tools(sandbox: Sandbox):
    model = FakeModel([Turn(text="Hello from the model.")])
    tui = Tui(sandbox, model.url, [], setup={"auto_start": False})
    try:
        tui.lua(EARLIEST, str(sandbox.base / "as-read.json"), str(NODE22), str(QWEN_CLI))
        tui.wait_ready()
        wait_for(lambda: tui.status()["clients"], E2E_TIMEOUT, "qwen to connect")
        tui.prompt("hi", lambda: model.requests)
        tools = [t["function"]["name"] for t in model.requests[0]["body"].get("tools", []) if "function" in t]
        assert "mcp__neovim__get_diagnostics" in tools, tools
    finally:
        tui.close()
        model.close()
