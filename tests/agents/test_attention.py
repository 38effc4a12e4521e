"""Agent state, attention and the statusline in a real Neovim with the real host: an agent the
plugin started (tests/harness/fake_agent.py, or a screen a test draws), fed the CLIs' real hook payloads
(issue 22's facts, Gemini CLI 0.61.0 and Qwen Code 0.24.4) by running the hook command exactly as
the CLIs' settings do."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agents.attention_helpers import READS, setup_for, started
from conftest import Editor, Sandbox, git, wait_for
from core.helpers import checkhealth
from gemini_companion.programs import hook as hook_program


@pytest.fixture
def repo(sandbox: Sandbox) -> Path:
    git(sandbox.project, "init", "-q")
    (sandbox.project / "a.txt").write_text("a\n")
    git(sandbox.project, "add", "-A")
    git(sandbox.project, "commit", "-qm", "base")
    return sandbox.project


def hook(editor: Editor, agent_env: dict[str, str], cli: str, event: str, payload: dict[str, Any], cwd: Path) -> None:
    """Run the registered hook command for `event` as the CLI does: `bash -c`, the entry's env
    over the agent's, the CLI's JSON on stdin; it must answer `{}` and exit 0."""
    base = {"session_id": "s1", "transcript_path": "/tmp/t.jsonl", "cwd": str(cwd), "timestamp": "now"}
    hook_bytes(editor, agent_env, cli, event, json.dumps({**base, "hook_event_name": event, **payload}).encode(), cwd)


def hook_bytes(editor: Editor, agent_env: dict[str, str], cli: str, event: str, stdin: bytes, cwd: Path) -> None:
    """`hook` with the bytes the CLI writes on stdin."""
    entry = editor.lua("return require('gemini_companion.changes').hooks(...)", cli)[event]["hooks"][0]
    env = {key: value for key, value in os.environ.items() if not key.startswith("GEMINI_COMPANION")}
    env[hook_program.KEY_ENV] = agent_env[hook_program.KEY_ENV]
    env.update(entry["env"])
    done = subprocess.run(["bash", "-c", entry["command"]], input=stdin, env=env, cwd=cwd, capture_output=True)
    assert done.returncode == 0 and json.loads(done.stdout) == {}, done


def state(editor: Editor, name: str = "fake") -> str:
    agents = editor.status()["agents"]
    return next((a["state"] for a in agents if a["name"] == name), "gone")


def notes(editor: Editor) -> list[str]:
    return [note[0] for note in editor.lua("return _G.notes")]


def states(editor: Editor) -> list[str]:
    return [s[1] for s in editor.lua("return _G.states")]


def wait_state(editor: Editor, want: str, name: str = "fake") -> None:
    wait_for(lambda: state(editor, name) == want, 30, f"{name} {want} (is {state(editor, name)})")


GEMINI_EXEC = {
    "notification_type": "ToolPermission",
    "message": "Tool Confirm Shell Command requires execution",
    "details": {"type": "exec", "title": "Confirm Shell Command", "command": "npm install", "rootCommand": "npm"},
}


def test_a_gemini_permission_turn_while_hidden(editor_factory, sandbox, repo):
    ed = editor_factory(setup_for(sandbox))
    env = started(ed, sandbox)
    assert state(ed) == "starting"
    hook(ed, env, "gemini", "SessionStart", {"source": "startup"}, repo)
    wait_state(ed, "idle")
    hook(ed, env, "gemini", "BeforeAgent", {"prompt": "install"}, repo)
    wait_state(ed, "working")
    hook(ed, env, "gemini", "Notification", GEMINI_EXEC, repo)
    wait_state(ed, "waiting")
    assert notes(ed) == ["gemini-companion: fake asks to run: `npm install`"]
    # :Gemini goes to the agent that asked, and shows it.
    ed.lua("vim.cmd('Gemini')")
    assert ed.lua("return require('gemini_companion').status().agents[1].visible")
    ed.lua("vim.cmd.stopinsert(); require('gemini_companion.agents').hide('fake')")
    (repo / "new.txt").write_text("made\n")
    (repo / "a.txt").write_text("changed\n")
    hook(ed, env, "gemini", "AfterTool", {"tool_name": "run_shell_command", "tool_input": {"command": "x"}}, repo)
    wait_state(ed, "working")
    hook(ed, env, "gemini", "AfterAgent", {"prompt": "install", "prompt_response": "done"}, repo)
    wait_for(lambda: len(notes(ed)) == 2, 30, "the finished line")
    assert notes(ed)[1] == "gemini-companion: fake finished: 2 files changed — :GeminiChanges"
    assert states(ed) == ["starting", "idle", "working", "waiting", "working", "idle"]
    assert ed.lua("return _G.states")[3][2] == "asks to run: `npm install`"  # the event's detail
    assert "fake is idle; its state comes from its hooks" in checkhealth(ed)


def test_a_qwen_turn_tells_each_ask_once_and_its_end(editor_factory, sandbox, repo):
    ed = editor_factory(setup_for(sandbox))
    env = started(ed, sandbox)
    hook(ed, env, "qwen", "SessionStart", {"source": "startup", "model": "fake-model"}, repo)
    wait_state(ed, "idle")
    turn = {"prompt_id": "s1########0", "prompt": "go", "submitted_prompt": "go"}
    hook(ed, env, "qwen", "UserPromptSubmit", turn, repo)
    wait_state(ed, "working")
    shell = {"prompt_id": turn["prompt_id"], "tool_name": "run_shell_command"}
    ask = {**shell, "tool_input": {"command": "touch made.txt && echo made", "description": "make", "is_background": 0}}
    hook(ed, env, "qwen", "PermissionRequest", ask, repo)
    wait_state(ed, "waiting")
    note = {"message": "Qwen Code needs your permission to use run_shell_command", "title": "Permission needed"}
    hook(ed, env, "qwen", "Notification", {**note, "notification_type": "permission_prompt"}, repo)
    hook(ed, env, "qwen", "PreToolUse", {**ask, "tool_use_id": "t1"}, repo)
    wait_state(ed, "working")
    (repo / "made.txt").write_text("made\n")
    hook(ed, env, "qwen", "PostToolUse", {**ask, "tool_response": {"llmContent": "made"}}, repo)
    hook(ed, env, "qwen", "UserPromptSubmit", {**turn, "prompt": ""}, repo)  # the same turn, a new round
    hook(ed, env, "qwen", "Stop", {"prompt_id": turn["prompt_id"], "last_assistant_message": "done"}, repo)
    wait_for(lambda: len(notes(ed)) == 2, 30, "the finished line")
    idle = {"message": "Qwen Code is waiting for your input", "title": "Waiting for input"}
    hook(ed, env, "qwen", "Notification", {**idle, "notification_type": "idle_prompt"}, repo)
    assert notes(ed) == [
        "gemini-companion: fake asks to run: `touch made.txt && echo made`",
        "gemini-companion: fake finished: 1 file changed — :GeminiChanges",
    ]
    assert states(ed) == ["starting", "idle", "working", "waiting", "working", "idle"]
    # A failed turn: its error, one line.
    hook(ed, env, "qwen", "UserPromptSubmit", {**turn, "prompt_id": "s1########1"}, repo)
    failure = {"error": "invalid_request", "error_details": "400 bad\nrequest\x1b[31m"}
    hook(ed, env, "qwen", "StopFailure", failure, repo)
    wait_for(lambda: len(notes(ed)) == 3, 30, "the failed line")
    assert notes(ed)[2] == "gemini-companion: fake failed: 400 bad request^[[31m"


def test_nothing_for_the_agent_the_user_looks_at_until_neovim_loses_focus(editor_factory, sandbox, repo):
    ed = editor_factory(setup_for(sandbox))
    env = started(ed, sandbox)
    ed.lua("require('gemini_companion.agents').open('fake')")
    hook(ed, env, "gemini", "BeforeAgent", {"prompt": "x"}, repo)
    hook(ed, env, "gemini", "Notification", GEMINI_EXEC, repo)
    wait_state(ed, "waiting")
    hook(ed, env, "gemini", "AfterTool", {"tool_name": "run_shell_command"}, repo)
    hook(ed, env, "gemini", "AfterAgent", {"prompt_response": "ok"}, repo)
    wait_state(ed, "idle")
    # A shown agent in another tab is not seen: that tab is not the current one.
    ed.lua("vim.cmd.stopinsert(); vim.cmd('tabnew')")
    hook(ed, env, "gemini", "BeforeAgent", {"prompt": "y"}, repo)
    hook(ed, env, "gemini", "Notification", GEMINI_EXEC, repo)
    wait_for(lambda: notes(ed), 30, "a line for the agent in another tab")
    ed.lua("vim.cmd('tabclose')")
    ed.lua("vim.api.nvim_exec_autocmds('FocusLost', {})")
    hook(ed, env, "gemini", "AfterTool", {"tool_name": "run_shell_command"}, repo)
    hook(ed, env, "gemini", "AfterAgent", {"prompt_response": "ok"}, repo)
    wait_for(lambda: len(notes(ed)) == 2, 30, "a line while Neovim has no focus")
    assert "finished" in notes(ed)[1]
    ed.lua("vim.api.nvim_exec_autocmds('FocusGained', {})")
    hook(ed, env, "gemini", "BeforeAgent", {"prompt": "z"}, repo)
    hook(ed, env, "gemini", "AfterAgent", {"prompt_response": "ok"}, repo)
    wait_for(lambda: ed.lua("return #_G.states") >= 11, 30, "the last turn's states")
    assert len(notes(ed)) == 2


def test_what_a_cli_names_is_one_bounded_line_and_the_notify_option_holds(editor_factory, sandbox, repo):
    ed = editor_factory(setup_for(sandbox, notify={"waiting": True, "finished": False}))
    env = started(ed, sandbox)
    for i, command in enumerate(["rm -rf /\n\x1b]52;c;aGk=\x07echo %s|:qa!", "x" * 5000]):
        hook(ed, env, "gemini", "BeforeAgent", {"prompt": "p"}, repo)
        exec_details = {**GEMINI_EXEC["details"], "command": command}
        hook(ed, env, "gemini", "Notification", {**GEMINI_EXEC, "details": exec_details}, repo)
        wait_for(lambda i=i: len(notes(ed)) == i + 1, 30, "the waiting line")
        hook(ed, env, "gemini", "AfterAgent", {"prompt_response": "ok"}, repo)
        wait_state(ed, "idle")
    first, second = notes(ed)
    assert "\n" not in first and "\x1b" not in first and "\x07" not in first
    assert first.startswith("gemini-companion: fake asks to run: `rm -rf / ^[]52;c;aGk=^Gecho %s|:qa!`")
    assert len(second) < 200 and second.endswith("…`")
    # Edits and questions say what; Gemini's edit details (whole files) never reach Neovim.
    edit = {"type": "edit", "title": "Confirm Write: new.txt", "fileName": "new.txt", "newContent": "SECRET" * 9}
    hook(ed, env, "gemini", "BeforeAgent", {"prompt": "p"}, repo)
    hook(ed, env, "gemini", "Notification", {**GEMINI_EXEC, "details": edit}, repo)
    wait_for(lambda: len(notes(ed)) == 3, 30, "the edit line")
    assert notes(ed)[2] == "gemini-companion: fake asks to edit: new.txt"
    assert "SECRET" not in json.dumps(ed.lua("return _G.states"))
    with pytest.raises(Exception, match=r"notify\.waiting: expected a boolean"):
        ed.lua("require('gemini_companion.config').set({notify = {waiting = 'yes'}})")
    ed.lua("require('gemini_companion.config').set({notify = {sound = true}})")  # a warning now (issue 32)
    assert notes(ed)[-1] == "gemini-companion: unknown option notify.sound ignored"


def test_every_byte_a_hook_names_is_shown_as_text(editor_factory, sandbox, repo):
    """The model chooses the command and the file name: a NUL (valid JSON), a lone surrogate, bytes
    that are not UTF-8, escapes. Each is one line of text, and the agent's state follows."""
    ed = editor_factory(setup_for(sandbox))
    env = started(ed, sandbox)
    base = {"session_id": "s1", "cwd": str(repo), "hook_event_name": "Notification"}
    cases: list[tuple[str, bytes, str]] = [
        (
            "gemini",
            json.dumps({**GEMINI_EXEC, **base, "details": {"type": "exec", "command": "a\0b"}}).encode(),
            "asks to run: `a^@b`",
        ),
        (
            "gemini",
            json.dumps({**GEMINI_EXEC, **base, "details": {"type": "edit", "fileName": "x\0.txt"}}).encode(),
            "asks to edit: x^@.txt",
        ),
        (
            "gemini",
            json.dumps({**GEMINI_EXEC, **base, "details": {"type": "exec", "command": "a\ud800b"}}).encode(),
            "asks to run: `a\ufffdb`",
        ),
        (
            "gemini",
            json.dumps({**GEMINI_EXEC, **base, "details": {"type": "exec", "command": "aXXb"}})
            .encode()
            .replace(b"XX", b"\xff\xc3"),
            "asks to run: `a\ufffd\ufffdb`",
        ),
        (
            "qwen",
            json.dumps(
                {**base, "hook_event_name": "PermissionRequest", "tool_input": {"command": "\0\x1b[2J" * 300}}
            ).encode(),
            "asks to run: `" + "^@^[[2J" * 17 + "…`",
        ),
    ]
    for i, (cli, stdin, said) in enumerate(cases):
        hook(ed, env, "gemini", "BeforeAgent", {"prompt": "p"}, repo)
        wait_state(ed, "working")
        event = "PermissionRequest" if cli == "qwen" else "Notification"
        hook_bytes(ed, env, cli, event, stdin, repo)
        wait_state(ed, "waiting")
        asked = wait_for(lambda i=i: (n := [n for n in notes(ed) if " asks " in n]) and len(n) > i and n, 30, "asked")
        assert asked[i] == f"gemini-companion: fake {said}"
        hook(ed, env, "gemini", "AfterAgent", {"prompt_response": "ok"}, repo)
        wait_state(ed, "idle")
    failure = {"error": "x", "error_details": "bad\0byte"}
    hook(ed, env, "qwen", "UserPromptSubmit", {"prompt_id": "p"}, repo)
    hook(ed, env, "qwen", "StopFailure", failure, repo)
    wait_for(lambda: "failed" in notes(ed)[-1], 30, "the failed line")
    assert notes(ed)[-1] == "gemini-companion: fake failed: bad^@byte"
    assert ed.lua("return vim.v.errmsg") == ""  # no error: none shown, none waited on (Neovim's 1 s)


def test_the_hook_keeps_names_never_contents():
    edit = {
        "hook_event_name": "Notification",
        "notification_type": "ToolPermission",
        "details": {"type": "edit", "fileName": "f", "originalContent": "old", "newContent": "new", "fileDiff": "d"},
        "tool_input": {"content": "body", "file_path": "/p/f", "questions": [{"question": "which?" * 1000}]},
        "message": "m" * 10000,
        "llm_request": {"contents": "everything"},
    }
    sent = json.loads(hook_program.body("attention", "gemini", json.dumps(edit)))
    assert sent["details"] == {"type": "edit", "fileName": "f"}
    assert sent["tool_input"] == {"file_path": "/p/f", "question": ("which?" * 1000)[: hook_program.MAX_TEXT]}
    assert len(sent["message"]) == hook_program.MAX_TEXT and "llm_request" not in sent


# Qwen Code's input box as it draws it (tests/harness/data/screens/qwen-idle.txt): a rule, the prompt, a rule.
INPUT_BOX = "─" * 60 + "\n>   Type your message or @path/to/file\n" + "─" * 60 + "\n  ➜ project · fake-model\n"


def test_the_screen_tells_an_agent_without_hooks(editor_factory, sandbox):
    screen = sandbox.base / "screen.txt"
    screen.write_text("Qwen Code\n")
    ed = editor_factory(setup_for(sandbox))
    started(ed, sandbox, "drawn")
    # Not idle before its prompt is drawn; model text that looks like a dialog is not one.
    screen.write_text("Allow execution of everything, said the model\n" + INPUT_BOX)
    wait_state(ed, "idle", "drawn")
    screen.write_text("⠋ Thinking... (esc to cancel, 3s)\n" + INPUT_BOX)
    wait_state(ed, "working", "drawn")
    screen.write_text(
        "? Shell touch made.txt && echo made (make a file) ←\nAllow execution of: 'touch'?\n"
        "\u203a 1. Yes, allow once\n  4. No, suggest changes (esc)\n⠏ Waiting for user confirmation...\n"
    )
    wait_state(ed, "waiting", "drawn")
    wait_for(lambda: notes(ed), 30, "the waiting line")
    assert notes(ed) == ["gemini-companion: drawn asks to run: `touch made.txt && echo made (make a file)`"]
    screen.write_text("✓ Shell touch made.txt\n⠋ Thinking... (esc to cancel, 5s)\n" + INPUT_BOX)
    wait_state(ed, "working", "drawn")
    screen.write_text("Done.\n" + INPUT_BOX)
    wait_state(ed, "idle", "drawn")
    wait_for(lambda: len(notes(ed)) == 2, 30, "the finished line")
    assert notes(ed)[1] == "gemini-companion: drawn finished"
    source = "return require('gemini_companion.agents.attention').source(require('gemini_companion.agents').get(...))"
    assert ed.lua(source, "drawn") == "screen"
    assert "drawn is idle; its state comes from its screen" in checkhealth(ed)
    # The poll stops once no agent needs it.
    ed.lua("require('gemini_companion.agents').stop()")
    wait_state(ed, "gone", "drawn")
    assert states(ed)[-1] == "exited"


def test_a_moment_of_bare_input_box_after_a_dialog_is_no_turns_end(editor_factory, sandbox):
    """Between an answered dialog and the next spinner a CLI can show its input box alone, for as
    long as the machine is slow: read twice (what used to make it idle), it ends no turn and says
    nothing; the turn's end is said once, when it comes."""
    screen = sandbox.base / "screen.txt"
    screen.write_text("Done.\n" + INPUT_BOX)
    ed = editor_factory(setup_for(sandbox))
    started(ed, sandbox, "drawn")
    ed.lua(READS)
    wait_state(ed, "idle", "drawn")
    screen.write_text("⠋ Thinking... (esc to cancel, 3s)\n" + INPUT_BOX)
    wait_state(ed, "working", "drawn")
    screen.write_text(
        "? Shell make (build) ←\n\u203a 1. Yes, allow once\n  4. No (esc)\n⠏ Waiting for user confirmation...\n"
    )
    wait_state(ed, "waiting", "drawn")
    ed.lua("_G.marker = 'FLICKER'")
    screen.write_text("FLICKER: the dialog answered, no spinner yet\n" + INPUT_BOX)
    wait_for(lambda: ed.lua("return _G.reads") >= 2, 30, "the bare input box read twice")
    screen.write_text("⠋ Thinking... (esc to cancel, 0s)\n" + INPUT_BOX)
    wait_state(ed, "working", "drawn")
    screen.write_text("Made it.\n" + INPUT_BOX)
    wait_for(lambda: len(notes(ed)) == 2, 30, "the finished line")
    assert notes(ed) == ["gemini-companion: drawn asks to run: `make (build)`", "gemini-companion: drawn finished"]
    assert states(ed)[-4:] == ["working", "waiting", "working", "idle"]


STATUSLINE = """
local sl = require('gemini_companion').statusline
local ok = vim.api.nvim_eval_statusline(sl(), {}).str
return {sl(), sl({plain = true}), ok}
"""

LUALINE = """
-- The component table as :h gemini-companion-attention documents it, called as lualine calls a
-- function component (its first item, then its cond).
local component = {
  function() return require('gemini_companion').statusline({ plain = true }) end,
  cond = function() return require('gemini_companion').statusline() ~= '' end,
}
return {component.cond(), component[1]()}
"""


def test_the_statusline_in_each_state(editor_factory, sandbox, repo):
    ed = editor_factory(setup_for(sandbox))
    assert ed.lua(STATUSLINE) == ["", "", ""]
    env = started(ed, sandbox)
    seen = {}
    steps: list[tuple[str, dict[str, Any]]] = [
        ("SessionStart", {"source": "startup"}),
        ("BeforeAgent", {"prompt": "p"}),
        ("Notification", GEMINI_EXEC),
        ("AfterTool", {"tool_name": "run_shell_command"}),
    ]
    seen["starting"] = ed.lua(STATUSLINE)
    for event, payload in steps:
        hook(ed, env, "gemini", event, payload, repo)
        wait_for(lambda: ed.lua("return #_G.states") >= len(seen) + 1, 30, event)
        seen[state(ed)] = ed.lua(STATUSLINE)
    (repo / "n.txt").write_text("n\n")
    hook(ed, env, "gemini", "AfterAgent", {"prompt_response": "ok"}, repo)
    wait_for(lambda: ed.lua(STATUSLINE)[1].endswith("1 file"), 30, "the turn's files")
    seen["idle after"] = ed.lua(STATUSLINE)
    assert seen["starting"][:2] == ["%#GeminiStatusStarting#fake starting%*", "fake starting"]
    assert seen["idle"][1] == "fake idle"
    assert seen["working"][0] == "%#GeminiStatusWorking#fake working%*"
    assert seen["waiting"][:2] == ["%#GeminiStatusWaiting#fake waiting%*", "fake waiting"]
    assert seen["idle after"][0] == "%#GeminiStatusIdle#fake idle%* · %#GeminiStatusFiles#1 file%*"
    assert seen["idle after"][2] == "fake idle · 1 file"  # as drawn
    assert ed.lua(LUALINE) == [True, "fake idle · 1 file"]
    # The plain 'statusline' example of the help, as Neovim draws it.
    example = "%f %m%=%{%v:lua.require'gemini_companion'.statusline()%} %l:%c"
    drawn = ed.lua("vim.o.statusline = ... return vim.api.nvim_eval_statusline(vim.o.statusline, {}).str", example)
    assert drawn.startswith("[No Name]") and drawn.endswith("fake idle · 1 file 0:0")
    links = "return vim.tbl_map(function(g) return vim.api.nvim_get_hl(0, {name = g}).link end, {...})"
    assert ed.lua(links, "GeminiStatusWaiting", "GeminiStatusWorking") == ["DiagnosticWarn", "DiagnosticInfo"]
    ed.lua("vim.cmd('colorscheme default')")  # :hi clear drops links: they come back
    assert ed.lua(links, "GeminiStatusWaiting") == ["DiagnosticWarn"]
    # A call costs a table read: 10000 of them are a blink.
    took = ed.lua(
        "local t = vim.uv.hrtime() for _ = 1, 10000 do require('gemini_companion').statusline() end "
        "return (vim.uv.hrtime() - t) / 1e6"
    )
    assert took < 500
    ed.lua("require('gemini_companion.agents').stop()")
    wait_for(lambda: ed.lua(STATUSLINE)[1] == "fake exited · 1 file", 30, "exited in the statusline")
