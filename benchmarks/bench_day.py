"""`make bench` section, and `make soak-day`: a day of work, accelerated (issue 34), then check that
nothing grew.

In one git work tree, with a real Gemini IDE client connected: 2,000 turns told to the server's
/hooks path exactly as programs/hook.py posts them (its own `body` and `post`: no process started
per event, so the day fits in minutes; `make bench-scale` times the hook program itself), by four
agents at a time, Gemini- and Qwen-style, their turns overlapping (each goes on while the other
three start theirs), each changing a file or two (now and then the same file); after 40 turns
of its own an agent stops (unregistered, its discovery files and hook key gone; every other one in
the middle of a turn, as when its CLI is killed), a new one starts; 500
reviews (openDiff, then accepted, rejected or closed by the client); 100,000 context updates
(Lua's `context` hop, as the cursor moves). After a warm-up (a tenth of each), a census; at the
end another:
- host RSS (<= 5 MiB more), its open file descriptors and threads (no more);
- the state folder: our snapshot refs (no more than the turns kept) and its size; git's prune
  drops what no kept turn refers to once it is an hour old (changes/snapshot.py), so the size is
  also given as it is when that hour has passed (the same prune, run with `--expire=now`);
- Neovim's side: the turns it keeps, the Lua heap;
- discovery files and hook keys: the stopped agents' are gone; none left once Neovim quits.
BENCH_DAY_SCALE scales every count (`make soak-day`: 1, the whole day; `make bench`: BENCH_SCALE).
A measurement: it never fails on a miss (`make soak-day` exits 1 on one).
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from benchlib import Row, row
from soak import review_cycle

from changes.helpers import turns
from conftest import Editor, NodeClient, Sandbox, client_env, git, wait_for
from gemini_companion.owner import OWNER_FIELD
from gemini_companion.programs import hook

TURNS, REVIEWS, CONTEXT_UPDATES = 2000, 500, 100_000
MAX_TURNS = 20  # changes.max_turns' default: the turns each side keeps
AGENT_TURNS = 40  # turns an agent takes before it stops and a new one starts
AT_ONCE = 4
# `make bench` runs a quarter of the day: the whole one takes 3.5 minutes on 2 loaded cores
# (`make soak-day` runs it whole).
BENCH_SCALE = 0.25
EVENTS = {
    "gemini": ("BeforeAgent", "AfterTool", "AfterAgent"),
    "qwen": ("UserPromptSubmit", "PostToolUse", "Stop"),
}
FILES = 200
CONTEXT_BATCH = 1000  # context updates per call into Neovim
CONTEXT = """
local host, path, first, count = require('gemini_companion.host'), ...
for i = first, first + count - 1 do
  local cursor = { line = i % 400 + 1, character = i % 13 }
  host.notify('context', { openFiles = { { path = path, timestamp = i, isActive = true, cursor = cursor } } })
end
"""
REGISTER = """
local name, cli = ...
return require('gemini_companion.host').request('agent_register', { name = name, cli = cli })
"""
NEOVIM_CENSUS = """
collectgarbage('collect')
local changes = require('gemini_companion.changes')
local shown = vim.tbl_count(require('gemini_companion.changes.view').shown)
return { lua_kib = collectgarbage('count'), turns = #changes.turns, shown = shown }
"""


@dataclass
class Agent:
    name: str
    cli: str
    port: int
    token: str
    turns: int = 0
    open: bool = False  # a turn of its is going on


@dataclass
class Day:
    """The day's driver: its Neovim, client, agents and counts."""

    sandbox: Sandbox
    editor: Editor
    client: NodeClient
    agents: list[Agent] = field(default_factory=list)
    started: int = 0  # agents started so far (for their names)
    turns: int = 0
    reviews: int = 0
    context: int = 0

    def start_agent(self) -> Agent:
        self.started += 1
        cli = ("gemini", "qwen")[self.started % 2]
        name = f"{cli}-{self.started}"
        env = self.editor.lua(REGISTER, name, cli)["env"]
        found = hook.read_key(env[hook.KEY_ENV])
        assert found is not None and found[2] == name, found
        agent = Agent(name, cli, found[0], found[1])
        self.agents.append(agent)
        return agent

    def stop_agent(self, agent: Agent, killed: bool = False) -> None:
        """The agent's terminal closes, after its turn's end, or `killed` in the middle of it
        (then the host ends the turn)."""
        if agent.open and not killed:
            self.end_turn(agent)
        self.agents.remove(agent)
        self.editor.lua("require('gemini_companion.host').notify('agent_unregister', {name = ...})", agent.name)

    def turn(self) -> None:
        """The next agent's turn: its last one ends, a new one starts, a file or two written (a
        tool each); it goes on while the other agents' turns start (four at a time)."""
        while len(self.agents) < AT_ONCE:
            self.start_agent()
        agent = self.agents[self.turns % AT_ONCE]
        project = self.sandbox.project
        if agent.open:
            self.end_turn(agent)
        start, tool, _ = EVENTS[agent.cli]
        self._post(agent, "turn-start", {"hook_event_name": start})
        agent.open = True
        for k in range(1 + self.turns % 2):
            path = project / f"d{(self.turns + k) % 10}" / f"f{(self.turns * 7 + k) % FILES:03}.txt"
            path.write_text(f"{agent.name} turn {self.turns}\n" * (1 + self.turns % 5))
            tool_input = {"file_path": str(path), "content": "..."}
            self._post(agent, "tool", {"hook_event_name": tool, "tool_name": "write_file", "tool_input": tool_input})
        self.turns += 1
        agent.turns += 1
        if agent.turns >= AGENT_TURNS:
            self.stop_agent(agent, killed=self.started % 2 == 0)  # every other one in the middle of a turn

    def end_turn(self, agent: Agent) -> None:
        self._post(agent, "turn-end", {"hook_event_name": EVENTS[agent.cli][2]})
        agent.open, self.last = False, agent.name

    def _post(self, agent: Agent, event: str, payload: dict[str, Any], go: threading.Barrier | None = None) -> None:
        payload = {**payload, "cwd": str(self.sandbox.project), "session_id": agent.name}
        data = hook.body(event, agent.name, json.dumps(payload))
        if go is not None:
            go.wait()
        started = time.perf_counter()
        hook.post(agent.port, agent.token, data, hook.WAIT_SECONDS.get(event, hook.DEFAULT_SECONDS))
        if event == "turn-start" and go is None:
            self.starts.append((time.perf_counter() - started) * 1000)

    def burst(self, count: int) -> None:
        """`count` more agents start a turn at the same moment, end it and stop (asyncio's
        to_thread pool, min(32, cores + 4) workers, is at its size from then on)."""
        agents = [self.start_agent() for _ in range(count)]
        for event, name in (("turn-start", "BeforeAgent"), ("turn-end", "AfterAgent")):
            go = threading.Barrier(count)
            payload = {"hook_event_name": name}
            threads = [threading.Thread(target=self._post, args=(a, event, payload, go)) for a in agents]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        for agent in agents:
            self.stop_agent(agent)

    def review(self) -> None:
        target = self.sandbox.project / "review.txt"
        review_cycle(self.editor, self.client, target, ("accept", "reject", "close")[self.reviews % 3])
        self.reviews += 1

    def move(self, count: int) -> None:
        path = str(self.sandbox.project / "d0" / "f000.txt")
        while count > 0:
            batch = min(count, CONTEXT_BATCH)
            self.editor.lua(CONTEXT, path, self.context, batch)
            self.context += batch
            count -= batch
        while not self.client.events.empty():  # what the client was told: not kept here
            self.client.events.get()

    def run(self, turns: int, reviews: int, context: int) -> None:
        """`turns` turns, with the reviews and context updates spread among them."""
        for i in range(turns):
            self.turn()
            while self.reviews < (self.reviews_at + reviews * (i + 1) // turns):
                self.review()
            self.move(self.context_at + context * (i + 1) // turns - self.context)
        self.reviews_at, self.context_at = self.reviews, self.context

    reviews_at: int = 0
    context_at: int = 0
    last: str = ""  # the agent of the last turn
    starts: list[float] = field(default_factory=list)  # each turn start's wait for the server, ms


def state(sandbox: Sandbox) -> Path:
    """Our state folder (stdpath('state') is under the sandbox's XDG_STATE_HOME)."""
    return sandbox.base / "state" / "nvim" / "gemini-companion"


def discovery_files(sandbox: Sandbox) -> int:
    return sum(len(list(folder.glob("*"))) for folder in (sandbox.gemini_dir, sandbox.qwen_dir) if folder.exists())


def census(day: Day, host: psutil.Process) -> dict[str, float]:
    ours = state(day.sandbox) / "changes"
    repos = list((ours / "repos").glob("*"))
    refs = sum(len(git_lines(repo, "for-each-ref", "refs/turns/")) for repo in repos)
    nvim = day.editor.lua(NEOVIM_CENSUS)
    return {
        "host RSS, MiB": host.memory_info().rss / 2**20,
        "host fds": host.num_fds(),
        "host threads": host.num_threads(),
        "snapshot refs": refs,
        "state folder, MiB": size(state(day.sandbox)) / 2**20,
        "host's turns (open ones too)": day.editor.status()["changes"]["turns"],
        "Neovim's turns": nvim["turns"],
        "Neovim's shown turns": nvim["shown"],
        "Neovim Lua heap, KiB": nvim["lua_kib"],
        "discovery files": discovery_files(day.sandbox),
        "hook keys": hook_keys(host.pid),
    }


def git_lines(repo: Path, *args: str) -> list[str]:
    done = subprocess.run(["git", "--git-dir", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())


def hook_keys(host_pid: int) -> int:
    """The hook key files this host wrote that are still there (the folder is every Neovim's)."""
    count = 0
    for path in Path(hook.key_dir()).glob("*"):
        try:
            count += json.loads(path.read_text()).get(OWNER_FIELD) == host_pid
        except (OSError, ValueError):
            continue
    return count


def day(base: Path, scale: float) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """The day in `base`: the census after the warm-up, at the end, and once an hour has passed
    and Neovim has quit."""
    sandbox = Sandbox(base)
    project = sandbox.project
    git(project, "init", "-q")
    for i in range(FILES):
        (project / f"d{i % 10}").mkdir(exist_ok=True)
        (project / f"d{i % 10}" / f"f{i:03}.txt").write_text(f"file {i}\n")
    (project / "review.txt").write_text("original\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "base")
    editor = Editor(sandbox)
    client = NodeClient("gemini_client.mjs", client_env(editor), project)
    try:
        host = psutil.Process(editor.wait_state("running")["host_pid"])
        assert client.call("connect")["status"] == "connected"
        base = discovery_files(sandbox)  # the shared files, no agent yet
        base_keys = hook_keys(host.pid)  # Neovim's terminals' own
        driver = Day(sandbox, editor, client)
        turns_, reviews, context = (max(1, round(n * scale)) for n in (TURNS, REVIEWS, CONTEXT_UPDATES))
        driver.run(turns_ // 10, reviews // 10, context // 10)  # warm-up
        driver.burst(2 * AT_ONCE)
        wait_for(lambda: len(turns(editor)) > 0, 60, "a turn in Neovim")
        before = census(driver, host)
        driver.starts.clear()
        started = time.monotonic()
        driver.run(turns_ - turns_ // 10, reviews - reviews // 10, context - context // 10)
        for agent in list(driver.agents):
            driver.stop_agent(agent)
        wait_for(lambda: turns(editor)[-1]["agent"] == driver.last, 60, "the last turn in Neovim")
        with contextlib.suppress(AssertionError):  # (the unregistering is a notification)
            wait_for(lambda: discovery_files(sandbox) <= base, 10, "the stopped agents' files gone")
        with contextlib.suppress(AssertionError):  # a prune's thread (changes.py) ends on its own
            wait_for(lambda: host.num_threads() <= before["host threads"], 10, "the last prune's end")
        after = census(driver, host)
        after["seconds"] = time.monotonic() - started
        after["start median"], after["start worst"] = statistics.median(driver.starts), max(driver.starts)
        after["turns"], after["reviews"], after["context updates"] = driver.turns, driver.reviews, driver.context
        for repo in (state(sandbox) / "changes" / "repos").glob("*"):
            git_lines(repo, "prune", "--expire=now")  # the host's own prune, an hour later
        hour = {"state folder, MiB": size(state(sandbox)) / 2**20, "base discovery files": base, "base keys": base_keys}
    finally:
        client.close()
        editor.close()
    hour["discovery files"] = len(list(sandbox.gemini_dir.glob("*"))) + len(list(sandbox.qwen_dir.glob("*")))
    hour["hook keys"] = hook_keys(host.pid)
    return before, after, hour


def run(scale: float | None = None) -> list[Row]:
    """The rows of a day scaled by `scale` (else BENCH_DAY_SCALE, else BENCH_SCALE)."""
    scale = float(os.environ.get("BENCH_DAY_SCALE", BENCH_SCALE)) if scale is None else scale
    with tempfile.TemporaryDirectory(prefix="gemini-companion-bench-day-") as tmp:
        before, after, hour = day(Path(tmp), scale)
    what = f"a day ({after['turns']} turns, {after['reviews']} reviews, {after['context updates']} context updates)"
    grew = after["host RSS, MiB"] - before["host RSS, MiB"]
    start = after["start median"]
    rows = [
        row(f"{what}: run time", after["seconds"], "s", "-", True),
        row("  turn-start wait, the server's part (median)", start, "ms", "<= 50", start <= 50),
        row("  turn-start wait, the server's part (worst)", after["start worst"], "ms", "-", True),
        row("  host RSS after the warm-up", before["host RSS, MiB"], "MiB", "-", True),
        row("  host RSS growth over the day", grew, "MiB", "<= 5", grew <= 5),
    ]
    for key in ("host fds", "host threads"):
        was, now = before[key], after[key]
        rows.append(row(f"  {key}: after the day (after the warm-up: {was:.0f})", now, "", "<= warm-up", now <= was))
    kept = {
        "snapshot refs": 2 * (MAX_TURNS + AT_ONCE),
        "host's turns (open ones too)": MAX_TURNS + AT_ONCE,
        "Neovim's turns": MAX_TURNS,
        "Neovim's shown turns": MAX_TURNS,
    }
    for key, most in kept.items():
        rows.append(row(f"  {key} after the day", after[key], "", f"<= {most}", after[key] <= most))
    left = after["discovery files"] - hour["base discovery files"]
    keys = after["hook keys"] - hour["base keys"]
    lua = after["Neovim Lua heap, KiB"] - before["Neovim Lua heap, KiB"]
    rows += [
        row("  Neovim Lua heap growth", lua, "KiB", "-", True),
        row("  state folder after the day", after["state folder, MiB"], "MiB", "-", True),
        row("  state folder an hour later (pruned)", hour["state folder, MiB"], "MiB", "-", True),
        row("  the stopped agents' discovery files left", left, "", "0", left == 0),
        row("  the stopped agents' hook keys left", keys, "", "0", keys == 0),
        row("  discovery files left after Neovim quit", hour["discovery files"], "", "0", hour["discovery files"] == 0),
        row("  hook keys left after Neovim quit", hour["hook keys"], "", "0", hour["hook keys"] == 0),
    ]
    return rows


def main() -> int:
    rows = run(float(os.environ.get("BENCH_DAY_SCALE", "1")))
    print(f"{'figure':72} {'value':>10} {'unit':5} {'target':>10}")
    for r in rows:
        print(f"{r['name']:72} {r['value']:>10.1f} {r['unit']:5} {r['target']:>10}{'' if r['ok'] else '  MISSED'}")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
