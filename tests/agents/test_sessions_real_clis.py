"""Conversations that come back, end to end with the real Gemini CLI and Qwen Code (scripted model):
two conversations in two Neovims; a third Neovim asks once (`resume = 'ask'`, answered in Neovim)
and resumes the latest; a fourth lists both with `:Gemini sessions` and resumes the older one by id.
The model's next request carries exactly the chosen conversation.

Gemini CLI 0.61.0 loses a conversation resumed in another minute than its file's name (an orphan
file; sessions.lua `sweep`): the sessions' files are renamed to an earlier minute first, so the
resume here meets the bug without waiting a minute, and the real `gemini --list-sessions` (which
sweeps what it takes for corrupted) runs before the fourth Neovim lists.
(tests/agents/test_attention_facts_real_clis.py shows the CLIs' own resume flags; this drives the commands.)"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import Sandbox, wait_for
from harness.fake_model import FakeModel, Turn
from harness.tui import E2E_TIMEOUT, GEMINI_BIN, NODE22, QWEN_CLI, Tui, terminal_env, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]

COMMAND = {"gemini": [str(GEMINI_BIN)], "qwen": [str(NODE22), str(QWEN_CLI)]}
PROMPTS = ["first topic alpha", "second topic beta", "third topic gamma", "fourth topic delta"]


class Model(FakeModel):
    """Answers the latest of PROMPTS a request carries (the CLIs' side calls, e.g. Qwen's session
    title, take turns too: a fixed script would drift)."""

    def _next_turn(self, body: dict[str, Any]) -> Turn:
        text = json.dumps(body)
        latest = max(PROMPTS, key=text.rfind)
        return Turn(text=f"answer to {latest}" if latest in text else "Done.")


def asked(model: FakeModel, text: str) -> list[str]:
    """The bodies of the model requests that carry `text` (a prompt the user typed)."""
    return [body for body in (json.dumps(r["body"]) for r in model.requests) if text in body]


def neovim(
    sandbox: Sandbox, cli: str, model: FakeModel, name: str, resume: str = "never", files: list[str] | None = None
) -> Tui:
    setup = {"agents": {cli: {"cmd": COMMAND[cli]}}, "default_agent": cli, "cli_settings": "auto", "resume": resume}
    tui = Tui(sandbox, model.url, files or [], name=name, ide_enabled=False, setup=setup)
    tui.wait_running()
    return tui


def turn(tui: Tui, model: FakeModel, cli: str, prompt: str) -> None:
    """One prompt to the agent the plugin started (connected with no keystroke), answered, told by
    the turn hooks (listed for :GeminiChanges)."""
    wait_for(lambda: tui.status()["clients"], E2E_TIMEOUT, f"{cli} to connect with no keystroke in it")
    tui.ask_agent(prompt, lambda: asked(model, prompt))
    tui.wait_screen(f"answer to {prompt}")
    turns = "return vim.tbl_map(function(t) return t.agent end, require('gemini_companion.changes').turns)"
    wait_for(lambda: cli in tui.lua(turns), E2E_TIMEOUT, "the turn to end through the hooks")


def pick(tui: Tui, text: str) -> None:
    """Answer the built-in vim.ui.select (an inputlist on screen) with the item that shows `text`."""
    screen = tui.wait_screen(text)
    number = re.search(rf"^(\d+): .*{re.escape(text)}", screen, re.MULTILINE)
    assert number, screen
    tui.type(number.group(1))
    tui.keys("Enter")


def gemini_chats(sandbox: Sandbox) -> Path:
    projects = json.loads((sandbox.home / ".gemini" / "projects.json").read_text())["projects"]
    return sandbox.home / ".gemini" / "tmp" / projects[str(sandbox.project)] / "chats"


def gemini_listed(sandbox: Sandbox, model: FakeModel) -> str:
    env = terminal_env(sandbox, model.url)
    run = subprocess.run(
        [str(GEMINI_BIN), "--list-sessions"], env=env, cwd=sandbox.project, capture_output=True, text=True, timeout=120
    )
    return run.stdout


@pytest.mark.parametrize("cli", ["gemini", "qwen"])
def test_conversations_come_back(sandbox, cli):
    model = Model([])
    try:
        for prompt, name in zip(PROMPTS[:2], ("first", "second"), strict=True):
            tui = neovim(sandbox, cli, model, name)
            try:
                tui.ex(f"Gemini {cli}")
                turn(tui, model, cli, prompt)
            finally:
                tui.close()  # the CLI goes with Neovim, as on :qa
        if cli == "gemini":  # named for an earlier minute: the resume below makes Gemini's orphan
            for file in gemini_chats(sandbox).iterdir():
                file.rename(file.with_name(re.sub(r"\d{4}-\d\d-\d\dT\d\d-\d\d", "2026-01-01T00-00", file.name)))

        # resume = 'ask': the first :Gemini asks, in Neovim; the answer resumes the latest.
        tui = neovim(sandbox, cli, model, "third", resume="ask")
        try:
            tui.ex("Gemini")
            tui.wait_screen("resume your last conversation here?")
            pick(tui, "Resume:")
            turn(tui, model, cli, PROMPTS[2])
            carried = asked(model, PROMPTS[2])
            assert carried and all(PROMPTS[1] in body and PROMPTS[0] not in body for body in carried)
            if cli == "gemini":  # the orphan went: one file per session again
                chats = gemini_chats(sandbox)
                names = lambda: [f.name[-14:] for f in chats.iterdir()]  # noqa: E731 - <uuid8>.jsonl
                wait_for(lambda: len(names()) == len(set(names())) == 2, E2E_TIMEOUT, f"the orphan gone: {names()}")
        finally:
            tui.close()
        if cli == "gemini":  # the CLI's own next start no longer deletes the resumed conversation
            assert len(re.findall(r"^\s+\d+\. ", gemini_listed(sandbox, model), re.MULTILINE)) == 2

        # :Gemini sessions lists both earlier conversations; the older one is resumed by its id.
        tui = neovim(sandbox, cli, model, "fourth")
        try:
            tui.ex("Gemini sessions")
            screen = tui.wait_screen(f"Resume a {cli} conversation")
            screen = tui.wait_screen(PROMPTS[0])
            assert PROMPTS[1] in screen
            pick(tui, PROMPTS[0])
            turn(tui, model, cli, PROMPTS[3])
            carried = asked(model, PROMPTS[3])
            assert carried and all(PROMPTS[0] in body and PROMPTS[1] not in body for body in carried)
        finally:
            tui.close()
    finally:
        model.close()


LISTED = """
local out
require('gemini_companion.agents.sessions').list(..., function(list, err) out = list or err end)
vim.wait(60000, function() return out ~= nil end)
return type(out) == 'table' and vim.tbl_map(require('gemini_companion.agents.sessions').format, out) or out
"""


def first_conversation(sandbox: Sandbox, cli: str, model: FakeModel) -> None:
    """One conversation, in IDE mode with a file open: the CLI sends the editor's context first."""
    (sandbox.project / "notes.txt").write_text("some notes\n")
    tui = neovim(sandbox, cli, model, "first", files=["notes.txt"])
    try:
        tui.ex(f"Gemini {cli}")
        turn(tui, model, cli, PROMPTS[0])
        assert any("editor context" in body for body in asked(model, PROMPTS[0]))
    finally:
        tui.close()


@pytest.mark.parametrize("cli", ["gemini", "qwen"])
def test_a_session_is_titled_by_what_the_user_asked(sandbox, cli):
    """The CLI's first user message is the editor's context, not the user's words: the list shows
    the prompt typed."""
    model = Model([])
    try:
        first_conversation(sandbox, cli, model)
        tui = neovim(sandbox, cli, model, "second", files=["notes.txt"])
        try:
            listed = tui.lua(LISTED, cli)
            assert len(listed) == 1 and PROMPTS[0] in listed[0] and "editor context" not in listed[0], listed
        finally:
            tui.close()
    finally:
        model.close()


@pytest.mark.parametrize("cli", ["gemini", "qwen"])
def test_resume_while_the_resumed_agent_runs_asks_where_and_esc_changes_nothing(sandbox, cli):
    """`:Gemini resume` again right after `:Gemini resume`: a question that stays on screen asks
    whether the conversation starts beside the running agent or in its place (the agent's terminal
    was entered after it: `-- TERMINAL --` hid the old one-line answer); <Esc> changes nothing: the
    same process runs on, no second session starts (agents/instances.lua). (`:Gemini sessions` asks
    the same after the pick, unless the pick is the conversation the agent has open: the one here.)"""
    model = Model([])
    try:
        first_conversation(sandbox, cli, model)
        tui = neovim(sandbox, cli, model, "second", files=["notes.txt"])
        try:
            tui.ex("Gemini resume")
            tui.wait_ready()
            agents = (
                "return vim.tbl_map(function(a) return {a.name, a.pid} end, require('gemini_companion.agents').list())"
            )
            before = tui.lua(agents)
            tui.ex("Gemini resume")
            tui.wait_screen(f"{cli} is running: resume beside it or in its place?")
            tui.wait_screen("In its place: stop")  # not a flash: it waits for the answer
            tui.keys("Escape")
            wait_for(lambda: "beside it or in its place" not in tui.screen(), E2E_TIMEOUT, "the question to go")
            assert tui.lua("return vim.api.nvim_get_mode().mode") != "t"
            assert tui.lua(agents) == before and len(before) == 1
        finally:
            tui.close()
    finally:
        model.close()


def test_the_conversation_qwen_has_open_is_not_started_beside_it(sandbox):
    """Qwen's SessionStart names the conversation `--continue` resumed: picking that one from
    `:Gemini sessions` says which session has it open, and starts nothing (two CLIs on one file)."""
    model = Model([])
    try:
        first_conversation(sandbox, "qwen", model)
        tui = neovim(sandbox, "qwen", model, "second", files=["notes.txt"])
        try:
            tui.ex("Gemini resume")
            tui.wait_ready()
            pids = "return vim.tbl_map(function(a) return a.pid end, require('gemini_companion.agents').list())"
            before = tui.lua(pids)
            tui.ex("Gemini sessions")
            tui.wait_screen("Resume a qwen conversation")  # the list (the prompt may be in the terminal too)
            pick(tui, PROMPTS[0])
            screen = tui.wait_screen("qwen has that conversation open: :Gemini qwen shows it")
            assert "beside it or in its place" not in screen
            tui.keys("Enter")  # the list's hit-enter prompt, as a user would
            wait_for(lambda: "Press ENTER" not in tui.screen(), E2E_TIMEOUT, "the prompt answered")
            assert tui.lua(pids) == before
        finally:
            tui.close()
    finally:
        model.close()
