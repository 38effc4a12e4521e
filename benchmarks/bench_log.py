"""`make bench` section: the host's log, per message (issue 33; alone: .venv/bin/python benchmarks/bench_log.py).

What a message costs the server's loop, measured on the code the server runs (log.py,
server/log_lines.py) writing to a real file, per message over 5000:
- a `tools/call openDiff` (a 10 KB proposal) answered, at 'debug': its line built (names and
  sizes) and queued (<= 50 µs: a request the CLI waits for already takes about 1 ms);
- an `ide/contextUpdate` of 10 files sent, at 'debug' (<= 50 µs);
- the same request at 'warn' (the default) and 'off': one level check (<= 1 µs);
- the writer thread's own time per line, formatted, scrubbed of tokens and written (<= 50 µs:
  it keeps up with 20,000 messages a second, far more than any CLI sends).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import benchlib  # noqa: F401 - first: it puts tests/ on the path
from benchlib import Row, row

import conftest  # noqa: F401 - puts the plugin's modules on the path
from gemini_companion import log
from gemini_companion.server import log_lines

MESSAGES = 5000
RUNS = 7
PARAMS = {"name": "openDiff", "arguments": {"filePath": "/home/u/project/src/app.py", "newContent": "x = 1\n" * 1700}}
ANSWER = {"jsonrpc": "2.0", "id": 7, "result": {"content": []}}
CONTEXT = {
    "workspaceState": {
        "openFiles": [
            {"path": f"/home/u/project/src/f{i}.py", "timestamp": 1, "isActive": i == 0, "cursor": {"line": 1}}
            for i in range(10)
        ],
        "isTrusted": True,
    }
}


def per_request() -> None:
    """What _post does for one answered request."""
    if log.enabled(log.DEBUG):
        log.write(log.DEBUG, log_lines.request("gemini (Gemini CLI 0.61.0)", "tools/call", 7, PARAMS, ANSWER, 1.2))


def per_notification() -> None:
    """What send does for one notification."""
    if log.enabled(log.DEBUG):
        log.write(log.DEBUG, f"gemini (Gemini CLI 0.61.0) ← ide/contextUpdate {log_lines.summary(CONTEXT)}")


def micros(action: Callable[[], None], path: Path) -> float:
    """Median µs per call over RUNS runs of MESSAGES calls; waits for the writer between runs."""
    times = []
    for _ in range(RUNS):
        t = time.perf_counter()
        for _ in range(MESSAGES):
            action()
        times.append((time.perf_counter() - t) / MESSAGES * 1e6)
        drained(path)
    return statistics.median(times)


def drained(path: Path) -> None:
    """Until the writer has written all that was queued: a marker line queued last is in the file."""
    if not log.enabled(log.ERROR):
        return
    marker = f"bench marker {time.perf_counter_ns()}"
    log.write(log.ERROR, marker)
    while marker.encode() not in tail(path):
        time.sleep(0.001)


def tail(path: Path) -> bytes:
    """The file's last 4 KiB; nothing while it is being rotated (renamed to `.1`, a new one not yet made)."""
    try:
        return path.read_bytes()[-4096:]
    except FileNotFoundError:
        return b""


def writer_micros(path: Path) -> float:
    """The writer's time per line: MESSAGES lines queued at once, timed until the file holds the last."""
    times = []
    line = log_lines.request("gemini (Gemini CLI 0.61.0)", "tools/call", 7, PARAMS, ANSWER, 1.2)
    for _ in range(RUNS):
        drained(path)
        t = time.perf_counter()
        for _ in range(MESSAGES):
            log.write(log.DEBUG, line)
        drained(path)
        times.append((time.perf_counter() - t) / MESSAGES * 1e6)
    return statistics.median(times)


def run() -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="gemini-companion-bench-log-") as tmp:
        path = Path(tmp) / "log" / "companion.log"
        log.secret(os.urandom(32).hex(), os.urandom(32).hex(), os.urandom(32).hex(), os.urandom(32).hex())
        try:
            assert log.configure({"level": "debug", "path": str(path)}) is None
            request = micros(per_request, path)
            notification = micros(per_notification, path)
            writer = writer_micros(path)
            log.configure({"level": "warn", "path": str(path)})
            at_warn = micros(per_request, path)
            log.configure({"level": "off", "path": str(path)})
            off = micros(per_request, path)
        finally:
            log.configure({"level": "off"})
    return [
        row("log: an answered openDiff at 'debug' (line built + queued)", request, "µs", "<= 50", request <= 50),
        row("log: an ide/contextUpdate of 10 files at 'debug'", notification, "µs", "<= 50", notification <= 50),
        row("log: the same request at 'warn' (the default)", at_warn, "µs", "<= 1", at_warn <= 1),
        row("log: the same request at 'off'", off, "µs", "<= 1", off <= 1),
        row("log: the writer thread's time per line (off the loop)", writer, "µs", "<= 50", writer <= 50),
    ]


if __name__ == "__main__":
    for r in run():
        print(f"{r['name']}: {r['value']:.2f} {r['unit']} (target {r['target']}){'' if r['ok'] else '  MISSED'}")
