"""Two sessions of the real `gemini` side by side (`:Gemini gemini new`, agents/instances.lua), in a
Neovim TUI under tmux with the scripted model: each proposes an edit, each review is its own (one
accepted, the other rejected: the right files), each turn lists its own files, each has its own
statusline entry, and stopping one leaves the other running."""

from __future__ import annotations

import pytest

from agents.tui_helpers import COMMANDS, agent_screen, neovim_tui
from conftest import Sandbox, git, wait_for
from harness.fake_model import FakeModel, Turn
from harness.tui import E2E_TIMEOUT, READY, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]

LABEL = {"gemini": "gemini (Gemini CLI 0.61.0)", "gemini@2": "gemini@2 (Gemini CLI 0.61.0)"}
TURNS = "return require('gemini_companion.changes').turns"
STATUSLINE = "return require('gemini_companion').statusline({plain = true})"


def edit(path: str, old: str, new: str) -> Turn:
    args = {"file_path": path, "instruction": f"{old} to {new}", "old_string": old, "new_string": new}
    return Turn(call="replace", args=args)


def test_two_gemini_sessions_side_by_side_each_with_its_own_review(sandbox: Sandbox):
    project = sandbox.project
    git(project, "init", "-q")
    (project / "a.txt").write_text("one\n")
    (project / "b.txt").write_text("two\n")
    model = FakeModel([edit(str(project / "a.txt"), "one", "ONE"), edit(str(project / "b.txt"), "two", "TWO")])
    setup = {"agents": {"gemini": {"cmd": COMMANDS["gemini"]}}, "default_agent": "gemini", "cli_settings": "auto"}
    with neovim_tui(sandbox, model, setup) as tui:
        tui.ex("Gemini")
        wait_for(lambda: READY in agent_screen(tui, "gemini"), E2E_TIMEOUT, "gemini's prompt")
        tui.ex("Gemini gemini new")
        wait_for(lambda: READY in agent_screen(tui, "gemini@2"), E2E_TIMEOUT, "gemini@2's prompt")
        clients = lambda: {c["label"] for c in tui.status()["clients"]}  # noqa: E731
        wait_for(lambda: set(LABEL.values()) <= clients(), E2E_TIMEOUT, "both sessions connected")

        send = "local name, text = ... require('gemini_companion.agents').send(name, text, true)"
        tui.lua(send, "gemini", "change one to ONE in a.txt")
        wait_for(lambda: len(tui.status()["diffs"]) == 1, E2E_TIMEOUT, "gemini's review")
        tui.lua(send, "gemini@2", "change two to TWO in b.txt")
        wait_for(lambda: len(tui.status()["diffs"]) == 2, E2E_TIMEOUT, "gemini@2's review")
        reviews = {d["agent"]: d["file"] for d in tui.status()["diffs"]}
        assert reviews == {LABEL["gemini"]: str(project / "a.txt"), LABEL["gemini@2"]: str(project / "b.txt")}
        tabs = (
            "return vim.tbl_map(function(t) return vim.t[t].gemini_companion_agent or '' end,"
            " vim.api.nvim_list_tabpages())"
        )
        assert set(LABEL.values()) <= set(tui.lua(tabs))  # each review's tab names its session
        entries = lambda: [part.split(" ")[0] for part in tui.lua(STATUSLINE).split(" · ")]  # noqa: E731
        wait_for(lambda: entries()[:2] == ["gemini", "gemini@2"], E2E_TIMEOUT, "a statusline entry each")
        assert "2 reviews" in tui.lua(STATUSLINE)

        tui.ex("GeminiAccept all gemini@2")
        wait_for(lambda: (project / "b.txt").read_text() == "TWO\n", E2E_TIMEOUT, "gemini@2's edit written")
        assert [d["agent"] for d in tui.status()["diffs"]] == [LABEL["gemini"]]  # gemini's still pending
        tui.ex("GeminiReject all gemini")
        wait_for(lambda: tui.status()["diffs"] == [], E2E_TIMEOUT, "gemini's review to end")
        assert (project / "a.txt").read_text() == "one\n"

        # Each turn is its session's: gemini@2's lists b.txt, and no turn of gemini's does.
        ended = lambda: [t for t in tui.lua(TURNS) if t["agent"] == "gemini@2"]  # noqa: E731
        turn = wait_for(ended, E2E_TIMEOUT, "gemini@2's turn to end")[-1]
        assert [f["path"] for f in turn["files"]] == ["b.txt"]
        assert all(not t["files"] for t in tui.lua(TURNS) if t["agent"] == "gemini")
        tui.ex("GeminiChanges")
        title = wait_for(lambda: tui.lua("return vim.fn.getqflist({title = 1}).title"), 30, "the list")
        assert "gemini@2" in title

        # Stopping one never touches the other.
        kept = tui.lua("local a = require('gemini_companion.agents').get('gemini') return {a.pid, a.buf}")
        tui.lua("require('gemini_companion.agents').stop('gemini@2')")
        running = "return vim.tbl_map(function(a) return a.name end, require('gemini_companion.agents').list())"
        wait_for(lambda: tui.lua(running) == ["gemini"], E2E_TIMEOUT, "gemini@2 to stop")
        assert tui.lua("local a = require('gemini_companion.agents').get('gemini') return {a.pid, a.buf}") == kept
        wait_for(lambda: "gemini@2 exited" in tui.lua(STATUSLINE), E2E_TIMEOUT, "gemini@2 exited in the statusline")
        alive = "local pid, buf = ... return vim.api.nvim_buf_is_valid(buf) and vim.uv.kill(pid, 0) == 0"
        assert tui.lua(alive, *kept)
