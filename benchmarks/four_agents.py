"""Four agents turning at once in one work tree (issue 34), for `make bench-scale` and `make bench`
(bench_scale.py runs it on the tree it generated): two Gemini and two Qwen agents, each turn
start and end told by the real hook command as its CLI runs it, the four agents' hooks at the same
moment (a thread each), a few files touched by each agent during its turn. Figures: the
turn-start wait the agents see once warm (each hook's whole run: median and worst), the same four
hooks for a tool's end (no snapshot: bash, Python and one POST each, at once), and the worst
Neovim main-loop stall meanwhile (on a loaded machine it counts the time Neovim was not run at
all: the same stall while the same processes run and reach no Neovim is given beside it).
A measurement: it never fails on a miss."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path

from benchlib import STALL_PROBE, Row, row

from changes.helpers import hook_command, run_hook, turns
from conftest import Editor, Sandbox, wait_for
from gemini_companion.programs.hook import KEY_ENV

AGENTS = {"gemini-1": "gemini", "gemini-2": "gemini", "qwen-1": "qwen", "qwen-2": "qwen"}
EVENTS = {
    "gemini": {"turn-start": "BeforeAgent", "tool": "AfterTool", "turn-end": "AfterAgent"},
    "qwen": {"turn-start": "UserPromptSubmit", "tool": "PostToolUse", "turn-end": "Stop"},
}
ROUNDS = 6  # after one warm-up round: 24 turn starts


def run(sandbox: Sandbox, touch: Callable[[], None], name: str) -> list[Row]:
    """Rows for four agents at once in `sandbox.project` (`touch`: an agent's edits in its turn)."""
    editor = Editor(sandbox)
    try:
        editor.wait_state("running")
        commands = {
            (agent, event): hook_command(editor, event, agent, cli)
            for agent, cli in AGENTS.items()
            for event in ("turn-start", "tool", "turn-end")
        }
        editor.lua(STALL_PROBE)
        waits: list[float] = []
        floors: list[float] = []
        for round_ in range(ROUNDS + 1):
            if round_ == 1:  # the first round warms the host (its first snapshot, the agents' first turns)
                editor.lua("bench_stall_reset()")
                waits.clear()
                floors.clear()
            waits += at_once(sandbox.project, commands, "turn-start", touch)
            floors += at_once(sandbox.project, commands, "tool", touch)
            at_once(sandbox.project, commands, "turn-end", touch)
        wait_for(lambda: len(turns(editor)) >= 4, 60, "the turns to end")
        stall = editor.lua("return bench_stall()") - 5  # less the probe's own period
        # The same processes, started as often, that find no Neovim (a key with no file): what
        # the machine's load alone makes of the stall.
        editor.lua("bench_stall_reset()")
        nowhere = {key: (command, {**env, KEY_ENV: "0" * 32}) for key, (command, env) in commands.items()}
        for _ in range(ROUNDS):
            for event in ("turn-start", "tool", "turn-end"):
                at_once(sandbox.project, nowhere, event, touch)
        control = editor.lua("return bench_stall()") - 5
    finally:
        editor.close()
    median, worst, floor = statistics.median(waits), max(waits), statistics.median(floors)
    return [
        row(f"{name}, 4 agents at once: turn-start wait (median)", median, "ms", "<= 50", median <= 50),
        row(f"{name}, 4 agents at once: turn-start wait (worst)", worst, "ms", "-", True),
        row(f"{name}, 4 agents at once:   the hooks alone (tool events: no snapshot)", floor, "ms", "-", True),
        row(f"{name}, 4 agents at once: worst main-loop stall", stall, "ms", "<= 16", stall <= 16),
        row(f"{name}, 4 agents at once:   the same hook processes reaching no Neovim", control, "ms", "-", True),
    ]


def at_once(
    project: Path, commands: dict[tuple[str, str], tuple[str, dict[str, str]]], event: str, touch: Callable[[], None]
) -> list[float]:
    """Each agent's hook for `event` at the same moment (then, at a turn start, its edits): each
    hook's whole run, in ms."""
    times: list[float] = []
    go = threading.Barrier(len(AGENTS))

    def one(agent: str) -> None:
        cli = AGENTS[agent]
        command, env = commands[(agent, event)]
        payload = {"hook_event_name": EVENTS[cli][event], "cwd": str(project), "session_id": agent}
        go.wait()
        started = time.perf_counter()
        run_hook(command, env, project, payload)
        times.append((time.perf_counter() - started) * 1000)
        if event == "turn-start":
            touch()

    threads = [threading.Thread(target=one, args=(agent,)) for agent in AGENTS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if len(times) != len(AGENTS):
        raise RuntimeError(f"{len(AGENTS) - len(times)} of the {event} hooks failed (see above)")
    return times
