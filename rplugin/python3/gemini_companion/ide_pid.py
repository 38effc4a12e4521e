"""The IDE PID the Gemini CLI computes, so our discovery file name matches its search."""

from __future__ import annotations

import psutil


def ide_pid(nvim_pid: int) -> int:
    """PID the CLI derives when started from a shell in this Neovim's `:terminal`.

    The CLI walks up to its shell and takes the shell's grandparent. The shell's
    parent is the Neovim server process (`nvim_pid`), so the answer is Neovim's
    parent (the TUI client with Neovim >= 0.10), unless that is init.
    """
    try:
        parent = psutil.Process(nvim_pid).ppid()
    except psutil.Error:
        return nvim_pid
    return parent if parent > 1 else nvim_pid
