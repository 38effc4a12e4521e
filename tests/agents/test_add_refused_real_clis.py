""":GeminiAdd of names no form carries exactly, with the real Gemini CLI and Qwen Code under a real
Neovim TUI (tmux), against the scripted model (agents/at_path.lua): a name with a newline or another
control character, or bytes that are not UTF-8, would reach the prompt as symbols (prompt.text); a
`"` Gemini CLI reads no file by (its @path and its read_file tool: validatePath). Those are refused
in one line naming the reason first; the other names still go, and the model gets exactly them."""

from __future__ import annotations

import json
import os

import pytest

from agents.tui_helpers import agent_screen, answering_seen, open_agent
from conftest import wait_for
from harness.tui import E2E_TIMEOUT, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]

REFUSED = {
    b"new\nline.txt": "MK_NEWLINE",
    b"ctl\x01.txt": "MK_CONTROL",
    b"tab\there.txt": "MK_TAB",
    b"bad\xff.txt": "MK_NOT_UTF8",
}
QUOTE = (b'q"x.txt', "MK_QUOTE")  # refused for Gemini; Qwen reads @./q\"x.txt as itself
ASKED = "which files?"


@pytest.fixture(params=["gemini", "qwen"])
def running(request, sandbox):
    with answering_seen(sandbox, request.param) as running:
        yield running


def test_names_that_cannot_arrive_exactly_are_refused_and_the_rest_go(running, sandbox):
    cli, tui, model = running
    files = {**REFUSED, QUOTE[0]: QUOTE[1], b"ok.txt": "MK_OK"}
    for name, marker in files.items():
        with open(os.path.join(bytes(sandbox.project), name), "w") as out:
            out.write(f"{marker}\n")
    open_agent(tui, cli)
    tui.ex("wincmd p")
    wait_for(lambda: tui.lua("return vim.bo.buftype") == "", E2E_TIMEOUT, "the editor's window")
    tui.lua("vim.cmd.GeminiAdd({ args = ..., magic = { file = false } })", list(files))
    wait_for(lambda: "ok.txt" in agent_screen(tui, cli), E2E_TIMEOUT, "the references in the prompt")
    tui.lua("require('gemini_companion.agents').send(nil, ...)", ASKED)
    wait_for(lambda: ASKED in agent_screen(tui, cli), E2E_TIMEOUT, "the question in the prompt")

    def sent() -> str:
        with model._lock:
            return json.dumps([r["body"] for r in model.requests])

    def submitted() -> bool:
        """Enter until the turn starts (a loaded machine can make Gemini take the send's Enter for
        a newline)."""
        if ASKED in sent():
            return True
        tui.lua("local agent = require('gemini_companion.agents').get(...) agent.provider.enter(agent)", cli)
        return False

    wait_for(submitted, E2E_TIMEOUT, "the turn")
    arrived = ["MK_OK"] + (["MK_QUOTE"] if cli == "qwen" else [])
    wait_for(lambda: all(marker in sent() for marker in arrived), E2E_TIMEOUT, "the files")
    refused = [marker for marker in files.values() if marker not in arrived]
    assert not [marker for marker in refused if marker in sent()], sent()
    said = [
        line for line in tui.nvim.api.exec2("messages", {"output": True})["output"].splitlines() if "GeminiAdd" in line
    ]
    assert len(said) == 1, said
    reasons = said[0].split(": ")[2]
    assert reasons.split("; ")[:2] == ["a control character", "not UTF-8"], said
    assert ('a " Gemini CLI cannot read' in reasons) == (cli == "gemini"), said
