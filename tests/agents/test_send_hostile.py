"""Sending is only what was selected: hostile selections and file names, through :GeminiSend,
:GeminiSend!, :GeminiAdd and the Lua `send`, on every provider (a Neovim terminal, a tmux pane, an
external terminal's clipboard). The receiving end is tests/harness/fake_agent.py, which records every byte
on its pty: exactly one bracketed paste per send, nothing outside it, no Enter unless `!`, exactly
one after the paste with `!`. What the agent sees is checked against the documented mapping,
written here a second time, independently of the plugin's Lua (`shown`, `escaped`)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from agents.send_helpers import (
    HOSTILE_LINES,
    HOSTILE_NAME,
    PASTE_END,
    PASTE_START,
    fake_agent,
    pastes,
    received,
    shown,
    snippet,
    wait_started,
)
from conftest import HARNESS, Editor, Sandbox, wait_for


def escaped(path: str) -> str:
    """`@path` escaping: a backslash before each character that ends a reference or is special."""
    return re.sub(r"([ \t\n\v\f\r,;!?()\[\]{}|*$`'\"#&<>~])", r"\\\1", path)


def open_literally(editor: Editor, path: Path) -> int:
    """Edit `path` by its exact bytes (no name expansion) and read it as bytes (binary: no
    conversion of the encoding or the line ends), as the selection's source; its buffer."""
    buf: int = editor.lua(
        "local b = vim.fn.bufadd(...) vim.bo[b].binary = true vim.fn.bufload(b) vim.api.nvim_set_current_buf(b)"
        " return b",
        bytes(path),
    )
    lines = editor.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")
    as_bytes = [line.encode("utf-8", "surrogateescape") if isinstance(line, str) else line for line in lines]
    assert as_bytes == path.read_bytes().split(b"\n")[:-1], "the buffer holds the file's bytes"
    return buf


def hostile_file(sandbox: Sandbox) -> Path:
    (sandbox.project / "secret.txt").write_text("TOPSECRET\n")
    path = sandbox.project / os.fsdecode(HOSTILE_NAME)
    path.write_bytes(b"\n".join(HOSTILE_LINES) + b"\n")
    return path


def send_hostile_selection(editor: Editor, log: Path, sandbox: Sandbox) -> None:
    """:GeminiSend of the whole hostile file, then :GeminiSend! of two lines: the bytes the agent
    got are exactly two pastes of the mapped text, and one Enter after the second."""
    buf = open_literally(editor, hostile_file(sandbox))
    editor.nvim.command("GeminiSend")
    wait_for(lambda: PASTE_END in received(log), what="the paste")
    first = snippet(HOSTILE_NAME, f"lines 1-{len(HOSTILE_LINES)}", HOSTILE_LINES, "python")
    assert pastes(received(log)) == [first.encode()]  # nothing submitted, nothing outside the paste
    # The agent is focused now (terminal or pane): back to the file, then send with !.
    editor.lua("vim.fn.win_gotoid(vim.fn.bufwinid(...))", buf)
    editor.nvim.command("2,3GeminiSend! go on")
    wait_for(lambda: received(log).endswith(b"\r"), what="the submit")
    data = received(log)
    assert data.endswith(PASTE_END + b"\r") and data.count(b"\r") == 1, data
    second = snippet(HOSTILE_NAME, "lines 2-3", HOSTILE_LINES[1:3], "python", "go on")
    assert pastes(data[:-1]) == [first.encode(), second.encode()]


def test_native_send_of_hostile_lines_and_name_is_text(editor_factory, sandbox):
    log = sandbox.base / "agent.log"
    editor = editor_factory(setup={"agents": {"fake": fake_agent(log)}, "default_agent": "fake"})
    editor.wait_state("running")
    editor.nvim.command("Gemini")
    wait_started(editor, log)
    editor.nvim.command("wincmd p")
    send_hostile_selection(editor, log, sandbox)


def test_lua_send_maps_every_byte_and_submits_once(editor_factory, sandbox):
    """The Lua API: any string (every byte value, in any order) arrives mapped, in one paste; the
    caller's own @references are its to make (not escaped)."""
    log = sandbox.base / "agent.log"
    editor = editor_factory(setup={"agents": {"fake": fake_agent(log)}, "default_agent": "fake"})
    editor.wait_state("running")
    every = bytes(range(256)) + bytes(range(255, -1, -1)) + b"\r\n@ref \xe2\x82\xac\r\r\n"
    editor.lua("require('gemini_companion.agents').send(nil, ..., false)", every)
    wait_for(lambda: PASTE_END in received(log), what="the paste")
    assert pastes(received(log)) == [shown(every).encode()]
    editor.lua("require('gemini_companion.agents').send(nil, ..., true)", b"\x1b[201~\r\x04")
    wait_for(lambda: received(log).endswith(b"\r"), what="the submit")
    data = received(log)
    assert data.count(b"\r") == 1 and pastes(data[:-1])[1] == "\u241b[201~\u240d\u2404".encode()


def test_quick_submits_each_go_as_their_own_prompt(editor_factory, sandbox):
    """Three sends with Enter in one go (a mapping, a `:GeminiPrompt` written twice): each paste
    waits for the Enter of the one before, never landing between a paste and its Enter (which
    would submit two prompts as one, then an empty one). A send without Enter keeps its place."""
    log = sandbox.base / "agent.log"
    editor = editor_factory(setup={"agents": {"fake": fake_agent(log)}, "default_agent": "fake"})
    editor.wait_state("running")
    editor.lua(
        "local agents = require('gemini_companion.agents')"
        " agents.send(nil, 'one', true) agents.send(nil, 'two', false) agents.send(nil, 'three', true)"
    )
    wait_for(lambda: received(log).count(b"\r") == 2, what="both Enters")
    assert received(log) == b"".join(
        [PASTE_START, b"one", PASTE_END, b"\r", PASTE_START, b"two", PASTE_END, PASTE_START, b"three", PASTE_END, b"\r"]
    )


def qwen_like(sandbox: Sandbox, log: Path) -> dict[str, Any]:
    """The fake agent where Qwen Code's package would be: the plugin takes it for Qwen."""
    package = sandbox.base / "qwen-like"
    package.mkdir()
    (package / "package.json").write_text('{"name": "@qwen-code/qwen-code", "version": "0.24.4"}')
    (package / "cli.py").write_bytes((HARNESS / "fake_agent.py").read_bytes())
    return {**fake_agent(log), "cmd": [sys.executable, str(package / "cli.py")]}


# Names a shell, Vim or a CLI could expand, glob, evaluate or read as something else (one of
# Gemini's agents, a Qwen session); control bytes; and names a glob library would take as a pattern.
NAMES = [
    b"$HOME.md", b"~x", b"%", b"#", b"`touch pwned`", b"$(touch pwned)", b"a b (1).txt", b"it's \"q\".txt",
    b"semi;colon,bang!.txt", b"<z>&|;.txt", b"session:x", b"codebase_investigator", b"-flag", b"@at.txt",
    b"esc\x1b]0;x\x07\r\x03.txt", b"bad\xff\xc2\x9b.txt", b"nl\nname.txt", b"tab\tname.txt", b"x]}.txt",
]  # fmt: skip
GLOB_NAMES = [b"*.txt", b"a?.txt", b"end\x1b[201~\r.txt", b"{y,z}.txt", b"+(p).txt", b"@(q).txt", b"!(r).txt"]
BACKSLASH = b"back\\slash"  # a glob escape to both CLIs' file reading
# Names no form carries as themselves (a control character or bytes that are not UTF-8 would reach
# the prompt as pictures): refused for both CLIs.
INEXACT = [
    b"esc\x1b]0;x\x07\r\x03.txt",
    b"bad\xff\xc2\x9b.txt",
    b"nl\nname.txt",
    b"tab\tname.txt",
    b"end\x1b[201~\r.txt",
]


def code(text: str) -> str:
    """The plain path for the model's file tool: a Markdown code span no backtick in it can close."""
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return fence + pad + text + pad + fence


def test_add_references_hostile_names_as_themselves(editor_factory, sandbox):
    """Names are data: :GeminiAdd (its arguments, typed or given, and the current file) refers to
    each name as itself; nothing in one is expanded or run. A name Gemini CLI would glob or drop goes
    to it (and to a CLI read as Gemini) as the plain path for the model's file tool, a backslash to
    Qwen too (absolute: its tool wants that); a name no form can carry (an @ and a glob) is refused
    with the reason first, and only what exists is referred to."""
    log, qwen_log = sandbox.base / "agent.log", sandbox.base / "qwen.log"
    agents = {"fake": fake_agent(log), "qwen": qwen_like(sandbox, qwen_log)}
    editor = editor_factory(setup={"agents": agents, "default_agent": "fake"})
    editor.wait_state("running")
    for name in [*NAMES, *GLOB_NAMES, BACKSLASH]:
        (sandbox.project / os.fsdecode(name)).write_bytes(b"x\n")
    (sandbox.project / "a1.txt").write_text("a glob would find me\n")
    folder = sandbox.project / "dir $HOME ~"
    folder.mkdir()
    every = [*NAMES, *GLOB_NAMES, BACKSLASH, bytes(folder)]

    def refs(names: list[bytes], plain: list[bytes], absolute: bool = False) -> bytes:
        def form(name: bytes) -> str:
            if name not in plain:
                return "@" + escaped(shown(b"./" + name, one_line=True))
            return code(shown(bytes(sandbox.project / os.fsdecode(name)) if absolute else name, one_line=True))

        return " ".join([*map(form, names), "@" + escaped("./dir $HOME ~/")]).encode() + b" "

    exact = [name for name in [*NAMES, *GLOB_NAMES, BACKSLASH] if name not in INEXACT]
    editor.lua("vim.cmd.GeminiAdd({ args = { 'qwen', ... }, magic = { file = false } })", *every)
    wait_for(lambda: PASTE_END in received(qwen_log), what="the references for Qwen")
    assert pastes(received(qwen_log)) == [refs(exact, [BACKSLASH], absolute=True)]
    said = [m for m in editor.messages().splitlines() if "GeminiAdd" in m]
    assert len(said) == 1 and said[0].startswith("gemini-companion: GeminiAdd: a control character; not UTF-8: esc"), (
        said
    )
    editor.lua("vim.cmd.GeminiAdd({ args = { 'fake', ... }, magic = { file = false } })", *every)
    wait_for(lambda: PASTE_END in received(log), what="the references for another CLI")
    to_gemini = [name for name in exact if name not in (b"@(q).txt", b'it\'s "q".txt')]
    plain = [*GLOB_NAMES, BACKSLASH]
    assert pastes(received(log)) == [refs(to_gemini, plain)]
    said = last_add_line(editor, 'a " Gemini CLI cannot read; a control')  # (one line)
    # (As many reasons as fit in the line, in the order of the names: then "not UTF-8; an @ ...".)
    assert said.startswith('gemini-companion: GeminiAdd: a " Gemini CLI cannot read; a control'), said
    editor.nvim.command("GeminiAdd missing.txt")
    wait_for(lambda: "GeminiAdd: no such file: missing.txt" in editor.messages(), what="the refusal")
    # Typed: the words are paths as they are (Neovim itself turns an unescaped % or # into a buffer name).
    editor.nvim.command("GeminiAdd $HOME.md ~x `touch\\ pwned` $(touch\\ pwned)")
    wait_for(lambda: received(log).count(PASTE_END) == 2, what="the typed references")
    assert pastes(received(log))[1] == b"@./\\$HOME.md @./\\~x @./\\`touch\\ pwned\\` @./\\$\\(touch\\ pwned\\) "
    # The current file, named to run a command if it were expanded.
    editor.lua("vim.cmd.edit({ args = { ... }, magic = { file = false } })", "`touch pwned`")
    editor.nvim.command("GeminiAdd")
    wait_for(lambda: received(log).count(PASTE_END) == 3, what="the current file's reference")
    assert pastes(received(log))[2] == b"@./\\`touch\\ pwned\\` "
    assert not (sandbox.project / "pwned").exists() and not (sandbox.home / "pwned").exists()


def last_add_line(editor: Editor, reason: str) -> str:
    """The last :GeminiAdd line in :messages, once it gives `reason` (the paths are looked at off
    the main loop: the line comes after the command)."""

    def line() -> str | None:
        lines = [m for m in editor.messages().splitlines() if "GeminiAdd" in m]
        return lines[-1] if lines and reason in lines[-1] else None

    return wait_for(line, what=f"the GeminiAdd line ({reason})")


def test_a_refusal_names_its_reason_first_and_shortens_the_path(editor_factory, sandbox):
    """However long the path, the line keeps the reason whole and the path's start and end, one
    line that fits (no hit-enter prompt)."""
    editor = editor_factory(setup={"agents": {"fake": fake_agent(sandbox.base / "agent.log")}})
    editor.wait_state("running")
    deep = "/".join(["a-rather-long-folder-name"] * 12) + "/@x/[id]/page.tsx"
    (sandbox.project / deep).parent.mkdir(parents=True)
    (sandbox.project / deep).write_text("x\n")
    editor.lua("vim.cmd.GeminiAdd({ args = { ... }, magic = { file = false } })", deep)
    line = last_add_line(editor, "an @")
    head = "gemini-companion: GeminiAdd: an @ the CLI would misread: "
    assert line.startswith(head + "a-r") and "…" in line, line  # the path's start and end
    assert deep.endswith(line.split("…")[-1]) and len(line.split("…")[-1]) >= 4, line
    assert len(line) <= editor.lua("return vim.v.echospace"), line
    editor.nvim.command("GeminiAdd " + "m" * 400)
    line = last_add_line(editor, "no such file")
    assert line.startswith("gemini-companion: GeminiAdd: no such file: mmm") and line.endswith("mmm")


@pytest.mark.usefixtures("tmux_server")
@pytest.mark.parametrize("bracketed", [True, False], ids=["asked-for-bracketed-paste", "did-not-ask"])
def test_tmux_send_is_byte_for_byte_the_native_paste(editor_factory, sandbox, bracketed):
    """The tmux provider: the same bytes as a Neovim terminal gets (LF stays LF, never Enter; one
    bracketed paste whatever the pane's paste mode), and :GeminiAdd's names the same way."""
    log = sandbox.base / "agent.log"
    setup = {"agents": {"fake": fake_agent(log, bracketed)}, "default_agent": "fake", "terminal": {"provider": "tmux"}}
    editor = editor_factory(setup=setup)
    editor.wait_state("running")
    editor.nvim.command("Gemini")
    wait_started(editor, log)
    send_hostile_selection(editor, log, sandbox)
    # A name with control bytes cannot arrive as itself (they would go as pictures): refused, in one
    # line; the same name without them goes as its reference.
    hostile, name = b"x\x1b]0;t\x07\r\x03 y.txt", b"x]0;t y.txt"
    for each in (hostile, name):
        (sandbox.project / os.fsdecode(each)).write_bytes(b"x\n")
    editor.lua("vim.cmd.GeminiAdd({ args = { ... }, magic = { file = false } })", hostile)
    wait_for(lambda: "GeminiAdd: a control character: x" in editor.messages(), what="the refusal")
    editor.lua("vim.cmd.GeminiAdd({ args = { ... }, magic = { file = false } })", name)
    wait_for(lambda: received(log).count(PASTE_END) == 3, what="the reference")
    reference = f"@{escaped(shown(b'./' + name, one_line=True))} "
    assert reference == "@./x\\]0\\;t\\ y.txt "
    assert pastes(received(log).replace(b"\r", b""))[2] == reference.encode()


def test_external_provider_hands_over_the_mapped_text(editor_factory, sandbox):
    """An external terminal gets the text through the clipboard: mapped the same way."""
    setup = {
        "agents": {"far": {"cmd": ["sleep", "600"]}},
        "default_agent": "far",
        "terminal": {"provider": "external", "external": {"cmd": ["{cmd}"]}},
    }
    editor = editor_factory(setup=setup)
    editor.wait_state("running")
    editor.lua(
        "_G.copied = {} local function copy(lines, kind) table.insert(_G.copied, { lines, kind }) end"
        " vim.g.clipboard = { name = 'test', copy = { ['+'] = copy, ['*'] = copy },"
        " paste = { ['+'] = function() return {} end, ['*'] = function() return {} end } }"
    )
    open_literally(editor, hostile_file(sandbox))
    editor.nvim.command("GeminiSend! why")
    wait_for(lambda: editor.lua("return #_G.copied") == 1, what="the clipboard")
    lines, kind = editor.lua("return _G.copied[1]")
    text = snippet(HOSTILE_NAME, f"lines 1-{len(HOSTILE_LINES)}", HOSTILE_LINES, "python", "why")
    assert kind == "v" and "\n".join(lines) == text


@pytest.mark.parametrize("kind", ["v", "\x16"])
def test_a_visual_selection_keeps_a_nul_as_text(editor_factory, sandbox, kind):
    """A characterwise or blockwise selection comes through getregion(), whose lines hold a NUL as
    "\\n": it still arrives as the NUL's picture, never as a line break."""
    log = sandbox.base / "agent.log"
    editor = editor_factory(setup={"agents": {"fake": fake_agent(log)}, "default_agent": "fake"})
    editor.wait_state("running")
    path = sandbox.project / "nul.py"
    path.write_bytes(b"xa\x00bc\nxd\x00e\n")
    editor.nvim.command(f"edit {path}")
    editor.nvim.command("Gemini")
    wait_started(editor, log)
    editor.nvim.command("wincmd p")
    editor.nvim.input(f"gg0l{kind}j$\x1b")
    editor.nvim.command("'<,'>GeminiSend")
    wait_for(lambda: PASTE_END in received(log), what="the paste")
    code = [b"a\x00bc", b"d\x00e" if kind == "\x16" else b"xd\x00e"]  # a block starts each line at column 2
    assert pastes(received(log)) == [snippet(b"nul.py", "lines 1-2", code, "python").encode()]
