"""A review's identity survives the host (issue 21): orphans of a killed host and the reviews
of the next host never take each other's place, even when the new host's ids start again.

A real Neovim, the real host (killed with SIGKILL, then `:GeminiCompanion restart`) and the
real Gemini IDE client; every test checks the bytes of every file involved.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from pynvim import NvimError

from conftest import Editor, NodeClient, wait_for
from review.helpers import Review, edit_proposal, kill_host, tabs, write


@pytest.fixture
def project(sandbox) -> Path:
    return Path(os.path.realpath(sandbox.project))


def connected(editor: Editor, gemini_factory: Callable[..., NodeClient]) -> Review:
    client = gemini_factory(editor)
    assert client.call("connect")["status"] == "connected"
    return Review(editor, client)


def files(editor: Editor) -> list[str]:
    return editor.lua("return require('gemini_companion.review').files()")


def orphans(editor: Editor) -> list[str]:
    return editor.lua("return require('gemini_companion.review').orphaned()")


def restart(editor: Editor, gemini_factory: Callable[..., NodeClient]) -> Review:
    editor.nvim.command("GeminiCompanion restart")
    editor.wait_state("running")
    return connected(editor, gemini_factory)


def two_orphans(editor: Editor, gemini_factory, project: Path) -> tuple[Path, Path]:
    """Two reviews (one edited by the user, one not) whose host is then killed."""
    first, second = connected(editor, gemini_factory), connected(editor, gemini_factory)
    a, b = project / "a.txt", project / "b.txt"
    write(a, b"a old\n")
    write(b, b"b old\n")
    first.open(a, "a agent\n")
    second.open(b, "b agent\n")
    edit_proposal(first, a, "a mine")
    kill_host(editor)
    wait_for(lambda: orphans(editor) == [str(a), str(b)], what="both reviews orphaned")
    return a, b


def test_orphans_and_a_new_review_after_restart_each_act_on_their_own(editor, gemini_factory, project):
    a, b = two_orphans(editor, gemini_factory, project)
    c = project / "c.txt"
    write(c, b"c old\n")
    new = restart(editor, gemini_factory)
    request = new.open(c, "c agent\n")  # the new host numbers its reviews from 1 again
    assert orphans(editor) == [str(a), str(b)], "a new review takes no orphan's place"
    assert editor.status()["diffs"][0]["file"] == str(c)
    new.proposal_window(c)
    editor.nvim.command("write")
    assert new.outcome(request) == {"status": "accepted", "content": "c agent\n"}
    wait_for(lambda: new.info(c) is None, what="the new review to close")
    assert orphans(editor) == [str(a), str(b)], "accepting it settles no orphan"

    new.proposal_window(a)  # the user's edited orphan: accepted with its own bytes
    editor.nvim.command("GeminiAccept!")
    wait_for(lambda: new.info(a) is None, what="the orphan of a.txt to close")
    assert a.read_bytes() == b"a mine\n"
    assert orphans(editor) == [str(b)]

    new.proposal_window(b)  # the other: dropped on its own
    editor.nvim.command("quit")
    wait_for(lambda: new.closed(b), what="the orphan of b.txt to close")
    assert b.read_bytes() == b"b old\n" and c.read_bytes() == b"c old\n", "nothing else was written"
    assert tabs(editor) == 1


def test_commands_in_an_orphans_tab_act_on_that_orphan_only(editor, gemini_factory, project):
    a, b = two_orphans(editor, gemini_factory, project)
    new = restart(editor, gemini_factory)
    c = project / "c.txt"
    write(c, b"c old\n")
    request = new.open(c, "c agent\n")

    new.proposal_window(b)  # :w and :GeminiAccept (no bang) in an orphan: refused, nothing moves
    editor.nvim.command("write")
    editor.nvim.command("GeminiAccept")
    assert new.info(b) and new.info(c) and orphans(editor) == [str(a), str(b)]
    assert not new.notifications("ide/diffAccepted", c) and not new.notifications("ide/diffRejected", c)

    editor.nvim.command("GeminiAccept!")  # the orphan of this tab, with its own (unedited) bytes
    wait_for(lambda: new.info(b) is None, what="the orphan of b.txt to close")
    assert b.read_bytes() == b"b agent\n" and a.read_bytes() == b"a old\n" and c.read_bytes() == b"c old\n"
    assert new.info(c) is not None and not new.notifications("ide/diffAccepted", c)

    editor.nvim.command(f"GeminiReject {a}")  # named from another tab: drops that orphan only
    wait_for(lambda: new.info(a) is None, what="the orphan of a.txt to close")
    assert a.read_bytes() == b"a old\n"
    assert new.info(c) is not None
    new.proposal_window(c)
    editor.nvim.command("quit")
    assert new.outcome(request)["status"] == "rejected"


def test_a_new_review_of_an_orphans_file_keeps_the_orphan(editor, gemini_factory, project):
    a, b = two_orphans(editor, gemini_factory, project)
    new = restart(editor, gemini_factory)
    request = new.open(a, "a again\n")  # the same file: the user's edited orphan must not go
    wait_for(lambda: files(editor).count(str(a)) == 2, what="the new review beside the orphan")
    assert orphans(editor) == [str(a), str(b)]
    editor.nvim.command("tabfirst")  # named from outside both: which one is not guessed
    with pytest.raises(NvimError, match="2 reviews of"):
        editor.nvim.command(f"GeminiAccept! {a}")
    assert a.read_bytes() == b"a old\n"
    assert not new.notifications("ide/diffAccepted", a) and orphans(editor) == [str(a), str(b)]
    new.proposal_window(a)  # info(a) is the live review; its tab is not the orphan's
    editor.nvim.command("write")
    assert new.outcome(request) == {"status": "accepted", "content": "a again\n"}
    assert orphans(editor) == [str(a), str(b)]

    orphan_win = editor.lua(  # the user goes to the orphan's proposal (its name says orphaned)
        "for _, w in ipairs(vim.api.nvim_list_wins()) do"
        " if vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w)) == ... then"
        "  vim.api.nvim_set_current_win(w) return w end end",
        f"gemini://orphaned-proposal{a}",
    )
    assert orphan_win and editor.lua("return vim.api.nvim_get_current_line()") == "a mine"
    editor.nvim.command("GeminiAccept!")
    wait_for(lambda: orphans(editor) == [str(b)], what="the orphan of a.txt to close")
    assert a.read_bytes() == b"a mine\n", "the orphan's own bytes"
