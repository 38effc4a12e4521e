"""The model's tools against a hostile workspace and hostile requests (issue 20).

A swap loop turns a file, or a folder on its path, into a link to a file outside the workspace
and back while the real MCP client calls every tool that takes a path: no answer and no buffer
may ever hold a byte of the outside file, and some calls still answer with the inside bytes.
FIFOs, devices, directories and huge files are refused at once; oversized, deeply nested or
malformed requests get a short 4xx JSON-RPC error on every endpoint. All of it against a real
Neovim, the real host and (for the language-server tools) a real pylsp.
"""

from __future__ import annotations

import ctypes
import http.client
import itertools
import json
import os
import random
import re
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import Editor, Sandbox, edit_with_pylsp, wait_for
from harness.mcp_raw import RawSession, ToolsClient

AT_FDCWD, RENAME_EXCHANGE = -100, 2  # linux/fcntl.h, linux/fs.h
SECRET = "SECRET_OUTSIDE_7f3a"
INSIDE = "inside_value_1b2c"


def module(name: str) -> str:
    """A Python file that defines, uses and calls `name`: every position tool has a target at
    line 1, column 5 (the definition) and line 5, column 1 (a call)."""
    return f"def {name}():\n    return {name}()\n\n\n{name}()\n"


# Every tool that takes a path, with arguments aimed at the name above.
PATH_TOOLS: dict[str, dict[str, Any]] = {
    "read_buffer": {},
    "open_file": {"line": 5},
    "get_diagnostics": {},
    "lsp_definition": {"line": 5, "character": 1},
    "lsp_references": {"line": 1, "character": 5},
    "lsp_hover": {"line": 1, "character": 5},
    "lsp_document_symbols": {},
}
LOADED_WITH_SECRET = """
local secret = ...
for _, buf in ipairs(vim.api.nvim_list_bufs()) do
  if vim.api.nvim_buf_is_loaded(buf)
    and table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\\n'):find(secret, 1, true) then
    return vim.api.nvim_buf_get_name(buf)
  end
end
return vim.NIL
"""
SHOWN = "return table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(0), 0, -1, false), '\\n')"
WIPE = """
local pattern = ...
for _, buf in ipairs(vim.api.nvim_list_bufs()) do
  if vim.api.nvim_buf_get_name(buf):find(pattern) then
    pcall(vim.api.nvim_buf_delete, buf, { force = true })
  end
end
"""


@pytest.fixture
def outside(sandbox: Sandbox) -> Path:
    """A secret folder beside the workspace, as ~/.ssh is."""
    folder = sandbox.base / "outside"
    (folder / "d").mkdir(parents=True)
    (folder / "secret.py").write_text(module(SECRET))
    (folder / "d" / "race.py").write_text(module(SECRET))
    return folder


@pytest.fixture
def lsp_editor(editor_factory: Callable[..., Editor], sandbox: Sandbox) -> Editor:
    """A Neovim with pylsp started and initialized (each python buffer gets it on FileType)."""
    (sandbox.project / "source.py").write_text(module(INSIDE))
    editor = editor_factory()
    editor.wait_state("running")
    return edit_with_pylsp(editor, sandbox.project / "source.py")


Step = tuple[Callable[[], None], float]  # what to do, then the longest pause after it (seconds)
BLIP, HOLD = 0.0003, 0.004  # an outside state lasts up to BLIP, an inside one up to HOLD


class Swapper:
    """Runs `steps` in a loop on a thread until stopped; counts full rounds. After each step it
    pauses for a random part of the step's pause (often next to nothing): an attacker's rhythm in
    which a swap lands between any two moves of a call, while inside states last long enough for
    some calls to see one state throughout (those must answer)."""

    def __init__(self, steps: list[Step]) -> None:
        self.rounds = 0
        self._stop = threading.Event()
        self._steps = steps
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for step, pause in self._steps:
                step()
                time.sleep(random.random() * pause)
            self.rounds += 1

    def __enter__(self) -> Swapper:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(30)


def replace_with(target: Path, make: Callable[[Path], None]) -> Callable[[], None]:
    """A step: build the next state beside `target`, then rename it over `target` (atomic)."""
    tmp = target.with_name(target.name + ".next")

    def step() -> None:
        tmp.unlink(missing_ok=True)  # left when renamed over a hard link of the same file (a no-op)
        make(tmp)
        os.replace(tmp, target)

    return step


def file_swap(project: Path, outside: Path) -> tuple[str, Swapper]:
    """`race.py` alternates: a regular file (a hard link of the inside source), a symlink to the
    outside secret, a symlink to the inside source."""
    target = project / "race.py"
    os.link(project / "source.py", target)
    steps = [
        (replace_with(target, lambda tmp: os.link(project / "source.py", tmp)), HOLD),
        (replace_with(target, lambda tmp: tmp.symlink_to(outside / "secret.py")), BLIP),
        (replace_with(target, lambda tmp: tmp.symlink_to("source.py")), HOLD),
        (replace_with(target, lambda tmp: tmp.symlink_to(outside / "secret.py")), BLIP),
    ]
    return "race.py", Swapper(steps)


def folder_swap(project: Path, outside: Path) -> tuple[str, Swapper]:
    """`d/` (holding race.py) alternates between a real folder of the workspace and a symlink to
    the outside folder holding a race.py of its own: atomically where the system can exchange
    two names, else by renames (with moments of no `d` at all)."""
    real, other = project / "d", project / "d.other"
    real.mkdir()
    (real / "race.py").write_text(module(INSIDE))
    other.symlink_to(outside / "d")
    exchange = renameat2_exchange()
    if exchange is not None:
        return "d/race.py", Swapper([(lambda: exchange(real, other), BLIP), (lambda: exchange(real, other), HOLD)])
    steps = [
        (lambda: os.rename(real, project / "d.parked"), 0.0),
        (lambda: real.symlink_to(outside / "d"), BLIP),
        (lambda: real.unlink(), 0.0),
        (lambda: os.rename(project / "d.parked", real), HOLD),
    ]
    return "d/race.py", Swapper(steps)


def renameat2_exchange() -> Callable[[Path, Path], None] | None:
    """Linux's renameat2(RENAME_EXCHANGE): two names trade places in one step; None elsewhere."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None

    def exchange(a: Path, b: Path) -> None:
        if renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))

    return exchange


@pytest.mark.parametrize("swap", [file_swap, folder_swap])
def test_a_swapped_link_never_yields_an_outside_byte(lsp_editor, sandbox, outside, swap):
    tools = ToolsClient(lsp_editor.status())
    path, swapper = swap(sandbox.project, outside)
    refusals = 0
    with swapper:
        for tool, extra in PATH_TOOLS.items():
            answered, refused = 0, 0
            for _ in range(100 if tool in ("read_buffer", "get_diagnostics") else 25):
                result = tools.raw(tool, path=path, **extra)
                text = result["content"][0]["text"]
                assert SECRET not in text, (tool, text)
                assert lsp_editor.lua(LOADED_WITH_SECRET, SECRET) is None, tool
                if result.get("isError"):
                    refused += 1
                    assert "\n" not in text and len(text) < 400, text
                elif INSIDE in (lsp_editor.lua(SHOWN) if tool == "open_file" else text) or tool == "get_diagnostics":
                    answered += 1
                lsp_editor.lua(WIPE, r"race%.py$")  # the next call loads the file again
            assert answered > 0, f"{tool}: no call answered with the inside bytes ({refused} refused)"
            refusals += refused
    assert swapper.rounds > 100 and refusals > 0, (swapper.rounds, refusals)  # the swaps hit the calls


def test_a_user_buffer_named_outside_is_never_answered(lsp_editor, sandbox, outside):
    """The user's own buffer of an outside file (unsaved edits, say) stays theirs, whatever links
    point at it."""
    lsp_editor.nvim.command(f"edit {outside / 'secret.py'}")
    lsp_editor.lua("vim.api.nvim_buf_set_lines(0, 0, 0, false, {'# unsaved ' .. ...})", SECRET)
    (sandbox.project / "link.py").symlink_to(outside / "secret.py")
    (sandbox.project / "dir").symlink_to(outside)
    tools = ToolsClient(lsp_editor.status())
    for path in ("link.py", "dir/secret.py", str(outside / "secret.py")):
        for tool, extra in PATH_TOOLS.items():
            result = tools.raw(tool, path=path, **extra)
            assert result.get("isError") and "outside the workspace" in result["content"][0]["text"], (tool, path)
    assert all("secret" not in buffer["path"] for buffer in tools("get_open_buffers")["buffers"])
    assert SECRET not in json.dumps(tools("get_diagnostics"))


def test_a_buffer_autoread_reloaded_through_a_link_is_not_answered(editor_factory, sandbox, outside):
    """'autoread' reloads an unchanged buffer from whatever its name points at when Neovim checks
    it: a link swapped in and out again leaves the user's buffer of an inside name holding the
    outside bytes. The tools answer with the file's bytes or refuse, never with that buffer.
    Follow is off here: it would reload the buffer from the inside file, at a moment of its own."""
    editor = editor_factory(setup={"follow": {"enabled": False}})
    editor.wait_state("running")
    notes = buffer_loaded_through_a_link(edit_with_pylsp(editor, sandbox.project / "notes.py"), outside)
    tools = ToolsClient(editor.status())
    read = tools("read_buffer", path="notes.py")
    assert INSIDE in read["text"] and SECRET not in json.dumps(read) and read["open_in_editor"]
    for tool in ("lsp_definition", "lsp_references", "lsp_hover", "lsp_document_symbols"):
        message = tools.refused(tool, path="notes.py", **PATH_TOOLS[tool])
        assert "is not the file on disk" in message and SECRET not in message
    assert tools("open_file", path="notes.py", line=1) == {"opened": "notes.py", "line": 1}  # the user's view
    assert editor.lua(LOADED_WITH_SECRET, SECRET) == str(notes)  # the user's buffer left alone


def test_a_buffer_autoread_reloaded_through_a_link_follows_the_inside_file(lsp_editor, sandbox, outside):
    """With follow on (the default), that buffer is reloaded from the inside file written after it,
    and from then on the tools answer for the inside bytes, never the outside ones."""
    buffer_loaded_through_a_link(lsp_editor, outside, sandbox.project / "notes.py")
    wait_for(lambda: lsp_editor.lua(LOADED_WITH_SECRET, SECRET) is None, 30, "the buffer to follow its file")
    tools = ToolsClient(lsp_editor.status())
    for tool in ("read_buffer", "lsp_definition", "lsp_references", "lsp_hover", "lsp_document_symbols"):
        answer = json.dumps(tools(tool, path="notes.py", **PATH_TOOLS[tool]))
        assert SECRET not in answer and (tool == "lsp_references" or INSIDE in answer), (tool, answer)


def buffer_loaded_through_a_link(editor: Editor, outside: Path, notes: Path | None = None) -> Path:
    """`notes` (default: the editor's current file) edited, swapped for a link to the outside
    secret, checked (Neovim's autoread loads the secret), then written inside again."""
    notes = notes or Path(editor.nvim.current.buffer.name)
    notes.write_text(module(INSIDE))
    editor.nvim.command(f"edit! {notes}")
    os.utime(outside / "secret.py", (1e9, 1e9))  # another time: the check sees a change
    notes.unlink()
    notes.symlink_to(outside / "secret.py")
    editor.nvim.command("checktime")
    assert editor.lua(LOADED_WITH_SECRET, SECRET) == str(notes)  # what Neovim itself does
    notes.unlink()
    notes.write_text(module(INSIDE))  # inside again, the buffer left as it was
    return notes


def test_a_hidden_buffer_the_tools_loaded_follows_its_file(lsp_editor, sandbox):
    """When the agent changes a file a language-server tool has asked about, the next call
    answers for the new bytes read inside (the buffer is loaded anew), never for the old text."""
    target = sandbox.project / "later.py"
    target.write_text(module(INSIDE))
    tools = ToolsClient(lsp_editor.status())
    assert INSIDE in json.dumps(tools("lsp_document_symbols", path="later.py"))
    target.write_text(module("changed_by_the_agent"))
    symbols = json.dumps(tools("lsp_document_symbols", path="later.py"))
    assert "changed_by_the_agent" in symbols and INSIDE not in symbols


def test_locations_outside_the_workspace_come_without_their_text(lsp_editor, sandbox):
    """A definition in the standard library (outside the workspace) is counted, never shown."""
    (sandbox.project / "uses.py").write_text('import textwrap\n\ntextwrap.dedent("x")\n')
    library_line = "def dedent(text):"
    assert library_line in Path(textwrap_file()).read_text()
    definition = tools_of(lsp_editor)("lsp_definition", path="uses.py", line=3, character=10)
    assert definition == {"definitions": [], "outside_workspace": 1}
    references = tools_of(lsp_editor)("lsp_references", path="uses.py", line=3, character=10)
    assert library_line not in json.dumps(references) and references["outside_workspace"] >= 1


def textwrap_file() -> str:
    import textwrap

    return textwrap.__file__


def tools_of(editor: Editor) -> ToolsClient:
    return ToolsClient(editor.status())


@pytest.fixture
def plain_tools(editor: Editor) -> ToolsClient:
    return ToolsClient(editor.status())


def test_fifos_devices_folders_and_huge_files_are_refused_at_once(editor, plain_tools, sandbox):
    project = sandbox.project
    os.mkfifo(project / "fifo.py")
    (project / "folder.py").mkdir()
    with open(project / "huge.py", "wb") as huge:  # 200 MB, sparse: costs no disk
        huge.truncate(200 << 20)
    expected = {
        "fifo.py": "is not a regular file",
        "folder.py": "is a directory",
        "huge.py": "is larger than the 8 MiB a tool reads",
    }
    try:
        os.mknod(project / "zero.py", stat.S_IFCHR | 0o666, os.makedev(1, 5))  # /dev/zero's twin
        expected["zero.py"] = "is not a regular file"
    except PermissionError:
        pass  # not root: /dev/zero itself is outside the workspace anyway
    for (path, why), (tool, extra) in itertools.product(expected.items(), PATH_TOOLS.items()):
        if tool == "get_diagnostics":
            continue  # reads no file: it reports what the editor has
        message = plain_tools.refused(tool, path=path, **extra)
        assert why in message, (tool, path, message)
    assert editor.lua("return 1 + 1") == 2


def test_bad_arguments_are_named_by_a_short_prefix(plain_tools):
    huge = "a/" * (4 << 20)  # an 8 MiB path
    for tool, extra in PATH_TOOLS.items():
        message = plain_tools.refused(tool, path=huge, **extra)
        assert "longer than 4096 bytes" in message and len(message) < 200, message[:300]
    for arguments in (
        {"path": "x.py", huge: 1},
        {"path": "x.py", "start_line": 10**400},
        {"path": "x.py", "start_line": 2**31},
        {"path": "x\x00y"},
        {"path": "\x1b[201~" + huge},
    ):
        message = plain_tools.refused("read_buffer", **arguments)
        assert len(message) < 300 and "\x1b" not in message, message[:300]
    assert len(plain_tools.refused("lsp_workspace_symbols", query=huge)) < 300
    assert len(plain_tools.refused("get_diagnostics", severity=huge)) < 300
    reply = plain_tools.session.call("tools/call", {"name": huge, "arguments": {}}, 99)
    assert reply["result"]["isError"] and len(json.dumps(reply)) < 300
    reply = plain_tools.session.call(huge, {}, 100)
    assert reply["error"]["code"] == -32601 and len(json.dumps(reply)) < 300


def test_a_file_that_is_not_utf8_is_answered_not_a_500(plain_tools, sandbox):
    (sandbox.project / "latin1.txt").write_bytes(b"caf\xe9 \xff\xfe\n")
    read = plain_tools("read_buffer", path="latin1.txt")
    assert read["text"] == "caf\ufffd \ufffd\ufffd"


KEY = "-----BEGIN PRIVATE KEY----- SECRET_ROOT_SWAP"


@pytest.fixture
def nest(tmp_path: Path) -> Path:
    """`ws/sub` (a folder of the workspace the agent writes) and `home` (outside, with a key and
    an `f.txt` of its own)."""
    (tmp_path / "ws" / "sub").mkdir(parents=True)
    (tmp_path / "ws" / "sub" / "f.txt").write_text(INSIDE)
    (tmp_path / "home" / ".ssh").mkdir(parents=True)
    (tmp_path / "home" / ".ssh" / "id_rsa").write_text(KEY)
    (tmp_path / "home" / "f.txt").write_text(KEY)
    (tmp_path / "home" / "sub").symlink_to(tmp_path / "home")  # for a swapped parent: home/sub/f.txt
    return tmp_path


@pytest.mark.parametrize("order", [("ws", "ws/sub"), ("ws/sub", "ws"), ("ws/sub",)])
@pytest.mark.parametrize("swapped", ["ws/sub", "ws"])
def test_a_root_or_its_parent_replaced_by_a_link_is_refused_not_followed(nest, order, swapped):
    """Roots are resolved once, when set: the root (or a folder above it) replaced by a link to
    the home folder afterwards moves no root. A path named through it is outside; one checked
    before the swap is refused when read; swapped back, the same calls answer again."""
    from gemini_companion.server.launch import clean_roots
    from gemini_companion.tools.confined import ToolError, confine, read_inside

    roots = clean_roots([str(nest / root) for root in order])
    checked = confine(str(nest / "ws" / "sub" / "f.txt"), roots)
    assert read_inside(checked, roots) == INSIDE.encode()
    real, parked = nest / swapped, nest / (swapped + ".parked")
    os.rename(real, parked)
    real.symlink_to(nest / "home")
    for path in ("ws/sub/.ssh/id_rsa", "ws/sub/f.txt", "ws/sub/sub/.ssh/id_rsa"):
        with pytest.raises(ToolError, match="outside the workspace"):
            confine(str(nest / path), roots)
    with pytest.raises(ToolError, match=r"changed while it was being opened \(a symlink appeared\)") as refused:
        read_inside(checked, roots)
    assert "\n" not in str(refused.value)
    real.unlink()
    os.rename(parked, real)
    assert read_inside(confine(str(nest / "ws" / "sub" / "f.txt"), roots), roots) == INSIDE.encode()


def test_a_single_root_swapped_in_a_race_never_yields_an_outside_byte(nest):
    """The only root exchanged with a link to outside in a tight loop while the tools check and
    read a file in it: every call gives the inside bytes or a one-line ToolError, never an
    outside byte and never a bare OSError (resolving a name mid-swap raises one)."""
    from gemini_companion.server.launch import clean_roots
    from gemini_companion.tools.confined import ToolError, confine, read_inside

    exchange = renameat2_exchange()
    if exchange is None:
        pytest.skip("needs renameat2(RENAME_EXCHANGE)")
    sub, other = nest / "ws" / "sub", nest / "ws" / "other"
    other.symlink_to(nest / "home")
    roots = clean_roots([str(sub)])
    counts = {"inside": 0, "refused": 0}
    with Swapper([(lambda: exchange(sub, other), BLIP), (lambda: exchange(sub, other), HOLD)]) as swapper:
        for i in itertools.count():
            if i >= 3000 and swapper.rounds > 100 and counts["inside"] and counts["refused"]:
                break
            assert i < 100_000, (counts, swapper.rounds)
            try:
                data = read_inside(confine("f.txt", roots), roots)
            except ToolError as err:
                assert "\n" not in str(err) and len(str(err)) < 400, str(err)
                counts["refused"] += 1
                continue
            assert data == INSIDE.encode(), data[:100]
            counts["inside"] += 1


@pytest.mark.parametrize("single", [False, True], ids=["tab-root", "only-root"])
def test_a_root_replaced_by_a_link_moves_nothing_end_to_end(editor, sandbox, outside, single):
    """A tab's folder (`:tcd sub`, beside the project's root) or the only root (`:cd sub`) is
    replaced by a link to a secret folder: no tool reads through it, none loads a buffer of it,
    every refusal is one line."""
    sub = sandbox.project / "sub"
    sub.mkdir()
    (sub / "secret.py").write_text(module(INSIDE))
    if single:
        editor.nvim.command(f"cd {sub}")
    else:
        editor.nvim.command("tabnew")
        editor.nvim.command(f"tcd {sub}")
    expected = [str(sub)] if single else [str(sandbox.project), str(sub)]
    wait_for(lambda: editor.status()["workspace"] == expected, 30, f"the workspace {expected}: {editor.status()}")
    os.rename(sub, sandbox.project / "sub.parked")
    sub.symlink_to(outside)
    tools = ToolsClient(editor.status())
    for path in (str(sub / "secret.py"), "secret.py" if single else "sub/secret.py", str(sub / "d" / "race.py")):
        for tool, extra in PATH_TOOLS.items():
            result = tools.raw(tool, path=path, **extra)
            text = result["content"][0]["text"]
            assert SECRET not in text, (tool, path, text)
            if tool != "get_diagnostics":
                assert result.get("isError") and "outside the workspace" in text and "\n" not in text, (tool, text)
    assert editor.lua(LOADED_WITH_SECRET, SECRET) is None


def test_a_single_root_swapped_in_a_race_through_the_tools(editor, sandbox, outside):
    """The only root (`:cd sub`) exchanged with a link to the secret folder in a loop while the
    model reads and opens a file in it: never a byte of the secret, never a traceback's
    `[Errno`, some calls answered."""
    exchange = renameat2_exchange()
    if exchange is None:
        pytest.skip("needs renameat2(RENAME_EXCHANGE)")
    sub, other = sandbox.project / "sub", sandbox.project / "other"
    sub.mkdir()
    (sub / "secret.py").write_text(module(INSIDE))
    other.symlink_to(outside)
    editor.nvim.command(f"cd {sub}")
    wait_for(lambda: editor.status()["workspace"] == [str(sub)], 30, "the workspace [sub]")
    tools = ToolsClient(editor.status())
    refusals = 0
    with Swapper([(lambda: exchange(sub, other), BLIP), (lambda: exchange(sub, other), HOLD)]) as swapper:
        for tool in ("read_buffer", "open_file"):
            answered = 0
            for _ in range(60):
                result = tools.raw(tool, path="secret.py")
                text = result["content"][0]["text"]
                assert SECRET not in text and "Errno" not in text and "\n" not in text, (tool, text)
                if result.get("isError"):
                    refusals += 1
                elif INSIDE in (editor.lua(SHOWN) if tool == "open_file" else text):
                    answered += 1
                editor.lua(WIPE, r"secret%.py$")
            assert answered > 0, tool
    assert editor.lua(LOADED_WITH_SECRET, SECRET) is None
    assert swapper.rounds > 20 and refusals > 0, (swapper.rounds, refusals)  # the swaps hit the calls


# Files Neovim reads with a byte order mark ('bomb'), in every encoding that has one, and a few
# without: open_file must load each (the buffer holds exactly the bytes tools.py read).
UNICODE_FILES = {
    "utf8_bom.txt": b"\xef\xbb\xbfabc\n",
    "utf8_bom_only.txt": b"\xef\xbb\xbf",
    "utf8_bom_newline.txt": b"\xef\xbb\xbf\n",
    "utf8_bom_noeol.txt": b"\xef\xbb\xbfx\r\ny",
    "utf16le.txt": "\ufeffhello\nw\u00f6rld\n".encode("utf-16-le"),
    "utf16le_astral.txt": "\ufeffa\U0001f600b\n".encode("utf-16-le"),
    "utf16le_bom_only.txt": "\ufeff".encode("utf-16-le"),
    "utf16le_noeol.txt": "\ufeffhi".encode("utf-16-le"),
    "utf16be.txt": "\ufeffhi \u00e9\n".encode("utf-16-be"),
    "utf16be_astral_crlf.txt": "\ufeffa\r\n\U0001f600\r\n".encode("utf-16-be"),
    "ucs4le.txt": "\ufeffhi\U0001f600\n".encode("utf-32-le"),
    "ucs4be.txt": "\ufeffhi\n".encode("utf-32-be"),
    "latin1.txt": b"caf\xe9\n",
    "empty.txt": b"",
    "newline.txt": b"\n",
    "crlf_noeol.txt": b"a\r\nb",
}
# One tool call straight into tools.lua with the bytes given as what tools.py read; the reply it
# would send the host, returned instead.
CALL_WITH_BYTES = """
local name, args = ...
local host, got = require('gemini_companion.host'), nil
local notify = host.notify
host.notify = function(method, params)
  if method == 'tool_result' and params.id == -7 then got = params else return notify(method, params) end
end
local ok, err = pcall(require('gemini_companion.tools').call, -7, name, args)
vim.wait(10000, function() return got ~= nil end, 5) -- the call answers on a later tick
host.notify = notify
assert(ok, err)
return got
"""


def test_files_with_a_byte_order_mark_are_opened(editor, plain_tools, sandbox):
    for name, data in UNICODE_FILES.items():
        (sandbox.project / name).write_bytes(data)
    for name in UNICODE_FILES:
        assert plain_tools("open_file", path=name) == {"opened": name, "line": 1}, name
        read = plain_tools("read_buffer", path=name)  # the buffer answers: it holds the file's bytes
        assert read["open_in_editor"] and not read["unsaved_edits"], (name, read)
    fenc = "return {vim.bo[vim.fn.bufnr(...)].fileencoding, vim.bo[vim.fn.bufnr(...)].bomb}"
    assert editor.lua(fenc, str(sandbox.project / "utf16be.txt")) == ["utf-16", True]
    assert editor.lua(fenc, str(sandbox.project / "ucs4le.txt")) == ["ucs-4le", True]


def variants(data: bytes) -> Iterator[bytes]:
    """Bytes near `data` that are not it: each must be refused."""
    yield data + b"\n"
    yield data + b"\x00"
    yield b"\n" + data
    if data:
        yield data[:-1]
        yield data[1:]
        yield data[:-1] + bytes([data[-1] ^ 1])
        yield bytes([data[0] ^ 0x20]) + data[1:]
    if len(data) >= 2:
        yield bytes(data[i ^ 1] for i in range(len(data) & ~1)) + data[len(data) & ~1 :]  # other byte order
    yield data.replace(b"\n", b"\r\n")
    yield SECRET.encode()


def test_a_buffer_is_kept_only_if_it_holds_exactly_the_bytes_read(editor, sandbox):
    """tools.lua keeps the buffer it loads only when Neovim read exactly the bytes tools.py read:
    for every file above the right bytes are accepted and every near miss (a byte more, less or
    changed, the other byte order, other line endings) is refused and leaves no buffer."""
    for name, data in UNICODE_FILES.items():
        path = str(sandbox.project / name)
        (sandbox.project / name).write_bytes(data)
        roots = [str(sandbox.project)]
        for wrong in {v for v in variants(data) if v != data}:
            reply = editor.lua(CALL_WITH_BYTES, "open_file", {"path": path, "file": {"data": wrong}, "roots": roots})
            assert reply["error"] == f"'{name}' changed while it was being opened", (name, wrong, reply)
            assert editor.lua("return vim.fn.bufloaded(...)", path) == 0, (name, wrong)
        reply = editor.lua(CALL_WITH_BYTES, "open_file", {"path": path, "file": {"data": data}, "roots": roots})
        assert reply["result"] == {"opened": name, "line": 1}, (name, reply)


def post(port: int, path: str, token: str, body: bytes, session: str | None = None) -> tuple[int, str, bytes]:
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    if session:
        headers.update({"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.getheader("content-type", ""), response.read()
    finally:
        conn.close()


BAD_BODIES = {
    "100k [": b"[" * 100_000,
    "100k objects": b'{"a":' * 100_000,
    "65 levels": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":' + b"[" * 64 + b"]" * 64 + b"}",
    "invalid UTF-8": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\xff\xfe"}}',
    "lone surrogate": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"\\udc00":1}}',
    "float overflow": b'{"jsonrpc":"2.0","id":1e999,"method":"ping"}',
    "5000 digits": b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}',
    "NaN": b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}',
    "not JSON": b"{not json",
    "empty": b"",
    "UTF-16": '{"jsonrpc":"2.0","id":1,"method":"ping"}'.encode("utf-16"),
    "array": b"[]",
    "number": b"1",
    "string": b'"x"',
    "null": b"null",
}


def hooks_token(editor: Editor) -> str:
    """The hooks endpoint's token, from the file the terminals' hook key names."""
    from gemini_companion.programs.hook import KEY_ENV, read_key

    found = read_key(editor.env(KEY_ENV) or "")
    assert found, "no hook key file"
    return found[1]


@pytest.fixture
def endpoints(editor: Editor) -> Iterator[list[tuple[str, str, str | None]]]:
    """(path, token, session id) for /mcp, /mcp/editor (each with a live session) and /hooks."""
    status = editor.status()
    port = status["port"]
    ide = RawSession(port, editor.env("GEMINI_CLI_IDE_AUTH_TOKEN") or "")
    ide.initialize()
    tools = ToolsClient(status).session
    yield [
        ("/mcp", ide.token, ide.session_id),
        ("/mcp/editor", tools.token, tools.session_id),
        ("/hooks", hooks_token(editor), None),
    ]
    for path, token, session in [("/mcp", ide.token, ide.session_id), ("/mcp/editor", tools.token, tools.session_id)]:
        status_code, _, body = post(port, path, token, b'{"jsonrpc":"2.0","id":7,"method":"ping"}', session)
        assert status_code == 200 and json.loads(body)["result"] == {}  # the session survived it all


@pytest.mark.parametrize("name", list(BAD_BODIES))
def test_malformed_bodies_are_a_short_4xx_json_rpc_error_on_every_endpoint(editor, endpoints, name):
    port = editor.status()["port"]
    for path, token, session in endpoints:
        status, content_type, body = post(port, path, token, BAD_BODIES[name], session)
        assert 400 <= status < 500, (path, status, body[:200])
        assert content_type == "application/json" and len(body) < 300, (path, body[:300])
        answer = json.loads(body)
        assert answer["error"]["code"] in (-32700, -32600), (path, answer)
        assert "\n" not in answer["error"]["message"]


def test_moderate_nesting_and_paired_surrogates_are_fine(editor, endpoints):
    port = editor.status()["port"]
    nested = b"[" * 60 + b"]" * 60
    body = b'{"jsonrpc":"2.0","id":"\\ud83d\\ude00","method":"ping","params":{"deep":' + nested + b"}}"
    for path, token, session in endpoints:
        status, _, answer = post(port, path, token, body, session)
        assert status == 200, (path, answer[:200])


def test_a_hook_event_with_values_no_path_takes_is_a_short_4xx(editor):
    port = editor.status()["port"]
    for cwd in ("/tmp/x\x00y", "\x00" * 100_000):
        status, _, body = post(
            port, "/hooks", hooks_token(editor), json.dumps({"event": "turn-start", "cwd": cwd}).encode()
        )
        assert 400 <= status < 500 and len(body) < 300, (status, body[:300])
        assert json.loads(body)["error"]["code"] == -32600
    assert editor.lua("return 1 + 1") == 2


# How each CLI names a tool of the `neovim` server (client-facts.md), and how it is started.
E2E_TOOL = {"gemini": "mcp_neovim_{}", "qwen": "mcp__neovim__{}"}


@pytest.mark.e2e
@pytest.mark.parametrize("cli", ["gemini", "qwen"])
def test_the_real_clis_carry_the_refusals_to_the_model_and_nothing_else(sandbox: Sandbox, outside, cli):
    """The scripted model asks through the real CLI for a link to a secret, a FIFO and a 20 KB
    path: its next requests hold the one-line refusals, never a byte of the secret."""
    from harness.fake_model import FakeModel, Turn
    from harness.tui import E2E_TIMEOUT, GEMINI_BIN, NODE22, QWEN_CLI, Tui, tmux_available

    if not tmux_available():
        pytest.skip("tmux is needed to drive the Neovim TUI")
    (sandbox.project / "escape.py").symlink_to(outside / "secret.py")
    os.mkfifo(sandbox.project / "pipe.py")
    name = E2E_TOOL[cli].format
    long_path = "x/" * 10_000
    script = [
        Turn(call=name("read_buffer"), args={"path": "escape.py"}),
        Turn(call=name("read_buffer"), args={"path": "pipe.py"}),
        Turn(call=name("lsp_hover"), args={"path": long_path, "line": 1, "character": 1}),
        Turn(text="Checked the editor."),
    ]
    model = FakeModel(script)
    agent = {"gemini": [str(GEMINI_BIN)], "qwen": [str(NODE22), str(QWEN_CLI)]}[cli]
    setup = {"agents": {cli: {"cmd": agent}}, "default_agent": cli, "cli_settings": "auto"}
    tui = Tui(sandbox, model.url, [], ide_enabled=False, setup=setup)
    try:
        tui.wait_running()
        tui.ex("Gemini")
        wait_for(lambda: tui.status()["clients"], E2E_TIMEOUT, f"{cli} to connect")
        tui.ask_agent("look at escape.py and pipe.py", lambda: model.requests)
        tui.wait_screen("Checked the editor.")
        results = [json.dumps(result, ensure_ascii=False) for result in model.tool_results()]
        everything = json.dumps([r["body"] for r in model.requests], ensure_ascii=False)
        assert SECRET not in everything
        for expected in ("'escape.py' is outside the workspace", "'pipe.py' is not a regular file"):
            (found,) = {r for r in results if expected in r}  # each result once, whatever the history
            assert len(found) < 1000, found[:1000]
        # Both CLIs echo the model's own arguments around an MCP tool error; ours quotes 48 chars.
        (found,) = {r for r in results if "longer than 4096" in r}
        assert re.search(r"path '[x/]{48}'\.\.\. is longer than 4096 bytes", found), found[-500:]
    finally:
        tui.close()
        model.close()
