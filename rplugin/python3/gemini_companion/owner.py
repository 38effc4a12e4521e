"""Who wrote a file of ours (a discovery file, a hook key): the field names that carry its host
process, and whether that process still runs. Imported by the hook program at every CLI event,
so it imports nothing but `os`.
"""

from __future__ import annotations

import os

# Our own marker in every file we write: the host process that serves it.
# A file whose host is dead is stale even if its port was reused (T7).
OWNER_FIELD = "neovimCompanionPid"
# ...and when that process started (Linux clock ticks since boot): a reused PID is not ours.
OWNER_START_FIELD = "neovimCompanionStart"


def pid_alive(pid: int, started: int | None = None) -> bool:
    """Whether `pid` runs: a zombie (killed, never reaped, common in containers) does not, nor
    does a process that reused the PID when `started` (from `process_start`) is known."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    fields = proc_stat(pid)
    if fields is None:
        # Gone in between, or no procfs at all: then kill() is all we can know.
        return not os.path.isdir("/proc/self")
    if fields[0] in ("Z", "X", "x"):
        return False
    return started is None or process_start(pid) == started


def proc_stat(pid: int) -> list[str] | None:
    """/proc/PID/stat fields after the command name (state first); None if unavailable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            raw = file.read().decode("ascii", "replace")
    except OSError:
        return None
    return raw[raw.rfind(")") + 2 :].split()


def process_start(pid: int) -> int | None:
    """When the process started, in clock ticks since boot (Linux); None where unknown."""
    fields = proc_stat(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None
