"""Neovim as a real TUI under tmux, with a real CLI in its :terminal, for end-to-end tests.

The test types like a user (tmux send-keys) and reads the screen (capture-pane); it also
attaches to the same Neovim over its --listen socket to check state without typing.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from conftest import INIT, NODE_DIR, TIMEOUT, Sandbox, attach_listening, nvim_binary, wait_for

GEMINI_BIN = NODE_DIR / "node_modules" / ".bin" / "gemini"
NODE22 = NODE_DIR / "node_modules" / ".bin" / "node"
QWEN_CLI = NODE_DIR / "node_modules" / "@qwen-code" / "qwen-code" / "cli.js"
E2E_TIMEOUT = 120.0  # the CLIs start slowly on a loaded 2-core machine
READY = "Type your message"  # both CLIs' prompt placeholder


def tmux_available() -> bool:
    return shutil.which("tmux") is not None


def kill_tmux(tmux: list[str], env: dict[str, str] | None = None) -> None:
    """End a tmux server and what its panes ran: Gemini relaunches itself as a child that outlives
    the pane's SIGHUP and goes on writing into the test's HOME."""
    panes = subprocess.run([*tmux, "list-panes", "-a", "-F", "#{pane_pid}"], capture_output=True, text=True, env=env)
    pids = [int(pane) for pane in panes.stdout.split() if pane.isdigit()]
    # An agent in a Neovim terminal has a session of its own: it is no pane's process group.
    below = [child for pid in pids for child in _descendants(pid)]
    subprocess.run([*tmux, "kill-server"], capture_output=True, env=env, timeout=TIMEOUT)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    # What the hang-up ends, it ends as on a real :qa (a CLI saves its conversation): only what
    # outlives it a while is killed.
    _, alive = psutil.wait_procs(below, timeout=5)
    for process in alive:
        with contextlib.suppress(psutil.Error):
            process.kill()


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def gemini_settings(home: Path, ide_enabled: bool = True) -> None:
    """A Gemini CLI home that talks to the stand-in model and has IDE mode on."""
    settings: dict[str, Any] = {
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "model": {"name": "gemini-2.5-flash"},
    }
    if ide_enabled:
        settings["ide"] = {"enabled": True, "hasSeenNudge": True}
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))


def qwen_settings(home: Path, ide_enabled: bool = True) -> None:
    settings: dict[str, Any] = {
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
        "model": {"name": "fake-model"},
        "tools": {"approvalMode": "default"},
    }
    if ide_enabled:
        settings["ide"] = {"enabled": True, "hasSeenNudge": True}
    (home / ".qwen").mkdir(parents=True, exist_ok=True)
    (home / ".qwen" / "settings.json").write_text(json.dumps(settings))


class Tui:
    """One tmux server (private socket) running one Neovim TUI."""

    def __init__(
        self,
        sandbox: Sandbox,
        model_url: str,
        files: list[str],
        name: str = "e2e",
        ide_enabled: bool = True,  # False: the user's settings say nothing of IDE mode
        setup: dict[str, Any] | None = None,  # the plugin's setup() options
        init: Path | None = INIT,  # None: the user's own config, as a plain `nvim` finds it
    ) -> None:
        self.sandbox = sandbox
        self.socket = sandbox.base / f"tmux-{name}.sock"
        self.nvim_socket = sandbox.base / f"nvim-{name}.sock"
        gemini_settings(sandbox.home, ide_enabled)
        qwen_settings(sandbox.home, ide_enabled)
        self.env = terminal_env(sandbox, model_url)
        if setup is not None:
            self.env["GEMINI_COMPANION_SETUP"] = json.dumps(setup)
        argv = [nvim_binary(), "--listen", str(self.nvim_socket), *(["-u", str(init)] if init else []), *files]
        self.tmux("new-session", "-d", "-x", "220", "-y", "50", " ".join(_quote(a) for a in argv))
        self.nvim = attach_listening(self.nvim_socket)
        # It listens before it has read its config: what the tests ask next needs the plugin loaded.
        wait_for(lambda: self.nvim.eval("v:vim_did_enter") == 1, TIMEOUT, "Neovim started")

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-S", str(self.socket), "-f", "/dev/null", *args],
            env=self.env,
            cwd=self.sandbox.project,
            check=True,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        ).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-J")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", *keys)

    def type(self, text: str) -> None:
        """Type literally (no key names)."""
        self.tmux("send-keys", "-l", text)

    def wait_ready(self, timeout: float = E2E_TIMEOUT) -> str:
        """The CLI's empty prompt on screen. Gemini CLI asks the terminal what it is as it starts; on
        a loaded machine the answers can come after it stopped waiting for them and land in its
        prompt as typed text (`>|libvterm(0.3)1;2c`), hiding the placeholder: a user would clear
        them, and so does this (Ctrl-U, once each time they show)."""

        def ready() -> str | None:
            screen = self.screen()
            if READY in screen:
                return screen
            if "libvterm(" in screen:
                self.keys("C-u")
            return None

        try:
            return wait_for(ready, timeout, "the CLI's empty prompt")
        except AssertionError as err:
            raise AssertionError(f"{err}; the screen:\n{self.screen()}") from None

    def wait_screen(self, text: str, timeout: float = E2E_TIMEOUT) -> str:
        try:
            return wait_for(lambda: text in (s := self.screen()) and s, timeout, f"{text!r} on screen")
        except AssertionError as err:
            raise AssertionError(f"{err}; the screen:\n{self.screen()}") from None

    def lua(self, code: str, *args: Any) -> Any:
        return self.nvim.exec_lua(code, *args)

    def status(self) -> dict[str, Any]:
        return self.lua("return require('gemini_companion').status()")

    def ex(self, command: str) -> None:
        """Type an Ex command as a user would, from whatever mode Neovim is in."""
        self.keys("C-\\", "C-n")  # out of terminal mode (a no-op elsewhere)
        self.keys("Escape")
        self.type(f":{command}")
        self.keys("Enter")

    def prompt(self, text: str, submitted: Callable[[], Any]) -> None:
        """Type into the CLI's prompt; press Enter once it is on screen, until `submitted()`.

        An Enter that arrives right behind the text is taken as part of a paste (a newline),
        so Enter is pressed again, a bounded number of times, until the CLI acts on it.
        """
        self.type(text)
        self.wait_screen(text)
        for _ in range(5):
            self.keys("Enter")
            try:
                wait_for(submitted, 10, "prompt submitted")
                return
            except AssertionError:
                continue
        raise AssertionError(f"the CLI never took the prompt {text!r}:\n{self.screen()}")

    def ask_agent(self, text: str, submitted: Callable[[], Any]) -> None:
        """Submit a prompt to the agent the plugin started, the way `:GeminiSend!` does (it waits
        until the CLI takes input: no keystroke races a slow start or a terminal's answer)."""
        self.wait_ready()
        self.lua("require('gemini_companion.agents').send(nil, ..., true)", text)
        wait_for(submitted, E2E_TIMEOUT, f"the prompt {text!r} submitted")

    def start_cli(self, command: str, ready: str) -> None:
        """Open :terminal (a shell) and start the CLI in it, like a user."""
        self.ex("terminal")
        wait_for(lambda: self.lua("return vim.bo.buftype") == "terminal", TIMEOUT, "terminal buffer")
        self.keys("i")
        self.type(command)
        self.keys("Enter")
        self.wait_screen(ready)

    def wait_running(self) -> None:
        wait_for(lambda: self.status()["state"] == "running", E2E_TIMEOUT, "server running")

    def wait_diff(self) -> dict[str, Any]:
        return wait_for(lambda: (d := self.status()["diffs"]) and d[0], E2E_TIMEOUT, "the diff to open in Neovim")

    def close(self) -> None:
        try:
            self.nvim.close()
        except Exception:  # noqa: BLE001 - Neovim may be gone already
            pass
        # The panes' processes too: a Neovim left writing into a dead agent's terminal (a long paste
        # the CLI never read) does not notice its UI is gone, and spins.
        kill_tmux(["tmux", "-S", str(self.socket)], self.env)


def terminal_env(sandbox: Sandbox, model_url: str) -> dict[str, str]:
    """A user's terminal, with both CLIs pointed at the scripted model."""
    # A user's terminal is no CI job: with CI (or CI_*) set, both CLIs' UI framework
    # switches to non-interactive output and never shows its prompt.
    user_env = {k: v for k, v in sandbox.env.items() if k not in ("CI", "CONTINUOUS_INTEGRATION")}
    user_env = {k: v for k, v in user_env.items() if not k.startswith("CI_")}
    return dict(
        user_env,
        TERM="xterm-256color",
        GEMINI_CLI_HOME=str(sandbox.home),
        GOOGLE_GEMINI_BASE_URL=model_url,
        GEMINI_API_KEY="stand-in",
        GEMINI_CLI_TRUST_WORKSPACE="true",
        OPENAI_API_KEY="stand-in",
        OPENAI_BASE_URL=f"{model_url}/v1",
        OPENAI_MODEL="fake-model",
        QWEN_HOME=str(sandbox.home / ".qwen"),
    )


def launch(sandbox: Sandbox, model_url: str, files: list[str], cli: str, name: str = "e2e") -> Tui:
    """Neovim with its server up, and the CLI started in its :terminal."""
    tui = Tui(sandbox, model_url, files, name)
    try:
        tui.wait_running()
        tui.start_cli(cli, READY)
    except BaseException:
        tui.close()
        raise
    return tui


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"
