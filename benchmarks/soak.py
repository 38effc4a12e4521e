"""`make soak`: a bounded run of a busy day, then check that nothing grew (issue 6).

Several real Gemini clients stay connected while Neovim's cursor and visual selections
move without pause and the clients open diffs that are accepted (:GeminiAccept),
rejected (:GeminiReject) or closed by the client (closeDiff). At the end: host memory,
Neovim's buffers, windows and tabpages against their start figures, and no errors in
:messages. It stops by itself after --seconds (default 180) and exits non-zero on a leak.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import benchlib  # noqa: F401 - first: it puts tests/ on the path
import psutil
import pynvim

from conftest import Editor, NodeClient, Sandbox, client_env, wait_for

CLIENTS = 3
LINES = 400


def census(editor: Editor) -> dict[str, Any]:
    counts = editor.lua(
        "return { #vim.api.nvim_list_bufs(), #vim.api.nvim_list_wins(), #vim.api.nvim_list_tabpages() }"
    )
    rss = psutil.Process(editor.status()["host_pid"]).memory_info().rss / 2**20
    return {"buffers": counts[0], "windows": counts[1], "tabpages": counts[2], "host_rss_mib": round(rss, 1)}


def keep_moving(address: Path, stop: threading.Event, counter: list[int]) -> None:
    """Cursor motion and all three visual modes, as fast as Neovim takes them.

    Its own connection: a pynvim session belongs to the thread that made it.
    """
    nvim = pynvim.attach("socket", path=str(address))
    motions = itertools.cycle(["j", "j", "w", "b", "vjj\x1b", "Vj\x1b", "\x16jl\x1b", "gg", "G", "k"])
    try:
        while not stop.is_set():
            nvim.input(next(motions))
            nvim.exec_lua("return 1", [])  # a round trip: never run ahead of what Neovim has processed
            counter[0] += 1
    finally:
        nvim.close()


def review_cycle(editor: Editor, client: NodeClient, path: Path, outcome: str) -> None:
    before = {d["id"] for d in editor.status()["diffs"]}
    request = client.send("openDiff", filePath=str(path), newContent=f"proposal {time.monotonic()}\n")
    # A new id: the last cycle's diff may still be listed until its outcome reaches the server.
    wait_for(
        lambda: any(d.get("file") == str(path) and d["id"] not in before for d in editor.status()["diffs"]),
        what="diff open",
    )
    if outcome == "accept":
        editor.nvim.command(f"GeminiAccept {path}")
    elif outcome == "reject":
        editor.nvim.command(f"GeminiReject {path}")
    else:
        client.call("closeDiff", filePath=str(path), suppressNotification=True)
        client.call("resolveDiffFromCli", filePath=str(path), outcome="rejected")
    reply = client.reply(request)
    assert reply["ok"], reply


@dataclass
class SoakResult:
    seconds: float
    cycles: int
    motions: int
    start: dict[str, Any]
    end: dict[str, Any]
    errors: list[str]

    @property
    def problems(self) -> list[str]:
        found = [f"{key} grew" for key in ("buffers", "windows", "tabpages") if self.end[key] > self.start[key]]
        if self.end["host_rss_mib"] > self.start["host_rss_mib"] * 1.25 + 5:
            found.append("host memory grew")
        return found + [f"error in :messages: {line}" for line in self.errors]


def soak(base: Path, seconds: float) -> SoakResult:
    """Run the busy day in `base` for `seconds`; census before and after."""
    sandbox = Sandbox(base / "soak")
    source = sandbox.project / "busy.py"
    source.write_text("".join(f"line {i} with some words é 漢字\n" for i in range(LINES)))
    address = base / "nvim.sock"
    editor = Editor(sandbox, args=["--listen", str(address), str(source)])
    clients: list[NodeClient] = []
    stop = threading.Event()
    try:
        editor.wait_state("running")
        clients = [NodeClient("gemini_client.mjs", client_env(editor), sandbox.project) for _ in range(CLIENTS)]
        for client in clients:
            assert client.call("connect")["status"] == "connected"
        targets = []
        for i in range(CLIENTS):
            target = sandbox.project / f"target{i}.txt"
            target.write_text(f"original {i}\n")
            targets.append(target)
        # One warm-up cycle per outcome, so lazily created things exist before the baseline.
        for outcome in ("accept", "reject", "close"):
            review_cycle(editor, clients[0], targets[0], outcome)
        start = census(editor)
        motions = [0]
        mover = threading.Thread(target=keep_moving, args=(address, stop, motions), daemon=True)
        mover.start()
        cycles = 0
        deadline = time.monotonic() + seconds
        outcomes = itertools.cycle(["accept", "reject", "close"])
        while time.monotonic() < deadline:
            for client, target in zip(clients, targets, strict=True):
                review_cycle(editor, client, target, next(outcomes))
                cycles += 1
        stop.set()
        mover.join(60)
        end = census(editor)
        errors = [line for line in editor.messages().splitlines() if "rror" in line]
    finally:
        stop.set()
        for client in clients:
            client.close()
        editor.close()
    return SoakResult(seconds, cycles, motions[0], start, end, errors)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=180.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gemini-companion-soak-") as tmp:
        result = soak(Path(tmp), args.seconds)
    print(f"soak: {result.seconds:.0f} s, {CLIENTS} clients, {result.cycles} diff cycles, {result.motions} motions")
    print(f"{'':14}{'start':>10}{'end':>10}")
    for key in result.start:
        print(f"{key:14}{result.start[key]:>10}{result.end[key]:>10}")
    if result.problems:
        print("FAILED:", *result.problems, sep="\n  ")
        return 1
    print("flat: no buffers, windows or tabpages left behind; host memory steady; no errors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
