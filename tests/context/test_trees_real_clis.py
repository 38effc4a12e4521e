""":'<,'>GeminiAdd over a real nvim-tree, with the real Gemini CLI and Qwen Code under a real Neovim
TUI (tmux), against the scripted model: every selected node reaches the model as exactly that file
(a folder as the folder's files), names with spaces, quotes, `%`, `#` and a leading `-` included
(a double quote only to Qwen: Gemini CLI reads no such path).
The fake agent's twin, byte for byte in every tree: test_trees.py."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from agents.tui_helpers import agent_screen, answering_seen, open_agent
from conftest import Sandbox, wait_for
from harness.fake_model import FakeModel
from harness.tui import E2E_TIMEOUT, Tui, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]

FILES = {
    "a b.txt": "MK_SPACE",
    "100%.txt": "MK_PERCENT",
    "#h.txt": "MK_HASH",
    "-flag.txt": "MK_DASH",
    "it's.txt": "MK_QUOTE",
    "sub/inner.txt": "MK_FOLDER",  # the folder `sub` is the node (Qwen sends a folder's listing)
}
# Gemini CLI 0.61 reads no path with a double quote (longer than 20 characters), neither as an
# @path nor with its read_file tool (its validatePath): only Qwen gets this one.
QWEN_ONLY = {'say "q".txt': "MK_DOUBLE_QUOTE"}
TREE = "/work/shared/fixtures/user-plugins/nvim-tree.lua"
ASKED = "which files?"


@pytest.fixture(params=["gemini", "qwen"])
def running(request: pytest.FixtureRequest, sandbox: Sandbox) -> Iterator[tuple[str, Tui, FakeModel]]:
    with answering_seen(sandbox, request.param) as running:
        yield running


def test_a_range_of_tree_nodes_reaches_the_model_as_those_files(running, sandbox):
    cli, tui, model = running
    files = {**FILES, **(QWEN_ONLY if cli == "qwen" else {})}
    for name, marker in files.items():
        path = sandbox.project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{marker}\n")
    tui.lua("vim.opt.rtp:prepend(...) require('nvim-tree').setup({}) require('nvim-tree.api').tree.open()", TREE)
    wait_for(lambda: tui.lua("return vim.api.nvim_buf_line_count(0)") == 1 + len(files), E2E_TIMEOUT, "the tree")
    open_agent(tui, cli)
    tui.ex("wincmd p")
    wait_for(lambda: tui.lua("return vim.bo.filetype") == "NvimTree", E2E_TIMEOUT, "back in the tree")
    tui.lua("vim.api.nvim_win_set_cursor(0, { 2, 0 })")  # the first node under the project's line
    tui.keys("V", "G")
    tui.ex("'<,'>GeminiAdd")
    wait_for(lambda: "flag.txt" in agent_screen(tui, cli), E2E_TIMEOUT, "the references in the prompt")
    tui.lua("require('gemini_companion.agents').send(nil, ...)", ASKED)
    shown = lambda: " ".join(agent_screen(tui, cli).split())  # noqa: E731 - the prompt wraps
    wait_for(lambda: ASKED in shown(), E2E_TIMEOUT, "the question in the prompt")

    def sent() -> str:
        with model._lock:
            return json.dumps([r["body"] for r in model.requests])

    def submitted() -> bool:
        """Enter until the turn starts (an Enter right behind a paste can be taken as a newline)."""
        if ASKED in sent():
            return True
        tui.lua("local agent = require('gemini_companion.agents').get(...) agent.provider.enter(agent)", cli)
        return False

    wait_for(submitted, E2E_TIMEOUT, "the turn")
    # A folder: Gemini sends its files' text, Qwen its listing.
    wanted = [*files.values(), "Content from ./sub/" if cli == "qwen" else "MK_FOLDER"]
    wanted.remove("MK_FOLDER")
    missing = lambda: [marker for marker in wanted if marker not in sent()]  # noqa: E731
    try:
        wait_for(lambda: not missing(), E2E_TIMEOUT, "every file's text")
    except AssertionError as err:
        raise AssertionError(f"{err}: {missing()} missing") from None
    messages = tui.nvim.api.exec2("messages", {"output": True})["output"]
    assert "GeminiAdd" not in messages, messages
