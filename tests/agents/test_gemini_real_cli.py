"""The real `gemini` binary in Neovim's :terminal, Neovim a real TUI under tmux (issue 5).

The model is a scripted stand-in on 127.0.0.1: it answers the prompt with a call to the
CLI's file-editing tool, then with a final text once it has the tool's result.
Each case asserts on the file on disk and on what the CLI sent back to the model.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Sandbox, wait_for
from harness.fake_model import FakeModel, Turn
from harness.tui import E2E_TIMEOUT, GEMINI_BIN, Tui, launch, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]


@pytest.fixture
def session(sandbox: Sandbox) -> Iterator[tuple[Tui, FakeModel, Path]]:
    target = sandbox.project / "greeting.txt"
    target.write_text("hello\nworld\n")
    model = FakeModel(
        [
            Turn(
                call="replace",
                args={
                    "file_path": str(target),
                    "instruction": "greet there instead of world",
                    "old_string": "world",
                    "new_string": "there",
                },
            ),
            Turn(text="All done."),
        ]
    )
    try:
        tui = launch(sandbox, model.url, [str(target)], str(GEMINI_BIN))
        yield tui, model, target
        tui.close()
    finally:
        model.close()


def ask_for_edit(tui: Tui, model: FakeModel) -> dict:
    tui.prompt("greet there instead of world in greeting.txt", lambda: model.requests)
    return tui.wait_diff()


def model_turns(model: FakeModel) -> int:
    return sum("GenerateContent" in r["path"] for r in model.requests)


def test_accept_with_w_writes_the_proposal(session):
    tui, model, target = session
    ask_for_edit(tui, model)
    tui.ex("w")
    wait_for(lambda: target.read_text() == "hello\nthere\n", E2E_TIMEOUT, "the CLI to write the file")
    tui.wait_screen("All done.")
    assert tui.status()["diffs"] == []
    assert "Successfully modified file" in str(model.tool_results()[-1])


def test_edited_proposal_is_what_lands(session):
    tui, model, target = session
    ask_for_edit(tui, model)
    tui.keys("Escape")
    tui.type("Go")  # a new last line in the proposal, typed by the user
    tui.type("added by me")
    tui.keys("Escape")
    tui.ex("w")
    wait_for(lambda: target.read_text() == "hello\nthere\nadded by me\n", E2E_TIMEOUT, "the user's version")
    tui.wait_screen("All done.")
    assert "added by me" in str(model.tool_results()[-1])


def test_reject_with_q_leaves_the_file_alone(session):
    tui, model, target = session
    ask_for_edit(tui, model)
    tui.ex("q")
    wait_for(lambda: tui.status()["diffs"] == [], E2E_TIMEOUT, "the diff to close")
    # The CLI cancels the tool call; the model is not asked again.
    wait_for(lambda: "cancel" in tui.screen().lower() or "reject" in tui.screen().lower(), E2E_TIMEOUT, "CLI shows it")
    assert target.read_text() == "hello\nworld\n"
    assert model_turns(model) == 1


def test_accept_in_the_cli_keeps_edits_made_in_the_diff(session):
    tui, model, target = session
    ask_for_edit(tui, model)
    tui.keys("Escape")
    tui.type("ggOtop line")
    tui.keys("Escape")
    # Back to the agent's tab and answer its own prompt there ("Allow once" is the default).
    tui.ex("tabfirst")
    wait_for(lambda: tui.lua("return vim.bo.buftype") == "terminal", E2E_TIMEOUT, "back in the terminal")
    tui.keys("i")
    tui.wait_screen("Allow once")
    tui.keys("Enter")
    wait_for(lambda: target.read_text() == "top line\nhello\nthere\n", E2E_TIMEOUT, "edits kept")
    wait_for(lambda: tui.status()["diffs"] == [], E2E_TIMEOUT, "the diff tab to close")
    assert tui.lua("return #vim.api.nvim_list_tabpages()") == 1


def test_new_file_in_a_new_folder(sandbox: Sandbox):
    target = sandbox.project / "src" / "deep" / "new.txt"
    write = Turn(call="write_file", args={"file_path": str(target), "content": "fresh\n"})
    model = FakeModel([write, Turn(text="Made it.")])
    try:
        tui = launch(sandbox, model.url, [], str(GEMINI_BIN))
    except BaseException:
        model.close()
        raise
    try:
        tui.prompt("create src/deep/new.txt", lambda: model.requests)
        tui.wait_diff()
        assert not target.exists()  # nothing lands before the user says so
        tui.ex("w")
        wait_for(lambda: target.exists() and target.read_text() == "fresh\n", E2E_TIMEOUT, "the new file")
        tui.wait_screen("Made it.")
    finally:
        tui.close()
        model.close()


def test_ide_status_shows_neovim_and_the_open_file(session):
    tui, _model, target = session
    tui.prompt("/ide status", lambda: "Connected to Neovim" in tui.screen())
    screen = tui.wait_screen("Connected to Neovim")
    assert target.name in screen
