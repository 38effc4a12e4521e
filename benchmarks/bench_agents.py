"""Agent costs (a `make bench` section; run alone: .venv/bin/python benchmarks/bench_agents.py).

- `:GeminiSend` of 200 lines -> the paste's end in the agent (tests/harness/fake_agent.py stamps its
  arrival on CLOCK_MONOTONIC, which Neovim's vim.uv.hrtime() reads too).
- `:Gemini` first call -> the CLI's prompt on screen (the user's wait), for the real Qwen Code and
  Gemini CLI, against the same CLI alone in a plain `:terminal` (timed the same way in Neovim);
  beside it the command's own time in Neovim (the plugin's synchronous share) and the time until
  the CLI is connected (it connects in the background, after its prompt shows).
- Toggling an agent window (hide or show, redrawn), native provider.
- `:GeminiAdd` of a file in a folder of 50,000 names (its case twin looked for): the longest
  main-loop stall from the command to the paste.
- Cursor motion with an idle real agent on screen, against none (Neovim CPU).
- Gemini CLI's start outside Neovim with and without what enable-cli writes into its user
  settings (IDE mode, the editor tools' `${VAR:-}` entries, the turn hooks).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from bench_context import DRIVER
from benchlib import STALL_PROBE, Row, row

from conftest import HARNESS, Editor, Sandbox, wait_for
from harness.fake_model import FakeModel
from harness.settings_edits import settings_edited
from harness.tui import (
    E2E_TIMEOUT,
    GEMINI_BIN,
    NODE22,
    QWEN_CLI,
    READY,
    gemini_settings,
    kill_tmux,
    qwen_settings,
    terminal_env,
)

SEND_RUNS = 15
ADD_RUNS = 5
BIG_FOLDER = 50_000
TOGGLE_RUNS = 40
START_RUNS = 3  # a CLI start takes seconds
MOTIONS = 3000
CLIS = {"gemini": [str(GEMINI_BIN)], "qwen": [str(NODE22), str(QWEN_CLI)]}

SEND = """
local t = vim.uv.hrtime()
vim.cmd('1,200GeminiSend fake')
return t
"""
TOGGLE = """
local agents = require('gemini_companion.agents')
local t = vim.uv.hrtime()
agents.toggle('fake')
vim.cmd('redraw')
return (vim.uv.hrtime() - t) / 1e6
"""


def sandbox_with_model(base: Path) -> tuple[Sandbox, FakeModel]:
    sandbox = Sandbox(base)
    model = FakeModel([])
    sandbox.env = terminal_env(sandbox, model.url)
    gemini_settings(sandbox.home, ide_enabled=True)
    qwen_settings(sandbox.home, ide_enabled=True)
    return sandbox, model


def agents_setup(sandbox: Sandbox) -> dict[str, Any]:
    fake = {
        "cmd": [sys.executable, str(HARNESS / "fake_agent.py")],
        "env": {"FAKE_AGENT_LOG": str(sandbox.base / "agent.log"), "FAKE_AGENT_STAMP": str(sandbox.base / "stamp")},
    }
    agents = {"fake": fake, **{name: {"cmd": cmd} for name, cmd in CLIS.items()}}
    return {"agents": agents, "default_agent": "fake", "cli_settings": "never"}


def bench_send_and_toggle(base: Path) -> list[Row]:
    sandbox, model = sandbox_with_model(base / "send")
    stamp = sandbox.base / "stamp"
    source = sandbox.project / "big.py"
    source.write_text("".join(f"value_{i} = compute({i})  # line {i}\n" for i in range(200)))
    editor = Editor(sandbox, setup=agents_setup(sandbox), args=[str(source)])
    sends, toggles = [], []
    try:
        editor.wait_state("running")
        editor.nvim.command("Gemini fake")
        editor.nvim.command("wincmd p")  # back to the file: a send leaves the focus there (issue 33)
        for _ in range(SEND_RUNS + 1):  # the first waits for the agent's first screen
            stamp.unlink(missing_ok=True)
            sent = editor.lua(SEND)
            wait_for(lambda: stamp.exists() and stamp.read_text(), 60, "the paste in the agent")
            sends.append((int(stamp.read_text()) - sent) / 1e6)
        for _ in range(TOGGLE_RUNS):
            toggles.append(editor.lua(TOGGLE))
    finally:
        editor.close()
        model.close()
    send = statistics.median(sends[1:])
    toggle = statistics.median(toggles)
    return [
        row(":GeminiSend 200 lines -> in the agent's prompt", send, "ms", "<= 30", send <= 30),
        row("toggling an agent window (hide or show, drawn)", toggle, "ms", "<= 5", toggle <= 5),
    ]


# The user's wait, timed in Neovim (the same clock and terminal for both): from the command until
# the CLI's prompt shows in its terminal buffer, looked at every 5 ms. `...`: the agent's name (or the
# argv of a plain `:terminal`, opened as an agent's window is: right, 40%), plain, the prompt.
PROMPT_WATCH = """
local what, plain, ready = ...
_G.bench_prompt = nil
local started = vim.uv.hrtime()
local buf
if plain then
  vim.api.nvim_open_win(vim.api.nvim_create_buf(false, true), true,
    { split = 'right', win = -1, width = math.floor(vim.o.columns * 0.4) })
  vim.fn.jobstart(what, { term = true })
  buf = vim.api.nvim_get_current_buf()
else
  vim.cmd('Gemini ' .. what)
end
local own = (vim.uv.hrtime() - started) / 1e6
local timer = assert(vim.uv.new_timer())
timer:start(5, 5, vim.schedule_wrap(function()
  buf = buf or (require('gemini_companion.agents').get(what) or {}).buf
  local lines = buf and vim.api.nvim_buf_is_valid(buf) and vim.api.nvim_buf_get_lines(buf, 0, -1, false) or {}
  if not timer:is_closing() and table.concat(lines, '\\n'):find(ready, 1, true) then
    _G.bench_buf = buf
    _G.bench_prompt = (vim.uv.hrtime() - started) / 1e6
    timer:close()
  end
end))
return own
"""


def prompt_ms(editor: Editor, what: str | list[str], plain: bool) -> tuple[float, float]:
    """The command's own time in Neovim, and the time until the CLI's prompt is on screen."""
    own = editor.lua(PROMPT_WATCH, what, plain, READY)
    return own, wait_for(lambda: editor.lua("return _G.bench_prompt"), E2E_TIMEOUT, "the CLI's prompt")


def bench_add_in_a_big_folder(base: Path) -> list[Row]:
    """The worst gap of the stall probe from `:GeminiAdd big/target.txt` to its paste (less the
    probe's period), median over the runs; the folder holds 50,000 names and target's twin."""
    sandbox = Sandbox(base / "add")
    big = sandbox.project / "big"
    big.mkdir()
    for number in range(BIG_FOLDER):
        os.close(os.open(big / f"f{number:05}.txt", os.O_CREAT | os.O_WRONLY))
    for name in ("Target.txt", "target.txt"):
        (big / name).write_text("x\n")
    log = sandbox.base / "agent.log"
    editor = Editor(sandbox, setup=agents_setup(sandbox))
    stalls = []
    try:
        editor.wait_state("running")
        editor.lua("require('gemini_companion.agents').send('fake', 'ready?')")
        wait_for(lambda: log.exists() and log.read_bytes().count(b"\x1b[201~") == 1, 60, "the agent's first paste")
        editor.lua(STALL_PROBE)
        for run in range(ADD_RUNS + 1):  # the first compiles what it runs
            time.sleep(0.1)  # the probe ticks before the command
            editor.lua("bench_stall_reset()")
            editor.nvim.command("GeminiAdd big/target.txt")
            wait_for(lambda n=run + 2: log.read_bytes().count(b"\x1b[201~") == n, 60, "the reference in the agent")
            assert log.read_bytes().endswith(b"`big/target.txt` \x1b[201~"), "the twin was found"
            time.sleep(0.1)  # the probe ticks after the paste: a stall before it is counted
            stalls.append(editor.lua("return bench_stall()") - 5)
    finally:
        editor.close()
    stall = statistics.median(stalls[1:])
    name = f":GeminiAdd in a folder of {BIG_FOLDER:,} names: longest stall"
    return [row(name, stall, "ms", "<= 16", stall <= 16)]


def plain_start_ms(sandbox: Sandbox, cli: str) -> float:
    """The CLI alone: spawned in a plain tmux terminal (no Neovim) until its prompt shows."""
    socket = sandbox.base / f"plain-{cli}.sock"
    tmux = ["tmux", "-S", str(socket), "-f", "/dev/null"]
    started = time.perf_counter()
    subprocess.run([*tmux, "new-session", "-d", "-x", "200", "-y", "50", *CLIS[cli]], env=sandbox.env, check=True)
    try:
        wait_for(
            lambda: READY in subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True, text=True).stdout,
            E2E_TIMEOUT,
            f"{cli}'s prompt",
        )
        return (time.perf_counter() - started) * 1000
    finally:
        kill_tmux(tmux)


def bench_first_start(base: Path) -> list[Row]:
    """`:Gemini <cli>` until its prompt is on screen, against the same CLI alone in a plain
    `:terminal` of a Neovim whose server is off and whose CLI settings have IDE mode off (nothing of
    the plugin's, nothing the CLI does for an IDE), and, to tell the plugin's share from the CLI's
    own IDE mode, in a plain `:terminal` of a Neovim whose server runs (the CLI connects as an
    agent does). All timed the same way inside Neovim, each in a fresh home, interleaved run by run
    so machine load hits all alike; each CLI's processes gone before the next start (Gemini's
    relaunched child outlives Neovim for up to a second)."""
    rows: list[Row] = []
    for cli in CLIS:
        command, prompt, connected, alone, served = [], [], [], [], []
        for run in range(START_RUNS):
            sandbox, model = sandbox_with_model(base / f"start-{cli}-{run}")
            editor = Editor(sandbox, setup=agents_setup(sandbox))
            try:
                editor.wait_state("running")
                started = time.perf_counter()
                own, shown = prompt_ms(editor, cli, False)
                command.append(own)
                prompt.append(shown)
                wait_for(lambda e=editor: e.status()["clients"], E2E_TIMEOUT, f"{cli} connected")
                connected.append((time.perf_counter() - started) * 1000)
            finally:
                close_with_its_cli(editor)
                model.close()
            sandbox, model = sandbox_with_model(base / f"alone-{cli}-{run}")
            gemini_settings(sandbox.home, ide_enabled=False)
            qwen_settings(sandbox.home, ide_enabled=False)
            editor = Editor(sandbox, setup={**agents_setup(sandbox), "auto_start": False})
            try:
                alone.append(prompt_ms(editor, CLIS[cli], True)[1])
            finally:
                close_with_its_cli(editor)
                model.close()
            sandbox, model = sandbox_with_model(base / f"served-{cli}-{run}")
            editor = Editor(sandbox, setup=agents_setup(sandbox))
            try:
                editor.wait_state("running")
                served.append(prompt_ms(editor, CLIS[cli], True)[1])
            finally:
                close_with_its_cli(editor)
                model.close()
        own, shown, total, cli_alone, ide = (statistics.median(v) for v in (command, prompt, connected, alone, served))
        rows += [
            row(f":Gemini {cli}: the command's own time in Neovim", own, "ms", "<= 200", own <= 200),
            row(f":Gemini {cli} -> its prompt on screen", shown, "ms", "<= alone + 30", shown <= cli_alone + 30),
            row(f"  {cli} alone: plain :terminal -> its prompt on screen", cli_alone, "ms", "-", True),
            row(f"  {cli} in a plain :terminal, the server up (IDE mode on)", ide, "ms", "-", True),
            row(
                f":Gemini {cli} -> connected (after its prompt: the CLI connects in the background)",
                total,
                "ms",
                "-",
                True,
            ),
        ]
    return rows


def close_with_its_cli(editor: Editor) -> None:
    """Close Neovim and wait until the CLI it ran (`_G.bench_buf`'s job) and its children are gone."""
    pid = editor.lua("return _G.bench_buf and vim.fn.jobpid(vim.bo[_G.bench_buf].channel)")
    try:
        process = psutil.Process(pid) if pid else None
        tree = [process, *process.children(recursive=True)] if process else []
    except psutil.NoSuchProcess:
        tree = []
    editor.close()
    _, alive = psutil.wait_procs(tree, timeout=10)
    for process in alive:
        process.kill()


def cpu_per_motion(editor: Editor, n: int) -> float:
    """Neovim's CPU per cursor motion that fired CursorMoved (with an agent's terminal redrawing
    now and then, two motions may share one CursorMoved: counting per event keeps it fair)."""
    editor.lua("_G.bench_motions(...)", n)
    elapsed = wait_for(lambda: editor.lua("return _G.bench_done"), 300, "scripted motions")
    return float(elapsed["cpu"]) / max(1, editor.lua("return _G.bench_moved"))


def bench_motion_with_agent(base: Path) -> list[Row]:
    """Neovim's CPU per cursor motion: no agent; `:Gemini qwen` on screen; hidden; and, for
    scale, the same CLI in a plain `:terminal` split (what Neovim's terminal itself costs).
    The agent on screen and the plain terminal on screen are measured in turns, both CLIs
    running throughout: the machine's load moves between runs (2 shared cores), and a ratio of
    phases measured one after the other measured that move."""
    sandbox, model = sandbox_with_model(base / "motion")
    source = sandbox.project / "big.py"
    source.write_text("".join(f"value_{i} = compute({i})  # line {i}\n" for i in range(2000)))
    editor = Editor(sandbox, setup=agents_setup(sandbox), args=[str(source)])

    def measure(runs: int = 3) -> float:
        editor.nvim.input("<C-\\><C-n>")  # out of a terminal's Terminal mode
        editor.nvim.command(f"drop {source}")
        wait_for(lambda: editor.lua("return vim.api.nvim_get_mode().mode") == "n", 30, "Normal mode")
        return statistics.median(cpu_per_motion(editor, MOTIONS) for _ in range(runs))

    def plain_shown(show: bool) -> None:  # the plain terminal's window opened, or closed (it runs on)
        if show:
            editor.nvim.command(f"botright vsplit | buffer {plain_buf}")
        else:
            editor.lua("for _, w in ipairs(vim.fn.win_findbuf(...)) do vim.api.nvim_win_close(w, false) end", plain_buf)

    def settled(pid: int) -> None:  # a CLI keeps loading for seconds after it shows up
        process = psutil.Process(pid)
        wait_for(lambda: process.cpu_percent(interval=0.5) < 5, E2E_TIMEOUT, "the CLI idle")

    try:
        editor.wait_state("running")
        editor.lua(DRIVER)
        cpu_per_motion(editor, 500)  # warm up
        none = measure()
        editor.nvim.command("Gemini qwen")
        wait_for(lambda: editor.status()["clients"], E2E_TIMEOUT, "qwen connected")
        settled(editor.status()["agents"][0]["pid"])
        editor.lua("require('gemini_companion.agents').hide('qwen')")
        hidden = measure()
        editor.nvim.command(f"botright vsplit | terminal {' '.join(CLIS['qwen'])}")
        plain_buf = editor.lua("return vim.api.nvim_get_current_buf()")
        settled(editor.lua("return vim.fn.jobpid(vim.bo.channel)"))
        shown_runs, plain_runs = [], []
        for _ in range(3):
            plain_shown(False)
            editor.lua("require('gemini_companion.agents').open('qwen')")
            shown_runs.append(measure(1))
            editor.lua("require('gemini_companion.agents').hide('qwen')")
            plain_shown(True)
            plain_runs.append(measure(1))
        shown, plain = statistics.median(shown_runs), statistics.median(plain_runs)
    finally:
        editor.close()
        model.close()
    return [
        row("cursor motion CPU, :Gemini qwen on screen / none", shown / none, "x", "-", True),
        row("cursor motion CPU, :Gemini qwen hidden / none", hidden / none, "x", "<= 1.10", hidden / none <= 1.10),
        row("cursor motion CPU, plain :terminal qwen / none", plain / none, "x", "-", True),
        row("  :Gemini on screen / plain :terminal", shown / plain, "x", "<= 1.10", shown / plain <= 1.10),
    ]


def bench_outside_neovim(base: Path) -> list[Row]:
    """What enable-cli writes must cost a CLI started outside Neovim nothing."""
    times: dict[bool, list[float]] = {True: [], False: []}
    for run in range(START_RUNS):
        for ide in (False, True):
            sandbox, model = sandbox_with_model(base / f"outside-{run}-{ide}")
            gemini_settings(sandbox.home, ide_enabled=False)
            if ide:
                editor = Editor(sandbox, setup={"auto_start": False})
                editor.nvim.command("GeminiCompanion enable-cli gemini")
                settings_edited(editor)
                editor.close()
            try:
                times[ide].append(plain_start_ms(sandbox, "gemini"))
            finally:
                model.close()
    off, on = statistics.median(times[False]), statistics.median(times[True])
    return [
        row("gemini outside Neovim, spawn -> prompt, settings as they were", off, "ms", "-", True),
        row("  with enable-cli's IDE mode, tool entries, hooks", on, "ms", "~ before", on <= off * 1.1),
    ]


def run() -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="gemini-companion-bench-agents-") as tmp:
        base = Path(tmp)
        return (
            bench_send_and_toggle(base)
            + bench_add_in_a_big_folder(base)
            + bench_first_start(base)
            + bench_motion_with_agent(base)
            + bench_outside_neovim(base)
        )


if __name__ == "__main__":
    from bench import print_table

    print_table(run())
