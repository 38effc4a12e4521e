"""`:Gemini` with the real CLIs under a real Neovim TUI (tmux): started by the plugin, connected with
no keystroke in the CLI, then a diff round trip, `:GeminiSend!`/`:GeminiAdd` reaching the model,
toggling, and the user's settings given back exactly."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from agents.tui_helpers import neovim_with_agents
from conftest import HARNESS, Sandbox, wait_for
from harness.fake_model import FakeModel, Turn, qwen_edit
from harness.settings_edits import settings_edited
from harness.tui import (
    E2E_TIMEOUT,
    GEMINI_BIN,
    NODE22,
    QWEN_CLI,
    READY,
    Tui,
    gemini_settings,
    qwen_settings,
    terminal_env,
    tmux_available,
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]


def agent_screen(tui: Tui, name: str) -> str:
    return tui.lua(
        "local a = require('gemini_companion.agents').get(...)"
        " return a and table.concat(vim.api.nvim_buf_get_lines(a.buf, 0, -1, false), '\\n') or ''",
        name,
    )


@pytest.fixture
def qwen(sandbox: Sandbox) -> Iterator[tuple[Tui, FakeModel, Path]]:
    target = sandbox.project / "notes.txt"
    target.write_text("alpha\nbeta\n")
    setup = {"agents": {"qwen": {"cmd": [str(NODE22), str(QWEN_CLI)]}}, "default_agent": "qwen"}
    with neovim_with_agents(sandbox, target, [*qwen_edit(target), Turn(text="Explained.")], setup) as running:
        yield running


def test_gemini_command_starts_qwen_connected_without_typing(qwen, sandbox):
    tui, model, target = qwen
    settings = (sandbox.home / ".qwen" / "settings.json").read_text()
    tui.ex("Gemini qwen")
    tui.wait_ready()
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
    # focus_after_send: :GeminiAdd shows the hidden agent, to go on typing there.
    setup = {"agents": {"gemini": {"cmd": [str(GEMINI_BIN)]}}, "cli_settings": "ask", "focus_after_send": True}
    with neovim_with_agents(sandbox, target, script, setup) as running:
        yield running


def test_gemini_command_asks_once_in_neovim_and_gemini_comes_up_connected(gemini, sandbox):
    tui, model, target = gemini
    settings = sandbox.home / ".gemini" / "settings.json"
    before = settings.read_bytes()
    tui.ex("Gemini")
    tui.wait_screen("(Y)es, (N)o")  # no default button: <CR> is no answer
    tui.type("y")
    tui.wait_ready()
    label = "gemini (Gemini CLI 0.61.0)"
    wait_for(lambda: [c["label"] for c in tui.status()["clients"]] == [label], E2E_TIMEOUT, "Gemini connected")
    # (Terminal answers that reach a slow-starting Gemini's prompt are taken back: see agents.lua.)
    screen = wait_for(lambda: "libvterm" not in (s := tui.screen()) and s, 30, "an empty prompt")
    assert "/ide enable" not in screen and "Press ENTER" not in screen, screen
    written = json.loads(settings.read_text())
    assert written.pop("ide") == {"enabled": True, "hasSeenNudge": True}
    assert sorted(written.pop("mcpServers")) == ["neovim", "neovim-open"]  # the editor tools
    # Turns for :GeminiChanges; the agent's state (:h gemini-companion-attention).
    assert sorted(written.pop("hooks")) == ["AfterAgent", "AfterTool", "BeforeAgent", "Notification", "SessionStart"]
    # Off by name where no Neovim sets the key (Gemini shows every hook it runs).
    assert written.pop("hooksConfig") == {"disabled": ["${GEMINI_COMPANION_HOOK_ID:-gemini-companion}"]}
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
    tui.wait_screen("@./greeting.txt")
    asked = len(model.requests)
    tui.keys("End")
    tui.prompt("what does it say", lambda: len(model.requests) > asked)
    text = json.dumps(model.requests[asked]["body"])
    assert "hello\\nthere" in text, text[-2000:]
    # disable-cli takes back exactly what was written. (Gemini itself re-indents the file when it
    # saves a setting of its own, so the bytes may differ: the settings may not.)
    tui.ex("GeminiCompanion disable-cli gemini")
    wait_for(lambda: json.loads(settings.read_text()) == json.loads(before), 30, "the settings restored")


@pytest.fixture
def tmux_agents(sandbox: Sandbox) -> Iterator[tuple[Tui, Path]]:
    """Neovim in tmux with `terminal.provider = 'tmux'`: the fake agent (default) and the real Qwen."""
    log = sandbox.base / "agent.log"
    target = sandbox.project / "notes.txt"
    target.write_text("alpha\nbeta\n")
    fake = {
        "cmd": [sys.executable, str(HARNESS / "fake_agent.py")],
        # The fake asks for bracketed paste, as the CLIs do.
        "env": {"FAKE_AGENT_LOG": str(log), "FAKE_AGENT_SCREEN": "\x1b[?2004hType your message\r\n"},
    }
    qwen = {"cmd": [str(NODE22), str(QWEN_CLI)]}
    setup = {"agents": {"fake": fake, "qwen": qwen}, "default_agent": "fake", "terminal": {"provider": "tmux"}}
    with neovim_with_agents(sandbox, target, [Turn(text="Hi.")], setup) as (tui, _model, _target):
        yield tui, log


def test_tmux_provider_runs_agents_in_a_pane_beside_neovim(tmux_agents):
    """The agent in a pane of Neovim's tmux window, with the whole connection environment; send
    through a paste buffer; hide and show keep the process; the real Qwen connects from a pane
    as itself; nothing is left after :qa!."""
    tui, log = tmux_agents

    def panes() -> list[str]:  # the processes in Neovim's tmux window
        return tui.tmux("list-panes", "-F", "#{pane_pid}").split()

    nvim_pane = tui.lua("return vim.env.TMUX_PANE")
    tui.ex("Gemini")
    wait_for(lambda: Path(str(log) + ".env").exists(), E2E_TIMEOUT, "the agent in its pane")
    pid = tui.status()["agents"][0]["pid"]
    assert str(pid) in panes() and len(panes()) == 2
    assert tui.tmux("display", "-p", "#{pane_pid}").strip() == str(pid)  # focused
    tui.tmux("select-pane", "-t", nvim_pane)
    env = json.loads(Path(str(log) + ".env").read_text())
    assert env["GEMINI_CLI_IDE_SERVER_PORT"] == str(tui.status()["port"])  # given, not inherited
    assert Path(env["QWEN_CODE_SYSTEM_DEFAULTS_PATH"]).exists() and "GEMINI_CLI_IDE_PID" in env
    tui.ex("1,2GeminiSend! explain")
    wait_for(lambda: log.exists() and log.read_bytes().endswith(b"\r"), 30, "the paste and Enter")
    sent = log.read_bytes()
    assert sent.startswith(b"\x1b[200~") and b"notes.txt (lines 1-2)" in sent and b"\x1b[201~" in sent, sent
    tui.lua("require('gemini_companion.agents').hide()")
    wait_for(lambda: len(panes()) == 1, 30, "the pane moved to a background window")
    listed = tui.status()["agents"][0]
    assert listed.pop("state") in ("starting", "idle") and listed == {"name": "fake", "pid": pid, "visible": False}
    tui.ex("Gemini")
    wait_for(lambda: len(panes()) == 2 and str(pid) in panes(), 30, "the same pane back")
    tui.tmux("select-pane", "-t", nvim_pane)
    tui.ex("Gemini qwen")
    label = "qwen (Qwen Code 0.24.4)"
    wait_for(lambda: label in [c["label"] for c in tui.status()["clients"]], E2E_TIMEOUT, "Qwen connected")
    qwen_pid = next(a["pid"] for a in tui.status()["agents"] if a["name"] == "qwen")
    tui.tmux("select-pane", "-t", nvim_pane)
    tui.ex("qa!")
    wait_for(lambda: not psutil.pid_exists(pid) and not psutil.pid_exists(qwen_pid), 30, "the agents gone")


def test_gemini_and_qwen_at_once_each_review_names_its_agent(sandbox):
    greeting, notes = sandbox.project / "greeting.txt", sandbox.project / "notes.txt"
    greeting.write_text("hello\nworld\n")
    notes.write_text("alpha\nbeta\n")
    replace = {"file_path": str(greeting), "instruction": "-", "old_string": "world", "new_string": "there"}
    qwen_model = FakeModel(qwen_edit(notes))
    setup = {
        "agents": {
            "gemini": {"cmd": [str(GEMINI_BIN)]},
            "qwen": {"cmd": [str(NODE22), str(QWEN_CLI)], "env": {"OPENAI_BASE_URL": f"{qwen_model.url}/v1"}},
        },
        "cli_settings": "auto",
    }
    script = [Turn(call="replace", args=replace), Turn(text="All done.")]
    try:
        with neovim_with_agents(sandbox, greeting, script, setup) as (tui, gemini_model, _):
            for name, model, target, ask, done in (
                ("gemini", gemini_model, greeting, "greet there instead of world", "hello\nthere\n"),
                ("qwen", qwen_model, notes, "change beta to gamma in notes.txt", "alpha\ngamma\n"),
            ):
                tui.ex(f"Gemini {name}")
                wait_for(lambda n=name: READY in agent_screen(tui, n), E2E_TIMEOUT, f"{name}'s prompt")
                tui.prompt(ask, lambda m=model: m.requests)
                assert tui.wait_diff()["agent"].startswith(f"{name} (")
                tui.ex("w")
                wait_for(lambda t=target, d=done: t.read_text() == d, E2E_TIMEOUT, f"{name} to write its file")
            labels = sorted(c["label"] for c in tui.status()["clients"])
            assert labels == ["gemini (Gemini CLI 0.61.0)", "qwen (Qwen Code 0.24.4)"]
    finally:
        qwen_model.close()


def test_qwen_respects_a_users_ide_enabled_false(sandbox):
    target = sandbox.project / "notes.txt"
    target.write_text("alpha\n")
    setup = {"agents": {"qwen": {"cmd": [str(NODE22), str(QWEN_CLI)]}}, "default_agent": "qwen"}
    with neovim_with_agents(sandbox, target, [], setup) as (tui, _model, _target):
        settings = sandbox.home / ".qwen" / "settings.json"
        settings.write_text(json.dumps({**json.loads(settings.read_text()), "ide": {"enabled": False}}))
        tui.ex("Gemini")
        tui.wait_ready()
        tui.type("/ide status")
        tui.wait_screen("/ide status")
        tui.keys("Enter")
        tui.wait_screen("IDE integration is currently disabled")  # our defaults file is the lowest layer
        assert tui.status()["clients"] == []


@pytest.mark.parametrize("cli", ["gemini", "qwen"])
def test_ide_mode_in_the_users_settings_is_quiet_outside_neovim(editor_factory, sandbox, cli):
    """What enable-cli writes (IDE mode; for Gemini the editor tools' entries too), read by a CLI
    started in a plain terminal (no Neovim anywhere)."""
    gemini_settings(sandbox.home, ide_enabled=False)
    qwen_settings(sandbox.home, ide_enabled=False)
    editor = editor_factory(setup={"auto_start": False})
    editor.nvim.command("GeminiCompanion enable-cli")
    settings_edited(editor)
    editor.close()
    if cli == "gemini":
        assert "neovim" in json.loads((sandbox.home / ".gemini" / "settings.json").read_text())["mcpServers"]
    model = FakeModel([])
    socket = sandbox.base / "plain-tmux.sock"
    command = {"gemini": [str(GEMINI_BIN)], "qwen": [str(NODE22), str(QWEN_CLI)]}[cli]
    tmux = ["tmux", "-S", str(socket), "-f", "/dev/null"]
    env = terminal_env(sandbox, model.url)
    try:
        subprocess.run([*tmux, "new-session", "-d", "-x", "200", "-y", "50", *command], env=env, check=True)
        screen = wait_for(
            lambda: (
                READY in (s := subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True, text=True).stdout)
                and s
            ),
            E2E_TIMEOUT,
            f"{cli}'s prompt",
        )
        assert "IDE" not in screen and "/ide" not in screen and "MCP" not in screen, screen
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
        model.close()
