"""Several sessions of one agent entry (agents/instances.lua): `:Gemini gemini new` starts `gemini@2`
with its own token, state, statusline entry and reviews; `:Gemini` with several running asks which;
`:Gemini resume|sessions` while one runs asks beside it or in its place. The agent is
tests/harness/fake_agent.py behind a script that records its arguments, each session in files of its own
(named by its own GEMINI_CLI_IDE_PID); the real CLIs side by side: test_instances_real_cli.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import HARNESS, TIMEOUT, Editor, NodeClient, Sandbox, wait_for

LEAVE_TERMINALS = """for _, w in ipairs(vim.api.nvim_list_wins()) do
  if vim.bo[vim.api.nvim_win_get_buf(w)].buftype == '' then return vim.api.nvim_set_current_win(w) end
end"""
RUNNING = "return vim.tbl_map(function(a) return a.name end, require('gemini_companion.agents').list())"


def setup_for(sandbox: Sandbox) -> dict[str, Any]:
    """One agent entry, `gemini`: each session records its arguments and the bytes it is sent."""
    script = sandbox.base / "agent.sh"
    script.write_text(
        "#!/bin/sh\n"
        'out="$AGENTS_DIR/$GEMINI_CLI_IDE_PID"\n'
        '{ for a in "$@"; do printf "%s\\n" "$a"; done; echo "<end>"; } > "$out.args"\n'
        f'FAKE_AGENT_LOG="$out.log" exec {sys.executable} {HARNESS / "fake_agent.py"}\n'
    )
    script.chmod(0o755)
    (sandbox.base / "agents").mkdir()
    agent = {"cmd": [str(script)], "env": {"AGENTS_DIR": str(sandbox.base / "agents")}}
    return {"agents": {"gemini": agent}, "default_agent": "gemini", "cli_settings": "never", "resume": "never"}


def own(editor: Editor, sandbox: Sandbox, name: str, kind: str) -> Path:
    """A session's own file (`args`, `log`, `log.env`), found by the Gemini number the plugin gave it."""
    number = wait_for(
        lambda: editor.lua("local a = require('gemini_companion.agents').get(...) return a and a.gemini_pid", name),
        TIMEOUT,
        f"{name} to start",
    )
    return sandbox.base / "agents" / f"{number}.{kind}"


def args_of(editor: Editor, sandbox: Sandbox, name: str) -> list[str]:
    path = own(editor, sandbox, name, "args")
    wait_for(lambda: path.exists() and path.read_text().endswith("<end>\n"), TIMEOUT, f"{name}'s arguments")
    return path.read_text().split("\n")[:-2]


def answers(clients: dict[str, NodeClient], heard: dict[str, list[str]]) -> dict[str, list[str]]:
    """The review answers (`ide/diff*` notifications) each session's client has been sent so far."""
    for name, client in clients.items():
        while not client.events.empty():
            event = client.events.get_nowait()
            if event["event"] == "notification" and event["method"].startswith("ide/diff"):
                heard[name].append(event["method"])
    return heard


def running(editor: Editor) -> list[str]:
    return editor.lua(RUNNING)


def stub_select(editor: Editor, *answers: int | None) -> None:
    """vim.ui.select, its questions answered in turn with the `answer`th item (None: <Esc>); what the
    last one showed is kept."""
    editor.lua(
        """
        local answers = vim.tbl_map(function(a) return a == vim.NIL and 0 or a end, {...})
        _G.shown = {}
        vim.ui.select = function(items, opts, on_choice)
          _G.shown = { prompt = opts.prompt, items = vim.tbl_map(opts.format_item or tostring, items) }
          local answer = table.remove(answers, 1) or 0
          vim.schedule(function() on_choice(items[answer], answer ~= 0 and answer or nil) end)
        end
        """,
        *answers,
    )


def shown(editor: Editor) -> dict[str, Any]:
    return wait_for(lambda: editor.lua("return _G.shown.items and _G.shown"), TIMEOUT, "a question")


@pytest.fixture
def ed(editor_factory, sandbox) -> Editor:
    editor = editor_factory(setup_for(sandbox))
    editor.wait_state("running")
    return editor


def two_sessions(ed: Editor) -> None:
    ed.nvim.command("Gemini")
    wait_for(lambda: running(ed) == ["gemini"], TIMEOUT, "gemini")
    ed.nvim.command("Gemini gemini new")
    wait_for(lambda: running(ed) == ["gemini", "gemini@2"], TIMEOUT, "gemini@2 beside gemini")


def test_new_starts_a_session_of_its_own_and_each_review_is_its_own(ed, sandbox):
    two_sessions(ed)
    env = {}
    for name in running(ed):
        path = wait_for(lambda n=name: (p := own(ed, sandbox, n, "log.env")).exists() and p, TIMEOUT, f"{name} up")
        env[name] = json.loads(path.read_text())
    assert env["gemini"]["GEMINI_CLI_IDE_PID"] != env["gemini@2"]["GEMINI_CLI_IDE_PID"]
    assert env["gemini"]["GEMINI_CLI_IDE_AUTH_TOKEN"] != env["gemini@2"]["GEMINI_CLI_IDE_AUTH_TOKEN"]
    assert args_of(ed, sandbox, "gemini@2") == []  # `new` is the plugin's word, never the CLI's
    statusline = "return require('gemini_companion').statusline({plain = true})"
    entries = lambda: [part.split(" ")[0] for part in ed.lua(statusline).split(" · ")]  # noqa: E731
    wait_for(lambda: entries() == ["gemini", "gemini@2"], TIMEOUT, "a statusline entry each")
    clients = {name: NodeClient("gemini_client.mjs", env[name], sandbox.project) for name in env}
    try:
        for client in clients.values():
            assert client.call("connect")["status"] == "connected"
        labels = {"gemini (Gemini CLI 0.61.0)", "gemini@2 (Gemini CLI 0.61.0)"}
        wait_for(lambda: {c["label"] for c in ed.status()["clients"]} == labels, TIMEOUT, "a client each")
        files = {name: sandbox.project / f"{name.replace('@', '-')}.txt" for name in clients}
        for name, client in clients.items():
            files[name].write_text("old\n")
            client.send("openDiff", filePath=str(files[name]), newContent=f"new from {name}\n")
        wait_for(lambda: len(ed.status()["diffs"]) == 2, TIMEOUT, "both reviews")
        by_agent = {d["agent"]: Path(d["file"]).name for d in ed.status()["diffs"]}
        assert by_agent == {"gemini (Gemini CLI 0.61.0)": "gemini.txt", "gemini@2 (Gemini CLI 0.61.0)": "gemini-2.txt"}
        heard: dict[str, list[str]] = {name: [] for name in clients}
        ed.nvim.command("GeminiAccept all gemini@2")
        wait_for(lambda: answers(clients, heard)["gemini@2"] == ["ide/diffAccepted"], TIMEOUT, "gemini@2's accept")
        assert [d["agent"] for d in ed.status()["diffs"]] == ["gemini (Gemini CLI 0.61.0)"]  # gemini's still pending
        assert heard["gemini"] == []
        ed.nvim.command("GeminiReject all gemini")
        wait_for(lambda: answers(clients, heard)["gemini"] == ["ide/diffRejected"], TIMEOUT, "gemini's reject")
        assert ed.status()["diffs"] == [] and heard["gemini@2"] == ["ide/diffAccepted"]
    finally:
        for client in clients.values():
            client.close()
    # Stopping one never touches the other: its process, terminal and state go on.
    other = ed.lua("local a = require('gemini_companion.agents').get('gemini') return {a.pid, a.buf}")
    ed.lua("require('gemini_companion.agents').stop('gemini@2')")
    wait_for(lambda: running(ed) == ["gemini"], TIMEOUT, "gemini@2 to stop")
    assert ed.lua("local a = require('gemini_companion.agents').get('gemini') return {a.pid, a.buf}") == other
    assert ed.lua("return vim.api.nvim_buf_is_valid(...)", other[1])


def test_send_and_add_name_a_session(ed, sandbox):
    two_sessions(ed)
    ed.nvim.command("GeminiSend gemini@2 only for the second")
    second = own(ed, sandbox, "gemini@2", "log")
    wait_for(lambda: second.exists() and b"only for the second" in second.read_bytes(), TIMEOUT, "the text in gemini@2")
    (sandbox.project / "notes.txt").write_text("x\n")
    ed.nvim.command("GeminiAdd gemini@2 notes.txt")
    wait_for(lambda: b"notes.txt" in second.read_bytes(), TIMEOUT, "the reference in gemini@2")
    first = own(ed, sandbox, "gemini", "log")
    assert not first.exists() or b"second" not in first.read_bytes()


def test_gemini_with_several_sessions_asks_which(ed, sandbox):
    two_sessions(ed)
    ed.lua(LEAVE_TERMINALS)  # in neither terminal
    stub_select(ed, 2)
    ed.nvim.command("Gemini")
    asked = shown(ed)
    assert asked["prompt"] == "gemini: which session?"
    assert [item.split(" · ")[0] for item in asked["items"]] == ["gemini", "gemini@2", "new gemini session"]
    gemini_2 = ed.lua("return require('gemini_companion.agents').get('gemini@2').buf")
    wait_for(lambda: ed.lua("return vim.api.nvim_get_current_buf()") == gemini_2, TIMEOUT, "gemini@2 focused")
    # Focused in one of them: `:Gemini` hides it, as with one.
    ed.nvim.command("Gemini gemini")
    assert ed.lua("return vim.fn.bufwinid(...)", gemini_2) == -1 and running(ed) == ["gemini", "gemini@2"]
    # Esc: nothing.
    stub_select(ed, None)
    ed.nvim.command("Gemini")
    shown(ed)
    assert running(ed) == ["gemini", "gemini@2"] and ed.lua("return vim.bo.buftype") == ""
    stub_select(ed, 3)  # a new one
    ed.nvim.command("Gemini")
    wait_for(lambda: running(ed) == ["gemini", "gemini@2", "gemini@3"], TIMEOUT, "gemini@3")


@pytest.mark.parametrize("verb", ["resume", "sessions"])
@pytest.mark.parametrize(("answer", "expected"), [(1, "beside"), (2, "in place"), (3, "nothing"), (None, "nothing")])
def test_resume_while_a_session_runs_asks_beside_or_in_its_place(editor_factory, sandbox, verb, answer, expected):
    from agents.sessions_helpers import gemini_chats

    gemini_chats(sandbox)
    sandbox.env["GEMINI_CLI_HOME"] = str(sandbox.home)
    ed = editor_factory(setup_for(sandbox))
    ed.wait_state("running")
    ed.nvim.ui_attach(100, 30, ext_linegrid=True)  # someone to ask
    ed.nvim.command("Gemini")
    first = args_of(ed, sandbox, "gemini")
    pid = ed.lua("return require('gemini_companion.agents').get('gemini').pid")
    stub_select(ed, *([1] if verb == "sessions" else []), answer)  # sessions: the newest conversation first
    ed.nvim.command(f"Gemini {verb}")
    asked = wait_for(lambda: "running" in (ed.lua("return _G.shown.prompt") or "") and shown(ed), TIMEOUT, "asked")
    assert asked["prompt"] == "gemini is running: resume beside it or in its place?"
    assert asked["items"] == ["Beside it: a new gemini session", "In its place: stop gemini, then resume", "Cancel"]
    resumed = ["--resume", "latest"] if verb == "resume" else ["--resume", "a77ccaec-7cf5-43f0-a37e-b58a68fbc499"]
    if expected == "beside":
        assert args_of(ed, sandbox, "gemini@2") == resumed
        assert ed.lua("return require('gemini_companion.agents').get('gemini').pid") == pid
    elif expected == "in place":
        wait_for(
            lambda: ed.lua("local a = require('gemini_companion.agents').get('gemini') return a and a.pid ~= ...", pid),
            TIMEOUT,
            "gemini started again",
        )
        assert args_of(ed, sandbox, "gemini") == resumed and running(ed) == ["gemini"]
    else:
        ed.lua("vim.wait(200)")  # an answer acts at once (scheduled): give a wrong one its chance
        assert running(ed) == ["gemini"] and args_of(ed, sandbox, "gemini") == first
        assert ed.lua("return require('gemini_companion.agents').get('gemini').pid") == pid


def test_completion_offers_new_and_the_running_sessions(ed):
    complete = "return vim.fn.getcompletion(..., 'cmdline')"
    assert ed.lua(complete, "Gemini gemini ") == ["new"]
    two_sessions(ed)
    assert ed.lua(complete, "Gemini ") == ["resume", "sessions", "gemini", "qwen", "gemini@2"]
    assert ed.lua(complete, "Gemini resume ") == ["gemini", "qwen", "gemini@2"]
    assert ed.lua(complete, "GeminiSend g") == ["gemini", "gemini@2"]
    assert ed.lua(complete, "GeminiSend gemini ") == []
    assert ed.lua(complete, "GeminiPrompt gemini@") == ["gemini@2"]


def test_gemini_means_the_one_session_running_else_the_entry(ed):
    two_sessions(ed)
    ed.lua("require('gemini_companion.agents').stop('gemini')")
    wait_for(lambda: running(ed) == ["gemini@2"], TIMEOUT, "gemini to stop")
    ed.lua(LEAVE_TERMINALS)
    ed.nvim.command("Gemini gemini")  # the one running: shown, nothing started
    gemini_2 = ed.lua("return require('gemini_companion.agents').get('gemini@2').buf")
    assert ed.lua("return vim.api.nvim_get_current_buf()") == gemini_2 and running(ed) == ["gemini@2"]
    ed.lua("require('gemini_companion.agents').stop('gemini@2')")
    wait_for(lambda: running(ed) == [], TIMEOUT, "gemini@2 to stop")
    ed.nvim.command("Gemini")  # gemini@2 was used last, and has ended: the entry starts, not gemini@2
    wait_for(lambda: running(ed) == ["gemini"], TIMEOUT, "gemini to start")


def test_a_conversation_open_in_a_session_is_not_started_twice(editor_factory, sandbox):
    from agents.sessions_helpers import gemini_chats

    gemini_chats(sandbox)
    sandbox.env["GEMINI_CLI_HOME"] = str(sandbox.home)
    ed = editor_factory(setup_for(sandbox))
    ed.wait_state("running")
    ed.nvim.ui_attach(100, 30, ext_linegrid=True)
    stub_select(ed, 2)  # the second newest conversation, started by id
    ed.nvim.command("Gemini sessions")
    resumed = args_of(ed, sandbox, "gemini")
    assert resumed[0] == "--resume" and len(resumed[1]) == 36
    stub_select(ed, 2, 1)  # the same one again; were it asked, "Beside it"
    ed.nvim.command("Gemini sessions")
    wait_for(lambda: "gemini has that conversation open" in ed.messages(), TIMEOUT, "said")
    assert "running" not in (ed.lua("return _G.shown.prompt") or "") and running(ed) == ["gemini"]
    # Its SessionStart names the conversation a session has (a new one, or `--resume latest`).
    ed.lua(
        "require('gemini_companion.agents.attention').event(...)",
        {"agent": "gemini", "hook_event_name": "SessionStart", "session_id": "a77ccaec-7cf5-43f0-a37e-b58a68fbc499"},
    )
    stub_select(ed, 1, 1)  # the newest: now gemini's
    ed.nvim.command("Gemini sessions")
    wait_for(lambda: ed.messages().count("gemini has that conversation open") == 2, TIMEOUT, "said again")
    assert running(ed) == ["gemini"]
