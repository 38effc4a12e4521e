"""The model's editor tools through the real CLIs: `:Gemini` starts the CLI, the CLI finds the
tools where the plugin registered them (Gemini: the user settings enable-cli writes; Qwen: the
session's defaults file), the scripted model calls `get_diagnostics` and `read_buffer`, and the
model's next request carries what Neovim answered: a diagnostic only Neovim knows, and an edit
the user has not saved."""

from __future__ import annotations

import json

import pytest

from conftest import Sandbox, wait_for
from harness.fake_model import FakeModel, Turn
from harness.tui import E2E_TIMEOUT, GEMINI_BIN, NODE22, QWEN_CLI, Tui, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]

DIAGNOSTIC = "undefined name 'greet2' (from a linter only Neovim runs)"
UNSAVED = "UNSAVED_EDIT = 'only in the buffer'"
# How each CLI names a tool of the `neovim` server (client-facts.md).
TOOL_NAME = {"gemini": "mcp_neovim_{}", "qwen": "mcp__neovim__{}"}
AGENT = {"gemini": [str(GEMINI_BIN)], "qwen": [str(NODE22), str(QWEN_CLI)]}


def declared(request: dict) -> list[str]:
    """The tool names a request offers the model (Gemini's and OpenAI's shapes)."""
    body = request["body"]
    names = [f["name"] for tool in body.get("tools", []) for f in tool.get("functionDeclarations", [])]
    return names + [t["function"]["name"] for t in body.get("tools", []) if "function" in t]


@pytest.mark.parametrize("cli", ["gemini", "qwen"])
def test_the_model_reads_diagnostics_and_unsaved_text_through_the_registered_tools(sandbox: Sandbox, cli: str):
    app = sandbox.project / "app.py"
    app.write_text("def greet(name):\n    return 'hi ' + name\n\n\ngreet2('x')\n")
    name = TOOL_NAME[cli].format
    script = [
        Turn(call=name("get_diagnostics"), args={}),
        Turn(call=name("read_buffer"), args={"path": "app.py"}),
        Turn(text="Checked the editor."),
    ]
    model = FakeModel(script)
    setup = {"agents": {cli: {"cmd": AGENT[cli]}}, "default_agent": cli, "cli_settings": "auto"}
    tui = Tui(sandbox, model.url, [str(app)], ide_enabled=False, setup=setup)
    try:
        tui.wait_running()
        # A diagnostic from a source the CLI cannot see, and an edit that is not on disk.
        tui.lua(
            "local ns = vim.api.nvim_create_namespace('e2e-lint')"
            " vim.api.nvim_buf_set_lines(0, 0, 0, false, {select(2, ...)})"
            " vim.diagnostic.set(ns, 0, {{lnum = 5, col = 0, severity = 1, source = 'e2e-lint', message = ...}})",
            DIAGNOSTIC,
            UNSAVED,
        )
        tui.ex("Gemini")
        wait_for(lambda: tui.status()["clients"], E2E_TIMEOUT, f"{cli} to connect")
        tui.ask_agent("check app.py for errors", lambda: model.requests)
        tui.wait_screen("Checked the editor.")
        # Registered by the plugin, declared to the model by name; open_file on its own server.
        first = next(r for r in model.requests if declared(r))
        assert name("get_diagnostics") in declared(first) and name("read_buffer") in declared(first)
        assert "openDiff" not in json.dumps(declared(first))  # the IDE's tools stay the IDE's
        results = json.dumps(model.tool_results(), ensure_ascii=False)
        assert DIAGNOSTIC in results, results[-3000:]
        assert "UNSAVED_EDIT" in results and "unsaved_edits" in results, results[-3000:]
        assert "UNSAVED_EDIT" not in app.read_text()  # read, never written
    finally:
        tui.close()
        model.close()
