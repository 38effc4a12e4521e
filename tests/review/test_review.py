"""Reviewing proposed edits: a real headless Neovim, the real Gemini IDE client.

Every review is opened by `IdeClient.openDiff` and settled the way a user would:
`:w` accepts, any way of closing the proposal rejects. The target file on disk is
never written by the plugin (only the CLI writes, after an accept).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import wait_for
from review.helpers import Review, settle, write


@pytest.fixture
def project(sandbox: Any) -> Path:
    return Path(os.path.realpath(sandbox.project))


# --- opening ------------------------------------------------------------------


def test_review_sides_are_highlighted_like_the_file(review, project):
    """Syntax on both sides; with the user's treesitter on the file type, treesitter on both."""
    review.editor.lua(
        "vim.api.nvim_create_autocmd('FileType', { pattern = 'lua', callback = function(ev)"
        " vim.treesitter.start(ev.buf) end })"
    )
    highlighting = (
        "local b = ... return { ft = vim.bo[b].filetype, syntax = vim.bo[b].syntax,"
        " ts = vim.treesitter.highlighter.active[b] ~= nil }"
    )
    for name, content, expected in [
        ("plain.py", "x = 1\n", {"ft": "python", "syntax": "python", "ts": False}),
        ("tree.lua", "local x = 1\n", {"ft": "lua", "syntax": "", "ts": True}),
    ]:
        target = project / name
        write(target, content.encode())
        request = review.open(target, content.replace("1", "2"))
        info = review.info(target)
        assert info
        assert review.editor.lua(highlighting, info["proposal"]) == expected, name
        assert review.editor.lua(highlighting, info["original"]) == expected, name
        review.editor.nvim.command(f"GeminiReject {target}")  # the client takes one diff at a time
        assert review.outcome(request)["status"] == "rejected"


def test_first_review_finds_its_lua_loaded_and_loads_no_tree_sitter(review, project):
    """The review's Lua loads when a client opens its stream, not in the client's first proposal;
    a file type no buffer highlights with tree-sitter loads none of it (it cost the open ~3 ms)."""
    loaded = "return package.loaded[...] ~= nil"
    wait_for(lambda: review.editor.lua(loaded, "gemini_companion.review"), what="the review's Lua, loaded early")
    target = project / "first.py"
    write(target, b"x = 1\n")
    request = review.open(target, "x = 2\n")
    info = review.info(target)
    assert info
    assert review.editor.lua("return vim.bo[...].syntax", info["original"]) == "python"
    assert not review.editor.lua(loaded, "vim.treesitter.highlighter")
    review.editor.nvim.command(f"GeminiReject {target}")
    assert review.outcome(request)["status"] == "rejected"


def test_review_tab_shows_original_and_proposal(review, project):
    target = project / "src" / "main.py"
    original = write(target, b"import os\n\nprint('hello')\n")
    review.editor.lua("vim.cmd.edit(...)", str(target))
    review.editor.lua("vim.o.switchbuf = 'useopen,newtab'")  # must not turn the split into a tab
    request = review.open(target, "import os\n\nprint('hello, world')\n")
    editor = review.editor
    info = review.info(target)
    tab = editor.lua("return vim.api.nvim_get_current_tabpage()")
    assert tab == info["tab"], "focus moves to the review tab"
    assert editor.lua("return #vim.api.nvim_list_tabpages()") == 2
    wins = editor.lua(
        "return vim.tbl_map(function(w) return {buf = vim.api.nvim_win_get_buf(w), diff = vim.wo[w].diff,"
        " winbar = vim.wo[w].winbar, pos = vim.api.nvim_win_get_position(w)} end,"
        " vim.api.nvim_tabpage_list_wins(...))",
        tab,
    )
    assert [w["buf"] for w in wins] == [info["original"], info["proposal"]]
    assert all(w["diff"] for w in wins)
    assert wins[0]["pos"][0] == wins[1]["pos"][0] and wins[0]["pos"][1] < wins[1]["pos"][1], "vertical split"
    assert "Current:" in wins[0]["winbar"] and "main.py" in wins[0]["winbar"]
    assert ":w accept" in wins[1]["winbar"] and ":q reject" in wins[1]["winbar"]
    bo = "local b = ... return {buftype = vim.bo[b].buftype, modifiable = vim.bo[b].modifiable, ft = vim.bo[b].ft}"
    assert editor.lua(bo, info["original"]) == {"buftype": "nofile", "modifiable": False, "ft": "python"}
    assert editor.lua(bo, info["proposal"]) == {"buftype": "acwrite", "modifiable": True, "ft": "python"}
    assert editor.lua("return vim.api.nvim_win_get_cursor(0)[1]") == 3, "cursor on the first change"
    assert editor.lua("return vim.api.nvim_get_current_buf()") == info["proposal"]
    status = editor.status()["diffs"]
    assert [d["file"] for d in status] == [str(target)]
    review.proposal_window(target)
    editor.nvim.command("quit")
    assert review.outcome(request)["status"] == "rejected"
    settle(review, target)
    assert target.read_bytes() == original
    # The user's own buffer of the file is untouched, and focus is back where it was.
    assert editor.lua("return vim.api.nvim_buf_get_name(0)") == str(target)
    assert editor.lua("return #vim.api.nvim_list_tabpages()") == 1


def test_new_file_in_new_folder(review, project):
    target = project / "new" / "deeper" / "file.txt"
    request = review.open(target, "brand new\n")
    info = review.info(target)
    assert review.editor.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", info["original"]) == [""]
    winbar = review.editor.lua("return vim.wo[vim.fn.win_findbuf(...)[1]].winbar", info["original"])
    assert "New file" in winbar
    review.proposal_window(target)
    review.editor.nvim.command("write")
    assert review.outcome(request) == {"status": "accepted", "content": "brand new\n"}
    settle(review, target)
    assert not (project / "new").exists(), "the plugin never writes the file: the CLI does"


def test_horizontal_layout_and_background_focus(editor_factory, gemini_factory, project):
    editor = editor_factory(setup={"diff": {"layout": "horizontal", "focus": False}})
    editor.wait_state("running")
    client = gemini_factory(editor)
    assert client.call("connect")["status"] == "connected"
    review = Review(editor, client)
    start_tab = editor.lua("return vim.api.nvim_get_current_tabpage()")
    target = project / "a.txt"
    write(target, b"one\n")
    request = review.open(target, "two\n")
    info = review.info(target)
    assert editor.lua("return vim.api.nvim_get_current_tabpage()") == start_tab, "focus stays"
    wins = editor.lua(
        "return vim.tbl_map(vim.api.nvim_win_get_position, vim.api.nvim_tabpage_list_wins(...))", info["tab"]
    )
    assert wins[0][1] == wins[1][1] and wins[0][0] < wins[1][0], "original above the proposal"
    assert "review it in tab 2" in editor.messages()
    editor.nvim.command("GeminiReject")
    assert review.outcome(request)["status"] == "rejected"
    settle(review, target)
    assert editor.lua("return vim.api.nvim_get_current_tabpage()") == start_tab


# --- accepting ------------------------------------------------------------------


@pytest.mark.parametrize("keys", [":w\r", ":wq\r", ":x\r", ":exit\r", "ZZ", ":GeminiAccept\r"])
def test_accept_commands(review, project, keys):
    target = project / "a.txt"
    original = write(target, b"old\n")
    request = review.open(target, "new\n")
    review.proposal_window(target)
    review.editor.nvim.input(keys)  # typed: `:x` is accepted through a command-line abbreviation
    assert review.outcome(request) == {"status": "accepted", "content": "new\n"}
    settle(review, target)
    assert target.read_bytes() == original
    assert len(review.notifications("ide/diffAccepted", target)) == 1
    assert review.editor.lua("return #vim.api.nvim_list_tabpages()") == 1


def test_accept_by_name_from_another_window(review, project):
    target = project / "dir with space" / "b.txt"
    write(target, b"x\n")
    request = review.open(target, "y\n")
    review.editor.nvim.command("tabfirst")
    review.editor.nvim.command(f"GeminiAccept {target.relative_to(project)}")
    assert review.outcome(request) == {"status": "accepted", "content": "y\n"}
    settle(review, target)


def test_accept_sends_the_users_edits(review, project):
    target = project / "c.txt"
    original = write(target, b"a\r\nb\r\nc\r\n")
    request = review.open(target, "a\r\nB\r\nc\r\n")
    assert review.proposal_lines(target) == ["a", "B", "c"], "CR LF is the line ending, not text"
    review.proposal_window(target)
    review.editor.nvim.command("normal! ggcwA")
    review.editor.nvim.command("normal! Gonew line")
    review.editor.nvim.command("write")
    assert review.outcome(request) == {"status": "accepted", "content": "A\r\nB\r\nc\r\nnew line\r\n"}
    settle(review, target)
    assert target.read_bytes() == original


def test_wall_elsewhere_does_not_accept(review, project):
    """`:wall` (or an auto-save plugin) in another tab writes the edited proposal without the user's say."""
    target = project / "d.txt"
    write(target, b"1\n")
    request = review.open(target, "2\n")
    review.proposal_window(target)
    review.editor.nvim.command("normal! ccedited")
    review.editor.nvim.command("tabfirst")
    review.editor.nvim.command("wall")
    assert review.info(target) is not None
    assert "was not accepted" in review.editor.messages()
    review.editor.nvim.command("GeminiAccept")
    assert review.outcome(request) == {"status": "accepted", "content": "edited\n"}


BYTES_CASES = {
    "final newline": "a\nb\n",
    "no final newline": "a\nb",
    "crlf": "a\r\nb\r\n",
    "crlf, no final newline": "a\r\nb",
    "mixed endings": "a\r\nb\nc\r\n",
    "lone cr": "a\rb\n",
    "tabs and trailing spaces": "\tx  \n  \t\n\n",
    "non-ascii": "héllo ✓ 日本語 🎉\n",
    "empty": "",
    "only a newline": "\n",
    "blank lines at the end": "x\n\n\n",
    "nul byte": "a\x00b\n",
    "no newline at all": "single line",
}


def test_byte_fidelity_when_unchanged(review, project):
    """What the client gets back is byte-identical to what it proposed, whatever the text."""
    for name, content in BYTES_CASES.items():
        target = project / f"{name.replace(' ', '_').replace(',', '')}.txt"
        original = write(target, b"something else\n")
        request = review.open(target, content)
        review.proposal_window(target)
        review.editor.nvim.command("write")
        result = review.outcome(request)
        assert result == {"status": "accepted", "content": content}, name
        settle(review, target)
        assert target.read_bytes() == original, name


def test_byte_fidelity_through_close_diff(review, project):
    target = project / "e.txt"
    content = "x\r\ny  \r\n\tz"
    write(target, b"")
    request = review.open(target, content)
    assert review.client.call("closeDiff", filePath=str(target), suppressNotification=True) == {"content": content}
    settle(review, target)
    review.client.call("resolveDiffFromCli", filePath=str(target), outcome="rejected")
    assert review.outcome(request)["status"] == "rejected"


# --- rejecting ------------------------------------------------------------------

REJECTIONS: dict[str, Callable[[Review, Path, dict[str, int]], None]] = {
    "quit": lambda r, t, i: r.editor.nvim.command("quit"),
    "close": lambda r, t, i: r.editor.nvim.command("close"),
    "tabclose": lambda r, t, i: r.editor.nvim.command("tabclose"),
    "bdelete!": lambda r, t, i: r.editor.nvim.command(f"bdelete! {i['proposal']}"),
    "bwipeout!": lambda r, t, i: r.editor.nvim.command(f"bwipeout! {i['proposal']}"),
    "only in the original": lambda r, t, i: r.editor.nvim.command(
        f"call win_gotoid(win_findbuf({i['original']})[0]) | only"
    ),
    "GeminiReject": lambda r, t, i: r.editor.nvim.command("GeminiReject"),
    "GeminiReject from another tab": lambda r, t, i: r.editor.nvim.command(f"tabfirst | GeminiReject {t}"),
    "another buffer in its window": lambda r, t, i: r.editor.nvim.command("enew"),
}


@pytest.mark.parametrize("how", list(REJECTIONS))
def test_reject_exactly_once(review, project, how):
    target = project / "f.txt"
    original = write(target, b"keep me\n")
    request = review.open(target, "replace me\n")
    review.proposal_window(target)
    REJECTIONS[how](review, target, review.info(target))
    assert review.outcome(request) == {"status": "rejected"}
    settle(review, target)
    assert target.read_bytes() == original
    # A later review's notification arrives after any stray one for this review would have.
    other = project / "g.txt"
    later = review.open(other, "later\n")
    review.proposal_window(other)
    review.editor.nvim.command("write")
    assert review.outcome(later)["status"] == "accepted"
    wait_for(lambda: review.notifications("ide/diffAccepted", other), what="the later accept")
    assert len(review.notifications("ide/diffRejected", target)) == 1
    assert not review.notifications("ide/diffAccepted", target)


def test_quit_on_an_edited_proposal_rejects_without_e37(review, project):
    target = project / "h.txt"
    original = write(target, b"a\n")
    request = review.open(target, "b\n")
    review.proposal_window(target)
    review.editor.nvim.command("normal! ccedited")
    assert review.editor.lua("return vim.bo.modified")
    review.editor.nvim.command("quit")  # raises on E37
    assert review.outcome(request) == {"status": "rejected"}
    settle(review, target)
    assert target.read_bytes() == original


# --- closeDiff ------------------------------------------------------------------


def test_answer_in_the_cli_accepts_the_edited_proposal(review, project):
    """The user answers in the terminal: closeDiff(suppressNotification) gives the CLI the edits."""
    target = project / "i.txt"
    original = write(target, b"1\n2\n")
    request = review.open(target, "1\n3\n")
    review.proposal_window(target)
    review.editor.nvim.command("normal! Gccedited by me")
    review.client.call("resolveDiffFromCli", filePath=str(target), outcome="accepted")
    assert review.outcome(request) == {"status": "accepted", "content": "1\nedited by me\n"}
    settle(review, target)
    assert target.read_bytes() == original
    assert not review.notifications("ide/diffRejected", target), "suppressNotification: no rejection"


def test_close_diff_without_suppress_rejects(review, project):
    target = project / "j.txt"
    write(target, b"1\n")
    request = review.open(target, "2\n")
    assert review.client.call("closeDiff", filePath=str(target)) == {"content": "2\n"}
    assert review.outcome(request) == {"status": "rejected"}
    settle(review, target)


def test_close_diff_for_a_file_without_a_diff(review, project):
    result = review.tool("closeDiff", filePath=str(project / "nothing.txt"))
    assert not result.get("isError")
    assert [json.loads(block["text"]) for block in result["content"]] == [{"content": None}]
    assert review.client.call("closeDiff", filePath=str(project / "nothing.txt")) == {"content": None}


def test_close_diff_raw_result_is_json_with_the_proposal(review, project):
    target = project / "k.txt"
    request = review.open(target, 'quote " and \\ and é\n')
    result = review.tool("closeDiff", filePath=str(target), suppressNotification=True)
    assert [json.loads(block["text"]) for block in result["content"]] == [{"content": 'quote " and \\ and é\n'}]
    settle(review, target)
    review.client.call("resolveDiffFromCli", filePath=str(target), outcome="rejected")
    assert review.outcome(request)["status"] == "rejected"


# --- several reviews, replacement, disconnect ---------------------------------------


def test_two_clients_two_reviews(editor, gemini, gemini_factory, project):
    other_client = gemini_factory(editor)
    assert other_client.call("connect")["status"] == "connected"
    first, second = Review(editor, gemini), Review(editor, other_client)
    a, b = project / "a.txt", project / "b.txt"
    write(a, b"a\n")
    write(b, b"b\n")
    request_a = first.open(a, "A\n")
    request_b = second.open(b, "B\n")
    assert editor.lua("return #vim.api.nvim_list_tabpages()") == 3
    assert {d["file"] for d in editor.status()["diffs"]} == {str(a), str(b)}
    first.proposal_window(a)
    editor.nvim.command("write")
    assert first.outcome(request_a) == {"status": "accepted", "content": "A\n"}
    assert second.info(b) is not None, "the other review is untouched"
    editor.nvim.command("GeminiReject")  # the only review left
    assert second.outcome(request_b) == {"status": "rejected"}
    settle(first, a)
    settle(second, b)
    assert not first.notifications("ide/diffRejected", b) and not second.notifications("ide/diffAccepted", a)


def test_second_review_for_a_file_replaces_the_first(editor, gemini, gemini_factory, project):
    other_client = gemini_factory(editor)
    assert other_client.call("connect")["status"] == "connected"
    first, second = Review(editor, gemini), Review(editor, other_client)
    target = project / "same.txt"
    write(target, b"0\n")
    old = first.open(target, "first proposal\n")
    old_info = first.info(target)
    new = other_client.send("openDiff", filePath=str(target), newContent="second proposal\n")
    assert first.outcome(old) == {"status": "rejected"}
    wait_for(lambda: (i := second.info(target)) and i != old_info, what="the replacing review")
    assert second.proposal_lines(target) == ["second proposal"]
    wait_for(lambda: editor.lua("return #vim.api.nvim_list_tabpages()") == 2, what="the old tab to close")
    second.proposal_window(target)
    editor.nvim.command("write")
    assert second.outcome(new) == {"status": "accepted", "content": "second proposal\n"}
    settle(second, target)
    assert len(first.notifications("ide/diffRejected", target)) == 1


def test_client_that_dies_has_its_reviews_closed(editor, gemini, gemini_factory, project):
    survivor_client = gemini_factory(editor)
    assert survivor_client.call("connect")["status"] == "connected"
    doomed, survivor = Review(editor, gemini), Review(editor, survivor_client)
    a, b = project / "a.txt", project / "b.txt"
    doomed.open(a, "A\n")
    request_b = survivor.open(b, "B\n")
    gemini.proc.kill()
    wait_for(lambda: doomed.info(a) is None, what="the dead client's review to close")
    assert survivor.info(b) is not None
    assert [d["file"] for d in editor.status()["diffs"]] == [str(b)]
    survivor.proposal_window(b)
    editor.nvim.command("write")
    assert survivor.outcome(request_b) == {"status": "accepted", "content": "B\n"}


# --- hostile input ------------------------------------------------------------------

EX_CHARACTERS = ["a|call writefile(['pwned'], 'PWNED')", "100% #1 %:p", "with space", "back\\slash", "[x]*?.txt"]


def test_ex_command_characters_in_paths_are_literal(review, project):
    for name in EX_CHARACTERS:
        target = project / name
        request = review.open(target, "text\n")
        info = review.info(target)
        names = review.editor.lua(
            "local o, p = ... return {vim.api.nvim_buf_get_name(o), vim.api.nvim_buf_get_name(p)}",
            info["original"],
            info["proposal"],
        )
        assert names == [f"gemini://original{target}", f"gemini://proposed{target}"], name
        review.proposal_window(target)
        review.editor.nvim.command("write")
        assert review.outcome(request) == {"status": "accepted", "content": "text\n"}, name
        settle(review, target)
        assert not target.exists(), name
    assert not list(project.glob("PWNED")) and not (Path.home() / "PWNED").exists()


def _hostile(project: Path) -> dict[str, str]:
    fifo = project / "fifo"
    os.mkfifo(fifo)
    (project / "dir").mkdir()
    (project / "plain").write_text("x")
    return {
        "relative": "relative/path.txt",
        "dot dot": f"{project}/../escape.txt",
        "newline": f"{project}/a\nb.txt",
        "nul": f"{project}/a\x00b.txt",
        "directory": str(project / "dir"),
        "device": "/dev/zero",
        "fifo": str(fifo),
        "under a file": str(project / "plain" / "child.txt"),
        "empty": "",
    }


def test_hostile_paths_fail_fast(review, project):
    for name, path in _hostile(project).items():
        started = time.monotonic()
        result = review.tool("openDiff", filePath=path, newContent="x")
        assert result.get("isError"), name
        message = result["content"][0]["text"]
        assert message.startswith("openDiff: ") and "\n" not in message, (name, message)
        assert time.monotonic() - started < 30, f"{name} must not hang"
    assert not review.editor.status()["diffs"]
    assert review.editor.lua("return #vim.api.nvim_list_tabpages()") == 1
    assert (project / "plain").read_text() == "x"


def test_bad_arguments_are_errors(review, project):
    for args in ({}, {"filePath": 3, "newContent": "x"}, {"filePath": str(project / "a"), "newContent": None}):
        result = review.tool("openDiff", **args)
        assert result.get("isError"), args
    assert review.tool("closeDiff", filePath=None).get("isError")


def test_real_client_sees_the_error(review, project):
    request = review.client.send("openDiff", filePath="/dev/zero", newContent="x")
    assert "not a regular file" in review.error(request)
    # The client's one-diff-at-a-time lock was released: the next diff works.
    target = project / "ok.txt"
    request = review.open(target, "fine\n")
    review.editor.nvim.command("GeminiAccept")
    assert review.outcome(request)["status"] == "accepted"


def test_oversized_content_is_refused(review, project):
    result = review.tool("openDiff", filePath=str(project / "big.txt"), newContent="x" * (17 * 1024 * 1024))
    assert result.get("isError") and "too large" in result["content"][0]["text"]
    assert review.editor.lua("return 1 + 1") == 2


def test_large_content_opens(review, project):
    target = project / "large.txt"
    lines = [f"line {i} " + "x" * 60 for i in range(100_000)]
    original = write(target, ("\r\n".join(lines) + "\r\n").encode())
    lines[50_000] = "changed"
    content = "\r\n".join(lines) + "\r\n"
    request = review.open(target, content)
    assert review.editor.lua("return vim.api.nvim_win_get_cursor(0)[1]") == 50_001
    review.proposal_window(target)
    review.editor.nvim.command("write")
    result = review.outcome(request)
    assert result["status"] == "accepted" and result["content"] == content
    settle(review, target)
    assert target.read_bytes() == original


# --- after the CLI writes, terminals, hooks -------------------------------------------


def test_buffers_reload_after_the_cli_writes(review, project):
    clean, dirty = project / "clean.txt", project / "dirty.txt"
    write(clean, b"old\n")
    write(dirty, b"old\n")
    editor = review.editor
    editor.nvim.command(f"edit {clean} | split {dirty}")
    editor.nvim.command("normal! ccmy unsaved edit")
    request = review.open(dirty, "agent\n")
    winbar = editor.lua("return vim.wo.winbar")
    assert "unsaved edits" in winbar
    editor.nvim.command("write")
    assert review.outcome(request)["status"] == "accepted"
    dirty.write_bytes(b"agent\n")  # what the CLI does after an accept
    wait_for(lambda: "not reloaded" in editor.messages(), what="the warning about unsaved edits")
    bufnr = editor.lua("return vim.fn.bufnr(...)", str(dirty))
    assert editor.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", bufnr) == ["my unsaved edit"]

    request = review.open(clean, "agent\n")
    editor.nvim.command("write")
    assert review.outcome(request)["status"] == "accepted"
    clean.write_bytes(b"agent\n")
    bufnr = editor.lua("return vim.fn.bufnr(...)", str(clean))
    wait_for(
        lambda: editor.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", bufnr) == ["agent"],
        what="the clean buffer to reload",
    )


def test_from_the_agents_terminal_and_back(review, project):
    editor = review.editor
    editor.nvim.command("terminal cat")
    editor.nvim.input("i")
    wait_for(lambda: editor.nvim.api.get_mode()["mode"] == "t", what="terminal mode")
    terminal_win = editor.lua("return vim.api.nvim_get_current_win()")
    target = project / "t.txt"
    request = review.open(target, "from the agent\n")
    info = review.info(target)
    wait_for(lambda: editor.nvim.api.get_mode()["mode"] == "n", what="normal mode in the diff")
    assert editor.lua("return vim.api.nvim_get_current_buf()") == info["proposal"]
    editor.nvim.command("write")
    assert review.outcome(request)["status"] == "accepted"
    wait_for(lambda: editor.lua("return vim.api.nvim_get_current_win()") == terminal_win, what="back to the agent")
    wait_for(lambda: editor.nvim.api.get_mode()["mode"] == "t", what="typing to the agent again")


def test_user_autocommands(review, project):
    editor = review.editor
    editor.lua(
        "_G.events = {} vim.api.nvim_create_autocmd('User', {pattern = {'GeminiDiffOpened', 'GeminiDiffClosed'},"
        " callback = function(ev) table.insert(_G.events, {ev.match, ev.data.file, ev.data.outcome}) end})"
    )
    a, b = project / "a.txt", project / "b.txt"
    request = review.open(a, "a\n")
    editor.nvim.command("write")
    review.outcome(request)
    request = review.open(b, "b\n")
    editor.nvim.command("quit")
    review.outcome(request)
    settle(review, b)
    assert editor.lua("return _G.events") == [
        ["GeminiDiffOpened", str(a)],
        ["GeminiDiffClosed", str(a), "accepted"],
        ["GeminiDiffOpened", str(b)],
        ["GeminiDiffClosed", str(b), "rejected"],
    ]


def test_file_changed_on_disk_while_open(review, project):
    target = project / "moving.txt"
    write(target, b"before\n")
    request = review.open(target, "proposal\n")
    info = review.info(target)
    target.write_bytes(b"changed meanwhile\n")
    wait_for(
        lambda: (
            review.editor.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", info["original"])
            == ["changed meanwhile"]
        ),
        what="the original side to refresh",
    )
    assert "changed on disk" in review.editor.messages()
    assert review.proposal_lines(target) == ["proposal"], "the proposal and its edits are kept"
    review.editor.nvim.command("GeminiReject")
    assert review.outcome(request)["status"] == "rejected"


def test_stopping_the_server_rejects_open_reviews(review, project):
    target = project / "s.txt"
    request = review.open(target, "x\n")
    review.editor.lua("require('gemini_companion').stop()")
    assert review.outcome(request)["status"] == "rejected"
    wait_for(lambda: review.closed(target), what="the tab to close")


def test_diff_options_are_validated(editor):
    set_options = "return {pcall(require('gemini_companion.config').set, ...)}"
    bad_options = [{"layout": "diagonal"}, {"focus": "yes"}, {"open_in_new_tab": 0}]
    for bad in ({"diff": 1}, *({"diff": option} for option in bad_options)):
        ok, message = editor.lua(set_options, bad)
        assert not ok and "diff" in message, bad
    # An unknown key is dropped with a warning naming the nearest one, not raised (issue 32).
    assert editor.lua(set_options, {"diff": {"colour": 1}}) == [True]
    assert "unknown option diff.colour ignored" in editor.messages()
    assert "colour" not in editor.lua("return require('gemini_companion.config').options.diff")
    assert editor.lua(set_options, {"diff": {"layout": "horizontal"}}) == [True]
    assert editor.lua("return require('gemini_companion.config').options.diff") == {
        "layout": "horizontal",
        "open_in_new_tab": True,
        "focus": True,
    }
