"""Agents in Neovim terminals: :Gemini toggling and window presets, :GeminiSend, :GeminiAdd, lifecycle,
and the environment an agent starts with. The agent is tests/harness/fake_agent.py, which records the bytes
it is sent; the real CLIs are driven in test_agents_real_clis.py."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from conftest import HARNESS, NODE_DIR, Editor, NodeClient, Sandbox, client_env, wait_for

PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"


def fake_agents(log: Path, **window: Any) -> dict[str, Any]:
    agent = {"cmd": [sys.executable, str(HARNESS / "fake_agent.py")], "env": {"FAKE_AGENT_LOG": str(log)}}
    setup: dict[str, Any] = {"agents": {"fake": agent}, "default_agent": "fake"}
    if window:
        setup["terminal"] = {"window": window}
    return setup


@pytest.fixture
def log(sandbox: Sandbox) -> Path:
    return sandbox.base / "agent.log"


@pytest.fixture
def ed(editor_factory, log) -> Editor:
    editor = editor_factory(setup=fake_agents(log))
    editor.wait_state("running")
    return editor


def agent(editor: Editor, name: str = "fake") -> dict[str, Any] | None:
    """The agent in the status, but its state (test_attention.py's: it moves on its own)."""
    found = [{k: v for k, v in a.items() if k != "state"} for a in editor.status()["agents"] if a["name"] == name]
    return found[0] if found else None


def started(editor: Editor, log: Path) -> dict[str, Any]:
    wait_for(lambda: Path(str(log) + ".env").exists(), what="the agent to start")
    wait_for(lambda: "Type your message" in screen(editor), what="the agent's prompt")
    return agent(editor) or {}


def screen(editor: Editor) -> str:
    return editor.lua(
        "local a = require('gemini_companion.agents').get('fake')"
        " return a and table.concat(vim.api.nvim_buf_get_lines(a.buf, 0, -1, false), '\\n') or ''"
    )


def received(log: Path) -> bytes:
    return log.read_bytes() if log.exists() else b""


def test_gemini_toggles_the_same_process(ed, log):
    ed.nvim.command("Gemini")
    first = started(ed, log)
    layout = ed.lua(
        "local w = vim.api.nvim_get_current_win() return { buf = vim.bo[vim.api.nvim_win_get_buf(w)].buftype,"
        " width = vim.api.nvim_win_get_width(w), col = vim.api.nvim_win_get_position(w)[2], mode = vim.fn.mode() }"
    )
    assert layout["buf"] == "terminal" and layout["mode"] == "t"
    assert layout["col"] > 0 and abs(layout["width"] - 0.4 * ed.lua("return vim.o.columns")) <= 2  # right, 40%
    ed.nvim.command("Gemini")  # focused -> hidden, still running
    assert agent(ed) == {**first, "visible": False}
    ed.nvim.command("Gemini")  # hidden -> shown, the same process
    assert agent(ed) == first
    ed.nvim.command("wincmd p")  # shown, not focused -> focused
    ed.nvim.command("Gemini")
    assert ed.lua("return vim.bo.buftype") == "terminal" and agent(ed) == first


@pytest.mark.parametrize(("position", "check"), [("float", "relative"), ("tab", "tabs"), ("bottom", "row")])
def test_window_presets(editor_factory, log, position, check):
    editor = editor_factory(setup=fake_agents(log, position=position, size=10))
    editor.nvim.command("Gemini fake")
    started(editor, log)
    win = editor.lua(
        "local w = vim.api.nvim_get_current_win() return { relative = vim.api.nvim_win_get_config(w).relative,"
        " tabs = #vim.api.nvim_list_tabpages(), row = vim.api.nvim_win_get_position(w)[1],"
        " height = vim.api.nvim_win_get_height(w) }"
    )
    expected = {"relative": win["relative"] == "editor", "tabs": win["tabs"] == 2, "row": win["height"] == 10}
    assert expected[check] and win["row"] >= 0, win
    editor.nvim.command("Gemini")  # hide
    assert editor.lua("return #vim.api.nvim_list_tabpages()") == 1 and not agent(editor)["visible"]


def test_send_pastes_a_snippet_and_bang_submits_apart(ed, log, sandbox):
    source = sandbox.project / "src" / "calc.py"
    source.parent.mkdir()
    source.write_text("".join(f"value_{n} = {n}\n" for n in range(1, 21)))
    ed.nvim.command(f"edit {source}")
    ed.nvim.command("Gemini")
    started(ed, log)
    ed.nvim.command("wincmd p")
    ed.nvim.command("5,7GeminiSend! explain this")
    wait_for(lambda: received(log).endswith(b"\r"), what="the submit")
    data = received(log)
    paste = data[data.index(PASTE_START) + len(PASTE_START) : data.index(PASTE_END)].decode()
    assert paste.startswith("From src/calc.py (lines 5-7):\n```python\nvalue_5 = 5\nvalue_6 = 6\nvalue_7 = 7\n```\n")
    assert paste.endswith("explain this")
    assert data.endswith(PASTE_END + b"\r"), "Enter apart from the paste"


def test_send_of_a_block_selection_sends_the_block(ed, log, sandbox):
    source = sandbox.project / "grid.txt"
    source.write_text("abcd\nefgh\nijkl\n")
    ed.nvim.command(f"edit {source}")
    ed.nvim.command("Gemini")
    started(ed, log)
    ed.nvim.command("wincmd p")
    ed.nvim.input("gg0l\x16jl\x1b")  # columns 2-3 of lines 1-2
    ed.nvim.command("'<,'>GeminiSend")
    wait_for(lambda: PASTE_END in received(log), what="the paste")
    assert "```text\nbc\nfg\n```" in received(log).decode()
    assert not received(log).endswith(b"\r")  # no bang: not submitted


def test_add_escapes_paths_and_defaults_to_the_current_file(editor_factory, log, sandbox):
    """(With `focus_after_send`: a send focuses the agent, as it did before the option.)"""
    ed = editor_factory(setup={**fake_agents(log), "focus_after_send": True})
    ed.wait_state("running")
    spaced = sandbox.project / "my dir" / "a (1).txt"
    spaced.parent.mkdir()
    spaced.write_text("x\n")
    (sandbox.project / "main.lua").write_text("print(1)\n")  # (what does not exist is not added)
    ed.nvim.command(f"edit {sandbox.project / 'main.lua'}")
    ed.nvim.command("Gemini")
    started(ed, log)
    ed.nvim.command("wincmd p")
    ed.lua("vim.cmd.GeminiAdd(...)", str(spaced))
    wait_for(lambda: PASTE_END in received(log), what="the first paste (the path is looked at off the main loop)")
    assert ed.lua("return vim.bo.buftype") == "terminal"  # the agent, to go on typing there
    ed.nvim.command("wincmd p")
    ed.nvim.command("GeminiAdd")
    wait_for(lambda: received(log).count(PASTE_END) == 2, what="two pastes")
    text = received(log).decode()
    assert "@./my\\ dir/a\\ \\(1\\).txt " in text
    assert "@./main.lua " in text


def test_agent_env_carries_the_server_and_qwen_defaults(ed, log):
    ed.nvim.command("Gemini")
    started(ed, log)
    env = json.loads(Path(str(log) + ".env").read_text())
    assert env["GEMINI_CLI_IDE_SERVER_PORT"] == str(ed.status()["port"])
    tools = ed.status()["tools"]
    assert env["GEMINI_COMPANION_MCP_URL"] == tools["url"]
    assert f"Bearer {env['GEMINI_COMPANION_MCP_TOKEN']}" == tools["headers"]["Authorization"]
    defaults = Path(env["QWEN_CODE_SYSTEM_DEFAULTS_PATH"])
    written = json.loads(defaults.read_text())
    assert written["ide"] == {"enabled": True, "hasSeenNudge": True}
    # The model's tools, for Qwen: declared directly; only the read-only ones trusted.
    neovim, neovim_open = written["mcpServers"]["neovim"], written["mcpServers"]["neovim-open"]
    assert neovim["httpUrl"] == tools["url"] and neovim["headers"] == tools["headers"]
    assert neovim["alwaysLoadTools"] is True and neovim["trust"] is True
    assert neovim["excludeTools"] == ["open_file"]
    assert neovim_open["trust"] is False and neovim_open["includeTools"] == ["open_file"]
    assert defaults.stat().st_mode & 0o777 == 0o600
    assert ed.env("QWEN_CODE_SYSTEM_DEFAULTS_PATH") == str(defaults)  # plain :terminal too
    ed.nvim.command("GeminiCompanion stop")
    assert not defaults.exists() and ed.env("QWEN_CODE_SYSTEM_DEFAULTS_PATH") is None


def test_qwen_defaults_keep_the_system_defaults_they_replace(editor_factory, sandbox, log):
    system = sandbox.base / "system-defaults.json"
    admins = {"hooks": [{"type": "command", "command": "echo admin"}]}
    system.write_text(
        json.dumps(
            {"$version": 4, "general": {"vimMode": True}, "ide": {"hasSeenNudge": False}, "hooks": {"Stop": [admins]}}
        )
    )
    sandbox.env["QWEN_CODE_SYSTEM_DEFAULTS_PATH"] = str(system)
    editor = editor_factory(setup=fake_agents(log))
    editor.wait_state("running")
    ours = json.loads(Path(editor.env("QWEN_CODE_SYSTEM_DEFAULTS_PATH") or "").read_text())
    assert sorted(ours.pop("mcpServers")) == ["neovim", "neovim-open"]
    hooks = ours.pop("hooks")
    turns, state = ["PostToolUse", "Stop", "StopFailure", "UserPromptSubmit"], ["PermissionRequest", "PreToolUse"]
    assert sorted(hooks) == sorted([*turns, *state, "Notification", "SessionStart"])
    assert hooks["Stop"][0] == admins and "GEMINI_COMPANION_HOOK" in hooks["Stop"][1]["hooks"][0]["command"]
    assert ours == {"$version": 4, "general": {"vimMode": True}, "ide": {"enabled": True, "hasSeenNudge": True}}
    editor.nvim.command("GeminiCompanion stop")
    assert editor.env("QWEN_CODE_SYSTEM_DEFAULTS_PATH") == str(system)  # back to what Neovim had


def test_tools_turned_off_are_not_told_to_terminals_or_qwen(editor_factory, log):
    setup = fake_agents(log)
    setup["tools"] = {"enabled": False}
    editor = editor_factory(setup=setup)
    editor.wait_state("running")
    assert editor.status()["tools"] is not None  # the endpoint is there for scripts
    assert editor.env("GEMINI_COMPANION_MCP_URL") is None and editor.env("GEMINI_COMPANION_MCP_TOKEN") is None
    ours = json.loads(Path(editor.env("QWEN_CODE_SYSTEM_DEFAULTS_PATH") or "").read_text())
    assert "mcpServers" not in ours and ours["ide"]["enabled"] is True
    editor.nvim.command("Gemini")
    started(editor, log)
    env = json.loads(Path(str(log) + ".env").read_text())
    assert "GEMINI_COMPANION_MCP_URL" not in env and env["GEMINI_CLI_IDE_SERVER_PORT"] == str(editor.status()["port"])


def test_an_exited_agent_closes_its_window_and_starts_fresh(ed, log):
    ed.lua(
        "_G.events = {} vim.api.nvim_create_autocmd('User', { pattern = {'GeminiAgentStarted', 'GeminiAgentExited'},"
        " callback = function(ev) table.insert(_G.events, ev.match) end })"
    )
    ed.nvim.command("Gemini")
    first = started(ed, log)
    ed.lua("vim.api.nvim_chan_send(require('gemini_companion.agents').get('fake').job, '\\4')")
    wait_for(lambda: agent(ed) is None, what="the agent gone")
    assert ed.lua("return #vim.api.nvim_list_wins()") == 1
    assert ed.lua("return _G.events") == ["GeminiAgentStarted", "GeminiAgentExited"]
    Path(str(log) + ".env").unlink()
    ed.nvim.command("Gemini")
    assert started(ed, log)["pid"] != first["pid"]


def test_no_agent_process_survives_qa_bang(editor_factory, log):
    editor = editor_factory(setup=fake_agents(log))
    editor.nvim.command("Gemini")
    pid = started(editor, log)["pid"]
    process = psutil.Process(pid)
    try:
        editor.nvim.command("qa!")
    except Exception:  # noqa: BLE001 - Neovim exits under the request
        pass
    wait_for(lambda: not process.is_running() or process.status() == psutil.STATUS_ZOMBIE, what="the agent gone")


def test_unknown_agent_and_missing_command_say_so(editor_factory, log):
    setup = fake_agents(log)
    setup["agents"]["missing"] = {"cmd": ["no-such-cli-" + str(os.getpid())]}
    editor = editor_factory(setup=setup)
    errors = [
        editor.lua("local ok, err = pcall(vim.cmd, ...) return tostring(err)", c)
        for c in ("Gemini nobody", "Gemini missing")
    ]
    assert 'no agent "nobody"' in errors[0] and "is not on PATH" in errors[1], errors
    assert editor.lua("return #vim.api.nvim_list_wins()") == 1


def test_each_agent_connects_as_itself_and_labels_its_diffs(editor_factory, sandbox, log):
    """Each agent has its own token and files: the status and the review say which agent it is,
    and a CLI the plugin did not start is "external"."""
    setup = fake_agents(log)
    other_log = sandbox.base / "other.log"
    setup["agents"]["other"] = {**setup["agents"]["fake"], "env": {"FAKE_AGENT_LOG": str(other_log)}}
    editor = editor_factory(setup=setup)
    editor.wait_state("running")
    editor.nvim.command("Gemini fake")
    started(editor, log)
    editor.nvim.command("Gemini other")
    wait_for(lambda: Path(str(other_log) + ".env").exists(), what="the second agent")
    fake_env = json.loads(Path(str(log) + ".env").read_text())
    other_env = json.loads(Path(str(other_log) + ".env").read_text())
    assert fake_env["GEMINI_CLI_IDE_PID"] != other_env["GEMINI_CLI_IDE_PID"]
    qwen_node = str(NODE_DIR / "node_modules" / ".bin" / "node")
    clients = [
        NodeClient("gemini_client.mjs", fake_env, sandbox.project),
        NodeClient("qwen_client.mjs", other_env, sandbox.project, node=qwen_node),
        NodeClient("gemini_client.mjs", client_env(editor), sandbox.project),
    ]
    try:
        for client in clients:
            assert client.call("connect")["status"] == "connected"
        labels = {"fake (Gemini CLI 0.61.0)", "other (Qwen Code)", "external Gemini CLI 0.61.0"}
        wait_for(lambda: {c["label"] for c in editor.status()["clients"]} == labels, what="three labelled clients")
        target = sandbox.project / "labelled.txt"
        target.write_text("old\n")
        clients[0].send("openDiff", filePath=str(target), newContent="new\n")
        wait_for(lambda: editor.status()["diffs"], what="the diff")
        assert editor.status()["diffs"][0]["agent"] == "fake (Gemini CLI 0.61.0)"
        assert "Proposed by fake (Gemini CLI 0.61.0): " in editor.lua("return vim.wo.winbar")
        assert editor.lua("return vim.t.gemini_companion_agent") == "fake (Gemini CLI 0.61.0)"
    finally:
        for client in clients:
            client.close()
    own = [
        Path(f)
        for f in editor.status()["discovery_files"]
        if re.fullmatch(r"gemini-ide-server-\d+\.json", Path(f).name)
    ]
    assert len(own) == 2  # the two agents' Gemini files (beside the shared one)
    editor.nvim.command("GeminiCompanion stop")
    assert not any(path.exists() for path in own)


def test_restart_points_a_running_agents_files_at_the_new_server(ed, log):
    ed.nvim.command("Gemini")
    started(ed, log)
    env = json.loads(Path(str(log) + ".env").read_text())
    name = f"gemini-ide-server-{env['GEMINI_CLI_IDE_PID']}.json"
    own = next(Path(f) for f in ed.status()["discovery_files"] if Path(f).name == name)
    old_port = ed.status()["port"]
    ed.nvim.command("GeminiCompanion restart")
    new_port = wait_for(lambda: (s := ed.status())["running"] and s["port"] != old_port and s["port"], what="restart")
    wait_for(lambda: own.exists() and json.loads(own.read_text())["port"] == new_port, what="the agent's file moved")
    assert "type /ide enable in fake to reconnect" in ed.messages()


def test_terminal_answers_typed_into_a_slow_starting_cli_are_taken_back(editor_factory, log):
    """Gemini waits 1 s for the terminal's answers to its queries; later ones land in its prompt."""
    setup = fake_agents(log)
    setup["agents"]["fake"]["env"]["FAKE_AGENT_SCREEN"] = "> >|libvterm(0.3)1;2c   \u2502\r\n"
    editor = editor_factory(setup=setup)
    editor.nvim.command("Gemini")
    wait_for(lambda: received(log) == b"\x7f" * len(">|libvterm(0.3)1;2c"), what="the stray answer taken back")


def test_external_provider_runs_the_template_and_says_what_it_cannot_do(editor_factory, sandbox):
    out = sandbox.base / "external"
    # Each file appears whole (written aside, then renamed): the test reads it as soon as it exists.
    script = (
        f'printf "%s\\n" "$@" > {out}.a; mv {out}.a {out}.args; env > {out}.e; mv {out}.e {out}.env; exec sleep 600'
    )
    setup = {
        "agents": {"far": {"cmd": ["true", "--flag"]}},
        "default_agent": "far",
        "terminal": {"provider": "external", "external": {"cmd": ["sh", "-c", script, "sh", "{cmd}"]}},
    }
    editor = editor_factory(setup=setup)
    editor.wait_state("running")
    editor.nvim.command(f"edit {sandbox.project / 'main.lua'}")
    editor.nvim.command("Gemini")
    wait_for(lambda: Path(f"{out}.env").exists() and Path(f"{out}.args").exists(), what="the external program")
    assert Path(f"{out}.args").read_text().split() == ["true", "--flag"]
    assert f"GEMINI_CLI_IDE_SERVER_PORT={editor.status()['port']}" in Path(f"{out}.env").read_text()
    assert editor.lua("return vim.bo.buftype") == ""  # nothing opened in Neovim
    editor.nvim.command("GeminiSend explain")
    wait_for(lambda: "runs in an external terminal: Neovim cannot type into it" in editor.messages(), what="why")
    pid = agent(editor, "far")["pid"]  # type: ignore[index]
    editor.nvim.command("GeminiCompanion stop")  # (the agent outlives the server)
    editor.lua("require('gemini_companion.agents').stop()")
    wait_for(lambda: agent(editor, "far") is None, what="the program stopped")
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


@pytest.mark.parametrize("mode", ["ask", "auto"])
def test_a_users_ide_enabled_false_is_never_overwritten(editor_factory, sandbox, log, mode):
    settings = sandbox.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text('{\n  "ide": {"enabled": false},\n  "theme": "x"\n}\n')
    before = settings.read_bytes()
    setup = fake_agents(log)
    setup["agents"]["gemini"] = setup["agents"].pop("fake")  # Gemini, by its name
    setup.update(default_agent="gemini", cli_settings=mode)
    editor = editor_factory(setup=setup)
    editor.nvim.command("Gemini")  # no question: it would block this call
    wait_for(lambda: Path(str(log) + ".env").exists(), what="the agent started anyway")
    assert settings.read_bytes() == before
    assert "IDE mode is off in ~/.gemini/settings.json" in editor.messages()


def test_an_agent_asked_for_after_the_server_was_stopped_starts_at_once(ed, log):
    """`:GeminiCompanion stop` leaves the host running with no server: an agent asked for then
    starts as asked (the help: "as with a stopped server"). It waited for a server no one starts,
    then said "not started: the server did not answer within 30 s"."""
    ed.nvim.command("GeminiCompanion stop")
    ed.wait_state("stopped")
    ed.lua("require('gemini_companion.agents.served').timeout_ms = 600000")  # a wait shows as no start
    ed.nvim.command("Gemini")
    started(ed, log)
    assert "not started" not in ed.messages()


def test_an_agent_with_no_environment_of_its_own_starts_with_no_server(editor_factory, sandbox, log):
    """`auto_start = false` and an agent without `env` (the default `gemini`, `qwen`): nothing to
    add to Neovim's environment. The empty table went to jobstart as a List: E475 (:Gemini failed)."""
    sandbox.env["FAKE_AGENT_LOG"] = str(log)  # Neovim's own environment: the agent inherits it
    setup = fake_agents(log)
    del setup["agents"]["fake"]["env"]
    setup["auto_start"] = False
    editor = editor_factory(setup)
    editor.nvim.command("Gemini")
    started(editor, log)
    assert "E475" not in editor.messages()
