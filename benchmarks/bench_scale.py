"""`make bench-scale`: what a turn start costs as the work tree grows (issue 34).

Per size (BENCH_SCALE_SIZES, files, comma-separated; default 5,000, 50,000 and 200,000): a generated
git work tree in a temporary folder (1 KB files in folders of 100, committed, the index then made
older than its files, a few files touched; nothing is fetched), and
- the snapshot alone (changes/snapshot.py, in this process): the first of the tree, and a later one
  after a few more files were touched;
- the turn-start wait the agent sees: the BeforeAgent hook command run as Gemini runs it (`bash -c`,
  the event on stdin), against a real Neovim and host; the first turn of that Neovim (its host has
  just started) and a later one; the hook gives up waiting after 8 s (programs/hook.py);
- the worst Neovim main-loop stall meanwhile;
- `git status` of the same tree, for scale;
- four agents turning at once on the same tree (four_agents.py).
A measurement, not a test: it never fails on a miss. `BENCH_SCALE_SIZES=5000 make bench-scale` is
the quick run.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import four_agents
from benchlib import STALL_PROBE, Row, row

from changes.helpers import hook
from conftest import Editor, Sandbox, git
from gemini_companion.changes.snapshot import Snapshotter

SIZES = (5000, 50_000, 200_000)
BENCH_SIZE = 50_000  # the one size `make bench` measures
FILE = b"x" * 1023 + b"\n"
REPEATS = 3
TOUCHED = 5


def main() -> None:
    sizes = [int(s) for s in os.environ.get("BENCH_SCALE_SIZES", ",".join(map(str, SIZES))).split(",") if s]
    print(f"# make bench-scale on {os.cpu_count()} cores; load {Path('/proc/loadavg').read_text().strip()}")
    print(f"{'figure':58} {'value':>10} {'unit':5} {'target':>8}")
    for size in sizes:
        for r in run(size):
            mark = "" if r["ok"] else "  MISS"
            print(f"{r['name']:58} {r['value']:>10.1f} {r['unit']:5} {r['target']:>8}{mark}", flush=True)
    print(f"# load after: {Path('/proc/loadavg').read_text().strip()}")


def run(size: int = BENCH_SIZE) -> list[Row]:
    """The rows for a tree of `size` files (`make bench`: BENCH_SIZE alone)."""
    with tempfile.TemporaryDirectory(prefix="gemini-companion-bench-scale-") as tmp:
        sandbox = Sandbox(Path(tmp))
        started = time.perf_counter()
        make_tree(sandbox.project, size)
        print(f"# {size:,} files generated in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        touch = toucher(sandbox.project, size)
        snapshotter = Snapshotter(Path(tmp) / "alone")
        first = timed(lambda: snapshotter.take(str(sandbox.project)))
        later = []
        for _ in range(REPEATS):
            touch()
            later.append(timed(lambda: snapshotter.take(str(sandbox.project))))
        first_wait, later_wait, floor, stall = turn_waits(sandbox, touch)
        status = statistics.median(timed(lambda: git(sandbox.project, "status", "--porcelain")) for _ in range(3))
        name = f"{size:,} files"
        at_once = four_agents.run(sandbox, touch, name)
    return [
        row(f"{name}: first snapshot (alone)", first, "ms", "-", True),
        row(f"{name}: later snapshot (alone)", statistics.median(later), "ms", "-", True),
        row(f"{name}: turn-start wait, Neovim's first turn (hook)", first_wait, "ms", "-", True),
        row(f"{name}: turn-start wait, a later turn (hook)", later_wait, "ms", "<= 50", later_wait <= 50),
        row(f"{name}:   the hook alone (a tool event: no snapshot)", floor, "ms", "-", True),
        row(f"{name}: worst main-loop stall meanwhile", stall, "ms", "<= 16", stall <= 16),
        row(f"{name}: git status, same tree", status, "ms", "-", True),
        *at_once,
    ]


def make_tree(root: Path, size: int) -> None:
    """`size` files of 1 KB in folders of 100, committed; the index then older than its files (as
    after a checkout long ago: git cannot trust its stat data) and a few files touched since."""
    git(root, "init", "-q")
    for i in range(size):
        folder = root / f"d{i // 100:04}"
        if i % 100 == 0:
            folder.mkdir()
        (folder / f"f{i:06}.txt").write_bytes(FILE)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    long_ago = time.time() - 3600
    os.utime(root / ".git" / "index", (long_ago, long_ago))
    for i in range(TOUCHED):
        (root / "d0000" / f"f{i:06}.txt").write_bytes(b"touched\n" + FILE)


def toucher(root: Path, size: int) -> Callable[[], None]:
    """Each call rewrites a few other files of the tree (what a user or agent does between turns)."""
    count = iter(range(10**9))

    def touch() -> None:
        for _ in range(TOUCHED):
            i = (next(count) * 7919) % size
            (root / f"d{i // 100:04}" / f"f{i:06}.txt").write_bytes(f"edit {time.time()}\n".encode())

    return touch


def turn_waits(sandbox: Sandbox, touch: Callable[[], None]) -> tuple[float, float, float, float]:
    """The BeforeAgent hook's whole run in a new Neovim: its first turn and later ones (median), the
    same hook for an event that waits for nothing (its own cost: bash, Python, one POST), and the
    worst main-loop stall over all of them."""
    editor = Editor(sandbox)
    try:
        editor.wait_state("running")
        editor.lua(STALL_PROBE)
        editor.lua("bench_stall_reset()")
        start = {"hook_event_name": "BeforeAgent", "cwd": str(sandbox.project)}
        end = {**start, "hook_event_name": "AfterAgent"}
        first = timed(lambda: hook(editor, sandbox.project, "turn-start", start, "bench"))
        hook(editor, sandbox.project, "turn-end", end, "bench")
        waits, floors = [], []
        tool = {**start, "hook_event_name": "AfterTool", "tool_name": "write_file"}
        for _ in range(REPEATS):
            touch()
            waits.append(timed(lambda: hook(editor, sandbox.project, "turn-start", start, "bench")))
            floors.append(timed(lambda: hook(editor, sandbox.project, "tool", tool, "bench")))
            touch()
            hook(editor, sandbox.project, "turn-end", end, "bench")
        stall = editor.lua("return bench_stall()") - 5  # less the probe's own period
    finally:
        editor.close()
    return first, statistics.median(waits), statistics.median(floors), stall


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


if __name__ == "__main__":
    main()
