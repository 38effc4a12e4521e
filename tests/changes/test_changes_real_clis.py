"""`:GeminiChanges` with the real CLIs in YOLO mode (no review at all): the turn's boundaries come
from the CLI's own hooks, registered by the plugin (Gemini: the user settings enable-cli writes;
Qwen: the session defaults file). A turn that writes two files, deletes one and runs a shell
`sed` lists four entries; one hunk goes back exactly; `undo` restores the rest byte for byte but
not a file the user changed after the turn; the user's git index, stash and branches stay."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.tui_helpers import neovim_with_agents
from conftest import Sandbox, git, wait_for
from harness.fake_model import Turn
from harness.tui import E2E_TIMEOUT, GEMINI_BIN, NODE22, QWEN_CLI, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]

AGENT = {"gemini": [str(GEMINI_BIN), "--yolo"], "qwen": [str(NODE22), str(QWEN_CLI), "--yolo"]}
SED = "colour\nkeep\nkeep\nkeep\ncolour\n"


def script(cli: str, project: Path) -> list[Turn]:
    shell = {
        "command": "rm gone.txt && sed -i 's/colour/color/' sed.txt",
        "description": "tidy",
        "is_background": False,
    }
    read_first = [Turn(call="read_file", args={"file_path": str(project / "a.txt")})] if cli == "qwen" else []
    return [
        *read_first,
        Turn(call="write_file", args={"file_path": str(project / "a.txt"), "content": "alpha\nBETA\n"}),
        Turn(call="write_file", args={"file_path": str(project / "new.txt"), "content": "fresh\n"}),
        Turn(call="run_shell_command", args=shell),
        Turn(text="Tidied up."),
    ]


@pytest.mark.parametrize("cli", ["gemini", "qwen"])
def test_a_yolo_turn_is_listed_and_taken_back_hunk_by_hunk(sandbox: Sandbox, cli: str):
    project = sandbox.project
    git(project, "init", "-q")
    (project / "a.txt").write_text("alpha\nbeta\n")
    (project / "gone.txt").write_text("bye\n")
    (project / "sed.txt").write_text(SED)
    git(project, "add", "-A")
    git(project, "commit", "-qm", "base")
    git(project, "branch", "side")
    (project / "a.txt").write_text("alpha\nbeta\nstashed\n")
    git(project, "stash", "-q")
    state = (git(project, "stash", "list"), git(project, "for-each-ref"), git(project, "ls-files", "-s"))
    setup = {"agents": {cli: {"cmd": AGENT[cli]}}, "default_agent": cli, "cli_settings": "auto"}
    with neovim_with_agents(sandbox, project / "a.txt", script(cli, project), setup) as (tui, model, _):
        tui.ex("Gemini")
        tui.ask_agent("tidy the project", lambda: model.requests)
        turns = "return require('gemini_companion.changes').turns"
        turn = wait_for(lambda: [t for t in tui.lua(turns) if t["files"]], E2E_TIMEOUT, "the turn")[-1]
        assert sorted(f["path"] for f in turn["files"]) == ["a.txt", "gone.txt", "new.txt", "sed.txt"]
        assert turn["agent"] == cli and turn["boundary"] == "hooks"
        assert len(tui.lua(turns)) == 1  # one prompt, one turn (Qwen re-fires its prompt hook per tool round)
        tui.ex("GeminiChanges")
        items = wait_for(lambda: tui.lua("return vim.fn.getqflist()"), 30, "the list")
        assert len(items) == 4
        # One hunk of the shell's sed, taken back from the diff: exactly those bytes.
        assert (project / "sed.txt").read_text() == "color\nkeep\nkeep\nkeep\ncolor\n"
        tui.lua("vim.cmd('cc 4') vim.fn.cursor(1, 1) require('gemini_companion.changes').revert_hunk()")
        assert (project / "sed.txt").read_text() == "colour\nkeep\nkeep\nkeep\ncolor\n"
        # The user edits a.txt after the turn: `undo` leaves it, restores the rest.
        (project / "a.txt").write_text("alpha\nBETA\nmine\n")
        tui.ex("GeminiChanges undo")
        wait_for(lambda: (project / "sed.txt").read_text() == SED, 30, "the turn undone")
        tui.wait_screen("1 refused")
        assert (project / "a.txt").read_text() == "alpha\nBETA\nmine\n"
        assert not (project / "new.txt").exists() and (project / "gone.txt").read_text() == "bye\n"
        # (The CLI itself may refresh the index's stat data: its entries are what must stay.)
        assert (git(project, "stash", "list"), git(project, "for-each-ref"), git(project, "ls-files", "-s")) == state


@pytest.mark.parametrize("cli", ["gemini", "qwen"])
def test_a_yolo_turn_that_changes_types_is_undone_whole(sandbox: Sandbox, cli: str):
    """The agent's shell makes the executable file `f` a folder (and its tool writes a file in it)
    and the folder `d` a file: `undo` gives both back, type, bytes and execute bit."""
    project = sandbox.project
    git(project, "init", "-q")
    (project / "f").write_text("#!/bin/sh\necho f\n")
    (project / "f").chmod(0o755)
    (project / "d" / "sub").mkdir(parents=True)
    (project / "d" / "sub" / "x.txt").write_text("x\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "base")
    shell = {
        "command": "rm f && mkdir -p f/inner && echo two > f/inner/two.txt && rm -r d && echo agent > d",
        "description": "reshape",
        "is_background": False,
    }
    turns_script = [
        Turn(call="run_shell_command", args=shell),
        Turn(call="write_file", args={"file_path": str(project / "f" / "one.txt"), "content": "one\n"}),
        Turn(text="Reshaped."),
    ]
    setup = {"agents": {cli: {"cmd": AGENT[cli]}}, "default_agent": cli, "cli_settings": "auto"}
    with neovim_with_agents(sandbox, project / "d" / "sub" / "x.txt", turns_script, setup) as (tui, model, _):
        tui.ex("Gemini")
        tui.ask_agent("reshape the project", lambda: model.requests)
        turns = "return require('gemini_companion.changes').turns"
        turn = wait_for(lambda: [t for t in tui.lua(turns) if t["files"]], E2E_TIMEOUT, "the turn")[-1]
        assert sorted(f["path"] for f in turn["files"]) == ["d", "d/sub/x.txt", "f", "f/inner/two.txt", "f/one.txt"]
        tui.ex("GeminiChanges undo")
        wait_for(lambda: (project / "f").is_file(), 30, "the turn undone")
        tui.wait_screen("5 taken back")
        assert (project / "f").read_text() == "#!/bin/sh\necho f\n" and (project / "f").stat().st_mode & 0o777 == 0o755
        assert (project / "d" / "sub" / "x.txt").read_text() == "x\n"
        assert sorted(p.name for p in project.iterdir()) == [".git", "d", "f"]
