"""Server lifecycle: bind, advertise, serve on a worker thread, stop and clean up.

Runs in the rplugin host. `start`, `stop` and `set_workspace` are called on the
host's main thread (from Neovim RPC); the worker thread imports the heavy
server modules and serves. Whatever Neovim must know is pushed to the Lua side
with `Editor.lua`, which is safe from any thread.
"""

from __future__ import annotations

import atexit
import os
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any, cast

from gemini_companion import contract, env_names, log
from gemini_companion.changes.changes import ChangesFeature
from gemini_companion.context.context import ContextFeature
from gemini_companion.editor import Editor, PendingEditor
from gemini_companion.feature import Feature
from gemini_companion.review.review import ReviewFeature
from gemini_companion.server import discovery, hook_keys, kept, launch
from gemini_companion.server.access import Access
from gemini_companion.server.log_lines import summary
from gemini_companion.tools.tools import ToolsFeature

# A status push is a timer this long on the server's loop: 0 still runs it after the callbacks
# already due there (the write of an answer a send just woke), and keeps Neovim's view current.
PUSH_DELAY_SECONDS = 0.0
# Stale discovery files (a crashed Neovim's) are swept at start and this often while running,
# so a CLI started without our environment does not pick a dead server's file for long.
SWEEP_SECONDS = float(os.environ.get(env_names.SWEEP_SECONDS) or 30.0)
LOGGED_CHARS = 2000  # of a line Neovim showed the user, in the log


class Companion:
    def __init__(self, editor: Editor) -> None:
        self._editor = editor
        self._lock = threading.RLock()
        self._server: Any = None  # mcp_server.McpServer, imported on the worker thread
        self._ad: discovery.Advertisement | None = None
        self._listening: socket.socket | None = None  # this start's port: a stale worker's is not
        self._files: list[str] = []
        self._state = "stopped"  # stopped | starting | running | failed
        self._error: str | None = None
        self._clients: list[dict[str, Any]] = []
        self._nvim_pid = 0
        self._discovery_errors: list[str] = []
        self._seq = 0
        self._push_due = False  # a push from changed() is scheduled
        self._settled = threading.Event()  # the server answers, or failed to start
        self._sweeper: threading.Event | None = None  # set to stop the periodic sweep
        self._access = Access()  # the tokens we accept: whose each one is
        self._hook_keys = hook_keys.HookKeys()  # where hook.py finds us (terminals, agents)
        self._tools = ToolsFeature(editor, self, lambda: list(self._ad.workspace) if self._ad else [])
        self._changes = ChangesFeature(editor, self)
        self._features: list[Feature] = [ContextFeature(self), ReviewFeature(editor, self), self._tools, self._changes]
        # Methods Lua may call (GeminiCompanionNotify / GeminiCompanionRequest).
        self._methods: dict[str, Callable[[dict[str, Any]], Any]] = {
            "start": self._start_method,
            "stop": lambda p: self.stop(),
            "workspace": lambda p: self.set_workspace(list(p.get("workspace", []))),
            "agent_register": self.register_agent,
            "agent_unregister": self.unregister_agent,
            "kept_server": lambda p: kept.secrets(self._ad) if self._ad else None,
            "log": self._log_from_lua,
        }
        for feature in self._features:
            self._methods.update(feature.methods)
        atexit.register(self._remove_files)

    # --- Link: how features reach clients and Neovim ------------------------

    def broadcast(self, method: str, params: dict[str, Any]) -> None:
        server = self._server
        if server is not None:
            server.notify_all(method, params)

    def send(self, session_id: str, method: str, params: dict[str, Any]) -> None:
        server = self._server
        if server is not None:
            server.send_threadsafe(session_id, method, params)

    def changed(self) -> None:
        """A feature's state changed: push the status from the server's loop, once for a burst, after
        whatever answer is on its way to a client (built first, the snapshot held the GIL before it)."""
        server = self._server
        with self._lock:
            if self._push_due:
                return
            self._push_due = True
        if server is None or not server.later(PUSH_DELAY_SECONDS, self._push):
            self._push()

    def label(self, session_id: str) -> str | None:
        server = self._server
        return server.label(session_id) if server is not None else None

    def handle(self, method: str, params: dict[str, Any]) -> Any:
        """Run one request from Lua; returns the method's result, or the status for methods without one."""
        result = self.run(method, params)
        return self.snapshot() if result is None else result

    def run(self, method: str, params: dict[str, Any]) -> Any:
        """Run one call from Lua. A notification's caller wants no status: building one right after
        a send would hold the GIL while the server thread writes the answer."""
        handler = self._methods.get(method)
        if handler is None:
            log.write(log.WARN, f"Lua called an unknown method {method!r}")
            raise ValueError(f"gemini-companion: unknown method {method!r}")
        if log.enabled(log.DEBUG):
            log.write(log.DEBUG, f"Lua → {method} {summary(params)}")
        return handler(params)

    # --- called on the host's main thread ---------------------------------

    def _log_from_lua(self, params: dict[str, Any]) -> None:
        """A warning or error Neovim showed the user (message.notify): in the log too."""
        text = str(params.get("text"))[:LOGGED_CHARS]
        log.write(log.ERROR if params.get("level") == "error" else log.WARN, f"Neovim: {text}")

    def _start_method(self, params: dict[str, Any]) -> None:
        problem = log.configure(params.get("log"))
        if problem:
            self._notify(problem, "warn")
        self.start(int(params["nvim_pid"]), list(params.get("workspace", [])), reuse=params.get("reuse"))

    def start(
        self, nvim_pid: int, workspace: list[str], launched: launch.Launch | None = None, reuse: object = None
    ) -> None:
        """`reuse`: kept agents' port and tokens (server/kept.py), served again when the port is free."""
        try:
            self._start(nvim_pid, workspace, launched, reuse)
        except Exception as err:  # noqa: BLE001 - one clear line in the status, never a stuck `starting`
            self._fail(f"cannot start the server: {err}")

    def _start(self, nvim_pid: int, workspace: list[str], launched: launch.Launch | None, reuse: object) -> None:
        with self._lock:
            if self._state in ("starting", "running"):
                self._retry_discovery()  # `:GeminiCompanion start` after fixing a directory
                self.set_workspace(workspace)  # the host started early, before a :cd
                return
            self._nvim_pid = nvim_pid
            self._error = None
            self._clients = []
            started = launched or launch.launch(nvim_pid, workspace, reuse)
            sock, self._ad = started.listener(), started.ad
            self._listening = sock
            self._access.serve(self._ad)
            self._files, self._discovery_errors = started.files, started.errors
            self._state = "starting"
            log.write(log.INFO, f"host {os.getpid()} starting for Neovim {nvim_pid} on port {self._ad.port}")
            for path in self._files:
                log.write(log.INFO, f"discovery file written: {path}")
            self._push()
            for line in started.errors:
                self._notify(line, "error")
            if started.taken:
                taken = f"port {started.taken} is taken"
                self._notify(f"{taken}: kept agents' editor tools and hooks cannot reach this Neovim", "warn")
            if not self._files:  # no CLI could find us: say why instead of serving nobody
                sock.close()
                self._ad = self._listening = None
                raise RuntimeError("; ".join(self._discovery_errors) or "no discovery file could be written")
            hook_keys.sweep_stale()
            self._write_hook_key(None)
            self._sweeper = threading.Event()
            threading.Thread(target=self._sweep_loop, args=(self._sweeper,), name="gemini-sweep", daemon=True).start()
            # A daemon: when Neovim dies the host's main loop ends and must not wait for it.
            threading.Thread(target=self._serve, args=(sock, self._ad), name="gemini-companion", daemon=True).start()
            if started.swept:
                self._notify(f"removed {len(started.swept)} stale discovery file(s)", "debug")

    def stop(self) -> None:
        log.write(log.INFO, "stopping")
        for feature in self._features:
            feature.on_stop()
        with self._lock:
            self._stop_sweep()
            self._remove_files()
            self._discovery_errors = []
            server = self._server
            self._server = None
            self._ad = self._listening = None
            self._clients = []
            if self._state != "failed":
                self._state = "stopped"
            self._push()
        # No join: the files are gone already, and the port closes as the worker
        # winds down (or with the host process, which exits with Neovim).
        if server is not None:
            server.request_exit()

    def set_workspace(self, workspace: list[str]) -> None:
        with self._lock:
            if self._ad is None:
                return
            roots = launch.clean_roots(workspace)
            if roots == self._ad.workspace:
                return
            self._ad = self._ad.with_workspace(roots)
            self._advertise()
            self._access.rewrite(self._ad)

    def register_agent(self, params: dict[str, Any]) -> dict[str, Any]:
        """An agent is about to start: its own files and tokens, the environment naming them,
        and a snapshot with its files in the status (applied before the agent's environment is
        put together). `{}` while no server runs (it starts with the shared environment then)."""
        with self._lock:
            if self._ad is None:
                return {}
            registered = self._access.register(
                self._ad,
                str(params["name"]),
                params.get("cli") if params.get("cli") in ("gemini", "qwen") else None,
                str(params.get("version") or ""),
                int(params.get("gemini_pid") or 0),
                int(params.get("qwen_port") or 0),
            )
            env = cast(dict[str, str], registered["env"])
            env.update(contract.startup_env())  # a project's .env cannot set what bash acts on
            key = self._write_hook_key(str(params["name"]))
            if key:
                env[env_names.HOOK_KEY] = key  # its own file: its hooks name it, whatever its env says
            return dict(registered, snapshot=self.snapshot())

    def unregister_agent(self, params: dict[str, Any]) -> None:
        self._access.unregister(str(params["name"]))
        self._hook_keys.remove(str(params["name"]))
        self._changes.agent_stopped(str(params["name"]))
        self._push()

    def status(self) -> contract.Status:
        with self._lock:
            ad = self._ad
            status: dict[str, Any] = {
                "running": self._state == "running",
                "state": self._state,
                "error": self._error,
                "port": ad.port if ad else None,
                "pid": ad.ide_pid if ad else None,
                "nvim_pid": self._nvim_pid or None,
                "host_pid": os.getpid(),
                "python": sys.executable,
                "workspace": list(ad.workspace) if ad else [],
                "discovery_files": self._files + self._access.files(),
                "discovery_errors": list(self._discovery_errors),
                "clients": list(self._clients),
                "diffs": [],
                "tools": {
                    "url": contract.tools_url(ad),
                    "headers": {"Authorization": f"Bearer {ad.tools_token}"},
                }
                if ad
                else None,
            }
        for feature in self._features:
            status.update(feature.status())
        return cast(contract.Status, status)

    # --- worker threads ---------------------------------------------------

    def _stop_sweep(self) -> None:
        """Lock held."""
        if self._sweeper is not None:
            self._sweeper.set()
            self._sweeper = None

    def _sweep_loop(self, stopped: threading.Event) -> None:
        while not stopped.wait(SWEEP_SECONDS):
            with self._lock:
                if not stopped.is_set():
                    self._retry_discovery()
            hook_keys.sweep_stale()
            swept = discovery.sweep_stale()
            if swept:
                self._notify(f"removed {len(swept)} stale discovery file(s)", "debug")

    def _serve(self, sock: socket.socket, ad: discovery.Advertisement) -> None:
        try:
            from gemini_companion.server import mcp_server, session
        except ImportError as err:
            self._fail(
                f"the Python host {sys.executable} cannot import {err.name or err}"  # Lua adds the fix
            )
            sock.close()
            return
        hooks = session.Hooks(
            on_ready=self._on_ready,
            on_failed=self._fail,
            on_clients=self._on_clients,
            on_stream_open=self._on_stream_open,
            on_client_gone=self._on_client_gone,
            tools=[tool for feature in self._features for tool in feature.tools()],
            model_tools=self._tools.model_tools(),
            on_hook=self._changes.on_hook,
        )
        server = mcp_server.McpServer(sock, self._access.identify, ad.port, hooks, session.Limits())
        with self._lock:
            if self._listening is not sock:  # stopped (a workspace change is no stop) while importing
                sock.close()
                return
            self._server = server
        server.run()
        sock.close()

    def _on_ready(self) -> None:
        with self._lock:
            if self._state == "starting":
                self._state = "running"
                self._push()
        self._settled.set()

    def wait_serving(self, timeout: float) -> None:
        """Until the server answers, or its start failed (at most `timeout` seconds)."""
        self._settled.wait(timeout)

    async def _on_stream_open(self, session_id: str) -> None:
        for feature in self._features:
            await feature.on_stream_open(session_id)

    def _on_client_gone(self, session_id: str) -> None:
        for feature in self._features:
            feature.on_client_gone(session_id)

    def _on_clients(self, clients: list[dict[str, Any]]) -> None:
        with self._lock:
            self._clients = clients
        self.changed()  # after the answer that made the change

    def _fail(self, message: str) -> None:
        with self._lock:
            self._stop_sweep()
            self._remove_files()
            self._ad = self._listening = None
            self._server = None
            self._state = "failed"
            self._error = message
            self._push()
        self._settled.set()
        self._notify(message, "error")

    # --- helpers ----------------------------------------------------------

    def _advertise(self, retry: bool = False) -> None:
        """(Re)write the discovery files and terminal environment; lock held. Each error is
        said once: a `retry` that changes nothing is quiet."""
        assert self._ad is not None
        said = self._discovery_errors
        written, errors = discovery.write_all(self._ad)
        # A file written before whose directory fails now is still ours to remove.
        kept = [path for path in self._files if path not in written and os.path.lexists(path)]
        changed = (written + kept, errors) != (self._files, said)
        self._files, self._discovery_errors = written + kept, errors
        if changed or not retry:
            self._push()
        for line in errors:
            if line not in said:
                self._notify(line, "error")

    def _retry_discovery(self) -> None:
        """A discovery directory that was unusable may have been fixed since: write what is
        missing, so that CLI finds us without a restart; lock held."""
        if self._ad is None or not self._discovery_errors:
            return
        self._advertise(retry=True)
        if not self._discovery_errors:
            self._notify("every discovery file is written now: both CLIs can find the server", "info")

    def _write_hook_key(self, agent: str | None) -> str | None:
        """The hook key file for the terminals (None) or an agent; lock held. A failure costs
        only the turn hooks: said once, and the server goes on."""
        assert self._ad is not None
        try:
            return self._hook_keys.write(self._ad, agent)
        except discovery.DiscoveryError as err:
            self._notify(f"turn hooks off: {err}", "error")
            return None

    def _remove_files(self) -> None:
        """Take back every discovery file (the agents' too), hook key file and token."""
        self._access.clear()
        self._hook_keys.clear()
        for path in self._files:
            discovery.remove(path)
            log.write(log.INFO, f"discovery file removed: {path}")
        self._files = []

    def snapshot(self) -> dict[str, Any]:
        """Status and terminal environment, numbered so Neovim can drop one that arrives late."""
        with self._lock:
            self._seq += 1
            return {"seq": self._seq, "status": self.status(), "env": contract.terminal_env(self._ad)}

    def _push(self) -> None:
        self._push_due = False  # any push carries the whole status
        self._editor.lua("require('gemini_companion.state').update(...)", self.snapshot())

    def _notify(self, message: str, level: str) -> None:
        log.write(log.LEVELS.get(level, log.INFO), message)
        self._editor.lua("require('gemini_companion.state').notify(...)", message, level)


_early: tuple[Companion, PendingEditor] | None = None


def start_early(launched: launch.Launch, nvim_pid: int, workspace: list[str], wait: float) -> None:
    """boot.py: serve what it launched before pynvim loads, so a CLI that found the port file is
    answered at once; Neovim's own `start` then finds the server up. Waits (at most `wait`
    seconds) until it answers."""
    global _early
    if not launched.files:  # nobody can find it: Neovim's `start` tries again and says why, once
        launched.abandon()
        return
    pending = PendingEditor()
    early = Companion(pending)
    early.start(nvim_pid, workspace, launched)
    _early = (early, pending)
    early.wait_serving(wait)


def attach(editor: Editor) -> Companion:
    """The host's companion, now that pynvim is up: the one started early, else a new one."""
    global _early
    if _early is None:
        return Companion(editor)
    (early, pending), _early = _early, None
    pending.attach(editor)
    return early
