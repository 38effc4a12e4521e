"""The editor never freezes for a tool, and a read-only tool leaves no trace in it (issue 21).

A read that hangs (a real FIFO opened for reading with nobody writing: open(2) blocks, as on a
hung mount) is an error in time and holds up no later read; read_buffer with a range reads only
that range of a 200 MB file; a file a language-server tool loads is loaded without BufEnter,
BufWinEnter, BufRead of other plugins or a swap file, and goes again when the tool is done (100
files asked about leave the same buffers loaded); open_file on anything but a regular file changes
no window. A real Neovim, the real host, a real pylsp.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import os
import socket
import stat
import struct
import subprocess
from pathlib import Path

import pytest

from conftest import Editor, nvim_binary, python_module, wait_for
from harness.mcp_raw import ToolsClient


def test_a_hung_read_is_an_error_in_time_and_holds_up_no_later_read(tmp_path, monkeypatch):
    """Reads stuck in the kernel (more than the shared executor has workers) time out with one
    line each; a read after them still answers; past MAX_HUNG_READS stuck ones a read is refused at
    once, and when they come loose, reads go again."""
    from gemini_companion.tools import reader

    monkeypatch.setattr(reader, "READ_SECONDS", 0.2)
    fifo = tmp_path / "hung"
    os.mkfifo(fifo)
    fine = tmp_path / "fine.txt"
    fine.write_text("fine\n")

    def hang() -> bytes:
        with open(fifo, "rb") as stuck:  # blocks in open(2) until a writer comes
            return stuck.read()

    async def scenario() -> None:
        hung_reads = reader.Reader()
        for i in range(reader.MAX_HUNG_READS):  # more than asyncio's shared executor has threads
            with pytest.raises(reader.ToolError, match=r"^'hung' gave nothing within 0.2 s \(a hung mount\?\)$"):
                await hung_reads.run("'hung'", hang)
            if i < reader.MAX_HUNG_READS - 1:
                assert await hung_reads.run("'fine.txt'", fine.read_bytes) == b"fine\n"  # nothing held up
        with pytest.raises(reader.ToolError, match=f"^{reader.MAX_HUNG_READS} earlier file reads are still hung"):
            await hung_reads.run("'fine.txt'", fine.read_bytes)
        while True:  # a writer's open lets the stuck readers go; then reads run again
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # ENXIO: no reader is stuck (any more)
                pass
            try:
                assert await hung_reads.run("'fine.txt'", fine.read_bytes) == b"fine\n"
                return
            except reader.ToolError as err:
                assert "still hung" in str(err)
                await asyncio.sleep(0.01)

    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_a_range_reads_only_its_lines(tmp_path):
    from gemini_companion.tools.confined import ToolError, read_inside

    big = tmp_path / "big.log"
    with open(big, "wb") as out:
        out.write(b"".join(b"line %d\n" % n for n in range(1, 1001)))
        out.truncate(200 << 20)  # the rest sparse: 200 MB
    roots = [str(tmp_path)]
    assert read_inside(str(big), roots, 3) == b"line 1\nline 2\nline 3\n"
    assert read_inside(str(big), roots, 1000).endswith(b"line 1000\n")
    with pytest.raises(ToolError, match="larger than the 8 MiB"):
        read_inside(str(big), roots)
    with pytest.raises(ToolError, match=r"the first 1001 lines of 'big\.log' are more than the 8 MiB"):
        read_inside(str(big), roots, 1001)  # the 1001st line is the 200 MB of NULs
    (tmp_path / "short.txt").write_bytes(b"a\nb")
    assert read_inside(str(tmp_path / "short.txt"), roots, 5) == b"a\nb"


def read_bytes_of(pid: int) -> int:
    """What a process has read so far (read(2) and friends, files and sockets alike)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar")


def test_read_buffer_of_a_range_of_a_200_mb_file(editor, sandbox):
    with open(sandbox.project / "big.log", "wb") as out:
        out.write(b"".join(b"entry %d\n" % n for n in range(1, 100_001)))  # 1.3 MB of lines
        out.truncate(200 << 20)
    tools = ToolsClient(editor.status())
    host = editor.status()["host_pid"]
    before = read_bytes_of(host)
    read = tools("read_buffer", path="big.log", start_line=10, end_line=12)
    assert read_bytes_of(host) - before < 1 << 20  # not the 8 MiB, nor the 1.3 MB of lines
    assert read["text"] == "entry 10\nentry 11\nentry 12" and read["more_lines"] is True
    assert (read["start_line"], read["end_line"]) == (10, 12) and "line_count" not in read
    assert "larger than the 8 MiB" in tools.refused("read_buffer", path="big.log")
    assert "larger than the 8 MiB" in tools.refused("read_buffer", path="big.log", start_line=5)
    (sandbox.project / "small.txt").write_text("one\ntwo\n")
    small = tools("read_buffer", path="small.txt", start_line=1, end_line=9)
    assert small["text"] == "one\ntwo" and small["line_count"] == 2 and "more_lines" not in small
    editor.nvim.command(f"edit {sandbox.project / 'small.txt'}")  # a buffer without edits: same answer
    shown = tools("read_buffer", path="small.txt", start_line=2, end_line=2)
    assert shown["text"] == "two" and shown["open_in_editor"] and not shown["unsaved_edits"]
    editor.lua("vim.api.nvim_buf_set_lines(0, 0, 1, false, {'ONE'})")
    edited = tools("read_buffer", path="small.txt", start_line=1, end_line=1)
    assert edited["text"] == "ONE" and edited["unsaved_edits"] and edited["line_count"] == 2


def test_read_buffer_of_a_huge_buffer_with_unsaved_edits_is_bounded_like_a_file(editor, sandbox):
    """The user's unsaved text is read as a file is: only the lines asked for, and no more than
    8 MiB of them. (The whole buffer was fetched for any range, and a read without one answered
    with every byte: 28 MB through the host for a 27 MB buffer, held Neovim seconds at 135 MB.)"""
    (sandbox.project / "big.log").write_text("saved\n")
    editor.nvim.command(f"edit {sandbox.project / 'big.log'}")
    editor.lua(
        "local l = {} for n = 1, 500000 do l[n] = ('entry %07d '):format(n) .. ('x'):rep(28) end"
        " vim.api.nvim_buf_set_lines(0, 0, -1, false, l)"
    )  # 20 MB, never saved
    tools = ToolsClient(editor.status())
    one = tools("read_buffer", path="big.log", start_line=250000, end_line=250001)
    assert one["text"].splitlines() == [f"entry {n:07d} " + "x" * 28 for n in (250000, 250001)]
    assert (one["start_line"], one["end_line"], one["line_count"]) == (250000, 250001, 500000)
    assert one["unsaved_edits"] and one["open_in_editor"]
    refused = tools.refused("read_buffer", path="big.log")
    assert "lines 1-500000 are more than the 8 MiB a tool reads" in refused and len(refused) < 300
    assert tools("read_buffer", path="big.log", start_line=499999)["text"].count("\n") == 1


# Which autocommands fire for which file: a plugin's view of the editor.
WATCH = """
_G.seen = {}
local events = {'BufNew', 'BufAdd', 'BufReadPre', 'BufReadPost', 'BufEnter', 'BufWinEnter', 'SwapExists', 'FileType'}
vim.api.nvim_create_autocmd(events, {callback = function(ev)
  table.insert(_G.seen, {ev.event, vim.fn.fnamemodify(ev.file, ':t')})
end})
"""
LOADED = (
    "local n = 0 for _, b in ipairs(vim.api.nvim_list_bufs()) do"
    " if vim.api.nvim_buf_is_loaded(b) then n = n + 1 end end return {n, #vim.api.nvim_list_bufs()}"
)
LAYOUT = (
    "local out = {} for _, w in ipairs(vim.api.nvim_list_wins()) do"
    " table.insert(out, {w, vim.api.nvim_win_get_buf(w)}) end"
    " return {out, vim.api.nvim_get_current_win(), #vim.api.nvim_list_bufs(), vim.fn.tabpagenr('$')}"
)


def test_files_asked_about_are_loaded_quietly_and_let_go(lsp_editor, sandbox):
    """100 language-server calls on distinct files: each file's buffer is loaded with only the
    filetype detection and FileType (the language server attaches), never BufEnter, BufWinEnter or
    another plugin's BufRead, and goes when the call is done: the same buffers loaded as before.
    A buffer the user listed but did not load is loaded for the call and unloaded again, still
    listed; the user's loaded buffer stays loaded."""
    project = sandbox.project
    for n in range(100):
        (project / f"m{n:03}.py").write_text(python_module(f"name_{n}"))
    (project / "listed.py").write_text(python_module("listed"))
    lsp_editor.nvim.command(f"badd {project / 'listed.py'}")
    lsp_editor.lua(WATCH)
    before = lsp_editor.lua(LOADED)
    tools = ToolsClient(lsp_editor.status())
    kinds = [
        ("lsp_document_symbols", {}),
        ("lsp_hover", {"line": 1, "character": 5}),
        ("lsp_definition", {"line": 5, "character": 1}),
        ("lsp_references", {"line": 1, "character": 5}),
    ]
    for n in range(100):
        tool, extra = kinds[n % len(kinds)]
        result = tools(tool, path=f"m{n:03}.py", **extra)
        assert f"name_{n}" in str(result) or tool == "lsp_hover", (tool, result)
    assert any(s["name"] == "listed" for s in tools("lsp_document_symbols", path="listed.py")["symbols"])
    assert lsp_editor.lua(LOADED) == before
    assert lsp_editor.lua("return {vim.fn.bufloaded(...), vim.fn.buflisted(...)}", str(project / "listed.py")) == [0, 1]
    assert lsp_editor.lua("return vim.fn.bufloaded(...)", str(project / "source.py")) == 1
    seen = lsp_editor.lua("return _G.seen")
    assert {event for event, name in seen if name.startswith("m")} == {"FileType"}, seen[:10]
    assert sum(1 for event, name in seen if event == "FileType" and name.startswith("m")) == 100
    symbols = tools("lsp_document_symbols", path="source.py")["symbols"]  # the user's buffer answers
    assert [s["name"] for s in symbols] == ["inside"]
    assert lsp_editor.lua("return vim.fn.bufloaded(...)", str(project / "source.py")) == 1


class Created:
    """Names created in a folder from now on (inotify): a swap file that lived only during a call
    is seen too."""

    IN_CREATE, IN_NONBLOCK = 0x100, 0o4000  # sys/inotify.h

    def __init__(self, folder: Path) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(self.IN_NONBLOCK)
        assert self.fd >= 0 and libc.inotify_add_watch(self.fd, bytes(folder), self.IN_CREATE) >= 0

    def names(self) -> list[str]:
        try:
            data = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return []
        names, at = [], 0
        while at < len(data):
            length = struct.unpack_from("iIII", data, at)[3]
            names.append(data[at + 16 : at + 16 + length].rstrip(b"\0").decode())
            at += 16 + length
        return names


def test_calls_at_once_on_one_file_share_its_buffer_and_let_it_go(lsp_editor, sandbox):
    """Several language-server calls on the same file at the same time: each answers (none finds
    the buffer gone under it), and when the last is done the file is no longer loaded."""
    (sandbox.project / "busy.py").write_text(python_module("busy"))
    clients = [ToolsClient(lsp_editor.status()) for _ in range(4)]
    calls = [
        ("lsp_document_symbols", {}),
        ("lsp_hover", {"line": 1, "character": 5}),
        ("lsp_references", {"line": 1, "character": 5}),
        ("lsp_definition", {"line": 5, "character": 1}),
    ]
    for _ in range(5):
        with concurrent.futures.ThreadPoolExecutor(len(clients)) as pool:
            futures = [
                pool.submit(client.raw, tool, path="busy.py", **extra)
                for client, (tool, extra) in zip(clients, calls, strict=True)
            ]
            results = [future.result() for future in futures]
        assert not [r for r in results if r.get("isError")], results
        assert lsp_editor.lua("return vim.fn.bufloaded(...)", str(sandbox.project / "busy.py")) == 0


def swap_directory(editor: Editor) -> Path:
    """Where this editor keeps swap files ('directory', its first entry)."""
    first = editor.lua("return vim.split(vim.o.directory, ',')[1]").rstrip("/")
    return Path(editor.lua("return vim.fn.expand(...)", first))


def test_a_file_another_editor_has_open_loads_without_a_prompt_or_a_swap_file(lsp_editor, sandbox):
    """Another Neovim edits the file (its swap file exists): the tools load it with no swap-file
    prompt, nothing blocks, and no swap file of ours appears for a file only a tool read."""
    target = sandbox.project / "shared.py"
    target.write_text(python_module("shared"))
    swaps = swap_directory(lsp_editor)
    swaps.mkdir(parents=True, exist_ok=True)
    other = subprocess.Popen(
        [nvim_binary(), "--headless", "-u", "NONE", "-i", "NONE", "--cmd", f"set directory={swaps}//", str(target)],
        env=sandbox.env,
        cwd=sandbox.project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: any(swaps.glob("*shared.py.sw?")), 30, "the other editor's swap file")
        held = sorted(swaps.iterdir())
        created = Created(swaps)
        lsp_editor.lua("vim.go.swapfile = true")  # as a user has it (tests/harness/init.lua turns it off)
        lsp_editor.lua(WATCH)
        tools = ToolsClient(lsp_editor.status())
        assert [s["name"] for s in tools("lsp_document_symbols", path="shared.py")["symbols"]] == ["shared"]
        assert "shared" in tools("read_buffer", path="shared.py", start_line=1, end_line=1)["text"]
        assert not lsp_editor.lua("return vim.api.nvim_get_mode().blocking")
        assert sorted(swaps.iterdir()) == held and created.names() == []  # none of ours, not even for a moment
        assert not [event for event, _ in lsp_editor.lua("return _G.seen") if event == "SwapExists"]
        assert "E325" not in lsp_editor.messages()
        assert lsp_editor.lua("return vim.fn.bufloaded(...)", str(target)) == 0
    finally:
        other.kill()
        other.wait(30)


def test_open_file_on_anything_but_a_regular_file_changes_no_window(editor, sandbox):
    project = sandbox.project
    (project / "folder").mkdir()
    os.mkfifo(project / "pipe")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(project / "sock"))
    expected = {"folder": "is a directory", "pipe": "is not a regular file", "sock": "is not a regular file"}
    try:
        os.mknod(project / "zero", stat.S_IFCHR | 0o666, os.makedev(1, 5))
        expected["zero"] = "is not a regular file"
    except PermissionError:
        pass  # not root
    (project / "real.txt").write_text("real\n")
    editor.nvim.command(f"edit {project / 'real.txt'}")
    editor.nvim.command("botright vsplit | terminal")
    tools = ToolsClient(editor.status())
    layout = editor.lua(LAYOUT)
    try:
        for name, why in expected.items():
            for path in (name, str(project / name)):
                message = tools.refused("open_file", path=path, line=3)
                assert why in message and len(message) < 200, (name, message)
                assert editor.lua(LAYOUT) == layout, name
    finally:
        listener.close()
    assert tools("open_file", path="real.txt") == {"opened": "real.txt", "line": 1}  # the same call works
