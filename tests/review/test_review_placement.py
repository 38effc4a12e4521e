"""Where a review opens (issue 33): its own tab, or the current tab beside the agent's window,
vertical, horizontal or unified; `:w`, `:q` and `do` exact to the byte in each; `:q` closes the
review's windows only and gives the tab its layout back; the winbar names the keys and is the
user's again after; accept/reject all of one agent.

A real Neovim, the real host, proposals from the real Gemini IDE client; the agent's window is
the plugin's own terminal running tests/harness/fake_agent.py.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from pynvim import NvimError

from conftest import HARNESS, NODE_DIR, Editor, NodeClient, client_env, wait_for
from review.helpers import Review, write

ORIGINAL = b"one\r\ntwo\r\nthree\r\nfour\r\nfive\r\nsix\r\nseven\r\neight\r\nnine\r\nten"  # CR LF, no last EOL
PROPOSED = "ONE\r\ntwo\r\nthree\r\nfour\r\nfive\r\nsix\r\nseven\r\neight\r\nnine\r\nTEN"
# `do` on the first hunk takes "one" back; the second hunk stays the agent's.
TAKEN_BACK = "one\r\ntwo\r\nthree\r\nfour\r\nfive\r\nsix\r\nseven\r\neight\r\nnine\r\nTEN"

PLACEMENTS = [
    pytest.param({"open_in_new_tab": True, "layout": "vertical"}, id="tab-vertical"),
    pytest.param({"open_in_new_tab": False, "layout": "vertical"}, id="current-vertical"),
    pytest.param({"open_in_new_tab": False, "layout": "horizontal"}, id="current-horizontal"),
]

LAYOUT = (
    "local t = vim.api.nvim_get_current_tabpage() local out = {}"
    " for _, w in ipairs(vim.api.nvim_tabpage_list_wins(t)) do"
    "  local b = vim.api.nvim_win_get_buf(w)"
    "  out[#out + 1] = { win = w, buf = b, width = vim.api.nvim_win_get_width(w),"
    "   height = vim.api.nvim_win_get_height(w), pos = vim.api.nvim_win_get_position(w),"
    "   winbar = vim.wo[w].winbar, diff = vim.wo[w].diff, terminal = vim.bo[b].buftype == 'terminal' }"
    " end return out"
)


@pytest.fixture
def project(sandbox: Any) -> Path:
    return Path(os.path.realpath(sandbox.project))


def editor_with_agent(editor_factory, sandbox, diff: dict[str, Any]) -> Editor:
    """The user's file (with unsaved edits and a winbar of theirs) on the left, the agent's
    terminal on the right, the cursor in the user's window."""
    log = str(sandbox.base / "log")
    agent = {"cmd": [sys.executable, str(HARNESS / "fake_agent.py")], "env": {"FAKE_AGENT_LOG": log}}
    editor = editor_factory(setup={"diff": diff, "agents": {"fake": agent}, "default_agent": "fake"})
    editor.wait_state("running")
    mine = Path(os.path.realpath(sandbox.project)) / "mine.txt"
    write(mine, b"saved\n")
    editor.lua("vim.cmd.edit(...)", str(mine))
    editor.nvim.command("normal! ccunsaved edit")
    editor.lua("vim.wo.winbar = 'MY BAR %f'")
    editor.nvim.command("Gemini fake")
    wait_for(lambda: terminal_window(editor), what="the agent's window")
    editor.nvim.command("wincmd p")
    editor.nvim.command("stopinsert")  # the agent's window started terminal mode
    wait_for(lambda: editor.lua("return vim.api.nvim_get_mode().mode") == "n", what="normal mode")
    assert editor.lua("return vim.bo.buftype") == ""
    return editor


def terminal_window(editor: Editor) -> bool:
    return any(w["terminal"] for w in editor.lua(LAYOUT))


def connected(editor: Editor, gemini_factory) -> Review:
    client = gemini_factory(editor)
    assert client.call("connect")["status"] == "connected"
    return Review(editor, client)


def settle(review: Review, path: Path) -> None:
    """The review is over (the agent's own buffer is named gemini:// too: helpers.settle would wait on it)."""
    wait_for(lambda: review.info(path) is None, what=f"the review of {path} to close")
    wait_for(lambda: not review.editor.status()["diffs"], what="the host to forget the review")
    wait_for(
        lambda: (
            not review.editor.lua(
                "for _, b in ipairs(vim.api.nvim_list_bufs()) do local n = vim.api.nvim_buf_get_name(b)"
                " if n:find('gemini://', 1, true) and not n:find('gemini://agent/', 1, true) then return true end"
                " end return false"
            )
        ),
        what="the review's buffers to go",
    )


def placed(editor_factory, gemini_factory, sandbox, diff: dict[str, Any]) -> tuple[Review, list[Any], Path, int]:
    """A review of a.txt opened with `diff` options; the layout before it."""
    editor = editor_with_agent(editor_factory, sandbox, diff)
    review = connected(editor, gemini_factory)
    before = editor.lua(LAYOUT)
    target = Path(os.path.realpath(sandbox.project)) / "a.txt"
    write(target, ORIGINAL)
    return review, before, target, review.open(target, PROPOSED)


def accept_then_reject(review: Review, target: Path, request: int, before: list[Any], enter: Any) -> None:
    """`:w` (the first hunk taken back) then, in a new review, `:q`: exact, and the layout as before."""
    editor = review.editor
    editor.nvim.input(":w\r")
    assert review.outcome(request) == {"status": "accepted", "content": TAKEN_BACK}
    settle(review, target)
    assert target.read_bytes() == ORIGINAL, "the plugin never writes the file: the CLI does"
    mine_is_intact(editor)
    request = review.open(target, PROPOSED)
    enter()
    editor.nvim.input(":q\r")
    assert review.outcome(request)["status"] == "rejected"
    settle(review, target)
    assert editor.lua("return #vim.api.nvim_list_tabpages()") == 1
    assert editor.lua(LAYOUT) == before, "the same windows, buffers, sizes and winbars as before the reviews"
    mine_is_intact(editor)


def mine_is_intact(editor: Editor) -> None:
    state = editor.lua(
        "local b = vim.fn.bufnr(...) return { lines = vim.api.nvim_buf_get_lines(b, 0, -1, false),"
        " modified = vim.bo[b].modified }",
        str(Path(os.path.realpath(editor.sandbox.project)) / "mine.txt"),
    )
    assert state == {"lines": ["unsaved edit"], "modified": True}, "the user's unsaved edits are kept"


@pytest.mark.parametrize("diff", PLACEMENTS)
def test_each_placement_accepts_takes_back_and_rejects_exactly(editor_factory, gemini_factory, sandbox, project, diff):
    review, before, target, request = placed(editor_factory, gemini_factory, sandbox, diff)
    editor = review.editor
    info = review.info(target)
    assert info
    now = editor.lua(LAYOUT)
    if diff["open_in_new_tab"]:
        assert editor.lua("return #vim.api.nvim_list_tabpages()") == 2
    else:
        assert editor.lua("return #vim.api.nvim_list_tabpages()") == 1, "no new tab"
        assert [w for w in now if w["win"] in {b["win"] for b in before}] == [
            {**b, "width": w["width"], "height": w["height"], "pos": w["pos"]}
            for b in before
            for w in now
            if w["win"] == b["win"]
        ], "the user's and the agent's windows are still there, with their buffers and winbars"
        assert any(w["terminal"] for w in now), "the agent's window stays visible"
    sides = [w for w in now if w["buf"] in (info["original"], info["proposal"])]
    assert [w["buf"] for w in sides] == [info["original"], info["proposal"]] and all(w["diff"] for w in sides)
    first, second = sides[0]["pos"], sides[1]["pos"]
    if diff["layout"] == "vertical":
        assert first[0] == second[0] and first[1] < second[1], "side by side"
    else:
        assert first[1] == second[1] and first[0] < second[0], "one above the other"
    assert ":w accept · :q reject · do take a hunk back" in sides[1]["winbar"]

    review.proposal_window(target)
    editor.nvim.command("1")
    editor.nvim.input("do")  # the first hunk goes back to the file's text
    wait_for(lambda: review.proposal_lines(target)[0] == "one", what="the hunk taken back")
    accept_then_reject(review, target, request, before, lambda: review.proposal_window(target))


def test_the_winbar_is_on_review_windows_only_and_the_users_comes_back(
    editor_factory, gemini_factory, sandbox, project
):
    editor = editor_with_agent(editor_factory, sandbox, {"open_in_new_tab": True})
    review = connected(editor, gemini_factory)
    target = project / "w.txt"
    write(target, b"a\n")
    request = review.open(target, "b\n")
    info = review.info(target)
    assert info
    editor.nvim.command("tabfirst")
    mine = editor.lua("return vim.api.nvim_get_current_win()")
    editor.nvim.command(f"buffer {info['proposal']}")  # the proposal shown in the user's window too
    assert ":w accept · :q reject · do take a hunk back" in editor.lua("return vim.wo.winbar")
    editor.nvim.command("buffer #")
    assert editor.lua("return vim.api.nvim_get_current_win()") == mine
    assert editor.lua("return vim.api.nvim_get_option_value('winbar', { scope = 'local' })") == "MY BAR %f"
    editor.nvim.command("tablast")  # the review's left window now shows a file of the user's
    editor.lua("vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1])", info["original"])
    editor.lua("vim.cmd.edit(...)", str(project / "mine.txt"))
    assert editor.lua("return vim.wo.winbar") == "MY BAR %f"
    editor.nvim.command("GeminiReject")
    assert review.outcome(request)["status"] == "rejected"
    settle(review, target)
    assert editor.lua("return vim.wo.winbar") == "MY BAR %f"
    mine_is_intact(editor)


def test_accept_and_reject_all_of_one_agent_leave_the_other_agents_reviews(editor, gemini_factory, project):
    first, second = connected(editor, gemini_factory), connected(editor, gemini_factory)  # one agent, two clients
    node = str(NODE_DIR / "node_modules" / ".bin" / "node")
    qwen_client = NodeClient("qwen_client.mjs", client_env(editor), project, node=node)
    try:
        assert qwen_client.call("connect")["status"] == "connected"
        qwen = Review(editor, qwen_client)
        a, b, c = project / "a.txt", project / "b.txt", project / "c.txt"
        for path in (a, b, c):
            write(path, b"old\r\n")
        to_a, to_b = first.open(a, "A\r\nnew"), second.open(b, "B\n")
        to_c = qwen.open(c, "C\n")
        editor.nvim.command("tabfirst")
        with pytest.raises(NvimError, match="several agents are pending: name one"):
            editor.nvim.command("GeminiAccept all")
        assert first.info(a) and second.info(b) and qwen.info(c), "nothing guessed"
        assert editor.lua("return require('gemini_companion.review').complete('', 'GeminiAccept all ')") == ["external"]

        editor.nvim.command("GeminiAccept all external Gemini")
        assert first.outcome(to_a) == {"status": "accepted", "content": "A\r\nnew"}
        assert second.outcome(to_b) == {"status": "accepted", "content": "B\n"}
        wait_for(lambda: first.info(a) is None and second.info(b) is None, what="both Gemini reviews to close")
        assert qwen.info(c), "the other agent's review stays"
        assert "accepted 2 of 2 pending reviews by external Gemini CLI" in editor.messages()

        to_a = first.open(a, "again\n")
        qwen.proposal_window(c)  # in Qwen's review: `all` means Qwen's
        editor.nvim.command("GeminiReject all")
        assert qwen.outcome(to_c)["status"] == "rejected"
        wait_for(lambda: qwen.info(c) is None, what="Qwen's review to close")
        assert first.info(a), "Gemini's review stays"
        editor.nvim.command("GeminiReject all external Gemini CLI")
        assert first.outcome(to_a)["status"] == "rejected"
        assert [p.read_bytes() for p in (a, b, c)] == [b"old\r\n"] * 3, "the plugin never writes the files"
    finally:
        qwen_client.close()


def test_a_file_named_all_under_review_is_that_file(review, project):
    target = project / "all"
    write(target, b"x\n")
    request = review.open(target, "y\n")
    review.editor.nvim.command("tabfirst")
    review.editor.nvim.command("GeminiAccept all")
    assert review.outcome(request) == {"status": "accepted", "content": "y\n"}


@pytest.mark.parametrize("new_tab", [True, False], ids=["tab", "current"])
def test_the_unified_preview_accepts_takes_back_and_rejects_exactly(
    editor_factory, gemini_factory, sandbox, project, new_tab
):
    diff = {"open_in_new_tab": new_tab, "layout": "unified"}
    review, before, target, request = placed(editor_factory, gemini_factory, sandbox, diff)
    editor = review.editor
    wins = editor.lua(LAYOUT)
    preview = [
        w for w in wins if editor.lua("return vim.api.nvim_buf_get_name(...)", w["buf"]).startswith("gemini://unified")
    ]
    assert len(preview) == 1 and not preview[0]["diff"], "one window, no diff mode"
    assert editor.lua("return vim.api.nvim_get_current_win()") == preview[0]["win"]
    assert ":w accept · :q reject · do take a hunk back" in preview[0]["winbar"]
    assert (tabs := editor.lua("return #vim.api.nvim_list_tabpages()")) == (2 if new_tab else 1), tabs
    if not new_tab:
        assert any(w["terminal"] for w in wins), "the agent's window stays visible"
    lines = editor.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")
    assert lines == [
        "@@ -1,4 +1,4 @@", "-one", "+ONE", " two", " three", " four",
        "@@ -7,4 +7,4 @@", " seven", " eight", " nine", "-ten", "+TEN",
    ]  # fmt: skip
    assert editor.lua("return { vim.bo.modifiable, vim.bo.modified }") == [False, True], "read-only, unsaved work"
    assert editor.lua("return vim.api.nvim_win_get_cursor(0)[1]") == 2, "on the first change"
    editor.nvim.input("]c")
    wait_for(lambda: editor.lua("return vim.api.nvim_win_get_cursor(0)[1]") == 11, what="]c to the next change")
    editor.nvim.input("[c")
    wait_for(lambda: editor.lua("return vim.api.nvim_win_get_cursor(0)[1]") == 2, what="[c back")
    editor.nvim.input("do")
    wait_for(lambda: review.proposal_lines(target)[0] == "one", what="the change taken back")
    assert editor.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)") == [
        "@@ -7,4 +7,4 @@", " seven", " eight", " nine", "-ten", "+TEN",
    ]  # fmt: skip
    accept_then_reject(review, target, request, before, lambda: None)


def test_current_tab_only_in_the_users_window_keeps_an_edited_review_and_diffs_never_mix(
    editor_factory, gemini_factory, sandbox, project
):
    editor = editor_with_agent(editor_factory, sandbox, {"open_in_new_tab": False})
    first, second = connected(editor, gemini_factory), connected(editor, gemini_factory)
    a, b = project / "a.txt", project / "b.txt"
    write(a, b"a\n")
    write(b, b"b\n")
    to_a = first.open(a, "A\x00\n")  # a NUL byte is data
    to_b = second.open(b, "B\n")
    info_a, info_b = first.info(a), second.info(b)
    assert info_a and info_b
    assert info_a["tab"] == editor.lua("return vim.api.nvim_list_tabpages()[1]"), "the first beside the agent"
    assert info_a["tab"] != info_b["tab"], "the second review's diff would mix with the first's: a tab of its own"

    edit_here = "vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1]) vim.cmd('normal! Goedited')"
    editor.lua(edit_here, info_a["proposal"])
    editor.nvim.command("tabfirst")
    editor.lua("vim.api.nvim_set_current_win(vim.fn.win_findbuf(vim.fn.bufnr(...))[1])", str(project / "mine.txt"))
    editor.nvim.command("only")  # from the user's window: a side effect, the edited proposal comes back
    wait_for(lambda: first.info(a) and first.info(a)["edited"], what="the edited review kept")
    assert "stays in review" in editor.messages()
    first.proposal_window(a)
    editor.nvim.input(":w\r")
    assert first.outcome(to_a) == {"status": "accepted", "content": "A\x00\nedited\n"}
    second.proposal_window(b)
    editor.nvim.input(":q\r")
    assert second.outcome(to_b)["status"] == "rejected"
    assert a.read_bytes() == b"a\n" and b.read_bytes() == b"b\n"
    mine_is_intact(editor)


def test_the_unified_preview_follows_the_disk_e_bang_and_refuses_a_write_from_elsewhere(editor_factory, gemini_factory):
    editor = editor_factory(setup={"diff": {"layout": "unified"}})
    editor.wait_state("running")
    review = connected(editor, gemini_factory)
    target = Path(os.path.realpath(editor.sandbox.project)) / "s.txt"
    write(target, b"one\ntwo\n")
    request = review.open(target, "one\nTWO\n")
    info = review.info(target)
    assert info and info["unified"]
    preview = "return vim.api.nvim_buf_get_lines(..., 0, -1, false)"
    assert editor.lua(preview, info["unified"]) == ["@@ -1,2 +1,2 @@", " one", "-two", "+TWO"]
    editor.nvim.input("do")
    wait_for(lambda: editor.lua(preview, info["unified"]) == [""], what="the change taken back")
    editor.nvim.command("edit!")  # the agent's whole proposal again
    assert editor.lua(preview, info["unified"]) == ["@@ -1,2 +1,2 @@", " one", "-two", "+TWO"]

    editor.nvim.command("tabfirst")
    editor.nvim.command("wall")  # from another window: not the user's answer
    assert review.info(target) and "was not accepted" in editor.messages()

    write(target, b"zero\none\ntwo\n")  # changed on disk: the preview follows, accepting needs !
    new_file = ["@@ -1,3 +1,2 @@", "-zero", " one", "-two", "+TWO"]
    wait_for(lambda: editor.lua(preview, info["unified"]) == new_file, what="the preview of the new file")
    editor.nvim.command("tablast")
    editor.nvim.input(":w\r")
    wait_for(lambda: "changed on disk since the agent read it" in editor.messages(), what="the stale warning")
    editor.nvim.command("GeminiAccept!")
    assert review.outcome(request) == {"status": "accepted", "content": "one\nTWO\n"}


def test_current_tab_in_the_background_leaves_the_cursor_where_it_was(editor_factory, gemini_factory, sandbox):
    editor = editor_with_agent(editor_factory, sandbox, {"open_in_new_tab": False, "focus": False})
    review = connected(editor, gemini_factory)
    mine = editor.lua("return vim.api.nvim_get_current_win()")
    target = Path(os.path.realpath(sandbox.project)) / "bg.txt"
    write(target, b"x\n")
    request = review.open(target, "y\n")
    assert editor.lua("return vim.api.nvim_get_current_win()") == mine
    assert editor.lua("return vim.api.nvim_get_mode().mode") == "n"
    assert "review it beside you" in editor.messages()
    info = review.info(target)
    assert info and editor.lua("return #vim.fn.win_findbuf(...)", info["proposal"]) == 1
    assert editor.lua("return #vim.api.nvim_list_tabpages()") == 1
    editor.nvim.command("GeminiReject")  # from the user's window: the review of this tab
    assert review.outcome(request)["status"] == "rejected"
    mine_is_intact(editor)


def test_qa_stops_at_a_pending_unified_preview(editor_factory, gemini_factory, sandbox):
    editor = editor_factory(setup={"diff": {"layout": "unified"}})
    editor.wait_state("running")
    review = connected(editor, gemini_factory)
    target = Path(os.path.realpath(sandbox.project)) / "q.txt"
    write(target, b"x\n")
    request = review.open(target, "y\n")
    with pytest.raises(NvimError, match=r"E162|E37"):
        editor.nvim.command("qa")
    assert review.info(target), "still in review"
    editor.nvim.input(":q\r")
    assert review.outcome(request)["status"] == "rejected"
    assert target.read_bytes() == b"x\n"


# A window the user reads from but does not edit in, opened with the cursor in it (adding from a
# file tree keeps the cursor there): each as the user opens it.
SIDE_WINDOWS = {
    "quickfix": (None, "vim.fn.setqflist({ { filename = 'mine.txt', lnum = 1 } }) vim.cmd('botright copen')"),
    "NvimTree": ("nvim-tree.lua", "require('nvim-tree').setup({}) require('nvim-tree.api').tree.open()"),
}


@pytest.mark.parametrize("side", sorted(SIDE_WINDOWS))
def test_current_tab_from_a_tree_or_quickfix_window_opens_beside_the_users_file(
    editor_factory, gemini_factory, sandbox, project, side
):
    """The cursor in a quickfix list or a file tree: the review goes beside the user's file window,
    never splits the narrow side window (a review of three 10-column or 5-line windows)."""
    editor = editor_with_agent(editor_factory, sandbox, {"open_in_new_tab": False})
    plugin, opening = SIDE_WINDOWS[side]
    if plugin:
        editor.lua("vim.opt.rtp:prepend(...)", "/work/shared/fixtures/user-plugins/" + plugin)
    editor.lua(opening)
    wait_for(lambda: editor.lua("return vim.bo.filetype") == ("qf" if side == "quickfix" else side), what=side)
    here = editor.lua("return vim.api.nvim_get_current_win()")
    size = editor.lua("return { vim.api.nvim_win_get_width(0), vim.api.nvim_win_get_height(0) }")
    review = connected(editor, gemini_factory)
    target = project / "side.txt"
    write(target, b"x\n")
    request = review.open(target, "y\n")
    info = review.info(target)
    assert info
    size_now = "return { vim.api.nvim_win_get_width(...), vim.api.nvim_win_get_height(...) }"
    assert editor.lua(size_now, here) == size, f"the {side} window is not split"
    mine = editor.lua("return vim.fn.win_findbuf(vim.fn.bufnr(...))[1]", str(project / "mine.txt"))
    row = "return vim.api.nvim_win_get_position(...)[1]"
    proposal = editor.lua("return vim.fn.win_findbuf(...)[1]", info["proposal"])
    assert editor.lua(row, proposal) == editor.lua(row, mine), "beside the user's file"
    review.proposal_window(target)
    editor.nvim.input(":q\r")
    assert review.outcome(request)["status"] == "rejected"
    mine_is_intact(editor)
