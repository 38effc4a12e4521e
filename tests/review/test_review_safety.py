"""The review tab never loses the user's work nor accepts what they did not accept (issue 10).

Each test is named after the class of failure it proves fixed (`test_c1_...` for class 1 of
`:h gemini-companion-diff-rules`). Everything runs against a real Neovim, the real rplugin
host and the real Gemini IDE client; every test checks what the client saw and that the
user's text survived (the proposal buffer and the target file's bytes).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import psutil
import pynvim
import pytest

from conftest import NODE_DIR, PYLSP, PYLSP_BIN, NodeClient, client_env, wait_for
from review.helpers import Review, edit_proposal, kill_host, settle, tabs, write


@pytest.fixture
def project(sandbox) -> Path:
    return Path(os.path.realpath(sandbox.project))


PROPOSAL_BUFFERS = (
    "return vim.tbl_map(vim.api.nvim_buf_get_name, vim.tbl_filter(function(b)"
    " return vim.api.nvim_buf_get_name(b):find('gemini://', 1, true) ~= nil end, vim.api.nvim_list_bufs()))"
)


def winbar(review: Review, path: Path) -> str:
    info = review.info(path)
    assert info is not None
    return review.editor.lua("return vim.wo[vim.fn.win_findbuf(...)[1]].winbar", info["proposal"])


def no_outcome(review: Review, path: Path) -> None:
    """The client got neither an accept nor a reject for `path` (after a round trip)."""
    review.editor.status()  # a round trip through Neovim
    assert not review.notifications("ide/diffAccepted", path), "nothing was accepted"
    assert not review.notifications("ide/diffRejected", path)


# --- the host dies while a proposal is open ------------------------------------------------


def test_host_death_orphans_the_proposal_and_bang_writes_it(review, project):
    editor = review.editor
    target = project / "a.txt"
    original = write(target, b"old\n")
    review.open(target, "new\n")
    edit_proposal(review, target, "mine")
    kill_host(editor)
    info = wait_for(lambda: (i := review.info(target)) and i.get("orphaned") and i, what="the orphaned mark")
    assert review.proposal_lines(target) == ["mine"], "the user's text is kept"
    assert "ORPHANED" in winbar(review, target) and ":GeminiAccept!" in winbar(review, target)
    assert editor.lua("return vim.api.nvim_buf_get_name(...)", info["proposal"]).startswith("gemini://orphaned-")
    assert editor.status()["diffs"] == [] and editor.status()["state"] == "failed"
    assert editor.messages().count("the Python host was killed") == 1

    editor.nvim.command("write")  # refused: the agent is gone; says what to do
    assert review.info(target) is not None and review.proposal_lines(target) == ["mine"]
    assert ":GeminiAccept!" in editor.messages()
    editor.nvim.command("GeminiAccept")  # no bang: same
    assert review.info(target) is not None and target.read_bytes() == original

    editor.nvim.command("GeminiAccept!")
    wait_for(lambda: review.closed(target), what="the orphaned review to close")
    assert target.read_bytes() == b"mine\n", "written as the user's own write"
    assert tabs(editor) == 1


@pytest.mark.parametrize("becomes", ["a link out of the workspace", "fifo"])
def test_an_orphan_is_never_written_through_what_took_its_files_place(review, project, tmp_path, becomes):
    """:GeminiAccept! writes the file that was reviewed: a link swapped in since is not followed
    (here, out of the workspace), a FIFO is not waited on (Neovim held until someone read it)."""
    editor = review.editor
    target = project / "g.txt"
    write(target, b"old\n")
    review.open(target, "agent\n")
    edit_proposal(review, target, "mine")
    kill_host(editor)
    wait_for(lambda: (i := review.info(target)) and i.get("orphaned"), what="the orphaned mark")
    outside = tmp_path / "outside.txt"
    write(outside, b"precious\n")
    target.unlink()
    target.symlink_to(outside) if becomes.startswith("a link") else os.mkfifo(target)
    review.proposal_window(target)
    now = "fifo" if becomes == "fifo" else "link"
    with pytest.raises(pynvim.NvimError, match=f"cannot write g.txt: it is a {now} now"):
        editor.nvim.command("GeminiAccept!")  # returns at once, refused in one line
    assert outside.read_bytes() == b"precious\n"
    assert review.proposal_lines(target) == ["mine"]
    assert target.is_symlink() if becomes.startswith("a link") else stat.S_ISFIFO(target.lstat().st_mode)


def test_quit_drops_an_orphaned_proposal_and_restart_recovers(review, project, gemini_factory):
    editor = review.editor
    target = project / "b.txt"
    original = write(target, b"old\n")
    review.open(target, "new\n")
    kill_host(editor)
    wait_for(lambda: (i := review.info(target)) and i.get("orphaned"), what="the orphaned mark")
    review.proposal_window(target)
    editor.nvim.command("quit")
    wait_for(lambda: review.closed(target), what="the orphaned review to close")
    assert target.read_bytes() == original

    editor.nvim.command("GeminiCompanion restart")
    editor.wait_state("running")
    client = gemini_factory(editor)
    assert client.call("connect")["status"] == "connected"
    again = Review(editor, client)
    request = again.open(target, "after restart\n")
    editor.nvim.command("write")
    assert again.outcome(request) == {"status": "accepted", "content": "after restart\n"}


# --- writes to another file write a copy and never accept -----------------------------------


@pytest.mark.parametrize(
    "command", ["write {new}", "write! {existing}", "saveas {new}", "saveas! {existing}", "write {dangling}"]
)
def test_write_to_another_file_writes_a_copy(review, project, command):
    editor = review.editor
    target, new, existing = project / "t.txt", project / "copy.txt", project / "existing.txt"
    original = write(target, b"old\n")
    write(existing, b"someone's file\n")
    dangling = project / "link-to-copy.txt"
    dangling.symlink_to(new)  # a link to nothing: the copy is made where it points, as Vim does
    request = review.open(target, "new\n")
    edit_proposal(review, target, "edited")
    names = editor.lua(PROPOSAL_BUFFERS)
    editor.nvim.command(command.format(new=new, existing=existing, dangling=dangling))
    written = existing if "{existing}" in command else new
    assert written.read_bytes() == b"edited\n", "a copy, as Vim writes it"
    assert review.info(target) is not None, "still in review"
    assert editor.lua(PROPOSAL_BUFFERS) == names, "the proposal keeps its name; no stray buffer"
    listed = editor.lua("return vim.tbl_map(function(b) return b.name end, vim.fn.getbufinfo({buflisted = 1}))")
    assert listed == [] or all(not name.startswith("gemini://") for name in listed), listed
    no_outcome(review, target)
    assert target.read_bytes() == original
    editor.nvim.command("GeminiReject")
    assert review.outcome(request) == {"status": "rejected"}


def test_range_append_and_filter_writes_keep_working(review, project):
    editor = review.editor
    target, part, log = project / "t.txt", project / "part.txt", project / "log.txt"
    write(target, b"old\n")
    write(log, b"log\n")
    review.open(target, "one\ntwo\nthree\n")
    review.proposal_window(target)
    editor.nvim.command(f"2,3write {part}")
    editor.nvim.command(f"write >> {log}")
    editor.nvim.command(f"silent write !cat > {project / 'piped.txt'}")
    assert part.read_bytes() == b"two\nthree\n"
    assert log.read_bytes() == b"log\none\ntwo\nthree\n"
    assert (project / "piped.txt").read_bytes() == b"one\ntwo\nthree\n"
    assert review.info(target) is not None
    no_outcome(review, target)


# --- the file changed on disk after the proposal opened ------------------------------------


def test_accepting_over_a_changed_file_needs_a_bang(review, project):
    editor = review.editor
    target = project / "moving.txt"
    write(target, b"base\n")
    request = review.open(target, "proposal\n")
    target.write_bytes(b"saved from elsewhere\n")  # and the user types :w before the poll sees it
    review.proposal_window(target)
    editor.nvim.command("write")
    assert review.info(target) is not None and review.info(target).get("stale")
    assert "changed on disk" in editor.messages() and ":GeminiAccept!" in editor.messages()
    assert "changed on disk" in winbar(review, target), "a persistent warning, not only a message"
    info = review.info(target)
    wait_for(
        lambda: (
            editor.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", info["original"])
            == ["saved from elsewhere"]
        ),
        what="the left side to follow the disk",
    )
    no_outcome(review, target)
    editor.nvim.command("GeminiAccept!")
    assert review.outcome(request) == {"status": "accepted", "content": "proposal\n"}


def test_a_new_file_that_appears_is_a_change_too(review, project):
    target = project / "new.txt"
    review.open(target, "proposal\n")
    target.write_bytes(b"created by a formatter\n")
    wait_for(lambda: review.info(target).get("stale"), what="the stale mark from the watcher")
    review.proposal_window(target)
    review.editor.nvim.command("write")
    assert review.info(target) is not None
    no_outcome(review, target)


# --- writes the user did not ask for ---------------------------------------------------------

# The write patterns of the two most used auto-save plugins, reproduced from their source:
# Pocco81/auto-save.nvim: TextChanged/InsertLeave -> a vim.defer_fn debounce -> nvim_buf_call
# `silent! write` (or `silent! wall` with write_all_buffers) if the buffer is modifiable and
# modified. okuuva/auto-save.nvim: a per-buffer uv timer with vim.schedule_wrap -> vim._with
# {buf} `lockmarks silent! write`; plus an immediate save on BufLeave/FocusLost/QuitPre.
AUTOSAVE = {
    "pocco81": """
        local function save(buf)
          if vim.fn.getbufvar(buf, '&modifiable') == 1 and vim.bo[buf].modified then
            vim.api.nvim_buf_call(buf, function() vim.cmd('silent! write') end)
          end
          _G.autosave_ran = (_G.autosave_ran or 0) + 1
        end
        local queued = false
        vim.api.nvim_create_autocmd({'InsertLeave', 'TextChanged'}, {callback = function(ev)
          if not queued then
            queued = true
            vim.defer_fn(function() queued = false save(ev.buf) end, 135)
          end
        end})
    """,
    "pocco81 write_all_buffers": """
        local queued = false
        vim.api.nvim_create_autocmd({'InsertLeave', 'TextChanged'}, {callback = function(ev)
          if not queued then
            queued = true
            vim.defer_fn(function()
              queued = false
              vim.api.nvim_buf_call(ev.buf, function() vim.cmd('silent! wall') end)
              _G.autosave_ran = (_G.autosave_ran or 0) + 1
            end, 135)
          end
        end})
    """,
    "okuuva": """
        local timers = {}
        local function save(buf)
          if not vim.api.nvim_buf_is_valid(buf) or not vim.bo[buf].modified then return end
          vim._with({buf = buf}, function() vim.cmd('lockmarks silent! write') end)
        end
        vim.api.nvim_create_autocmd({'InsertLeave', 'TextChanged'}, {callback = function(ev)
          if timers[ev.buf] then timers[ev.buf]:close() end
          local timer = vim.uv.new_timer()
          timers[ev.buf] = timer
          timer:start(200, 0, vim.schedule_wrap(function()
            save(ev.buf)
            _G.autosave_ran = (_G.autosave_ran or 0) + 1
          end))
        end})
        vim.api.nvim_create_autocmd({'BufLeave', 'FocusLost', 'QuitPre'}, {callback = function(ev) save(ev.buf) end})
    """,
    "nested BufLeave/TextChanged autocommand": """
        vim.cmd('autocmd TextChanged * ++nested silent! update')
        vim.cmd('autocmd TextChanged * let g:autosave_ran = get(g:, "autosave_ran", 0) + 1')
        vim.cmd('autocmd BufLeave * ++nested silent! update')
    """,
    "timer calling :wall": """
        vim.fn.timer_start(100, function()
          vim.cmd('silent! wall')
          _G.autosave_ran = (_G.autosave_ran or 0) + 1
        end, {['repeat'] = -1})
    """,
}


@pytest.mark.parametrize("plugin", list(AUTOSAVE))
def test_auto_save_never_accepts(review, project, plugin):
    editor = review.editor
    target = project / "auto.txt"
    original = write(target, b"old\n")
    editor.lua(AUTOSAVE[plugin])
    request = review.open(target, "new\n")
    edit_proposal(review, target, "typed")
    ran = "return (_G.autosave_ran or vim.g.autosave_ran or 0)"
    wait_for(lambda: editor.lua(ran) >= 1, what="the auto-save to run")
    editor.nvim.input(":tabfirst<CR>:tabnext<CR>")  # BufLeave and back, with the proposal edited
    editor.status()  # a round trip after those keys
    assert review.info(target) is not None, "still in review"
    assert review.proposal_lines(target) == ["typed"]
    no_outcome(review, target)
    assert target.read_bytes() == original
    review.proposal_window(target)
    editor.nvim.input(":w<CR>")  # the user's own write
    assert review.outcome(request) == {"status": "accepted", "content": "typed\n"}


def test_wall_typed_in_the_left_window_does_not_accept(review, project):
    editor = review.editor
    target = project / "w.txt"
    write(target, b"old\n")
    request = review.open(target, "new\n")
    edit_proposal(review, target, "edited")
    info = review.info(target)
    editor.lua("vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1])", info["original"])
    editor.nvim.input(":wall<CR>")
    wait_for(lambda: "not accepted" in editor.messages(), what="the refusal")
    assert review.info(target) is not None
    no_outcome(review, target)
    editor.nvim.command("GeminiAccept")
    assert review.outcome(request) == {"status": "accepted", "content": "edited\n"}


def test_the_proposal_is_marked_for_auto_save_plugins(review, project):
    target = project / "m.txt"
    review.open(target, "x\n")
    info = review.info(target)
    marks = review.editor.lua(
        "local b = ... return {vim.b[b].gemini_companion_proposal, vim.b[b].autosave_disabled, vim.bo[b].buftype}",
        info["proposal"],
    )
    assert marks == [True, True, "acwrite"]


# --- exits that write accept, however they are invoked ----------------------------------------

EXITS = {
    "mapping :x": lambda e: (e.nvim.command("nnoremap <buffer> <F2> :x<CR>"), e.nvim.input("<F2>")),
    "<Cmd>wq": lambda e: (e.nvim.command("nnoremap <buffer> <F3> <Cmd>wq<CR>"), e.nvim.input("<F3>")),
    "Lua mapping nvim_command x": lambda e: (
        e.lua("vim.keymap.set('n', '<F4>', function() vim.api.nvim_command('x') end, {buffer = 0})"),
        e.nvim.input("<F4>"),
    ),
    "nvim_command x": lambda e: e.nvim.command("x"),
    "typed :x": lambda e: e.nvim.input(":x<CR>"),
    "typed :update": lambda e: e.nvim.input(":update<CR>"),
    "ZZ": lambda e: e.nvim.input("ZZ"),
}


@pytest.mark.parametrize("how", list(EXITS))
def test_unedited_proposal_is_accepted_by_every_writing_exit(review, project, how):
    target = project / "x.txt"
    original = write(target, b"old\n")
    request = review.open(target, "new\n")
    review.proposal_window(target)
    EXITS[how](review.editor)
    assert review.outcome(request) == {"status": "accepted", "content": "new\n"}
    settle(review, target)
    assert target.read_bytes() == original


@pytest.mark.parametrize("command", ["xa", "wqa"])
def test_xa_and_wqa_accept_then_exit(review, project, command):
    target = project / "x.txt"
    write(target, b"old\n")
    request = review.open(target, "new\n")
    review.editor.nvim.command("tabfirst")  # from another tab: the proposal is not in view
    try:
        review.editor.nvim.command(command)
    except Exception:  # noqa: BLE001 - Neovim exits under the request
        pass
    assert review.outcome(request) == {"status": "accepted", "content": "new\n"}


def test_qa_stops_at_a_pending_review_and_bang_rejects(review, project):
    target = project / "q.txt"
    write(target, b"old\n")
    request = review.open(target, "new\n")
    with pytest.raises(Exception, match=r"E162|E37"):
        review.editor.nvim.command("qa")
    assert review.info(target) is not None
    try:
        review.editor.nvim.command("qa!")
    except Exception:  # noqa: BLE001 - Neovim exits under the request
        pass
    assert review.outcome(request) == {"status": "rejected"}


# --- replaced clients, :e!, :enew, :tabonly, :bufdo e! ------------------------------------------


def test_disconnect_orphans_an_edited_proposal_and_closes_an_unedited_one(review, project):
    editor = review.editor
    kept, closed = project / "kept.txt", project / "closed.txt"
    write(kept, b"k\n")
    write(closed, b"c\n")
    review.open(kept, "agent\n")
    edit_proposal(review, kept, "my edit")
    # The client's one-diff-at-a-time lock: the second proposal comes once the first is
    # answered in the CLI (closeDiff with suppressNotification), which keeps nothing open...
    # so the unedited one is opened by a second client that dies too.
    review.client.proc.kill()
    wait_for(lambda: (i := review.info(kept)) and i.get("orphaned"), what="the edited proposal to be orphaned")
    assert review.proposal_lines(kept) == ["my edit"]
    assert "disconnected" in winbar(review, kept)
    editor.nvim.command("GeminiAccept!")
    wait_for(lambda: review.closed(kept), what="the review to close")
    assert kept.read_bytes() == b"my edit\n"


def test_disconnect_closes_an_unedited_proposal(review, project):
    target = project / "u.txt"
    write(target, b"u\n")
    review.open(target, "agent\n")
    review.client.proc.kill()
    wait_for(lambda: review.closed(target), what="the unedited proposal to close")
    assert target.read_bytes() == b"u\n"


@pytest.mark.parametrize("command", ["edit!", "windo edit!"])
def test_edit_bang_restores_the_agents_proposal_and_stays_in_review(review, project, command):
    editor = review.editor
    target = project / "e.txt"
    write(target, b"file\n")
    write(project / "other.txt", b"x\n")
    editor.nvim.command(f"edit {project / 'other.txt'}")  # named buffers only: `:bufdo` stops at E32
    request = review.open(target, "agent\n")
    edit_proposal(review, target, "mine")
    editor.nvim.command(command)
    assert review.info(target) is not None
    review.proposal_window(target)
    wait_for(lambda: review.proposal_lines(target) == ["agent"], what="the agent's proposal back")
    assert tabs(editor) == 2, "no stray tab"
    assert editor.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", review.info(target)["original"]) == [
        "file"
    ]
    no_outcome(review, target)
    editor.nvim.command("write")
    assert review.outcome(request) == {"status": "accepted", "content": "agent\n"}


@pytest.mark.parametrize("command", ["enew", "tabfirst | tabonly", "bufdo edit!"])
def test_side_effect_closes_keep_an_edited_proposal(review, project, command):
    editor = review.editor
    target = project / "s.txt"
    write(target, b"file\n")
    write(project / "other.txt", b"x\n")
    editor.nvim.command(f"edit {project / 'other.txt'}")  # `:bufdo` visits listed buffers
    request = review.open(target, "agent\n")
    edit_proposal(review, target, "mine")
    editor.nvim.command(command)
    wait_for(lambda: "stays in review" in editor.messages(), what="the review to come back")
    assert review.info(target) is not None and review.proposal_lines(target) == ["mine"]
    proposal_windows = editor.lua("return #vim.fn.win_findbuf(...)", review.info(target)["proposal"])
    assert proposal_windows == 1
    no_outcome(review, target)
    review.proposal_window(target)
    editor.nvim.command("quit")  # on purpose: rejects
    assert review.outcome(request) == {"status": "rejected"}
    settle(review, target)


@pytest.mark.parametrize("command", ["enew", "tabfirst | tabonly"])
def test_side_effect_closes_reject_an_unedited_proposal(review, project, command):
    target = project / "s.txt"
    write(target, b"file\n")
    request = review.open(target, "agent\n")
    review.proposal_window(target)
    review.editor.nvim.command(command)
    assert review.outcome(request) == {"status": "rejected"}
    settle(review, target)


# --- one review per real file ----------------------------------------------------------------


def test_a_symlink_and_its_target_share_one_review(editor, gemini, gemini_factory, project):
    other_client = gemini_factory(editor)
    assert other_client.call("connect")["status"] == "connected"
    first, second = Review(editor, gemini), Review(editor, other_client)
    real = project / "real.txt"
    write(real, b"0\n")
    link = project / "link.txt"
    link.symlink_to(real)
    old = gemini.send("openDiff", filePath=str(link), newContent="via link\n")
    wait_for(lambda: first.info(real), what="the review of the real file")
    new = other_client.send("openDiff", filePath=str(real), newContent="via target\n")
    assert first.outcome(old) == {"status": "rejected"}
    assert [n["params"]["filePath"] for n in first.notifications("ide/diffRejected", link)] == [str(link)]
    wait_for(lambda: second.proposal_lines(real) == ["via target"], what="the replacing review")
    wait_for(lambda: tabs(editor) == 2, what="one review tab")
    assert [d["file"] for d in editor.status()["diffs"]] == [str(real)]
    editor.nvim.command("GeminiAccept")
    assert second.outcome(new) == {"status": "accepted", "content": "via target\n"}


def test_a_newer_proposal_for_the_file_keeps_the_users_edits_of_the_older(editor, gemini, gemini_factory, project):
    """A second agent proposing for the same file ends the first one's review: typed edits in it
    stay, orphaned, as when any review ends unanswered; an unedited one just closes."""
    other_client = gemini_factory(editor)
    assert other_client.call("connect")["status"] == "connected"
    first, second = Review(editor, gemini), Review(editor, other_client)
    target = project / "e.txt"
    write(target, b"old\n")
    first.open(target, "agent one\n")
    edit_proposal(first, target, "my careful edit")
    other_client.send("openDiff", filePath=str(target), newContent="agent two\n")
    wait_for(lambda: second.proposal_lines(target) == ["agent two"], what="the newer review")
    orphans = editor.lua(
        "return vim.tbl_map(function(b) return vim.api.nvim_buf_get_lines(b, 0, -1, false) end,"
        " vim.tbl_filter(function(b) return vim.api.nvim_buf_get_name(b):find('^gemini://orphaned%-proposal') end,"
        " vim.api.nvim_list_bufs()))"
    )
    assert orphans == [["my careful edit"]]
    assert tabs(editor) == 3 and target.read_bytes() == b"old\n"


def test_the_users_buffer_is_not_reloaded_from_a_fifo_put_in_the_files_place(review, project):
    """After an accept, the user's unmodified buffer of the file is reloaded once the agent wrote
    it; if a FIFO is there instead, reading it would hold Neovim: it is named, not read."""
    editor = review.editor
    target = project / "r.txt"
    write(target, b"old\n")
    editor.nvim.command(f"tabnew {target}")  # the user has it open, unmodified
    request = review.open(target, "new\n")
    review.proposal_window(target)
    editor.nvim.command("write")
    assert review.outcome(request)["status"] == "accepted"
    target.unlink()
    os.mkfifo(target)  # what the agent "wrote"
    wait_for(lambda: "is a fifo now" in editor.messages(), what="the one-line warning")
    assert editor.lua("return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)", str(target)) == ["old"]


@pytest.mark.parametrize("side", ["proposal", "original"])
def test_a_modeline_in_the_text_does_nothing_when_it_is_read_again(review, project, side):
    """`:e!` reads a side again: the text is data, its modeline sets no option ('modeline' is on
    for users, off for root, as the tests run)."""
    editor = review.editor
    target = project / "ml.txt"
    body = "x\n# vim: set tabstop=3 filetype=lua :\n"
    write(target, body.encode() if side == "original" else b"old\n")
    editor.nvim.command("setglobal modeline")  # a user's config: every new buffer gets it
    review.open(target, body if side == "proposal" else "new\n")
    editor.lua("vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1])", review.info(target)[side])
    editor.nvim.command("edit!")
    tabstop, filetype = editor.lua("return {vim.bo.tabstop, vim.bo.filetype}")
    assert tabstop != 3 and filetype != "lua"


# --- the file becomes something else while under review ----------------------------------------


@pytest.mark.parametrize("becomes", ["directory", "fifo", "too large"])
def test_file_turning_into_something_unreadable_keeps_the_proposal(review, project, becomes):
    editor = review.editor
    target = project / "f.txt"
    write(target, b"file\n")
    review.open(target, "agent\n")
    edit_proposal(review, target, "mine")
    target.unlink()
    if becomes == "directory":
        target.mkdir()
    elif becomes == "fifo":
        os.mkfifo(target)
    else:
        target.write_bytes(b"x" * (17 * 1024 * 1024))
    wait_for(lambda: "cannot be shown" in editor.messages(), what="the one-line message")
    messages = editor.messages()
    assert "Error" not in messages and "stack traceback" not in messages, messages
    assert review.proposal_lines(target) == ["mine"]
    assert "cannot be read" in winbar(review, target)
    review.proposal_window(target)
    editor.nvim.command("write")  # stale: refused, nothing lost
    assert review.info(target) is not None
    no_outcome(review, target)
    if target.is_dir():
        shutil.rmtree(target)


# --- stale discovery files -------------------------------------------------------------------


def plant(directory: Path, name: str, **fields: object) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(json.dumps({"port": 1, "workspacePath": "/", "authToken": "x", **fields}))
    path.chmod(0o600)
    return path


def test_periodic_sweep_removes_dead_zombie_and_reused_pids_only(editor_factory, sandbox):
    sandbox.env["GEMINI_COMPANION_SWEEP_SECONDS"] = "1"
    editor = editor_factory()
    status = editor.wait_state("running")
    zombie = psutil.Popen(["true"])  # exits; never reaped until we say so: a zombie
    wait_for(lambda: zombie.status() == psutil.STATUS_ZOMBIE, what="a zombie")
    me = psutil.Process()
    planted = {
        "dead": plant(sandbox.gemini_dir, "gemini-ide-server-1-11.json", neovimCompanionPid=2**22 + 7),
        "zombie": plant(sandbox.gemini_dir, "gemini-ide-server-1-12.json", neovimCompanionPid=zombie.pid),
        "reused": plant(
            sandbox.gemini_dir,
            "gemini-ide-server-1-13.json",
            neovimCompanionPid=me.pid,
            neovimCompanionStart=123,  # this PID now belongs to a process started at another time
        ),
    }
    alive = plant(sandbox.gemini_dir, "gemini-ide-server-1-14.json", neovimCompanionPid=me.pid)
    wait_for(lambda: not any(p.exists() for p in planted.values()), what="the periodic sweep")
    assert alive.exists(), "a live instance's file is never deleted"
    assert all(Path(p).exists() for p in status["discovery_files"]), "nor our own"
    zombie.wait()


def test_unusable_discovery_directories_fail_clearly_and_start_retries(editor_factory, sandbox):
    (sandbox.tmp / "gemini").mkdir()
    (sandbox.tmp / "gemini" / "ide").write_text("not a directory")
    (sandbox.home / ".qwen").mkdir()
    (sandbox.home / ".qwen" / "ide").write_text("not a directory")
    editor = editor_factory()
    status = editor.wait_state("failed")
    assert "not a directory" in status["error"] and "\n" not in status["error"], status
    assert "Traceback" not in editor.messages()
    report = "\n".join(editor.nvim.command_output("checkhealth gemini_companion").splitlines())
    report = "\n".join(editor.nvim.current.buffer[:]) or report
    assert "not a directory" in report
    (sandbox.tmp / "gemini" / "ide").unlink()
    (sandbox.home / ".qwen" / "ide").unlink()
    editor.nvim.command("GeminiCompanion start")
    assert editor.wait_state("running")["discovery_files"]


def break_dir(directory: Path, how: str) -> Callable[[], None]:
    """Make a discovery directory unusable; returns how to fix it."""
    if how == "a file":
        directory.parent.mkdir(parents=True, exist_ok=True)
        directory.write_text("not a directory")
        return directory.unlink
    directory.mkdir(parents=True)  # "open to all": anyone could plant a file the CLI trusts
    directory.chmod(0o777)
    return lambda: directory.chmod(0o700)


@pytest.mark.parametrize("how", ["a file", "open to all"])
@pytest.mark.parametrize("picked_up_by", ["the periodic sweep", ":GeminiCompanion start"])
def test_a_discovery_directory_fixed_at_run_time_is_picked_up(editor_factory, sandbox, how, picked_up_by):
    if picked_up_by == "the periodic sweep":
        sandbox.env["GEMINI_COMPANION_SWEEP_SECONDS"] = "1"
    fix = break_dir(sandbox.qwen_dir, how)
    editor = editor_factory()
    status = editor.wait_state("running")  # Gemini CLI can find it: the server runs
    assert len(status["discovery_errors"]) == 1, status
    assert status["discovery_errors"][0].startswith("Qwen Code cannot find this server: "), status
    lines = "\n".join(editor.lua("return require('gemini_companion').status_lines()"))
    assert "Gemini CLI only" in lines and "Qwen Code only" not in lines, lines
    lock = sandbox.qwen_dir / f"{status['port']}.lock"
    assert not lock.exists()

    fix()
    if picked_up_by == ":GeminiCompanion start":
        editor.nvim.command("GeminiCompanion start")
    status = wait_for(lambda: not (s := editor.status())["discovery_errors"] and s, what="the error to go")
    assert str(lock) in status["discovery_files"] and status["port"] == editor.status()["port"], "same server"
    assert lock.stat().st_mode & 0o777 == 0o600
    assert "only" not in "\n".join(editor.lua("return require('gemini_companion').status_lines()"))
    node = str(NODE_DIR / "node_modules" / ".bin" / "node")  # the real Qwen client finds it now
    client = NodeClient("qwen_client.mjs", client_env(editor), sandbox.project, node=node)
    try:
        assert client.call("connect")["status"] == "connected"
    finally:
        client.close()
    assert editor.messages().count("Qwen Code cannot find this server") == 1, "said once, not at each retry"
    editor.nvim.command("GeminiCompanion stop")
    wait_for(lambda: not lock.exists(), what="the late file to be taken back at stop")


# --- closeDiff with a bad path ---------------------------------------------------------------


def test_close_diff_with_a_relative_or_malformed_path_is_an_error(review, project):
    for path in ("relative/x.txt", "", f"{project}/a\x00b", f"{project}/../x"):
        result = review.tool("closeDiff", filePath=path)
        assert result.get("isError"), path
        text = result["content"][0]["text"]
        assert text.startswith("closeDiff: ") and "\n" not in text, text
    result = review.tool("closeDiff", filePath=str(project / "no-review.txt"))
    assert not result.get("isError") and json.loads(result["content"][0]["text"]) == {"content": None}


# --- smaller: sessions, LSP, one prefix ---------------------------------------------------------


def test_a_restored_session_brings_back_no_empty_review(review, project, editor_factory, sandbox):
    target = project / "sess.txt"
    write(target, b"file\n")
    review.open(target, "agent\n")
    session = sandbox.base / "session.vim"
    review.editor.nvim.command(f"mksession {session}")
    restored = editor_factory(setup={"auto_start": False})
    restored.nvim.command(f"source {session}")
    wait_for(lambda: not restored.lua(PROPOSAL_BUFFERS), what="stray review buffers to go")
    assert tabs(restored) == 1, "no empty review tab"


def test_no_language_server_on_review_buffers(review, project):
    editor = review.editor
    editor.lua(PYLSP, PYLSP_BIN)
    source = project / "mod.py"
    write(source, b"import os\n")
    editor.nvim.command(f"edit {source}")
    attached = "return #vim.lsp.get_clients({bufnr = ...})"
    user_buf = editor.lua("return vim.api.nvim_get_current_buf()")
    wait_for(lambda: editor.lua(attached, user_buf) == 1, what="pylsp on the user's buffer")
    request = review.open(project / "other.py", "x = 1\n")
    info = review.info(project / "other.py")
    # vim.lsp.start attaches on FileType, at once; the detach is scheduled right after.
    editor.status()
    wait_for(
        lambda: editor.lua(attached, info["proposal"]) == 0 and editor.lua(attached, info["original"]) == 0,
        what="no client on the review buffers",
    )
    assert editor.lua(attached, user_buf) == 1
    editor.nvim.command("GeminiReject")
    assert review.outcome(request) == {"status": "rejected"}


def test_messages_carry_the_prefix_once(review, project):
    editor = review.editor
    target = project / "p.txt"
    review.open(target, "x\n")
    try:
        editor.nvim.command("GeminiAccept nothing-here.txt")
    except Exception:  # noqa: BLE001
        pass
    kill_host(editor)
    messages = editor.messages()
    assert "gemini-companion: gemini-companion" not in messages, messages
    assert messages.count("the Python host was killed") == 1
