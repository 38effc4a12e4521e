"""`make demo`: Neovim on a throwaway config with the plugin from this checkout, server running.

Everything Neovim would write (config, data, state, cache) goes
to a temporary directory that is removed afterwards. Neovim runs in the current
directory, in the foreground: `:Gemini` (or `:Gemini qwen`) opens an agent beside it.
The demo never writes your real HOME: it does not offer to turn IDE mode on in
~/.gemini/settings.json (cli_settings = 'never'); Qwen needs nothing written.
A CLI that is not on PATH is taken from tests/node/ when `make test` (or `make node`) has
installed the pinned one there (Qwen with the pinned Node 22 it needs); the text in the first
window says which, or how to get them. It is text in a scratch buffer, not messages: nothing
asks to "Press ENTER", at any width.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NODE_MODULES = ROOT / "tests" / "node" / "node_modules"
PINNED = {  # the CLIs `make node` installs for the tests, as commands
    "gemini": [str(NODE_MODULES / ".bin" / "gemini")],
    "qwen": [str(NODE_MODULES / ".bin" / "node"), str(NODE_MODULES / "@qwen-code" / "qwen-code" / "cli.js")],
}
HINT = """gemini-companion demo

  :Gemini qwen            Qwen Code beside this window, connected as it starts
  :Gemini                 Gemini CLI (type /ide enable in it once)
  :GeminiCompanionStatus  the server and its clients
  :checkhealth gemini_companion
  :qa                     leave (nothing of the demo is kept)
"""
XDG_KEYS = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")

# The checkout on the runtimepath (its venv runs the host), nothing written to disk.
# The user's own XDG variables come back once the server runs (its state directory, where
# change snapshots go, is taken at start), so a shell opened with :terminal (and the `gemini`
# run in it) sees the usual environment.
INIT_LUA = """
local root = vim.env.GEMINI_COMPANION_DEMO_ROOT
vim.opt.runtimepath:prepend(root)
vim.opt.shadafile = 'NONE'
vim.opt.swapfile = false
-- Your real ~/.gemini/settings.json is not the demo's to change.
local agents = vim.json.decode(vim.env.GEMINI_COMPANION_DEMO_AGENTS)
require('gemini_companion').setup({ cli_settings = 'never', agents = agents })
vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  callback = function()
    -- What was printed before Neovim took the screen, again where it can be seen: as the first
    -- window's text (messages this long would ask to "Press ENTER").
    local buf = vim.api.nvim_get_current_buf()
    if vim.api.nvim_buf_get_name(buf) == '' and vim.api.nvim_buf_line_count(buf) == 1 then
      vim.bo[buf].buftype = 'nofile'
      vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(vim.env.GEMINI_COMPANION_DEMO_HINT, '\\n'))
      vim.bo[buf].modified = false
    end
    vim.env.GEMINI_COMPANION_DEMO_ROOT = nil
    vim.env.GEMINI_COMPANION_DEMO_HINT = nil
    vim.env.GEMINI_COMPANION_DEMO_AGENTS = nil
  end,
})
vim.api.nvim_create_autocmd('User', {
  pattern = 'GeminiStatusChanged',
  callback = function()
    if require('gemini_companion').status().state ~= 'running' then
      return
    end
    for key, value in pairs(vim.json.decode(vim.env.GEMINI_COMPANION_DEMO_XDG)) do
      vim.env[key] = value ~= vim.NIL and value or nil
    end
    vim.env.GEMINI_COMPANION_DEMO_XDG = nil
    return true -- once
  end,
})
"""


def container_hint() -> str | None:
    in_container = os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv")
    told = any(os.environ.get(k) for k in ("SSH_CONNECTION", "REMOTE_CONTAINERS", "VSCODE_REMOTE_CONTAINERS_SESSION"))
    if in_container and not told:
        return (
            "Container detected: the Gemini CLI dials host.docker.internal first, then falls back to the "
            "plugin's stdio bridge by itself (a second or two at connect time; :h gemini-companion-containers)."
        )
    return None


def agents() -> tuple[dict[str, dict[str, list[str]]], list[str]]:
    """The agents' commands the demo overrides (a CLI not on PATH, pinned under tests/node/),
    and a line for each CLI saying where it comes from."""
    chosen: dict[str, dict[str, list[str]]] = {}
    lines = []
    for name, pinned in PINNED.items():
        if shutil.which(name):
            lines.append(f"  {name}: {shutil.which(name)}")
        elif all(os.path.exists(part) for part in pinned):
            chosen[name] = {"cmd": pinned}
            lines.append(f"  {name}: not on PATH; the pinned one `make test` installed in tests/node/")
        else:
            lines.append(f"  {name}: not on PATH; `make node` installs the pinned one into tests/node/")
    return chosen, lines


def wait(proc: subprocess.Popen[bytes]) -> int:
    """Wait for Neovim; a stray Ctrl-C reaching this process must not orphan it."""
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:
            continue


def main() -> int:
    nvim = os.environ.get("GEMINI_COMPANION_NVIM", "nvim")  # `make demo` passes the one it installed
    python = ROOT / ".venv" / "bin" / "python"
    if not python.exists():
        print(f"gemini-companion demo: {python} is missing: run `make install` first", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="gemini-companion-demo-") as temp:
        base = Path(temp)
        chosen, where = agents()
        lines = "\n".join([HINT, *where, "", *filter(None, [container_hint()])]).rstrip() + "\n"
        init = base / "init.lua"
        init.write_text(INIT_LUA)
        env = dict(os.environ)
        env.update({key: str(base / key.lower()) for key in XDG_KEYS})
        env.update(
            NVIM_RPLUGIN_MANIFEST=str(base / "rplugin.vim"),  # should anyone run :UpdateRemotePlugins
            GEMINI_COMPANION_DEMO_ROOT=str(ROOT),
            GEMINI_COMPANION_DEMO_HINT=lines,
            GEMINI_COMPANION_DEMO_AGENTS=json.dumps(chosen or {}, ensure_ascii=False),
            GEMINI_COMPANION_DEMO_XDG=json.dumps({key: os.environ.get(key) for key in XDG_KEYS}),
        )
        print(lines)
        code = wait(subprocess.Popen([nvim, "-u", str(init)], env=env))
    return code


if __name__ == "__main__":
    sys.exit(main())
