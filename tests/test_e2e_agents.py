"""`:Gemini` with the real CLIs under a real Neovim TUI (tmux): started by the plugin, connected with
no keystroke in the CLI, then a diff round trip and `:GeminiSend!` reaching the model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Sandbox, wait_for
from e2e.fake_model import FakeModel, Turn, qwen_edit
from e2e.tui import E2E_TIMEOUT, NODE22, QWEN_CLI, READY, Tui, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]


@pytest.fixture
def qwen(sandbox: Sandbox) -> Iterator[tuple[Tui, FakeModel, Path]]:
    target = sandbox.project / "notes.txt"
    target.write_text("alpha\nbeta\n")
    model = FakeModel([*qwen_edit(target), Turn(text="Explained.")])
    setup = {"agents": {"qwen": {"cmd": [str(NODE22), str(QWEN_CLI)]}}, "default_agent": "qwen"}
    tui = Tui(sandbox, model.url, [str(target)], ide_enabled=False, setup=setup)
    try:
        tui.wait_running()
        yield tui, model, target
    finally:
        tui.close()
        model.close()


def test_gemini_command_starts_qwen_connected_without_typing(qwen, sandbox):
    tui, model, target = qwen
    settings = (sandbox.home / ".qwen" / "settings.json").read_text()
    tui.ex("Gemini qwen")
    tui.wait_screen(READY)
    wait_for(lambda: tui.status()["clients"], E2E_TIMEOUT, "Qwen to connect with no keystroke in it")
    assert [a["name"] for a in tui.status()["agents"]] == ["qwen"]
    assert [c["label"] for c in tui.status()["clients"]] == ["qwen (Qwen Code 0.24.4)"]  # its own token
    assert "/ide enable" not in tui.screen()
    # A diff round trip through the agent the plugin started.
    tui.prompt("change beta to gamma in notes.txt", lambda: model.requests)
    wait_for(lambda: tui.status()["diffs"], E2E_TIMEOUT, "the diff to open in Neovim")
    tui.ex("w")
    wait_for(lambda: target.read_text() == "alpha\ngamma\n", E2E_TIMEOUT, "Qwen to write the file")
    tui.wait_screen("Edited.")
    # :GeminiSend! from the file: the model's next request has the path, the range and the text.
    asked = len(model.requests)
    tui.ex("tabfirst | wincmd t")
    wait_for(lambda: tui.lua("return vim.bo.buftype") == "", E2E_TIMEOUT, "the file's window")
    tui.ex("1,2GeminiSend! explain this")
    # (Qwen may also ask the model for a suggestion after an answer: look for our request.)
    sent = wait_for(
        lambda: [r for r in model.requests[asked:] if "explain this" in json.dumps(r["body"])],
        E2E_TIMEOUT,
        "the snippet to reach the model",
    )
    text = json.dumps(sent[0]["body"])
    assert "notes.txt (lines 1-2)" in text and "alpha\\nbeta" in text, text[-2000:]
    # The user's file gained nothing from us (Qwen itself adds its "$version").
    after = json.loads((sandbox.home / ".qwen" / "settings.json").read_text())
    assert {k: v for k, v in after.items() if k != "$version"} == json.loads(settings)
