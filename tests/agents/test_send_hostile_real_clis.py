"""Sending is only what was selected, with the real Gemini CLI and Qwen Code under a real Neovim TUI
(tmux), against the scripted model on loopback: a hostile selection in a hostilely named file is not
submitted by :GeminiSend, and with :GeminiSend! the model's next request holds exactly the selected
text (after the documented mapping, test_send_hostile.shown) and no file that an `@path` in it names.
:GeminiAdd refers to hostile names as themselves: the model gets those files, nothing a name would
expand or glob to, and nothing runs."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from agents.send_helpers import HOSTILE_LINES, HOSTILE_NAME, snippet
from agents.tui_helpers import agent_screen, one_agent, turns
from conftest import Sandbox, wait_for
from harness.fake_model import FakeModel, Turn
from harness.tui import E2E_TIMEOUT, READY, Tui, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]

SECRET = "TOPSECRET"  # in every file an @ of the selection names; never in a request

# Names a shell, Vim or a CLI could expand, glob, evaluate or read as something else (an environment
# variable, the home directory, other files, a command, one of Gemini's agents, a Qwen session).
NAMES = [
    "$HOME.md", "~x", "%", "#", "`touch pwned`", "$(touch pwned)", "a b (1).txt", "semi;colon,bang!.txt",
    "<z>&|;.txt", "session:x", "codebase_investigator", "-flag", "@at.txt",
]  # fmt: skip
# Gemini CLI reads `@path` through a case-insensitive glob (and drops a path with a double quote):
# the plugin gives such names to Gemini as plain paths; Qwen reads their `@path` as themselves.
GLOB_NAMES = ["*.txt", "a?.txt", "[x].txt", "{y,z}.txt"]
QWEN_ONLY = [*GLOB_NAMES, 'it\'s "q".txt']
DECOYS = ["a1.txt", "x.txt", "y.txt"]  # what the glob names would match


@pytest.fixture(params=["gemini", "qwen"])
def running(request: pytest.FixtureRequest, sandbox: Sandbox) -> Iterator[tuple[str, Tui, FakeModel]]:
    cli = request.param
    (sandbox.project / "secret.txt").write_text(f"{SECRET} in the workspace\n")
    (sandbox.home / ".ssh").mkdir()
    (sandbox.home / ".ssh" / "id_rsa").write_text(f"{SECRET} key\n")
    model = FakeModel([Turn(text="Seen."), Turn(text="Seen.")])
    with one_agent(sandbox, model, cli) as tui:
        yield cli, tui, model


def test_selection_and_names_reach_the_model_as_text(running, sandbox):
    cli, tui, model = running
    hostile = sandbox.project / os.fsdecode(HOSTILE_NAME)
    hostile.write_bytes(b"\n".join(HOSTILE_LINES) + b"\n")
    tui.ex("Gemini")
    wait_for(lambda: READY in agent_screen(tui, cli), E2E_TIMEOUT, f"{cli}'s prompt")
    tui.ex("wincmd p")
    wait_for(lambda: tui.lua("return vim.bo.buftype") == "", E2E_TIMEOUT, "the editor's window")
    tui.lua(
        "local b = vim.fn.bufadd(...) vim.bo[b].binary = true vim.fn.bufload(b) vim.api.nvim_set_current_buf(b)",
        bytes(hostile),
    )
    # Without !: pasted, not submitted (the next request holds this paste and the next one).
    tui.ex("GeminiSend")
    wait_for(lambda: "Pasted" in agent_screen(tui, cli), E2E_TIMEOUT, "the paste in the prompt")
    # (The focus stays in the editor's window: no `wincmd p` back to it.)
    wait_for(lambda: tui.lua("return vim.bo.buftype") == "", E2E_TIMEOUT, "the editor's window")
    tui.ex("2,3GeminiSend! go on")
    sent = wait_for(lambda: turns(cli, model, "go on"), E2E_TIMEOUT, "the snippets to reach the model")
    first = snippet(HOSTILE_NAME, f"lines 1-{len(HOSTILE_LINES)}", HOSTILE_LINES, "python")
    second = snippet(HOSTILE_NAME, "lines 2-3", HOSTILE_LINES[1:3], "python", "go on")
    assert len(sent) == 1 and [first + second] == [t for t in sent[0] if "go on" in t], sent
    assert len(turns(cli, model, "From evil")) == 1  # the first paste was never a turn of its own
    assert SECRET not in json.dumps(model.requests), "a file named by an @ in the selection was attached"

    # :GeminiAdd: each hostile name as itself.
    names = NAMES + (QWEN_ONLY if cli == "qwen" else [])
    for number, name in enumerate(NAMES + QWEN_ONLY):
        (sandbox.project / name).write_text(f"<CONTENT {number}>\n")
    for decoy in DECOYS:
        (sandbox.project / decoy).write_text("DECOY\n")
    (sandbox.base / "home.md").write_text("DECOY\n")  # $HOME.md, expanded
    folder = sandbox.project / "dir $HOME ~"
    folder.mkdir()
    (folder / "inner.txt").write_text("<CONTENT dir>\n")
    wait_for(lambda: tui.lua("return vim.bo.buftype") == "", E2E_TIMEOUT, "the editor's window")
    tui.lua("vim.cmd.GeminiAdd({ args = ..., magic = { file = false } })", [*NAMES, *GLOB_NAMES, str(folder)])
    wait_for(lambda: "@./" in agent_screen(tui, cli), E2E_TIMEOUT, "the references in the prompt")
    if cli == "qwen":
        tui.lua("vim.cmd.GeminiAdd({ args = { ... }, magic = { file = false } })", QWEN_ONLY[-1])
    else:
        messages = tui.nvim.api.exec2("messages", {"output": True})["output"]
        assert "GeminiAdd" not in messages, messages  # nothing refused: the glob names go as plain paths
    tui.lua("require('gemini_companion.agents').send(nil, 'which files?', true)")
    asked = wait_for(lambda: turns(cli, model, "which files?"), E2E_TIMEOUT, "the references to reach the model")
    text = "\n".join(asked[-1])
    read = [name for number, name in enumerate(NAMES + QWEN_ONLY) if f"<CONTENT {number}>" in text]
    assert read == names, text
    if cli == "gemini":  # for the model's read_file (test_add_names_real_clis), never an @ that globs
        assert all(f"`{name}`" in text for name in GLOB_NAMES), text
    # A directory: Gemini reads the files in it, Qwen lists it.
    assert ("<CONTENT dir>" if cli == "gemini" else "inner.txt") in text, text
    assert "DECOY" not in text and SECRET not in text, text
    assert not (sandbox.project / "pwned").exists() and not (sandbox.home / "pwned").exists()
