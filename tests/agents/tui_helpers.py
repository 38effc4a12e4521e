"""A Neovim TUI under tmux with the plugin's agents set up for the real CLIs (the real-CLI tests of
agents and changes share it)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from conftest import INIT, TIMEOUT, Sandbox, attach_listening, nvim_binary, wait_for
from harness.fake_model import FakeModel, Turn
from harness.tui import E2E_TIMEOUT, GEMINI_BIN, NODE22, QWEN_CLI, READY, Tui, _quote

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
    with neovim_tui(sandbox, model, setup) as tui:
        yield tui


@contextmanager
def neovim_tui(sandbox: Sandbox, model: FakeModel, setup: dict) -> Iterator[Tui]:
    """Neovim (TUI, server up, no file) with the plugin set up by `setup`, `model` behind it."""
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


def user_text(cli: str, body: dict[str, Any]) -> list[str]:
    """The texts of the last user turn in a model request."""
    if cli == "gemini":
        return [p.get("text", "") for p in body["contents"][-1]["parts"]]
    content = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    return [content] if isinstance(content, str) else [p.get("text", "") for p in content]


def turns(cli: str, model: FakeModel, marker: str) -> list[list[str]]:
    """The user turns sent to the model whose text has `marker` (side calls left out)."""
    found = []
    for request in list(model.requests):
        if "streamGenerateContent" in request["path"] or "chat/completions" in request["path"]:
            texts = user_text(cli, request["body"])
            if any(marker in text for text in texts):
                found.append(texts)
    return found


@contextmanager
def answering_seen(sandbox: Sandbox, cli: str) -> Iterator[tuple[str, Tui, FakeModel]]:
    """`one_agent` for `cli`, the scripted model answering one turn "Seen."."""
    model = FakeModel([Turn(text="Seen.")])
    with one_agent(sandbox, model, cli) as tui:
        yield cli, tui, model


def open_agent(tui: Tui, cli: str) -> None:
    """`:Gemini`, then wait for the CLI's prompt on screen."""
    tui.ex("Gemini")
    wait_for(lambda: READY in agent_screen(tui, cli), E2E_TIMEOUT, f"{cli}'s prompt")


def neovim_again(tui: Tui, sandbox: Sandbox, files: list[str]) -> None:
    """A new Neovim in a new window of the same tmux server, in the same folder: `tui` drives it."""
    socket = sandbox.base / "nvim-again.sock"
    argv = [nvim_binary(), "--listen", str(socket), "-u", str(INIT), *files]
    tui.tmux("new-window", " ".join(_quote(a) for a in argv))
    tui.nvim, tui.nvim_socket = attach_listening(socket), socket
    wait_for(lambda: tui.nvim.eval("v:vim_did_enter") == 1, TIMEOUT, "the new Neovim started")


def add_and_ask(tui: Tui, cli: str, model: FakeModel, names: list[Any], shown: str, asked: str) -> Callable[[], str]:
    """From the editor's window, `:GeminiAdd` the `names` (taken literally), then send `asked` and
    submit it: Enter again until the turn starts (Gemini turns an Enter that comes before it has
    handled a paste into a newline, and a loaded machine can hold it up long after the send's own
    Enter). Gives back what the model has been sent, as JSON text."""
    tui.ex("wincmd p")
    wait_for(lambda: tui.lua("return vim.bo.buftype") == "", E2E_TIMEOUT, "the editor's window")
    tui.lua("vim.cmd.GeminiAdd({ args = ..., magic = { file = false } })", names)
    wait_for(lambda: shown in agent_screen(tui, cli), E2E_TIMEOUT, "the references in the prompt")
    tui.lua("require('gemini_companion.agents').send(nil, ...)", asked)
    wait_for(lambda: asked in agent_screen(tui, cli), E2E_TIMEOUT, "the question in the prompt")

    def sent() -> str:
        with model._lock:
            return json.dumps([r["body"] for r in model.requests])

    def submitted() -> bool:
        if asked in sent():
            return True
        tui.lua("local agent = require('gemini_companion.agents').get(...) agent.provider.enter(agent)", cli)
        return False

    wait_for(submitted, E2E_TIMEOUT, "the turn")
    return sent
