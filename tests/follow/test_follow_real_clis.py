"""Buffers follow the agent's edits with the real CLIs in YOLO mode (issue 33): the agent's shell
inserts a line in one open file (`sed -i`: a new file renamed into place), overwrites a second
that has unsaved edits in Neovim and deletes a third; before the turn ends (the scripted model
holds its answer after the tool) the first buffer shows the new text with its cursor and mark on
the same lines, unmodified, and one `u` takes it back; the second keeps the user's edits byte for
byte, named; the third stays, marked deleted. With the turn hooks (a git work tree) and without
them (outside git, `changes.enabled = false`: the folder watch alone)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from conftest import Sandbox, git, wait_for
from harness.fake_model import PromptModel, Turn
from harness.tui import E2E_TIMEOUT, GEMINI_BIN, NODE22, QWEN_CLI, Tui, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]

AGENT = {"gemini": [str(GEMINI_BIN), "--yolo"], "qwen": [str(NODE22), str(QWEN_CLI), "--yolo"]}
SHELL = "sed -i '1i top' a.txt && printf 'agent\\n' > b.txt && rm c.txt"
STATE = "return vim.b[vim.fn.bufnr(...)].gemini_companion_follow or vim.NIL"
WHERE = (
    "local b = ... return {vim.api.nvim_win_get_cursor(vim.fn.bufwinid(b))[1], vim.api.nvim_buf_get_mark(b, 'a')[1]}"
)
ENTER = "local agent = require('gemini_companion.agents').get(...) agent.provider.enter(agent)"
LINES = "return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)"


class HeldModel(PromptModel):
    """Answers the prompt with the shell command, then holds its answer to the tool's result
    (the turn cannot end) until `release` is set."""

    def __init__(self) -> None:
        shell = {"command": SHELL, "description": "edit", "is_background": False}
        super().__init__({"please edit": Turn(call="run_shell_command", args=shell)}, after_tool="Edited.")
        self.release = threading.Event()
        self.held = threading.Event()

    def _next_turn(self, body: dict[str, Any]) -> Turn:
        turn = super()._next_turn(body)
        if turn.text == self.after_tool:
            self.held.set()
            self.release.wait(120)
        return turn


def submit(tui: Tui, cli: str, model: HeldModel) -> None:
    """The prompt, as `:GeminiSend!` submits it; its Enter again while the CLI has taken it as a
    newline (a loaded machine makes the gap after the paste look like part of it)."""
    tui.wait_ready()
    tui.lua("require('gemini_companion.agents').send(nil, ..., true)", "please edit the files")
    for _ in range(5):
        try:
            wait_for(lambda: model.requests, 20, "the prompt submitted")
            return
        except AssertionError:
            tui.lua(ENTER, cli)
    raise AssertionError(f"the CLI never took the prompt:\n{tui.screen()}")


@pytest.mark.parametrize(("cli", "hooks"), [("gemini", True), ("gemini", False), ("qwen", True)])
def test_a_yolo_shell_edit_is_followed_before_the_turn_ends(sandbox: Sandbox, cli: str, hooks: bool):
    project = sandbox.project
    if hooks:
        git(project, "init", "-q")
    (project / "a.txt").write_text("".join(f"a{i}\n" for i in range(1, 31)))
    (project / "b.txt").write_text("b\n")
    (project / "c.txt").write_text("c\n")
    setup: dict[str, Any] = {"agents": {cli: {"cmd": AGENT[cli]}}, "default_agent": cli, "cli_settings": "auto"}
    if not hooks:
        setup["changes"] = {"enabled": False}
    model = HeldModel()
    tui = Tui(sandbox, model.url, [str(project / "a.txt")], ide_enabled=False, setup=setup)
    try:
        tui.wait_running()
        tui.lua(
            "vim.cmd('edit c.txt | split b.txt') vim.api.nvim_buf_set_lines(0, 0, -1, false, {'mine\\0', ''})"
            " vim.cmd('wincmd w | buffer a.txt') vim.api.nvim_win_set_cursor(0, {20, 1}) vim.cmd('normal! ma')"
        )
        wait_for(lambda: tui.lua("return require('gemini_companion.follow').watched()") == 1, 30, "the folder watched")
        tui.ex("Gemini")
        submit(tui, cli, model)
        wait_for(model.held.is_set, E2E_TIMEOUT, "the tool's result sent to the model")
        # The tool has ended, the turn has not: the buffers follow now.
        wait_for(lambda: tui.lua(LINES, "a.txt")[0] == "top", 30, "a.txt followed")
        assert tui.lua(LINES, "a.txt") == ["top", *(f"a{i}" for i in range(1, 31))]
        assert tui.lua("return require('gemini_companion.changes').turns") == []  # not ended
        wait_for(lambda: tui.lua(STATE, "c.txt") == "deleted", 30, "c.txt marked deleted")
        wait_for(lambda: tui.lua(STATE, "b.txt") == "conflict", 30, "b.txt marked")
        assert tui.lua(LINES, "b.txt") == ["mine\0", ""] and tui.lua(LINES, "c.txt") == ["c"]
        a = tui.lua("return vim.fn.bufnr('a.txt')")
        assert tui.lua(WHERE, a) == [21, 21]  # cursor and mark on the same text
        assert tui.lua("return vim.bo[...].modified", a) is False
        tui.lua("vim.api.nvim_buf_call(..., function() vim.cmd('silent undo') end)", a)
        assert tui.lua(LINES, "a.txt")[0] == "a1" and tui.lua("return vim.bo[...].modified", a) is True
        model.release.set()
        if hooks:
            wait_for(lambda: tui.lua("return require('gemini_companion.changes').turns"), E2E_TIMEOUT, "the turn end")
    finally:
        model.release.set()
        tui.close()
        model.close()
