"""A turn as the CLIs' hooks tell it, and what the plugin said about it (the changes tests and
the benchmarks of changes share these: bench_changes.py, bench_scale.py, four_agents.py, bench_day.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from conftest import Editor, wait_for
from gemini_companion.programs.hook import KEY_ENV


def hook(
    editor: Editor, cwd: Path, event: str, payload: dict[str, Any], agent: str | None = None, cli: str = "gemini"
) -> None:
    """Run the hook exactly as a CLI's settings do (`bash -c` with the entry's env over the CLI's),
    in the environment of a managed agent (`agent`) or of Neovim's terminals; `cli`: whose entry."""
    command, env = hook_command(editor, event, agent, cli)
    run_hook(command, env, cwd, payload)


def hook_command(
    editor: Editor, event: str, agent: str | None = None, cli: str = "gemini"
) -> tuple[str, dict[str, str]]:
    """The command and environment a CLI runs the hook for `event` with (see `hook`)."""
    first = {"gemini": "BeforeAgent", "qwen": "UserPromptSubmit"}[cli]
    entry = editor.lua(
        "local cli, first = ... return require('gemini_companion.changes').hooks(cli)[first].hooks[1]", cli, first
    )
    command = entry["command"].replace("turn-start", event)
    env = {key: value for key, value in os.environ.items() if not key.startswith("GEMINI_COMPANION")}
    if agent:
        register = "return require('gemini_companion.host').request('agent_register', {name = ...})"
        env.update(editor.lua(register, agent)["env"])
    else:
        env[KEY_ENV] = editor.env(KEY_ENV) or ""
    env.update(entry["env"])
    return command, env


def run_hook(command: str, env: dict[str, str], cwd: Path, payload: dict[str, Any]) -> None:
    """One run of a hook command (`hook_command`), its event on stdin; it must answer `{}`."""
    done = subprocess.run(
        ["bash", "-c", command], input=json.dumps(payload), env=env, cwd=cwd, capture_output=True, text=True
    )
    assert done.returncode == 0 and json.loads(done.stdout) == {}, done


def turns(editor: Editor) -> list[dict[str, Any]]:
    return editor.lua("return require('gemini_companion.changes').turns")


def a_turn(editor: Editor, cwd: Path, change: Any, agent: str = "gemini") -> dict[str, Any]:
    known = len(turns(editor))
    hook(editor, cwd, "turn-start", {"hook_event_name": "BeforeAgent", "cwd": str(cwd)}, agent)
    change()
    hook(editor, cwd, "tool", {"hook_event_name": "AfterTool", "tool_name": "write_file", "cwd": str(cwd)}, agent)
    hook(editor, cwd, "turn-end", {"hook_event_name": "AfterAgent", "cwd": str(cwd)}, agent)
    return wait_for(lambda: len(turns(editor)) > known and turns(editor)[-1], 30, "the turn to end")


def refused(editor: Editor) -> list[tuple[str, str]]:
    """The quickfix list a revert left: each refused file's name and why."""
    items = "return vim.tbl_map(function(i) return {vim.fn.bufname(i.bufnr), i.text} end, vim.fn.getqflist())"
    return [(Path(name).name, text) for name, text in editor.lua(items)]


def agent_turn(repo: Path) -> None:
    """Two files written, one deleted, one changed by a shell `sed`: four changes."""
    (repo / "a.txt").write_text("1\nTWO\n3\n4\n5\n6\n7\n8\nNINE\n10\n")
    (repo / "new.txt").write_text("fresh\n")
    (repo / "gone.txt").unlink()
    subprocess.run(["sed", "-i", "s/colour/color/", str(repo / "sed.txt")], check=True)


def listen(editor: Editor) -> None:
    """Keep what the plugin says, with its level."""
    editor.lua("_G.said = {} vim.notify = function(m, l) table.insert(_G.said, {m, l or vim.log.levels.INFO}) end")


def said(editor: Editor) -> tuple[str, int]:
    message, level = editor.lua("return _G.said[#_G.said] or {'', 0}")
    return message.removeprefix("gemini-companion: "), level


INFO, WARN = 2, 3
