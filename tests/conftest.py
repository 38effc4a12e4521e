"""Fixtures: a real headless Neovim with the real rplugin host, and the real Gemini client.

Every test gets its own HOME, TMPDIR (so its own discovery directory), XDG dirs and
project directory, so tests never see each other's files. Nothing here sleeps for
a fixed time: conditions are polled with generous, bounded timeouts.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pynvim
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rplugin" / "python3"))  # the plugin's modules
from gemini_companion.contract import ENV_KEYS

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
HARNESS = TESTS / "harness"  # what the tests run on: the init, the fake agent, the fake model, data
INIT = HARNESS / "init.lua"
NODE_DIR = TESTS / "node"
PYLSP_BIN = str(Path(sys.executable).with_name("pylsp"))  # python-lsp-server, from the dev extras
# How many setups start a language server: on FileType, for any buffer (nvim-lspconfig's legacy way).
PYLSP = """
local pylsp = ...
vim.api.nvim_create_autocmd('FileType', {pattern = 'python', callback = function(ev)
  vim.lsp.start({name = 'pylsp', cmd = {pylsp}, root_dir = vim.fn.getcwd()}, {bufnr = ev.buf})
end})
"""
TIMEOUT = 60.0  # generous: CI machines are shared and often loaded


def nvim_binary() -> str:
    explicit = os.environ.get("GEMINI_COMPANION_NVIM")
    if explicit:
        return explicit
    recorded = ROOT / ".venv" / "nvim-path"
    return recorded.read_text().strip() if recorded.exists() else "nvim"


def git(cwd: Path, *args: str) -> str:
    """Run git in a test repository, as a fixed author; its output."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def wait_for(predicate: Callable[[], Any], timeout: float = TIMEOUT, what: str = "condition") -> Any:
    """Poll `predicate` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.02)


def attach_listening(path: Path, timeout: float = TIMEOUT) -> pynvim.Nvim:
    """The Neovim listening at `path`. Its socket file appears when it is bound, a moment before it
    accepts: a connection in between is refused, so this waits for one that is not."""

    def attach() -> pynvim.Nvim | None:
        try:
            return pynvim.attach("socket", path=str(path))
        except OSError:
            return None

    return wait_for(attach, timeout, f"Neovim listening at {path}")


def python_module(name: str) -> str:
    """A clean Python file (no diagnostics) that defines and calls `name`."""
    return f"def {name}():\n    return 1\n\n\n{name}()\n"


def edit_with_pylsp(editor: Editor, path: Path) -> Editor:
    """`editor` with pylsp started on FileType (PYLSP), editing `path`, once pylsp is initialized."""
    editor.lua(PYLSP, PYLSP_BIN)
    editor.nvim.command(f"edit {path}")
    wait_for(
        lambda: editor.lua("local c = vim.lsp.get_clients({ name = 'pylsp' })[1] return c ~= nil and c.initialized"),
        60,
        "pylsp to initialize",
    )
    return editor


class Sandbox:
    """One test's world: directories and the environment every process in it sees."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.home = base / "home"
        self.tmp = base / "tmp"
        self.project = base / "project"
        for path in (self.home, self.tmp, self.project):
            path.mkdir(parents=True, exist_ok=True)
        self.env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("GEMINI_CLI_", "GEMINI_COMPANION_", "QWEN_CODE_", "NVIM", "XDG_"))
            and key not in ("QWEN_HOME", "GEMINI_RESTRICTED_MODE")
        }
        self.env.update(
            HOME=str(self.home),
            TMPDIR=str(self.tmp),
            XDG_CONFIG_HOME=str(base / "config"),
            XDG_DATA_HOME=str(base / "data"),
            XDG_STATE_HOME=str(base / "state"),
            XDG_CACHE_HOME=str(base / "cache"),
            # Not the real HOME's manifest: the plugin must not need one (it starts its own host).
            NVIM_RPLUGIN_MANIFEST=str(base / "rplugin.vim"),
            GEMINI_COMPANION_PYTHON=sys.executable,
            # /.dockerenv exists on CI machines: without this the client dials host.docker.internal.
            SSH_CONNECTION="127.0.0.1 1 127.0.0.1 2",
        )

    @property
    def gemini_dir(self) -> Path:
        return self.tmp / "gemini" / "ide"

    @property
    def qwen_dir(self) -> Path:
        return self.home / ".qwen" / "ide"


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


class Editor:
    """A child `nvim --embed` driven over msgpack-RPC, with helpers for the plugin's state."""

    def __init__(
        self,
        sandbox: Sandbox,
        setup: dict[str, Any] | None = None,
        args: list[str] | None = None,
        init: Path | None = INIT,  # None: the user's own config, as a plain `nvim` finds it
    ):
        env = dict(sandbox.env)
        if setup is not None:
            env["GEMINI_COMPANION_SETUP"] = json.dumps(setup)
        argv = [nvim_binary(), "--embed", "--headless", *(["-u", str(init)] if init else []), *(args or [])]
        # pynvim's child session inherits this process's environment and cwd.
        saved_env, saved_cwd = dict(os.environ), os.getcwd()
        os.environ.clear()
        os.environ.update(env)
        os.chdir(sandbox.project)
        try:
            self.nvim = pynvim.attach("child", argv=argv)
        finally:
            os.environ.clear()
            os.environ.update(saved_env)
            os.chdir(saved_cwd)
        self.sandbox = sandbox
        self.pid: int = self.nvim.funcs.getpid()

    def lua(self, code: str, *args: Any) -> Any:
        return self.nvim.exec_lua(code, *args)

    def status(self) -> dict[str, Any]:
        return self.lua("return require('gemini_companion').status()")

    def wait_state(self, state: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        return wait_for(lambda: (s := self.status())["state"] == state and s, timeout, f"server state {state!r}")

    def env(self, key: str) -> str | None:
        value = self.lua("return vim.env[...]", key)
        return value if isinstance(value, str) else None

    def messages(self) -> str:
        return self.nvim.api.exec2("messages", {"output": True})["output"]

    def close(self) -> None:
        try:
            self.nvim.command("qa!")
        except Exception:  # noqa: BLE001 - the channel closes as Neovim exits
            pass
        try:
            self.nvim.close()
        except Exception:  # noqa: BLE001
            pass


@pytest.fixture
def editor_factory(sandbox: Sandbox) -> Iterator[Callable[..., Editor]]:
    editors: list[Editor] = []

    def make(setup: dict[str, Any] | None = None, args: list[str] | None = None) -> Editor:
        editor = Editor(sandbox, setup, args)
        editors.append(editor)
        return editor

    yield make
    for editor in editors:
        editor.close()


@pytest.fixture
def editor(editor_factory: Callable[..., Editor]) -> Editor:
    """A Neovim whose companion server is up."""
    ed = editor_factory()
    ed.wait_state("running")
    return ed


@pytest.fixture
def lsp_editor(editor_factory: Callable[..., Editor], sandbox: Sandbox) -> Editor:
    """An editor on project/source.py (defines `inside`) with pylsp attached; context sharing on."""
    (sandbox.project / "source.py").write_text(python_module("inside"))
    editor = editor_factory()
    editor.wait_state("running")
    return edit_with_pylsp(editor, sandbox.project / "source.py")


class NodeClient:
    """A real CLI's IDE client, run by a Node driver script (see tests/node/*.mjs)."""

    def __init__(self, script: str, env: dict[str, str], cwd: Path, node: str = "node") -> None:
        self._start([node, str(NODE_DIR / script)], env, cwd)

    def _start(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            text=True,
        )
        self._next_id = 0
        self._replies: dict[int, dict[str, Any]] = {}
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.stderr: list[str] = []
        self._lock = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            if "event" in message:
                self.events.put(message)
                continue
            with self._lock:
                self._replies[message["id"]] = message
                self._lock.notify_all()

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def send(self, cmd: str, **params: Any) -> int:
        self._next_id += 1
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"id": self._next_id, "cmd": cmd, **params}) + "\n")
        self.proc.stdin.flush()
        return self._next_id

    def reply(self, request_id: int, timeout: float = TIMEOUT) -> dict[str, Any]:
        with self._lock:
            if not self._lock.wait_for(lambda: request_id in self._replies, timeout):
                raise AssertionError(f"no reply to request {request_id}; stderr tail: {self.stderr[-5:]}")
            return self._replies.pop(request_id)

    def call(self, cmd: str, timeout: float = TIMEOUT, **params: Any) -> Any:
        message = self.reply(self.send(cmd, **params), timeout)
        if not message["ok"]:
            raise AssertionError(f"{cmd} failed: {message['error']}")
        return message["result"]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(TIMEOUT)


def client_env(editor: Editor, **overrides: str) -> dict[str, str]:
    """What a CLI started in the editor's :terminal would see (inherited variables included)."""
    env = dict(editor.sandbox.env)
    for key in ENV_KEYS:
        value = editor.env(key)
        if value is not None:
            env[key] = value
    env.update(overrides)
    return env


@pytest.fixture
def gemini_factory(sandbox: Sandbox) -> Iterator[Callable[..., NodeClient]]:
    clients: list[NodeClient] = []

    def make(editor: Editor, cwd: Path | None = None, **env_overrides: str) -> NodeClient:
        client = NodeClient("gemini_client.mjs", client_env(editor, **env_overrides), cwd or sandbox.project)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def gemini(editor: Editor, gemini_factory: Callable[..., NodeClient]) -> NodeClient:
    """The real Gemini IDE client, connected to `editor`."""
    client = gemini_factory(editor)
    result = client.call("connect")
    assert result["status"] == "connected", result
    return client
