"""Conversations that come back (agents/sessions.lua): `:Gemini resume`, `:Gemini sessions`, the
`resume` option and the workaround for Gemini CLI's resume data-loss bug, in a real Neovim.

The session files are what the real CLIs wrote (tests/data/sessions: gemini-cli 0.61.0 after a
resume across a minute boundary, with the orphan the bug leaves; qwen-code 0.24.4), and the real CLIs
list them: `gemini --list-sessions` (to show what the bug loses and the workaround keeps) and
`qwen sessions list --json` (the plugin's own listing for Qwen). The agents the commands start are
a small script that records its arguments: which conversation is resumed is what is checked here;
tests/test_e2e_sessions.py resumes with the real CLIs."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import TIMEOUT, Editor, Sandbox, wait_for
from e2e.fake_model import FakeModel
from e2e.tui import GEMINI_BIN, NODE22, QWEN_CLI, gemini_settings, qwen_settings

DATA = Path(__file__).parent / "data" / "sessions"
ORPHAN = "session-2026-11-25T22-07-046d5a5f.jsonl"
RESUMED = "046d5a5f-20c3-49d2-82d6-00f85648cd30"  # resumed across a minute boundary: the orphan's session
GEMINI_IDS = [  # newest first: theta, then the resumed one (last prompt 22:07:04), then alpha
    "a77ccaec-7cf5-43f0-a37e-b58a68fbc499",
    RESUMED,
    "eead0461-677c-486a-9632-b1ff6efca435",
]
QWEN_ID = "bce5e18d-ef17-48bc-baad-1e2f280f43a4"
HOSTILE_ID = "0badc0de-0000-4000-8000-000000000001"
SESSIONS = "local sessions = require('gemini_companion.agents.sessions')\n"


def gemini_chats(sandbox: Sandbox) -> Path:
    """The sandbox's Gemini home, with this workspace's session files copied from the real CLI."""
    gemini_settings(sandbox.home, ide_enabled=False)
    root = sandbox.home / ".gemini"
    (root / "projects.json").write_text(json.dumps({"projects": {str(sandbox.project): "project"}}))
    chats = root / "tmp" / "project" / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    (chats.parent / ".project_root").write_text(str(sandbox.project))
    for file in (DATA / "gemini-0.61.0").iterdir():
        shutil.copy(file, chats / file.name)
    return chats


def qwen_chats(sandbox: Sandbox) -> Path:
    """Qwen's folder for this workspace, with the real CLI's session (its cwd made this workspace's)."""
    qwen_settings(sandbox.home, ide_enabled=False)
    slug = re.sub("[^a-zA-Z0-9]", "-", str(sandbox.project))
    chats = sandbox.home / ".qwen" / "projects" / slug / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    text = (DATA / "qwen-0.24.4" / f"{QWEN_ID}.jsonl").read_text()
    text = text.replace("/tmp/probe22/q2/project", str(sandbox.project))
    (chats / f"{QWEN_ID}.jsonl").write_text(text)
    return chats


def gemini_env(sandbox: Sandbox, model: FakeModel) -> dict[str, str]:
    return dict(
        sandbox.env,
        GEMINI_CLI_HOME=str(sandbox.home),
        GEMINI_API_KEY="stand-in",
        GOOGLE_GEMINI_BASE_URL=model.url,
        GEMINI_CLI_TRUST_WORKSPACE="true",
    )


def gemini_listed(sandbox: Sandbox) -> list[str]:
    """The ids the real `gemini --list-sessions` lists (it sweeps "corrupted" files as it starts)."""
    model = FakeModel([])  # summaries are cached in the files: no request is expected
    try:
        out = subprocess.run(
            [str(GEMINI_BIN), "--list-sessions"],
            env=gemini_env(sandbox, model),
            cwd=sandbox.project,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
    finally:
        model.close()
    return re.findall(r"\[([0-9a-f-]{36})\]", out)


def recorder(sandbox: Sandbox, real: list[str] | None = None) -> list[str]:
    """An agent command that writes its arguments to $ARGS_FILE and stays; `real`: the CLI that
    answers `sessions …` (Qwen's listing runs the agent's own command)."""
    script = sandbox.base / "agent.sh"
    passthrough = f'if [ "$1" = sessions ]; then exec {" ".join(real)} "$@"; fi\n' if real else ""
    record = '{ for a in "$@"; do printf "%s\\n" "$a"; done; echo "<end>"; } > "$ARGS_FILE"\n'
    script.write_text(f"#!/bin/sh\n{passthrough}{record}exec sleep 300\n")
    script.chmod(0o755)
    return [str(script)]


def setup_for(sandbox: Sandbox, resume: str = "ask") -> dict[str, Any]:
    agents = {
        cli: {"cmd": recorder(sandbox, [str(NODE22), str(QWEN_CLI)]), "env": {"ARGS_FILE": str(sandbox.base / cli)}}
        for cli in ("gemini", "qwen")
    }
    return {"auto_start": False, "agents": agents, "resume": resume, "cli_settings": "never"}


def started_with(sandbox: Sandbox, cli: str) -> list[str]:
    """The arguments the agent was started with (waits for it)."""
    path = sandbox.base / cli
    wait_for(path.exists, TIMEOUT, f"{cli} to start")
    wait_for(lambda: path.read_text().endswith("<end>\n"), TIMEOUT, f"{cli}'s arguments")
    return path.read_text().split("\n")[:-2]


def stub_select(editor: Editor, answer: int | None) -> None:
    """vim.ui.select, answered with the `answer`th item (None: <Esc>); the items shown are kept."""
    editor.lua(
        """
        local answer = ...
        _G.shown = {}
        vim.ui.select = function(items, opts, on_choice)
          _G.shown = { prompt = opts.prompt, items = vim.tbl_map(opts.format_item or tostring, items) }
          vim.schedule(function() on_choice(answer and items[answer], answer) end)
        end
        """,
        answer,
    )


def shown(editor: Editor) -> dict[str, Any]:
    return wait_for(lambda: editor.lua("return _G.shown.items and _G.shown"), TIMEOUT, "a list")


@pytest.fixture
def world(sandbox: Sandbox) -> Sandbox:
    sandbox.env["GEMINI_CLI_HOME"] = str(sandbox.home)
    sandbox.env["QWEN_HOME"] = str(sandbox.home / ".qwen")
    return sandbox


def test_the_resume_orphan_is_deleted_and_the_cli_keeps_every_conversation(world, editor_factory):
    # The bug (reproduced with these very files): the real CLI's next start deletes the resumed
    # conversation with its orphan — in a cleanup it does not wait for, so not asserted here (a
    # loaded machine lets the process exit first). What the plugin does: a resumed agent's
    # SessionStart names its orphan, which is deleted then (only in the CLI version with the bug,
    # only that file); the CLI then keeps every conversation.
    chats = gemini_chats(world)
    ed = editor_factory(setup_for(world))
    orphan = "return sessions.orphan({name = 'gemini', cli = 'gemini', version = ...}, select(2, ...))"
    assert ed.lua(SESSIONS + orphan, "0.62.0", str(chats / ORPHAN)) == []  # a version without the bug
    assert ed.lua(SESSIONS + orphan, "0.61.0", str(world.base / ORPHAN)) == []  # not in the chats folder
    assert ed.lua(SESSIONS + orphan, "0.61.0", str(chats / ORPHAN)) == [ORPHAN]
    listed = ed.lua(
        SESSIONS
        + """sessions.list('gemini', function(list) _G.listed = list end)
        return vim.wait(10000, function() return _G.listed ~= nil end) and _G.listed""",
    )
    assert [s["id"] for s in listed] == GEMINI_IDS
    assert [s["prompt"] for s in listed] == ["theta", "beta", "alpha"]  # the first prompt, not the preamble
    assert sorted(p.name for p in chats.iterdir()) == sorted(
        p.name for p in (DATA / "gemini-0.61.0").iterdir() if p.name != ORPHAN
    )
    assert sorted(gemini_listed(world)) == sorted(GEMINI_IDS)


def orphan_text(session_id: str, prompt: str | None = None) -> str:
    header = {"sessionId": session_id, "projectHash": "x", "startTime": "2026-11-25T22:07:02.608Z", "kind": "main"}
    preamble = {"id": "p", "type": "user", "content": [{"text": "<session_context>\nsetup"}]}
    lines = [header, {"$set": {"messages": [preamble]}}]
    if prompt:
        lines.append({"id": "u", "type": "user", "content": [{"text": prompt}]})
    return "".join(json.dumps(line) + "\n" for line in lines)


def test_a_file_the_cli_would_resume_from_is_never_an_orphan(world, editor_factory):
    """gemini-cli resumes from a prompt or from a message of the model (content, tool calls,
    thoughts), and reads plain string parts: a file with any of them is a conversation."""
    chats = gemini_chats(world)
    ed = editor_factory(setup_for(world))
    header = {"sessionId": RESUMED, "projectHash": "x", "startTime": "2026-11-25T22:07:02.608Z", "kind": "main"}
    preamble = {"id": "p", "type": "user", "content": [{"text": "<session_context>\nsetup"}]}
    for record in [
        {"id": "g", "type": "gemini", "content": "a long answer"},
        {"id": "g", "type": "gemini", "content": "", "toolCalls": [{"name": "ls"}]},
        {"id": "u", "type": "user", "content": ["my second topic"]},
    ]:
        (chats / ORPHAN).write_text(
            "".join(json.dumps(r) + "\n" for r in [header, {"$set": {"messages": [preamble]}}, record])
        )
        assert ed.lua(SESSIONS + "return sessions.sweep(...)", str(chats), ORPHAN) == [], record
        assert (chats / ORPHAN).exists()


def test_the_sweep_deletes_only_a_proven_orphan(world, editor_factory):
    chats = gemini_chats(world)
    outside = world.base / "outside.jsonl"
    outside.write_text(orphan_text(RESUMED))
    kept = {
        # Same short id, another session: not the resumed one's orphan.
        "session-2026-11-25T22-08-046d5a5f.jsonl": orphan_text("046d5a5f-0000-4000-8000-000000000000"),
        # Same session but it holds a prompt: a conversation, whatever its name.
        "session-2026-11-25T22-09-046d5a5f.jsonl": orphan_text(RESUMED, "a real prompt"),
        # No prompt, same id, but no other file of that session holds a prompt.
        "session-2026-11-25T22-10-a77cca00.jsonl": orphan_text("a77cca00-7cf5-43f0-a37e-b58a68fbc499"),
        "session-2026-11-25T22-11-a77cca00.jsonl": orphan_text("a77cca00-7cf5-43f0-a37e-b58a68fbc499"),
        # Larger than an orphan can be: not read whole, not deleted.
        "session-2026-11-25T22-12-046d5a5f.jsonl": orphan_text(RESUMED) + " " * (2 << 20) + "\n",
        # Not JSON lines at all.
        "session-2026-11-25T22-13-046d5a5f.jsonl": "garbage\n",
    }
    for name, text in kept.items():
        (chats / name).write_text(text)
    (chats / "session-2026-11-25T22-14-046d5a5f.jsonl").symlink_to(outside)  # a link: never followed
    (chats / "session-2026-11-25T22-15-046d5a5f.jsonl").write_text(orphan_text(RESUMED))
    os.chown(chats / "session-2026-11-25T22-15-046d5a5f.jsonl", 65534, 65534)  # not ours
    ed = editor_factory(setup_for(world))
    deleted = ed.lua(SESSIONS + "return sessions.sweep(...)", str(chats))
    assert deleted == [ORPHAN]
    for name in [*kept, "session-2026-11-25T22-14-046d5a5f.jsonl", "session-2026-11-25T22-15-046d5a5f.jsonl"]:
        assert (chats / name).is_symlink() or (chats / name).exists(), name
    assert outside.exists()
    # A chats folder that is a link elsewhere is not swept either.
    link = world.base / "linked-chats"
    link.symlink_to(chats)
    shutil.copy(DATA / "gemini-0.61.0" / ORPHAN, chats / ORPHAN)
    assert ed.lua(SESSIONS + "return sessions.sweep(...)", str(link)) == []
    assert ed.lua(SESSIONS + "return sessions.sweep(...)", str(chats)) == [ORPHAN]


def test_sessions_lists_newest_first_on_one_line_and_resumes_by_id(world, editor_factory):
    gemini_chats(world)
    chats = qwen_chats(world)
    # A session whose texts are hostile: control bytes, an escape sequence, a newline, great length.
    text = (chats / f"{QWEN_ID}.jsonl").read_text().replace(QWEN_ID, HOSTILE_ID)
    text = text.replace('"text":"make a file"', '"text":"evil\\u001b]52;c;aGk=\\u0007 line\\nnext ' + "x" * 400 + '"')
    hostile = chats / f"{HOSTILE_ID}.jsonl"
    hostile.write_text(text)
    older = os.stat(chats / f"{QWEN_ID}.jsonl").st_mtime - 2 * 3600  # well past an hour, whatever the second
    os.utime(chats / f"{QWEN_ID}.jsonl", (older, older))
    ed = editor_factory(setup_for(world))
    stub_select(ed, 2)
    ed.nvim.command("Gemini sessions qwen")  # the real `qwen sessions list --json`
    listed = shown(ed)
    assert len(listed["items"]) == 2 and "qwen" in listed["prompt"]
    assert "make a file" in listed["items"][1] and "h ago" in listed["items"][1]
    evil = listed["items"][0]
    assert "\x1b" not in evil and "\x07" not in evil and "\n" not in evil and "evil^[]52" in evil
    assert ed.lua("return vim.fn.strdisplaywidth(...)", evil) <= 130
    assert started_with(world, "qwen") == ["--resume", QWEN_ID]
    # Gemini's: by its uuid, never by the CLI's shifting number.
    stub_select(ed, 2)
    ed.nvim.command("Gemini sessions gemini")
    assert [line.split(" · ")[-1] for line in shown(ed)["items"]] == ["theta", "beta", "alpha"]
    assert started_with(world, "gemini") == ["--resume", RESUMED]


def test_resume_starts_the_latest_and_a_running_agent_is_only_shown(world, editor_factory):
    ed = editor_factory(setup_for(world))
    ed.nvim.command("Gemini resume gemini")
    assert started_with(world, "gemini") == ["--resume", "latest"]  # safe with no session: a new one
    ed.nvim.command("Gemini resume qwen")
    assert started_with(world, "qwen") == ["--continue"]
    (world.base / "qwen").unlink()
    for command in ("Gemini resume qwen", "Gemini sessions qwen"):
        ed.nvim.command(command)
        assert "qwen is running: /quit it first" in ed.messages().splitlines()[-1]
    assert not (world.base / "qwen").exists()
    with pytest.raises(Exception, match="one agent at most"):
        ed.nvim.command("Gemini resume qwen gemini")


def test_the_command_line_completes_subcommands_and_agents(world, editor_factory):
    setup = setup_for(world)
    setup["agents"]["resume"] = setup["agents"]["gemini"]  # an agent named like a subcommand
    ed = editor_factory(setup)
    complete = "return vim.fn.getcompletion(..., 'cmdline')"
    assert ed.lua(complete, "Gemini ") == ["resume", "sessions", "gemini", "qwen"]  # the agent: :Gemini resume resume
    assert ed.lua(complete, "Gemini s") == ["sessions"]
    assert ed.lua(complete, "Gemini sessions q") == ["qwen"]
    assert ed.lua(complete, "Gemini resume ") == ["gemini", "qwen", "resume"]
    assert ed.lua(complete, "Gemini qwen ") == []
    # The subcommand wins over the agent named `resume`: this resumes the default agent.
    ed.nvim.command("Gemini resume")
    assert started_with(world, "gemini") == ["--resume", "latest"]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [(1, ["--resume", GEMINI_IDS[0]]), (2, []), (None, [])],  # resume it, a new one, <Esc>
)
def test_ask_asks_once_in_neovim(world, editor_factory, answer, expected):
    gemini_chats(world)
    ed = editor_factory(setup_for(world, "ask"))
    ed.nvim.ui_attach(100, 30, ext_linegrid=True)  # someone to ask
    stub_select(ed, answer)
    ed.nvim.command("Gemini")
    asked = shown(ed)
    assert "resume your last conversation" in asked["prompt"] and "theta" in asked["items"][0]
    assert started_with(world, "gemini") == expected
    # Once: after the agent ends, the next :Gemini starts a new one without asking.
    ed.lua("_G.shown = {}; require('gemini_companion.agents').stop('gemini')")
    wait_for(lambda: not ed.lua("return require('gemini_companion.agents').get('gemini') ~= nil"), TIMEOUT, "exit")
    (world.base / "gemini").unlink()
    ed.nvim.command("Gemini")
    assert started_with(world, "gemini") == [] and ed.lua("return _G.shown.items") is None


def test_ask_for_qwen_finds_its_sessions(world, editor_factory):
    qwen_chats(world)
    setup = setup_for(world, "ask")
    setup["default_agent"] = "qwen"
    ed = editor_factory(setup)
    ed.nvim.ui_attach(100, 30, ext_linegrid=True)
    stub_select(ed, 1)
    ed.nvim.command("Gemini")
    assert "make a file" in shown(ed)["items"][0]
    assert started_with(world, "qwen") == ["--resume", QWEN_ID]


@pytest.mark.parametrize(
    ("resume", "ui", "sessions", "expected"),
    [
        ("ask", False, True, []),  # headless: nobody to ask, a new conversation
        ("ask", True, False, []),  # nothing to resume: not asked
        ("always", False, True, ["--resume", "latest"]),
        ("never", True, True, []),
    ],
)
def test_resume_option_without_a_question(world, editor_factory, resume, ui, sessions, expected):
    if sessions:
        gemini_chats(world)
    ed = editor_factory(setup_for(world, resume))
    if ui:
        ed.nvim.ui_attach(100, 30, ext_linegrid=True)
    stub_select(ed, 1)
    ed.nvim.command("Gemini")
    assert started_with(world, "gemini") == expected
    assert ed.lua("return _G.shown.items") is None


def test_resume_is_validated(world, editor_factory):
    ed = editor_factory({"auto_start": False})
    with pytest.raises(Exception, match="option resume: expected 'ask', 'always' or 'never'"):
        ed.lua("require('gemini_companion').setup({ resume = 'sometimes' })")


def test_a_command_that_resumes_already_is_not_asked_about(world, editor_factory):
    gemini_chats(world)
    setup = setup_for(world, "ask")
    setup["agents"]["gemini"]["cmd"] = [*setup["agents"]["gemini"]["cmd"], "--resume", "latest"]
    ed = editor_factory(setup)
    ed.nvim.ui_attach(100, 30, ext_linegrid=True)
    stub_select(ed, 1)
    ed.nvim.command("Gemini")
    assert started_with(world, "gemini") == ["--resume", "latest"]
    assert ed.lua("return _G.shown.items") is None
