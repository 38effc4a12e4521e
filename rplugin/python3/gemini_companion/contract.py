"""What the Python side and the Lua side agree on, in one place (see ARCHITECTURE.md).

- `Status`: the table `require('gemini_companion').status()` returns; its LuaCATS twin is
  `gemini_companion.Status` in lua/gemini_companion/state.lua (a unit test keeps them equal).
- `TERMINAL_ENV`: the environment Neovim's terminals inherit, key by key; Lua sets and
  unsets exactly these keys (each snapshot carries all of them).
- `STARTUP_ENV`: the variables a shell or the loader acts on at start, made inert for managed
  agents and for the hook entries (their Lua twin: `HOOK_ENV` in changes/hooks.lua; test_hook_hostile.py
  keeps them equal).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import TypedDict

from gemini_companion import env_names
from gemini_companion.server.discovery import Advertisement
from gemini_companion.server.hook_keys import key_for
from gemini_companion.server.http_guard import EDITOR_PATH


def url(ad: Advertisement, path: str) -> str:
    """One of the server's endpoints (http_guard's paths)."""
    return f"http://127.0.0.1:{ad.port}{path}"


def tools_url(ad: Advertisement) -> str:
    return url(ad, EDITOR_PATH)


class ClientInfo(TypedDict):
    session: str
    name: str
    version: str
    stream: bool
    label: str  # "qwen (Qwen Code 0.24.4)", "external Gemini CLI 0.61.0"
    agent: str | None  # the managed agent's name (None: a CLI the plugin did not start)


class ReviewInfo(TypedDict):  # an open review, as status() lists it under `diffs` (a public name)
    id: int
    file: str
    session: str
    agent: str  # the proposing client's label


class ToolsEndpoint(TypedDict):
    url: str
    headers: dict[str, str]


class LastTurn(TypedDict):
    id: int
    agent: str
    files: int  # files it changed (so far, while open)
    open: bool


class ChangesInfo(TypedDict):
    turns: int  # turns recorded (bounded)
    last: LastTurn | None


class Status(TypedDict):
    running: bool
    state: str  # stopped | starting | running | failed
    error: str | None
    port: int | None
    pid: int | None  # the IDE PID the CLIs look for
    nvim_pid: int | None
    host_pid: int
    python: str
    workspace: list[str]
    discovery_files: list[str]
    discovery_errors: list[str]
    clients: list[ClientInfo]
    diffs: list[ReviewInfo]
    tools: ToolsEndpoint | None  # the model's editor tools (tools.py); None when stopped
    changes: ChangesInfo  # what agents changed, turn by turn (changes.py)


TERMINAL_ENV: dict[str, Callable[[Advertisement], str]] = {
    env_names.GEMINI_PORT: lambda ad: str(ad.port),
    env_names.GEMINI_WORKSPACE: lambda ad: ad.workspace_path,
    env_names.GEMINI_TOKEN: lambda ad: ad.token,
    env_names.GEMINI_PID: lambda ad: str(ad.ide_pid),
    env_names.QWEN_PORT: lambda ad: str(ad.port),
    env_names.QWEN_WORKSPACE: lambda ad: ad.workspace_path,
    # The model's editor tools, as `${VAR:-}` in Gemini's settings (cli_settings.lua): outside
    # Neovim the URL expands to nothing and Gemini skips the server silently.
    env_names.MCP_URL: lambda ad: tools_url(ad),
    env_names.MCP_TOKEN: lambda ad: ad.tools_token,
    # The CLIs' lifecycle hooks (hook.py): only the key naming the file with the port and token;
    # outside Neovim it is unset and the hook exits at once.
    env_names.HOOK_KEY: lambda ad: key_for(ad),
    # Set (empty) so a project's .env cannot set it: the hook entry earlier versions of the
    # plugin wrote `eval`ed it, and may still be in a user's settings until enable-cli replaces it.
    env_names.OLD_HOOK: lambda _ad: "",
    # The stdio bridge, for CLIs that cannot reach us over HTTP (containers): see stdio_bridge.py.
    env_names.GEMINI_STDIO_COMMAND: lambda ad: ad.gemini_stdio()["command"],
    env_names.GEMINI_STDIO_ARGS: lambda ad: json.dumps(ad.gemini_stdio()["args"]),
    env_names.QWEN_STDIO_COMMAND: lambda ad: ad.qwen_stdio()["command"],
    env_names.QWEN_STDIO_ARGS: lambda ad: json.dumps(ad.qwen_stdio()["args"]),
}
ENV_KEYS = tuple(TERMINAL_ENV)


# What bash, the dynamic loader (and so Python) act on as they start, which a project's `.env`
# could set for the CLI and so for every command it runs: a managed agent gets them empty when
# the user has not set them (a CLI never overrides a variable already set), and the hook entries
# (changes/hooks.lua HOOK_ENV) always. PS4 gets bash's default: an empty one would change `set -x`.
STARTUP_ENV = {
    "BASH_ENV": "",
    "ENV": "",
    "SHELLOPTS": "",
    "BASHOPTS": "",
    "PS4": "+ ",
    "LD_PRELOAD": "",
    "LD_AUDIT": "",
    "LD_LIBRARY_PATH": "",
    "LD_DEBUG": "",  # these two write trace files where the value says
    "LD_DEBUG_OUTPUT": "",
    "LD_PROFILE": "",
    "LD_PROFILE_OUTPUT": "",
    "DYLD_INSERT_LIBRARIES": "",  # macOS: a bash or Python outside SIP's reach loads them
    "DYLD_LIBRARY_PATH": "",
    "DYLD_FRAMEWORK_PATH": "",
    "DYLD_FALLBACK_LIBRARY_PATH": "",
    "DYLD_FALLBACK_FRAMEWORK_PATH": "",
}


def startup_env(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The STARTUP_ENV variables `environ` does not set, with their inert values."""
    return {name: value for name, value in STARTUP_ENV.items() if name not in environ}


def terminal_env(ad: Advertisement | None) -> dict[str, str | bool]:
    """Every key: its value for this server, or False (which unsets it in Neovim)."""
    return {key: (value(ad) if ad is not None else False) for key, value in TERMINAL_ENV.items()}
