"""The model's editor tools over MCP (their own endpoint), against a real language server
(python-lsp-server with pyflakes) attached in a real Neovim, on a small workspace with a
deliberate error."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import PYLSP, PYLSP_BIN, Editor, Sandbox, wait_for
from harness.mcp_raw import RawSession, ToolsClient

APP = """import helper


def greet(name):
    return helper.shout(name) + undefined_thing


greet("x")
"""
HELPER = '''def shout(text):
    """Make text loud."""
    return text.upper()
'''
# What the model must see: written out here, not imported, so a renamed tool fails the test.
TOOLS = set(
    "get_diagnostics get_open_buffers read_buffer lsp_definition lsp_references lsp_hover"
    " lsp_document_symbols lsp_workspace_symbols open_file".split()
)


@pytest.fixture
def project(sandbox: Sandbox) -> Path:
    (sandbox.project / "app.py").write_text(APP)
    (sandbox.project / "helper.py").write_text(HELPER)
    return sandbox.project


@pytest.fixture
def ed(editor_factory, project) -> Editor:
    editor = editor_factory()
    editor.wait_state("running")
    editor.lua(PYLSP, PYLSP_BIN)
    editor.nvim.command(f"edit {project / 'app.py'}")
    wait_for(lambda: editor.lua("return #vim.diagnostic.get(0)") > 0, 60, "pylsp's diagnostics")
    return editor


@pytest.fixture
def tools(ed) -> ToolsClient:
    return ToolsClient(ed.status())


def test_the_endpoint_lists_the_editor_tools_and_nothing_of_the_ide(ed, tools):
    listed = tools.session.call("tools/list", request_id=99)["result"]["tools"]
    assert {t["name"] for t in listed} == TOOLS
    ide = ed.status()
    ide_token = ide["tools"]["headers"]["Authorization"]
    # The tools' token does not open the IDE endpoint, nor an IDE token the tools'.
    wrong = RawSession(ide["port"], ide_token.removeprefix("Bearer "))
    assert wrong.post_raw(b"{}")[0] == 403
    gemini_token = ed.env("GEMINI_CLI_IDE_AUTH_TOKEN") or ""
    assert RawSession(ide["port"], gemini_token, "/mcp/editor").post_raw(b"{}")[0] == 403
    assert ed.status()["clients"] == []  # a model's session is no IDE client


def test_diagnostics(tools):
    found = tools("get_diagnostics")
    undefined = [d for d in found["diagnostics"] if "undefined_thing" in d["message"]]
    assert undefined and undefined[0]["path"] == "app.py" and undefined[0]["line"] == 5
    assert undefined[0]["severity"] == "error" and undefined[0]["source"]
    assert tools("get_diagnostics", path="app.py", severity="error")["count"] >= 1
    assert tools("get_diagnostics", path="helper.py")["diagnostics"] == []
    assert "severity must be one of" in tools.refused("get_diagnostics", severity="fatal")


def test_open_buffers_and_unsaved_text(ed, tools, project):
    ed.lua("vim.api.nvim_buf_set_lines(0, 1, 2, false, {'# unsaved'})")
    buffers = tools("get_open_buffers")["buffers"]
    assert [(b["path"], b["modified"], b["current"], b["filetype"]) for b in buffers] == [
        ("app.py", True, True, "python")
    ]
    read = tools("read_buffer", path="app.py", start_line=1, end_line=3)
    assert read["text"] == "import helper\n# unsaved\n" and read["unsaved_edits"] is True
    assert read["line_count"] == 8 and (read["start_line"], read["end_line"]) == (1, 3)
    from_disk = tools("read_buffer", path=str(project / "helper.py"))
    assert from_disk["text"] == HELPER.rstrip("\n") and from_disk["open_in_editor"] is False
    assert from_disk["unsaved_edits"] is False


def test_language_server_answers(tools):
    definition = tools("lsp_definition", path="app.py", line=5, character=19)  # helper.sh|out
    assert [(d["path"], d["line"]) for d in definition["definitions"]] == [("helper.py", 1)]
    assert definition["definitions"][0]["text"] == "def shout(text):"
    references = tools("lsp_references", path="app.py", line=4, character=5)  # greet
    assert references["count"] == 2 and {r["line"] for r in references["references"]} == {4, 8}
    assert "Make text loud" in tools("lsp_hover", path="app.py", line=5, character=19)["hover"]
    symbols = tools("lsp_document_symbols", path="app.py")["symbols"]
    assert ("greet", "Function", 4) in [(s["name"], s["kind"], s["line"]) for s in symbols]


def test_workspace_symbols_or_a_clear_reason(tools):
    result = tools.raw("lsp_workspace_symbols", query="shout")
    if result.get("isError"):  # pylsp without a workspace-symbol provider
        assert "workspace/symbol" in result["content"][0]["text"]
    else:
        names = [s["name"] for s in json.loads(result["content"][0]["text"])["symbols"]]
        assert "shout" in names


def test_no_language_server_says_which(tools, project):
    (project / "notes.txt").write_text("plain\n")
    assert "no language server is attached" in tools.refused("lsp_hover", path="notes.txt", line=1, character=1)


def test_paths_are_confined_to_the_workspace(tools, project, tmp_path):
    outside = tmp_path / "secret.py"
    outside.write_text("SECRET = 1\n")
    os.symlink(outside, project / "escape.py")
    for path in (str(outside), "../secret.py", "escape.py", "/etc/passwd"):
        assert "is outside the workspace" in tools.refused("read_buffer", path=path), path
    assert "is outside the workspace" in tools.refused("lsp_document_symbols", path=str(outside))
    assert "unknown argument 'content'" in tools.refused("read_buffer", path="app.py", content="x")
    assert "line must be an integer >= 1" in tools.refused("lsp_hover", path="app.py", line=0, character=1)
    assert "missing argument 'path'" in tools.refused("read_buffer")


def test_open_file_shows_a_location_without_taking_focus(ed, tools, project):
    ed.nvim.command("botright vsplit | terminal")
    agent_window = ed.lua("return vim.api.nvim_get_current_win()")
    opened = tools("open_file", path="helper.py", line=3)
    assert opened == {"opened": "helper.py", "line": 3}
    assert ed.lua("return vim.api.nvim_get_current_win()") == agent_window
    shown = ed.lua(
        "for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do"
        " local b = vim.api.nvim_win_get_buf(w)"
        " if vim.api.nvim_buf_get_name(b):match('helper.py$') then return vim.api.nvim_win_get_cursor(w)[1] end end"
    )
    assert shown == 3
