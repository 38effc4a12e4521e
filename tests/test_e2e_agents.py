"""`:Gemini` with the real CLIs under a real Neovim TUI (tmux): started by the plugin, connected with
no keystroke in the CLI, then a diff round trip, `:GeminiSend!`/`:GeminiAdd` reaching the model,
toggling, and the user's settings given back exactly."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Sandbox, wait_for
from e2e.fake_model import FakeModel, Turn, qwen_edit
from e2e.tui import E2E_TIMEOUT, GEMINI_BIN, NODE22, QWEN_CLI, READY, Tui, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]


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


@pytest.fixture
def qwen(sandbox: Sandbox) -> Iterator[tuple[Tui, FakeModel, Path]]:
    target = sandbox.project / "notes.txt"
    target.write_text("alpha\nbeta\n")
    setup = {"agents": {"qwen": {"cmd": [str(NODE22), str(QWEN_CLI)]}}, "default_agent": "qwen"}
    yield from neovim_with_agents(sandbox, target, [*qwen_edit(target), Turn(text="Explained.")], setup)


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


@pytest.fixture
def gemini(sandbox: Sandbox) -> Iterator[tuple[Tui, FakeModel, Path]]:
    target = sandbox.project / "greeting.txt"
    target.write_text("hello\nworld\n")
    replace = {"file_path": str(target), "instruction": "-", "old_string": "world", "new_string": "there"}
    script = [Turn(call="replace", args=replace), Turn(text="All done."), Turn(text="Seen it.")]
    setup = {"agents": {"gemini": {"cmd": [str(GEMINI_BIN)]}}, "cli_settings": "ask"}
    yield from neovim_with_agents(sandbox, target, script, setup)


def test_gemini_command_asks_once_in_neovim_and_gemini_comes_up_connected(gemini, sandbox):
    tui, model, target = gemini
    settings = sandbox.home / ".gemini" / "settings.json"
    before = settings.read_bytes()
    tui.ex("Gemini")
    tui.wait_screen("[Y]es, (N)o")
    tui.type("y")
    tui.wait_screen(READY)
    label = "gemini (Gemini CLI 0.61.0)"
    wait_for(lambda: [c["label"] for c in tui.status()["clients"]] == [label], E2E_TIMEOUT, "Gemini connected")
    # (Terminal answers that reach a slow-starting Gemini's prompt are taken back: see agents.lua.)
    screen = wait_for(lambda: "libvterm" not in (s := tui.screen()) and s, 30, "an empty prompt")
    assert "/ide enable" not in screen and "Press ENTER" not in screen, screen
    written = json.loads(settings.read_text())
    assert written.pop("ide") == {"enabled": True, "hasSeenNudge": True}
    assert written == json.loads(before)  # every other key kept
    # A diff round trip, labelled with the agent.
    tui.prompt("greet there instead of world in greeting.txt", lambda: model.requests)
    assert tui.wait_diff()["agent"] == label
    tui.ex("w")
    wait_for(lambda: target.read_text() == "hello\nthere\n", E2E_TIMEOUT, "Gemini to write the file")
    tui.wait_screen("All done.")
    # Toggle: hidden and shown again, the same process.
    tui.ex("tabfirst | wincmd t")
    wait_for(lambda: tui.lua("return vim.bo.buftype") == "", E2E_TIMEOUT, "the file's window")
    pid = tui.status()["agents"][0]["pid"]
    tui.ex("Gemini")  # shown, not focused: focus
    wait_for(lambda: tui.lua("return vim.bo.buftype") == "terminal", E2E_TIMEOUT, "the agent focused")
    tui.ex("Gemini")  # hide
    wait_for(lambda: not tui.status()["agents"][0]["visible"], E2E_TIMEOUT, "the agent hidden")
    # :GeminiAdd from the file: the next request carries the file's text.
    tui.ex("wincmd t")
    tui.ex("GeminiAdd")
    wait_for(lambda: tui.status()["agents"][0]["visible"], E2E_TIMEOUT, "the agent shown again")
    assert tui.status()["agents"][0]["pid"] == pid
    tui.wait_screen("@greeting.txt")
    asked = len(model.requests)
    tui.keys("End")
    tui.prompt("what does it say", lambda: len(model.requests) > asked)
    text = json.dumps(model.requests[asked]["body"])
    assert "hello\\nthere" in text, text[-2000:]
    # disable-cli takes back exactly what was written. (Gemini itself re-indents the file when it
    # saves a setting of its own, so the bytes may differ: the settings may not.)
    tui.ex("GeminiCompanion disable-cli gemini")
    wait_for(lambda: json.loads(settings.read_text()) == json.loads(before), 30, "the settings restored")
