"""The host's log (`log.level`, `:GeminiCompanion log`), in a real Neovim with the real host and the
real Gemini IDE client: what each level writes, what it never writes (tokens, a file's text), its
bound, and the link it never follows."""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

from conftest import Editor, NodeClient, Sandbox, wait_for
from harness.mcp_raw import RawSession, ToolsClient
from review.helpers import Review

# Text that stands for the user's files: it must never reach the log.
ON_DISK = "ON-DISK-TEXT-7c1f"
PROPOSED = "PROPOSED-TEXT-93ab"
IN_BUFFER = "UNSAVED-TEXT-55d0"


def log_path(sandbox: Sandbox) -> Path:
    return sandbox.base / "state" / "nvim" / "gemini-companion" / "companion.log"


def log_text(sandbox: Sandbox) -> str:
    path = log_path(sandbox)
    return path.read_text() if path.exists() else ""


def logged(sandbox: Sandbox, pattern: str) -> re.Match[str]:
    try:
        return wait_for(lambda: re.search(pattern, log_text(sandbox), re.M), what=f"{pattern!r} in the log")
    except AssertionError as err:
        raise AssertionError(f"{err}; the log:\n{log_text(sandbox)[-3000:]}") from None


def refused(editor: Editor) -> None:
    """A request with a wrong token: a warning in the log at any level from 'warn' on."""
    status = RawSession(editor.status()["port"], "not-the-token").post_raw(b"{}")[0]
    assert status == 401


def session_at(
    level: str | None,
    sandbox: Sandbox,
    editor_factory: Callable[..., Editor],
    gemini_factory: Callable[..., NodeClient],
) -> tuple[Editor, dict[str, str]]:
    """A normal session in a Neovim whose log is at `level` (None: the default); the tokens involved."""
    target = sandbox.project / "target.txt"
    target.write_text(ON_DISK + "\n")
    editor = editor_factory(setup={"log": {"level": level}} if level else None)
    editor.wait_state("running")
    client = gemini_factory(editor)
    assert client.call("connect")["status"] == "connected"
    return editor, normal_session(editor, client, target)


def normal_session(editor: Editor, client: NodeClient, target: Path) -> dict[str, str]:
    """What a user does in a normal session: a review accepted, a context update, model tool calls.
    The tokens involved, by where they were read."""
    review = Review(editor, client)
    request = review.open(target, PROPOSED + "\n")
    review.proposal_window(target)
    editor.nvim.command("write")
    assert review.outcome(request)["status"] == "accepted"
    editor.nvim.command(f"edit {target}")
    editor.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, {...})", IN_BUFFER)
    editor.nvim.command("normal! V")  # a selection, shared as context
    status = editor.status()
    tools = ToolsClient(status)
    assert tools("read_buffer", path=str(target))["text"] == IN_BUFFER
    assert tools("get_open_buffers")
    gemini_file = next(p for p in status["discovery_files"] if "gemini-ide-server" in p)
    return {
        "discovery": json.loads(Path(gemini_file).read_text())["authToken"],
        "authorization": status["tools"]["headers"]["Authorization"].removeprefix("Bearer "),
        "environment": editor.env("GEMINI_CLI_IDE_AUTH_TOKEN") or "",
    }


def test_a_tool_call_and_an_open_diff_are_logged_at_debug_with_their_durations(
    sandbox: Sandbox, editor_factory: Callable[..., Editor], gemini_factory: Callable[..., NodeClient]
):
    session_at("debug", sandbox, editor_factory, gemini_factory)
    call = r"^.* DEBUG .*tools/call' #\d+ \{name="
    open_diff = logged(sandbox, call + r"'openDiff' .*filePath='([^']*)' newContent=<\d+ chars>.* in \d+\.\d ms$")
    assert open_diff[1] == str(sandbox.project / "target.txt")
    logged(sandbox, call + r"'read_buffer' .*→ ok \(1 items, \d+ chars\) in \d+\.\d ms$")
    text = log_text(sandbox)
    assert re.search(r" INFO  .*connected to /mcp", text), text  # lifecycle, at info (under debug)
    assert re.search(r" INFO  \[\d+\] discovery file written: .*gemini-ide-server", text), text
    assert re.search(r" DEBUG .*← ide/diffAccepted \{filePath='[^']*' content=<\d+ chars>\}", text), text
    assert re.search(r" DEBUG .*← ide/contextUpdate ", text), text


def test_at_warn_a_normal_session_writes_nothing(
    sandbox: Sandbox, editor_factory: Callable[..., Editor], gemini_factory: Callable[..., NodeClient]
):
    editor, _ = session_at(None, sandbox, editor_factory, gemini_factory)
    refused(editor)  # the one thing wrong; lines are written in order: nothing came before it
    logged(sandbox, r"refused POST '/mcp': 401 unauthorized")
    lines = log_text(sandbox).splitlines()
    assert len(lines) == 1 and " WARN  " in lines[0], lines


def test_no_token_and_no_file_text_at_any_level(
    sandbox: Sandbox, editor_factory: Callable[..., Editor], gemini_factory: Callable[..., NodeClient]
):
    editor, tokens = session_at("trace", sandbox, editor_factory, gemini_factory)
    # A token where names are logged (a path the model gave) is still no token in the log.
    tools = ToolsClient(editor.status())
    tools.refused("read_buffer", path=tokens["discovery"])
    refused(editor)
    logged(sandbox, r"refused POST '/mcp': 401")
    logged(sandbox, r"read_buffer.*path='<token>'")
    text = log_text(sandbox)
    assert " TRACE " in text and " DEBUG " in text
    for where, token in tokens.items():
        assert len(token) >= 32 and token not in text, f"the token from the {where} is in the log"
    for content in (ON_DISK, PROPOSED, IN_BUFFER):
        assert content not in text, f"{content} is in the log"
    folder = log_path(sandbox).parent
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(log_path(sandbox).stat().st_mode) == 0o600


def test_the_log_rotates_within_its_bound(sandbox: Sandbox, editor_factory: Callable[..., Editor]):
    sandbox.env["GEMINI_COMPANION_LOG_MAX_BYTES"] = "4096"
    editor = editor_factory(setup={"log": {"level": "debug"}})
    editor.wait_state("running")
    session = RawSession(editor.status()["port"], editor.env("GEMINI_CLI_IDE_AUTH_TOKEN") or "")
    session.initialize()
    old = log_path(sandbox).with_name("companion.log.1")
    n = 0
    while not (old.exists() and "'ping' #" in log_text(sandbox)):  # rotated, and written on after
        n += 1
        assert n < 2000, "never rotated"
        session.call("ping", request_id=n)
    wait_for(lambda: f"'ping' #{n} " in log_text(sandbox), what="the last ping logged")
    assert log_path(sandbox).stat().st_size <= 4096 and old.stat().st_size <= 4096
    assert stat.S_IMODE(old.stat().st_mode) == 0o600


def test_a_link_planted_at_the_log_path_is_not_followed(sandbox: Sandbox, editor_factory: Callable[..., Editor]):
    elsewhere = sandbox.base / "elsewhere.txt"
    elsewhere.write_text("someone's file\n")
    path = log_path(sandbox)
    path.parent.mkdir(parents=True, mode=0o700)
    os.symlink(elsewhere, path)
    editor = editor_factory(setup={"log": {"level": "debug"}})
    editor.wait_state("running")
    wait_for(lambda: "log off: cannot write" in editor.messages(), what="the log refused")
    refused(editor)
    assert elsewhere.read_text() == "someone's file\n"
    assert os.path.islink(path)
    said = editor.lua("return select(2, pcall(vim.cmd, 'GeminiCompanion log'))")  # nor opened
    assert "not opening the log" in said and "is a link, not a file" in said
    assert editor.lua("return vim.api.nvim_buf_get_name(0)") == ""


def test_the_log_opens_with_the_command(sandbox: Sandbox, editor_factory: Callable[..., Editor]):
    editor = editor_factory(setup={"log": {"level": "info"}})
    editor.wait_state("running")
    logged(sandbox, r"INFO  \[\d+\] serving on 127\.0\.0\.1:")
    editor.nvim.command("GeminiCompanion log")
    assert editor.lua("return vim.api.nvim_buf_get_name(0)") == str(log_path(sandbox))
    assert editor.lua("return vim.bo.readonly and not vim.bo.modifiable")
    lines = editor.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")
    assert any("serving on 127.0.0.1:" in line for line in lines)


def test_a_warning_neovim_shows_is_in_the_log(sandbox: Sandbox, editor_factory: Callable[..., Editor]):
    editor = editor_factory()
    editor.wait_state("running")
    editor.lua("require('gemini_companion.message').notify('all is well', 'info')")
    editor.lua("require('gemini_companion.message').notify('cannot do that: a reason', 'warn')")
    long = "cannot start: " + "x" * 300  # cut on the screen, whole in the log
    editor.lua("require('gemini_companion.message').brief(..., 'error')", long)
    logged(sandbox, rf"ERROR \[\d+\] Neovim: {long}$")  # after the info line, on one channel
    lines = log_text(sandbox).splitlines()
    assert len(lines) == 2 and re.search(r"WARN  \[\d+\] Neovim: cannot do that: a reason$", lines[0]), lines
