"""Side by side with a peer: this plugin and nvim-gemini-companion, measured the same way.

Usage: .venv/bin/python benchmarks/bench_peers.py PEER_CHECKOUT [--rounds N]

PEER_CHECKOUT is a checkout of https://github.com/gutsavgupta/nvim-gemini-companion (its Lua
module is `gemini`); nothing is fetched at run time. Its one dependency outside the checkout,
plenary.log, is given a silent stand-in (it logs at `warn` by default, so nothing is lost).

Both plugins run in a Neovim with its TUI on a pseudo-terminal, each in its own sandbox (HOME,
TMPDIR, XDG dirs), driven by the real Gemini `IdeClient` (the pinned gemini-cli-core in
tests/node) in warm Node processes. Rounds are interleaved, the order of the two plugins
shuffled per round, so the machine's load hits both alike. Every clock is CLOCK_MONOTONIC
(Python's time.monotonic_ns(), Node's process.hrtime, Neovim's vim.uv.hrtime).

Figures (median and max over all samples):
- connect(): IdeClient.getInstance() + connect() in a fresh, warm client, the server idle.
- spawn -> connected: Popen(nvim) until connect() resolved, the client started as soon as the
  plugin's port file appears (ours: the discovery file; the peer: its server-details file).
- openDiff -> on screen: the client's openDiff call until the end of the first redraw that drew
  two 'diff' windows (a decoration provider's on_end; the TUI flushes right after).
- accept -> resolved: `:GeminiAccept` typed in the proposal until the client's openDiff
  promise resolved.
- memory: RSS of Neovim and of our Python host after 100 context updates + 10 diffs, and after
  the 1 MB diffs are closed (last round only).
- the real CLIs' own start, for scale (no plugin involved): `gemini` and `qwen` launched on a
  pseudo-terminal until their first connection to the IDE port they are given (a bare listening
  socket). A CLI started with Neovim, or after it, dials no sooner than this.
A benchmark, not a test: it never fails on a figure.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pty
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import psutil
import pynvim
from bench import spawn_tui
from bench_context import cursor_line
from bench_review import code
from benchlib import Row

from conftest import INIT, NODE_DIR, NodeClient, Sandbox, attach_listening, wait_for
from harness.tui import gemini_settings, qwen_settings

CORE = NODE_DIR / "node_modules" / "@google" / "gemini-cli-core"
# A warm IdeClient in its own Node process. Commands as tests/node/gemini_client.mjs, plus `env`
# (the variables a CLI would inherit, set before the IdeClient exists) and a CLOCK_MONOTONIC
# stamp on every reply (`at`: when the promise settled) and every command (`received`).
DRIVER = """
const core = process.env.BENCH_CORE_DIR;
const { IdeClient } = await import(`${core}/dist/src/ide/ide-client.js`);
const { ideContextStore } = await import(`${core}/dist/src/ide/ideContext.js`);
const readline = await import('node:readline');
console.log = console.info = console.debug = console.warn = (...a) => console.error(...a);
process.on('unhandledRejection', (r) => console.error('unhandled rejection:', String(r?.message ?? r)));
const now = () => process.hrtime.bigint().toString();
const emit = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
let client;
const commands = {
  ping: async () => null,
  env: async ({ vars }) => { Object.assign(process.env, vars); return null; },
  async connect() {
    client = await IdeClient.getInstance();
    const instance = now(); // getInstance() runs `ps` on the IDE pid: not the server's time
    await client.connect({ logToConsole: false });
    return { ...client.getConnectionStatus(), instance };
  },
  openDiff: async ({ filePath, newContent }) => client.openDiff(filePath, newContent),
};
ideContextStore.subscribe((value) => emit({ event: 'context', value: value ?? null }));
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const request = JSON.parse(line);
  const received = now();
  commands[request.cmd](request).then(
    (result) => emit({ id: request.id, ok: true, result, at: now(), received }),
    (error) => emit({ id: request.id, ok: false, error: String(error?.message ?? error), at: now(), received }),
  );
});
"""

# The peer's only outside dependency, plenary.log, as a silent logger; its announcement marked
# seen (a user sees it once; a fresh sandbox would show it every run).
PEER_INIT = """
package.preload['plenary.log'] = function()
  local quiet = setmetatable({}, { __index = function() return function() end end })
  return { new = function() return quiet end }
end
vim.opt.runtimepath:prepend(%s)
vim.opt.shadafile = 'NONE'
vim.opt.swapfile = false
require('gemini').setup({ cmds = { 'no-cli' } }) -- as the peer's own tests/nvim/init.lua: no CLI on PATH needed
"""

# Stamps the end of the first redraw that drew two 'diff' windows, once armed.
PROBE = """
local ns = vim.api.nvim_create_namespace('bench_peers')
local drawn = 0
_G.bench_armed, _G.bench_drawn = false, nil
vim.api.nvim_set_decoration_provider(ns, {
  on_start = function() drawn = 0 end,
  on_win = function(_, win)
    if _G.bench_armed and vim.api.nvim_get_option_value('diff', { win = win }) then drawn = drawn + 1 end
    return false
  end,
  on_end = function()
    if _G.bench_armed and drawn >= 2 then
      _G.bench_armed, _G.bench_drawn = false, vim.uv.hrtime()
    end
  end,
})
_G.bench_diff_windows = function()
  local n = 0
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_get_option_value('diff', { win = win }) then n = n + 1 end
  end
  return n
end
"""

CONNECTS_PER_ROUND = 3
SMALL_OPENS = 5  # + SMALL_ACCEPTS: the "10 diffs" before the memory figure
SMALL_ACCEPTS = 5
LARGE_OPENS = 2
CONTEXT_UPDATES = 100


class Driver(NodeClient):
    """NodeClient's protocol over DRIVER instead of a script file."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self._start(["node", "--input-type=module", "-e", DRIVER], {**env, "BENCH_CORE_DIR": str(CORE)}, cwd)

    def timed(self, cmd: str, **params: Any) -> dict[str, Any]:
        message = self.reply(self.send(cmd, **params), 120)
        if not message["ok"]:
            raise AssertionError(f"{cmd} failed: {message['error']}; stderr: {self.stderr[-3:]}")
        return message


class Plugin:
    """One plugin under test: how its Neovim starts and how a client finds its server."""

    def __init__(self, name: str, init_body: str) -> None:
        self.name = name
        self.init_body = init_body

    def port_file(self, sandbox: Sandbox) -> Path | None:
        if self.name == "ours":
            found = list(sandbox.gemini_dir.glob("*.json")) if sandbox.gemini_dir.exists() else []
        else:
            cache = sandbox.base / "cache" / "nvim" / "nvim-gemini-companion"
            found = list(cache.glob("*.json")) if cache.exists() else []
        return found[0] if found else None

    def client_env(self, sandbox: Sandbox, found: Path, nvim_pid: int) -> dict[str, str]:
        """What a CLI in the plugin's terminal would be given (the parts connect() reads)."""
        info = json.loads(found.read_text())
        if self.name == "ours":  # gemini-ide-server-<ide pid>-<port>.json, read by the client itself
            return {
                "GEMINI_CLI_IDE_PID": found.stem.split("-")[3],
                "GEMINI_CLI_IDE_WORKSPACE_PATH": info["workspacePath"],
                "GEMINI_CLI_IDE_SERVER_PORT": str(info["port"]),
                "GEMINI_CLI_IDE_AUTH_TOKEN": info["authToken"],
            }
        # The peer's terminal: TERM_PROGRAM=vscode, port and workspace. The same IDE pid as ours
        # gets, so both skip the client's process-tree walk alike.
        return {
            "TERM_PROGRAM": "vscode",
            "GEMINI_CLI_IDE_PID": str(nvim_pid),
            "GEMINI_CLI_IDE_WORKSPACE_PATH": str(sandbox.project),
            "GEMINI_CLI_IDE_SERVER_PORT": str(info["port"]),
        }


def _poll(predicate: Any, what: str) -> Any:
    """wait_for at a 1 ms pace: a file found a 20 ms poll late would count against its plugin."""
    deadline = time.monotonic() + 60
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.001)
    return value


def warm_driver(sandbox: Sandbox) -> Driver:
    driver = Driver(sandbox.env, sandbox.project)
    driver.timed("ping")  # the imports done: what is timed next is the IdeClient alone
    return driver


class Session:
    """One plugin's Neovim for one round, with a connected client."""

    def __init__(self, plugin: Plugin, base: Path, samples: dict[str, list[float]]) -> None:
        self.plugin = plugin
        self.samples = samples
        self.sandbox = Sandbox(base)
        (self.sandbox.base / "data" / "nvim" / "nvim-gemini-companion").mkdir(parents=True, exist_ok=True)
        for note in (PEER / "lua" / "gemini" / "announcements").glob("*.md"):
            seen = self.sandbox.base / "data" / "nvim" / "nvim-gemini-companion" / f"{note.stem}_announcement.txt"
            seen.write_text("seen")
        init = self.sandbox.base / "init.lua"
        init.write_text(plugin.init_body + PROBE)
        self.drivers: list[Driver] = [warm_driver(self.sandbox)]
        self.nvim: pynvim.Nvim | None = None
        started = time.monotonic_ns()
        self.editor = spawn_tui(self.sandbox, init)
        try:
            self._connect(started)
        except BaseException:
            self.close()
            raise

    def _connect(self, started: int) -> None:
        plugin = self.plugin
        found = _poll(lambda: plugin.port_file(self.sandbox), f"{plugin.name}'s port file")
        _poll(lambda: found.stat().st_size > 0, "the port file written")
        self.add("  spawn -> port file on disk", time.monotonic_ns() - started)
        # `nvim` is the TUI; the editor (the plugins, their servers) is its `--embed` child.
        self.server_pid = wait_for(lambda: [c.pid for c in psutil.Process(self.editor.pid).children()], 60, "nvim")[0]
        self.env = plugin.client_env(self.sandbox, found, self.server_pid)
        self.client = self.drivers[0]
        self.client.timed("env", vars=self.env)
        reply = self.client.timed("connect")
        assert reply["result"]["status"] == "connected", reply
        self.add("spawn -> client connected", int(reply["at"]) - started)
        self.add("  of which connect() itself", int(reply["at"]) - int(reply["result"]["instance"]))
        self.nvim = attach_listening(self.sandbox.base / "nvim.sock")

    def add(self, figure: str, nanoseconds: int) -> None:
        self.samples[f"{figure}\0{self.plugin.name}"].append(nanoseconds / 1e6)

    def lua(self, code: str, *args: Any) -> Any:
        assert self.nvim is not None
        return self.nvim.exec_lua(code, *args)

    def connects(self, count: int) -> None:
        for _ in range(count):
            driver = warm_driver(self.sandbox)
            self.drivers.append(driver)
            driver.timed("env", vars=self.env)
            reply = driver.timed("connect")
            assert reply["result"]["status"] == "connected", reply
            self.add("IdeClient.connect(), port known", int(reply["at"]) - int(reply["result"]["instance"]))
            driver.close()

    def _focus_proposal(self) -> None:
        # The window the proposal is in: the one not showing the file under review (both plugins
        # put the original on the left), so :GeminiAccept/:GeminiReject find their view.
        self.lua(
            "local wins = vim.tbl_filter(function(w) return vim.wo[w].diff end, vim.api.nvim_tabpage_list_wins(0))"
            " vim.api.nvim_set_current_win(wins[#wins])"
        )

    def rss(self) -> tuple[float, float]:
        nvim = psutil.Process(self.server_pid).memory_info().rss / 2**20
        if self.plugin.name != "ours":
            return nvim, 0.0
        host = int(self.lua("return require('gemini_companion').status().host_pid"))
        return nvim, psutil.Process(host).memory_info().rss / 2**20

    def context_updates(self, source: Path, count: int) -> None:
        self.lua("vim.cmd(...)", f"tabnew {source}")
        for n in range(count):
            line = 2 + n % 50
            while not self.client.events.empty():
                self.client.events.get()
            self.lua("vim.api.nvim_input(...)", f"{line}G")
            deadline = time.monotonic() + 30
            while cursor_line(self.client.events.get(timeout=max(0.0, deadline - time.monotonic()))) != line:
                pass

    def close(self) -> None:
        for driver in self.drivers:
            driver.close()
        if self.nvim is not None:
            self.nvim.close()
        self.editor.terminate()
        self.editor.wait(60)


ORIGINALS: dict[str, str] = {}
PEER = Path()


def one_round(plugin: Plugin, base: Path, samples: dict[str, list[float]], memory: dict[str, float] | None) -> None:
    session = Session(plugin, base, samples)
    try:
        session.connects(CONNECTS_PER_ROUND)
        project = session.sandbox.project.resolve()
        small, large = project / "small.py", project / "large.py"
        # Neovim's own first Python buffer costs ~1 s here (its ftplugin, not either plugin):
        # paid once, untimed, so the diffs measure the plugins.
        (project / "warm.py").write_text("pass\n")
        session.lua("vim.cmd(...)", f"tabnew {project / 'warm.py'} | tabclose")
        _timed_diffs(session, small, PROPOSALS["small.py"], SMALL_OPENS, SMALL_ACCEPTS)
        if memory is not None:
            source = project / "lines.txt"
            source.write_text("".join(f"line {n}\n" for n in range(200)))
            session.context_updates(source, CONTEXT_UPDATES)
            nvim, host = session.rss()
            memory[f"Neovim RSS after 100 context updates + 10 diffs, MiB\0{plugin.name}"] = nvim
            memory[f"host RSS after 100 context updates + 10 diffs, MiB\0{plugin.name}"] = host
        _timed_diffs(session, large, PROPOSALS["large.py"], LARGE_OPENS, 0)
        if memory is not None:
            nvim, host = session.rss()
            memory[f"Neovim RSS after the 1 MB diffs closed, MiB\0{plugin.name}"] = nvim
            memory[f"host RSS after the 1 MB diffs closed, MiB\0{plugin.name}"] = host
    finally:
        session.close()


def _timed_diffs(session: Session, path: Path, content: str, opens: int, accepts: int) -> None:
    label = "1 MB" if len(content) > 100_000 else "10 KB"
    for n in range(opens + accepts):
        path.write_text(ORIGINALS[path.name])
        session.lua("_G.bench_drawn = nil; _G.bench_armed = true")
        request = session.client.send("openDiff", filePath=str(path), newContent=content)
        drawn = int(wait_for(lambda: session.lua("return _G.bench_drawn"), 120, "the diff drawn"))
        session._focus_proposal()
        accept = n >= opens
        started = time.monotonic_ns()
        session.lua("vim.api.nvim_input(...)", ":GeminiAccept\r" if accept else ":GeminiReject\r")
        reply = session.client.reply(request, 120)
        assert reply["ok"], reply
        status = reply["result"]["status"] if isinstance(reply["result"], dict) else reply["result"]
        assert status == ("accepted" if accept else "rejected"), reply
        session.add(f"openDiff {label} -> on screen", drawn - int(reply["received"]))
        if accept:
            session.add(f"accept {label} -> promise resolved", int(reply["at"]) - started)
        wait_for(lambda: session.lua("return _G.bench_diff_windows()") == 0, 60, "the diff windows closed")


PROPOSALS: dict[str, str] = {}


def commit_of(checkout: Path) -> str:
    result = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    return result.stdout.strip() if result.returncode == 0 and result.stdout.strip() else "unknown"


def main() -> None:
    global PEER
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("peer", type=Path, help="a checkout of nvim-gemini-companion")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--samples", action="store_true", help="print every sample too")
    args = parser.parse_args()
    PEER = args.peer.resolve()
    if not (PEER / "lua" / "gemini" / "init.lua").is_file():
        sys.exit(f"bench_peers: {PEER} has no lua/gemini/init.lua (not an nvim-gemini-companion checkout)")
    for name, size in (("small.py", 10 * 1024), ("large.py", 1024 * 1024)):
        ORIGINALS[name], PROPOSALS[name] = code(size, 1)
    plugins = [
        Plugin("ours", f"dofile({json.dumps(str(INIT))})\n"),
        Plugin("peer", PEER_INIT % json.dumps(str(PEER))),
    ]
    rng = random.Random(args.seed)
    samples: dict[str, list[float]] = defaultdict(list)
    memory: dict[str, float] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gemini-companion-peers-") as tmp:
        for n in range(args.rounds):
            order = plugins[:]
            rng.shuffle(order)
            for plugin in order:
                last = n == args.rounds - 1
                one_round(plugin, Path(tmp) / f"r{n}-{plugin.name}", samples, memory if last else None)
        for cli in ("gemini", "qwen"):
            for n in range(CLI_LAUNCHES):
                dial = first_dial(cli, Path(tmp) / f"{cli}{n}")
                samples[f"{cli} launch -> first dial of the IDE\0cli"].append(dial)
    report(args, samples, memory, time.monotonic() - started)


CLI_LAUNCHES = 3


def first_dial(cli: str, base: Path) -> float:
    """Milliseconds from launching the real CLI (IDE mode on, a TUI on a pseudo-terminal) until it
    first connects to the IDE port its environment names: a bare socket, so no plugin is timed."""
    sandbox = Sandbox(base)
    gemini_settings(sandbox.home)
    qwen_settings(sandbox.home)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(60)
        port = str(listener.getsockname()[1])
        env = {
            **{k: v for k, v in sandbox.env.items() if k != "CI" and not k.startswith("CI_")},  # a TUI, not CI output
            "PATH": f"{NODE_DIR / 'node_modules' / '.bin'}{os.pathsep}{os.environ['PATH']}",  # Qwen: Node >= 22
            "TERM": "xterm-256color",
            "GEMINI_CLI_HOME": str(sandbox.home),
            "QWEN_HOME": str(sandbox.home / ".qwen"),
            "GEMINI_API_KEY": "stand-in",
            "OPENAI_API_KEY": "stand-in",
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            "GEMINI_CLI_IDE_SERVER_PORT": port,
            "GEMINI_CLI_IDE_WORKSPACE_PATH": str(sandbox.project),
            "QWEN_CODE_IDE_SERVER_PORT": port,
            "QWEN_CODE_IDE_WORKSPACE_PATH": str(sandbox.project),
            "TERM_PROGRAM": "vscode",
        }
        leader, follower = pty.openpty()
        started = time.monotonic_ns()
        process = subprocess.Popen(
            [str(NODE_DIR / "node_modules" / ".bin" / cli)],
            stdin=follower,
            stdout=follower,
            stderr=follower,
            env=env,
            cwd=sandbox.project,
            start_new_session=True,
        )
        os.close(follower)
        threading.Thread(target=_drain, args=(leader,), daemon=True).start()  # closes it at the end
        try:
            connection, _ = listener.accept()
            dialed = time.monotonic_ns()
            connection.close()
        finally:
            os.killpg(process.pid, 9)
            process.wait(60)
    return (dialed - started) / 1e6


def _drain(fd: int) -> None:
    with contextlib.suppress(OSError):
        while os.read(fd, 65536):
            pass
    os.close(fd)


ORDER = ("spawn -> client connected", "  spawn -> port file on disk", "  of which connect() itself", "IdeClient")
LAST = ("gemini launch", "qwen launch")


def _order(figure: str) -> int:
    last = next((n for n, start in enumerate(LAST) if figure.startswith(start)), None)
    if last is not None:
        return len(ORDER) + 1 + last
    return next((n for n, start in enumerate(ORDER) if figure.startswith(start)), len(ORDER))


def report(args: argparse.Namespace, samples: dict[str, list[float]], memory: dict[str, float], took: float) -> None:
    load = os.getloadavg()
    print(f"# bench_peers: ours ({INIT.parent.parent}) vs nvim-gemini-companion {commit_of(PEER)} ({PEER})")
    print(
        f"# {args.rounds} rounds, order shuffled per round; {os.cpu_count()} cores;"
        f" load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {took:.0f} s"
    )
    print(f"{'figure':44} {'plugin':6} {'n':>3} {'median':>9} {'max':>9}   ratio ours/peer (median, max)")
    figures = sorted(dict.fromkeys(key.split("\0")[0] for key in samples), key=_order)
    for figure in figures:
        ours, peer = samples.get(f"{figure}\0ours", []), samples.get(f"{figure}\0peer", [])
        for name, values in (("ours", ours), ("peer", peer), ("cli", samples.get(f"{figure}\0cli", []))):
            if not values:
                continue
            ratio = ""
            if name == "peer" and ours and peer:
                ratio = f"   x{statistics.median(ours) / statistics.median(peer):.2f}, x{max(ours) / max(peer):.2f}"
            label = f"{figure} (ms)" if name in ("ours", "cli") else ""
            print(f"{label:44} {name:6} {len(values):>3} {statistics.median(values):>9.2f} {max(values):>9.2f}{ratio}")
    if args.samples:
        for key, values in samples.items():
            print("#", key.replace("\0", " / "), " ".join(f"{v:.1f}" for v in values))
    for figure in dict.fromkeys(key.split("\0")[0] for key in memory):
        for name in ("ours", "peer"):
            value = memory.get(f"{figure}\0{name}")
            if value is not None:
                print(f"{figure if name == 'ours' else '':44} {name:6} {1:>3} {value:>9.1f}")


def run() -> list[Row]:
    """`make bench` imports every benchmarks/bench_*.py for its rows: this one needs a peer checkout,
    so it has none there (it runs as `make bench-peers PEER=...`)."""
    return []


if __name__ == "__main__":
    main()
