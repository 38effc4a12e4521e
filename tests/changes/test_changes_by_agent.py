"""`:GeminiChanges {agent}`: the last turn of one agent or one session of it (`gemini@2`,
agents/instances.lua), whatever turns other sessions ended after it; `undo {agent}` takes back that
turn. Turns told by the real hook command in each session's own environment."""

from __future__ import annotations

from changes.helpers import a_turn


def test_each_session_lists_its_own_last_turn(ed, repo):
    mine = a_turn(ed, repo, lambda: (repo / "a.txt").write_text("from gemini@2\n"), agent="gemini@2")
    theirs = a_turn(ed, repo, lambda: (repo / "new.txt").write_text("from gemini\n"), agent="gemini")
    assert mine["agent"] == "gemini@2" and theirs["agent"] == "gemini"
    ed.nvim.command("GeminiChanges gemini@2")
    qf = ed.lua("return vim.fn.getqflist({title = 1, items = 1})")
    assert qf["title"] == f"Gemini changes: turn {mine['id']} (gemini@2)"
    assert [i["module"] for i in qf["items"]] == ["a.txt"]
    ed.nvim.command("GeminiChanges gemini")
    assert ed.lua("return vim.fn.getqflist({title = 1}).title") == f"Gemini changes: turn {theirs['id']} (gemini)"
    complete = "return vim.fn.getcompletion(..., 'cmdline')"
    assert ed.lua(complete, "GeminiChanges gem") == ["gemini"]
    ed.nvim.command("GeminiChanges undo gemini@2")  # that session's turn, not the last one
    assert (repo / "a.txt").read_text() == "".join(f"{n}\n" for n in range(1, 11))
    assert (repo / "new.txt").read_text() == "from gemini\n"
