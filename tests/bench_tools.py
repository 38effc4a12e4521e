"""`make bench` section: the model's editor tools (issue 14), over their MCP endpoint.

- get_diagnostics with 1,000 diagnostics across 50 files, round trip (target <= 30 ms).
- read_buffer of a 1 MB buffer, round trip (<= 30 ms).
- lsp_hover / lsp_definition through the tool minus the same request made in Neovim directly
  to the same language server (pylsp): what the tool adds (<= 10 ms).
- the worst main-loop stall while the tools run (<= 16 ms: a frame).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchlib import STALL_PROBE, Row, row
from conftest import PYLSP, PYLSP_BIN, Editor, Sandbox, wait_for
from mcp_raw import ToolsClient

REPEATS = 30
FILES, PER_FILE = 50, 20

# The same LSP request the tool makes, made in Neovim directly: the language server's own time.
DIRECT = """
local method, path, line, character = ...
local buf = vim.fn.bufnr(path)
local params = {textDocument = {uri = vim.uri_from_bufnr(buf)}, position = {line = line - 1, character = character - 1}}
local started = vim.uv.hrtime()
local results = vim.lsp.buf_request_sync(buf, method, params, 5000)
assert(results and next(results), 'no answer')
return (vim.uv.hrtime() - started) / 1e6
"""


class Timer:
    """Round trips of tool calls, and the worst main-loop stall during them (only during them:
    the direct LSP requests this bench makes for comparison block Neovim by design)."""

    def __init__(self, editor: Editor) -> None:
        self.editor = editor
        self.worst_stall = 0.0
        editor.lua(STALL_PROBE)

    def median_ms(self, call: Callable[[], object]) -> float:
        times = []
        for _ in range(REPEATS):
            self.editor.lua("bench_stall_reset()")
            started = time.perf_counter()
            call()
            times.append((time.perf_counter() - started) * 1000)
            stall = self.editor.lua("return bench_stall()") - 5  # less the probe's own 5 ms period
            self.worst_stall = max(self.worst_stall, stall)
        return statistics.median(times)


def workspace(sandbox: Sandbox) -> None:
    for i in range(FILES):
        (sandbox.project / f"mod{i:02}.py").write_text("".join(f"value_{n} = {n}\n" for n in range(PER_FILE)))
    (sandbox.project / "big.txt").write_text(("x" * 99 + "\n") * 10_486)  # 1 MiB
    (sandbox.project / "app.py").write_text("def greet(name):\n    return 'hi ' + name\n\n\nprint(greet('x'))\n" * 3)


def run() -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="gemini-companion-bench-tools-") as tmp:
        sandbox = Sandbox(Path(tmp))
        workspace(sandbox)
        editor = Editor(sandbox)
        try:
            editor.wait_state("running")
            # 1,000 diagnostics in 50 loaded buffers, from a "linter" namespace.
            editor.lua(
                "local ns = vim.api.nvim_create_namespace('bench-lint')"
                " for i = 0, ... - 1 do"
                "   local buf = vim.fn.bufadd(('mod%02d.py'):format(i)) vim.fn.bufload(buf)"
                "   local items = {}"
                "   for n = 0, select(2, ...) - 1 do"
                "     items[#items + 1] = {lnum = n, col = 0, severity = 1 + n % 4, message = 'm' .. n}"
                "   end"
                "   vim.diagnostic.set(ns, buf, items)"
                " end",
                FILES,
                PER_FILE,
            )
            assert editor.lua("return #vim.diagnostic.get()") == FILES * PER_FILE
            editor.nvim.command("edit big.txt")
            editor.lua(PYLSP, PYLSP_BIN)
            editor.nvim.command("edit app.py")
            wait_for(lambda: editor.lua("return #vim.lsp.get_clients({bufnr = 0})") > 0, 60, "pylsp attached")
            tools = ToolsClient(editor.status())
            tools("lsp_hover", path="app.py", line=5, character=8)  # warm: pylsp's first answer is slow
            timer = Timer(editor)
            diagnostics = timer.median_ms(lambda: tools("get_diagnostics"))
            assert tools("get_diagnostics")["count"] == FILES * PER_FILE
            read = timer.median_ms(lambda: tools("read_buffer", path="big.txt"))
            assert len(tools("read_buffer", path="big.txt")["text"]) >= 1_000_000
            added = {}
            for tool, method in (("lsp_hover", "textDocument/hover"), ("lsp_definition", "textDocument/definition")):
                via_tool = timer.median_ms(lambda t=tool: tools(t, path="app.py", line=5, character=8))
                direct = statistics.median(
                    editor.lua(DIRECT, method, str(sandbox.project / "app.py"), 5, 8) for _ in range(REPEATS)
                )
                added[tool] = via_tool - direct
            stall = timer.worst_stall
        finally:
            editor.close()
    return [
        row("get_diagnostics, 1,000 diagnostics / 50 files, round trip", diagnostics, "ms", "<= 30", diagnostics <= 30),
        row("read_buffer of 1 MB, round trip", read, "ms", "<= 30", read <= 30),
        *(
            row(f"{tool}: tool minus the same request made in Neovim", ms, "ms", "<= 10", ms <= 10)
            for tool, ms in added.items()
        ),
        row("worst main-loop stall during a tool call", stall, "ms", "<= 16", stall <= 16),
    ]


if __name__ == "__main__":
    from bench import print_table

    print_table(run())
