""":GeminiAdd of names no form carries exactly, with the real Gemini CLI and Qwen Code under a real
Neovim TUI (tmux), against the scripted model (agents/at_path.lua): a name with a newline or another
control character, or bytes that are not UTF-8, would reach the prompt as symbols (prompt.text); a
`"` Gemini CLI reads no file by (its @path and its read_file tool: validatePath). Those are refused
in one line naming the reason first; the other names still go, and the model gets exactly them."""

from __future__ import annotations

import os

import pytest

from agents.tui_helpers import add_and_ask, answering_seen, open_agent
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
    sent = add_and_ask(tui, cli, model, list(files), "ok.txt", ASKED)
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
