"""Conversations that come back (agents/sessions.lua): `:Gemini resume`, `:Gemini sessions`, the
`resume` option and the workaround for Gemini CLI's resume data-loss bug, in a real Neovim.

The session files are what the real CLIs wrote (tests/harness/data/sessions: gemini-cli 0.61.0 after a
resume across a minute boundary, with the orphan the bug leaves; qwen-code 0.24.4), and the real CLIs
list them: `gemini --list-sessions` (to show what the bug loses and the workaround keeps) and
`qwen sessions list --json` (the plugin's own listing for Qwen). The agents the commands start are
a small script that records its arguments: which conversation is resumed is what is checked here;
tests/agents/test_sessions_real_clis.py resumes with the real CLIs."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from agents.sessions_helpers import DATA, QWEN_ID, gemini_chats, gemini_env, qwen_chats, session_text
from conftest import TIMEOUT, Editor, Sandbox, wait_for
from harness.fake_model import FakeModel
from harness.stall_probe import STALL_PROBE
from harness.tui import GEMINI_BIN, NODE22, QWEN_CLI

ORPHAN = "session-2026-11-25T22-07-046d5a5f.jsonl"
RESUMED = "046d5a5f-20c3-49d2-82d6-00f85648cd30"  # resumed across a minute boundary: the orphan's session
GEMINI_IDS = [  # newest first: theta, then the resumed one (last prompt 22:07:04), then alpha
    "a77ccaec-7cf5-43f0-a37e-b58a68fbc499",
    RESUMED,
    "eead0461-677c-486a-9632-b1ff6efca435",
]
HOSTILE_ID = "0badc0de-0000-4000-8000-000000000001"
SESSIONS = "local sessions = require('gemini_companion.agents.sessions')\n"
# The sweep runs off the main loop: its answer, waited for.
SWEEP = (
    SESSIONS
    + """local a, out = {...}, nil
    sessions.sweep(a[1], a[2], function(deleted) out = deleted end)
    return vim.wait(20000, function() return out ~= nil end) and out"""
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
    orphan = """local a, out = {...}, nil
    sessions.orphan({name = 'gemini', cli = 'gemini', version = a[1]}, a[2], function(d) out = d end)
    return vim.wait(20000, function() return out ~= nil end) and out"""
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
        assert ed.lua(SWEEP, str(chats), ORPHAN) == [], record
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
    deleted = ed.lua(SWEEP, str(chats))
    assert deleted == [ORPHAN]
    for name in [*kept, "session-2026-11-25T22-14-046d5a5f.jsonl", "session-2026-11-25T22-15-046d5a5f.jsonl"]:
        assert (chats / name).is_symlink() or (chats / name).exists(), name
    assert outside.exists()
    # A chats folder that is a link elsewhere is not swept either.
    link = world.base / "linked-chats"
    link.symlink_to(chats)
    shutil.copy(DATA / "gemini-0.61.0" / ORPHAN, chats / ORPHAN)
    assert ed.lua(SWEEP, str(link)) == []
    assert ed.lua(SWEEP, str(chats)) == [ORPHAN]


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
    assert ed.lua(complete, "Gemini qwen ") == ["new"]  # another session of it (agents/instances.lua)
    assert ed.lua(complete, "Gemini qwen x") == [] and ed.lua(complete, "Gemini qwen new ") == []
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


def test_the_question_reads_the_newest_conversations_not_every_one(world, editor_factory):
    """The agent starts after the question, which names one conversation: the newest by its own
    last change, among the files written last; not the 100 a listing reads (with 150 long
    conversations, 60-97 ms against 124-160 ms before the question shows)."""
    chats = gemini_chats(world)
    ids = [str(uuid.uuid4()) for _ in range(30)]
    for i, sid in enumerate(ids):  # written in this order, a minute apart: the last is the newest
        path = chats / f"session-2026-11-26T10-{i:02d}-{sid[:8]}.jsonl"
        path.write_text(session_text(sid, f"talk {i}", updated=f"2026-11-26T10:{i:02d}:00.000Z"))
        stamp = time.time() - 3600 + 60 * i
        os.utime(path, (stamp, stamp))
    ed = editor_factory(setup_for(world, "ask"))
    ed.nvim.ui_attach(100, 30, ext_linegrid=True)
    ed.lua(
        """
        local lister = require('gemini_companion.agents.sessions.lister')
        local run = lister.run
        lister.run = function(args, ...) _G.listed_with = args; return run(args, ...) end
        """
    )
    stub_select(ed, 1)
    ed.nvim.command("Gemini")
    assert "talk 29" in shown(ed)["items"][0]
    assert started_with(world, "gemini") == ["--resume", ids[-1]]
    assert ed.lua("return _G.listed_with") == ["gemini", str(chats), "10"]


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


def test_every_text_of_a_session_is_shown_as_one_safe_line(world, editor_factory):
    # The model chooses a summary, the user types (or pastes) the prompt: NUL (valid JSON), a lone
    # surrogate escape, control bytes and an escape sequence, invalid UTF-8, a megabyte of title.
    chats = gemini_chats(world)
    hostile = "session-2026-11-25T22-20-0badc0de.jsonl"
    prompt = "evil\u0000nul \ud800 \x1b]52;c;aGk=\x07 ok"  # json.dumps escapes all but "ok"
    text = session_text(HOSTILE_ID, prompt, summary="title\u0000" + "y" * 1_000_000).encode()
    (chats / hostile).write_bytes(text.replace(b" ok", b" \xff"))  # invalid UTF-8
    qwen = qwen_chats(world)  # and through the real `qwen sessions list --json`
    qwen_text = (qwen / f"{QWEN_ID}.jsonl").read_text()
    (qwen / f"{QWEN_ID}.jsonl").write_text(qwen_text.replace('"text":"make a file"', '"text":"nul\\u0000 \\ud800 ok"'))
    ed = editor_factory(setup_for(world, "ask"))
    ed.nvim.ui_attach(100, 30, ext_linegrid=True)
    for command, cli in (("Gemini sessions gemini", "gemini"), ("Gemini sessions qwen", "qwen")):
        stub_select(ed, None)
        ed.nvim.command(command)
        items = shown(ed)["items"]
        assert len(items) == (4 if cli == "gemini" else 1), items
        for item in items:
            assert not set(item) & {"\x00", "\x1b", "\x07", "\n", "\ufffe"}, item
            assert ed.lua("return vim.fn.strdisplaywidth(...)", item) <= 130, item
        evil = items[0]
        assert "evil^@nul" in evil if cli == "gemini" else "nul^@" in evil, evil
    # resume = 'ask' asks about it (the newest) and starts the agent.
    stub_select(ed, 1)
    ed.nvim.command("Gemini gemini")
    assert "evil^@nul" in shown(ed)["items"][0]
    assert started_with(world, "gemini") == ["--resume", HOSTILE_ID]


def test_the_sweep_keeps_what_it_does_not_understand(world, editor_factory):
    chats = gemini_chats(world)
    # Node reads a lone surrogate escape; Neovim's decoder refuses it: a prompt and an answer, kept.
    surrogate = "session-2026-11-25T22-08-046d5a5f.jsonl"
    (chats / surrogate).write_text(
        orphan_text(RESUMED) + '{"id":"u","type":"user","content":[{"text":"\\ud800 mine"}]}\n'
        '{"id":"g","type":"gemini","content":"an answer \\ud83d"}\n'
    )
    # A line that is not JSON at all (cut, or of another version): not proven empty, kept.
    garbled = "session-2026-11-25T22-09-046d5a5f.jsonl"
    (chats / garbled).write_text(orphan_text(RESUMED) + '{"id":"u","type":"user","content":[{"text":"cut\n')
    ed = editor_factory(setup_for(world))
    assert ed.lua(SWEEP, str(chats)) == [ORPHAN]  # the real orphan still goes
    assert (chats / surrogate).exists() and (chats / garbled).exists()


def test_a_deeply_nested_line_is_one_line_not_understood(world, editor_factory):
    """A line of JSON nested 100,000 deep (a tool's output, a hostile repository's file quoted) made
    Python's JSON reader raise RecursionError: the whole listing failed in one line, every other
    conversation with it, and so did the sweep of that short id. It is a line not understood now."""
    chats = gemini_chats(world)
    nested = "[" * 100_000 + "]" * 100_000 + "\n"
    text = session_text(HOSTILE_ID, "after the nest")
    header, rest = text.split("\n", 1)
    (chats / "session-2026-11-25T22-20-0badc0de.jsonl").write_text(header + "\n" + nested + rest)
    kept = "session-2026-11-25T22-09-046d5a5f.jsonl"  # the orphan's short id: the sweep reads it
    (chats / kept).write_text(orphan_text(RESUMED) + nested)
    ed = editor_factory(setup_for(world))
    listed = ed.lua(
        SESSIONS
        + """_G.listed = nil
        sessions.list('gemini', function(list, err) _G.listed = list or err end)
        return vim.wait(20000, function() return _G.listed ~= nil end) and _G.listed""",
    )
    assert isinstance(listed, list), listed
    assert [s["id"] for s in listed] == [HOSTILE_ID, *GEMINI_IDS]
    assert listed[0]["prompt"] == "after the nest"
    assert ed.lua(SWEEP, str(chats)) == [ORPHAN]  # the real orphan still goes, the nested file stays
    assert (chats / kept).exists()


def pids_gone(*pids: int) -> bool:
    """Every process ended (a zombie waiting for its reaper counts as ended)."""
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                return False
        except FileNotFoundError:
            continue
    return True


@pytest.mark.parametrize("lister", ["ignores SIGTERM", "leaves a child holding its output"])
def test_a_lister_that_will_not_stop_is_ended_whole(world, editor_factory, lister):
    script = world.base / "stubborn.sh"
    tail = (
        'trap "" TERM; sleep 600 & echo $! > "$KID"; echo $$ > "$PID"; wait'
        if lister == "ignores SIGTERM"
        else ('sleep 600 & echo $! > "$KID"; echo $$ > "$PID"; exit 0')
    )
    script.write_text(f"#!/bin/sh\n{tail}\n")
    script.chmod(0o755)
    setup = setup_for(world)
    env = {"KID": str(world.base / "kid"), "PID": str(world.base / "pid")}
    setup["agents"]["qwen"] = {"cmd": [str(script)], "env": env}
    ed = editor_factory(setup)
    ed.lua(SESSIONS + "sessions.TIMEOUT_MS = 3000")
    stub_select(ed, None)
    ed.nvim.command("Gemini sessions qwen")
    said = "qwen sessions: no answer in 3 s" if lister == "ignores SIGTERM" else "qwen: no earlier conversations"
    wait_for(lambda: said in ed.messages(), TIMEOUT, f"{said!r}: {ed.messages()}")
    assert ed.lua("return _G.shown.items") is None
    assert all(len(line) < 200 for line in ed.messages().splitlines())
    pids = [int((world.base / name).read_text()) for name in ("pid", "kid")]
    wait_for(lambda: pids_gone(*pids), TIMEOUT, f"the lister's processes {pids} ended")


LISTING = """
_G.listed = nil
require('gemini_companion.agents.sessions').list('gemini', function(list, err) _G.listed = list or err end)
"""


def test_listing_costs_what_is_shown_not_what_is_on_disk(world, editor_factory):
    """10,000 conversations, and four of 60 MB each whose first prompt follows a 60 MB line (a
    preamble: memory files, a pasted log). Each file was read and parsed in one turn of Neovim's
    main loop (1.2 s for one of these), every file every time (10,000: 5.6 s). The newest 100 are
    listed; Neovim's main loop goes on meanwhile (the bound is generous: a loaded machine; `make
    bench` has the figure, <= 16 ms)."""
    chats = gemini_chats(world)
    old = time.time() - 86400
    for i in range(10_000):
        sid = str(uuid.uuid4())
        path = chats / f"session-2026-11-20T10-00-{sid[:8]}.jsonl"
        path.write_text(session_text(sid, f"old {i}", updated="2026-11-20T10:00:00.000Z"))
        os.utime(path, (old, old))
    huge = []
    for i in range(4):
        sid = str(uuid.uuid4())
        huge.append(sid)
        text = session_text(sid, f"huge {i}", preamble="x" * 60_000_000, updated=f"2026-11-26T10:0{i}:00.000Z")
        (chats / f"session-2026-11-26T10-0{i}-{sid[:8]}.jsonl").write_text(text)
    ed = editor_factory(setup_for(world))
    ed.lua(STALL_PROBE)
    ed.lua("_G.bench_stall_reset()")
    ed.lua(LISTING)
    listed = wait_for(lambda: ed.lua("return _G.listed"), TIMEOUT, "the list")
    stall = ed.lua("return _G.bench_stall()")
    assert [s["id"] for s in listed[:4]] == huge[::-1]
    assert [s["prompt"] for s in listed[:4]] == ["huge 3", "huge 2", "huge 1", "huge 0"]
    assert len(listed) == 100
    assert stall < 1000, f"the main loop stalled {stall:.0f} ms"
