"""The editor never freezes for a tool: a file on a hung mount, end to end (issue 21).

A real FUSE mount inside the project (tests/harness/fuse_hang.py) stops answering: from then on a stat, a
lookup, an open of anything under it waits in the kernel, as on a dead network mount. Every tool
that takes a path is called on files there, and on ordinary files while it hangs, with a buffer
of a file on the mount loaded before it hung; each call answers or fails in one line in time,
Neovim's main loop keeps ticking (the bench's stall probe), nothing is left loaded, and once the
mount is aborted every tool works again. A real Neovim, the real host, a real pylsp.
"""

from __future__ import annotations

import concurrent.futures
import os
from collections.abc import Iterator

import pytest

from conftest import Editor, Sandbox, python_module, wait_for
from harness.fuse_hang import HangingFS, unavailable
from harness.mcp_raw import ToolsClient
from harness.stall_probe import STALL_PROBE  # the bench's probe: the same measure

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=f"no FUSE mount here: {unavailable()}")

# Every tool that takes a path, with what else it needs (open_file last: it shows the file).
PATH_TOOLS: dict[str, dict[str, int]] = {
    "read_buffer": {"start_line": 1, "end_line": 2},
    "lsp_hover": {"line": 1, "character": 5},
    "lsp_definition": {"line": 5, "character": 1},
    "lsp_references": {"line": 1, "character": 5},
    "lsp_document_symbols": {},
    "get_diagnostics": {},
    "open_file": {"line": 1},
}
# Worst main-loop stall allowed during the calls. A stat on the hung mount on the main loop would
# stall it for the whole hang (seconds); a loaded, shared 2-core box adds tens of ms of noise.
STALL_BOUND_MS = 200
LOADED = (
    "local n = 0 for _, b in ipairs(vim.api.nvim_list_bufs()) do"
    " if vim.api.nvim_buf_is_loaded(b) then n = n + 1 end end return n"
)


@pytest.fixture
def mount(sandbox: Sandbox) -> Iterator[HangingFS]:
    """project/mnt, served until the test hangs it; aborted and detached whatever happens (set up
    after the editor, so torn down before it: nothing is still stuck when Neovim quits)."""
    point = sandbox.project / "mnt"
    point.mkdir()
    try:
        fs = HangingFS(point, {"far.py": python_module("far").encode(), "notes.txt": b"first\nsecond\n"})
    except PermissionError as err:  # root without CAP_SYS_ADMIN (a container)
        pytest.skip(f"no FUSE mount here: {err}")
    try:
        yield fs
    finally:
        fs.close()


def call_all(editor: Editor, calls: list[tuple[str, dict[str, object]]]) -> tuple[list[dict], float]:
    """The calls at once, each over its own MCP session (as several agents would); their results
    and the worst main-loop stall meanwhile (ms, less the probe's 5 ms period)."""
    clients = [ToolsClient(editor.status()) for _ in calls]
    editor.lua("bench_stall_reset()")
    with concurrent.futures.ThreadPoolExecutor(len(calls)) as pool:
        futures = [pool.submit(client.raw, tool, **args) for client, (tool, args) in zip(clients, calls, strict=True)]
        results = [future.result() for future in futures]
    return results, editor.lua("return bench_stall()") - 5


def message(result: dict) -> str:
    return result["content"][0]["text"]


def test_a_hung_mount_freezes_no_tool_and_nothing_after_it(lsp_editor, mount, sandbox):
    project = sandbox.project
    (project / "other.txt").write_text("other\n")
    tools = ToolsClient(lsp_editor.status())
    # Served: the tools read files on the mount; a buffer of one is loaded (and left) before it hangs.
    assert tools("read_buffer", path="mnt/notes.txt")["text"] == "first\nsecond"
    lsp_editor.nvim.command(f"edit {project / 'mnt' / 'notes.txt'}")
    lsp_editor.nvim.command(f"edit {project / 'source.py'}")
    assert {b["path"] for b in tools("get_open_buffers")["buffers"]} == {"source.py", "mnt/notes.txt"}
    layout = lsp_editor.lua("return {vim.api.nvim_get_current_win(), vim.api.nvim_get_current_buf()}")
    loaded = lsp_editor.lua(LOADED)
    lsp_editor.lua(STALL_PROBE)

    mount.hang()
    # The user goes on working: the cursor moves, so context sharing looks at every listed buffer's
    # file (the one on the mount too) in the debounce window, while the calls below run.
    lsp_editor.nvim.command("normal! G")
    lsp_editor.nvim.command("normal! gg")
    far = [
        (tool, {"path": f"mnt/{name}", **extra})
        for tool, extra in PATH_TOOLS.items()
        for name in ("far.py", "notes.txt")
    ]
    far.append(("read_buffer", {"path": str(project / "mnt" / "notes.txt")}))  # absolute, the loaded buffer's
    results, stall = call_all(lsp_editor, far)
    for (tool, args), result in zip(far, results, strict=True):
        assert result.get("isError"), (tool, args, result)
        assert message(result).startswith(f"{tool}: ") and "gave nothing within" in message(result), message(result)
        assert "\n" not in message(result)
    assert stall <= STALL_BOUND_MS, stall
    assert mount.unanswered > 0  # the calls did reach the hung mount

    # Ordinary files while it hangs: answers, with the buffer on the mount left out (not resolved).
    near = [
        ("read_buffer", {"path": "source.py"}),
        ("lsp_document_symbols", {"path": "source.py"}),
        ("lsp_hover", {"path": "source.py", "line": 1, "character": 5}),
        ("lsp_definition", {"path": "source.py", "line": 5, "character": 1}),
        ("get_diagnostics", {"path": "source.py"}),
        ("get_diagnostics", {}),
        ("get_open_buffers", {}),
    ]
    for _ in range(3):  # again and again: a name stuck on the mount holds up no later call
        results, stall = call_all(lsp_editor, near)
        assert not [r for r in results if r.get("isError")], results
        assert stall <= STALL_BOUND_MS, stall
        assert "def inside" in message(results[0])
        assert '"name": "inside"' in message(results[1])
        assert '"path": "source.py"' in message(results[3])
        assert '"mnt/notes.txt"' not in message(results[6]) and '"source.py"' in message(results[6])
    opened = tools("open_file", path="other.txt")
    assert opened == {"opened": "other.txt", "line": 1}
    lsp_editor.nvim.command(f"buffer {layout[1]}")  # back as it was
    assert lsp_editor.lua(LOADED) == loaded + 1  # other.txt, shown; nothing hidden left loaded
    assert not lsp_editor.lua("return vim.api.nvim_get_mode().blocking")

    # Aborted: what was stuck comes loose; the mount's files fail in one line at once, all else works.
    mount.close()
    for tool, extra in PATH_TOOLS.items():
        if tool == "get_diagnostics":  # it reads no file: an answer
            assert tools(tool, path="mnt/far.py")["count"] == 0
            continue
        refused = tools.refused(tool, path="mnt/far.py", **extra)
        assert refused == f"{tool}: 'mnt/far.py': no such file", refused  # detached
    wait_for(
        lambda: {b["path"] for b in tools("get_open_buffers")["buffers"]} >= {"mnt/notes.txt", "source.py"},
        30,
        "the buffer on the aborted mount to be resolved again",
    )
    assert "def inside" in tools("read_buffer", path="source.py")["text"]
    assert [s["name"] for s in tools("lsp_document_symbols", path="source.py")["symbols"]] == ["inside"]
    assert lsp_editor.lua(LOADED) == loaded + 1
    assert os.path.isdir(project / "mnt")  # detached: an empty folder again
