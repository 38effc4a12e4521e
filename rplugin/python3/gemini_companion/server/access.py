"""Who is connecting: one token per discovery file, and own files and tokens for every agent.

The server tells clients apart by the token they present (both CLIs send the same
clientInfo name). The shared Gemini file and the Qwen lock file carry different
tokens ("external Gemini CLI", "external Qwen Code"); each agent the plugin starts
gets its own pair, in files only its environment names:

- Gemini CLI reads `gemini-ide-server-<GEMINI_CLI_IDE_PID>.json` before any other
  file (its legacy name, which no other search lists). The number is above Linux's
  largest PID (2^22), so no real IDE's file has that name.
- Qwen Code reads `<QWEN_CODE_IDE_SERVER_PORT>.lock` before any other, and connects
  to the `port` inside it. The number is below 1024, where no user's IDE server
  listens. Other Qwens list every lock file newest first: an agent's file is dated
  back, so a Qwen started elsewhere takes the shared one.

Standard library only; tokens are compared in constant time.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import threading
from dataclasses import dataclass, field

from gemini_companion import env_names, log
from gemini_companion.server import discovery
from gemini_companion.server.http_guard import EDITOR_PATH, HOOKS_PATH, MCP_PATH

CLI_NAMES = {"gemini": "Gemini CLI", "qwen": "Qwen Code"}
FIRST_AGENT_PID = discovery.MAX_PID + 1  # above any PID
LAST_AGENT_PID = 2**31 - 1
AGENT_PORTS = range(1, 1024)
QWEN_PORT_PICKS = 16  # random names tried before every name is looked at


@dataclass(frozen=True)
class Identity:
    cli: str  # "gemini" | "qwen": whose discovery file the token came from; "model": the editor
    # tools'; "hook": the CLIs' lifecycle hooks
    agent: str | None = None  # the managed agent's name; None: a CLI the plugin did not start
    version: str = ""  # the CLI's version from its package (Qwen reports a fixed 1.0.0)

    @property
    def path(self) -> str:
        """The one endpoint this token opens: the IDE client's, the model's tools, or the hooks'."""
        return {"model": EDITOR_PATH, "hook": HOOKS_PATH}.get(self.cli, MCP_PATH)

    def label(self, client_version: str) -> str:
        """`qwen (Qwen Code 0.24.4)`, `external Gemini CLI 0.61.0`."""
        version = self.version or (client_version if self.cli == "gemini" else "")
        product = f"{CLI_NAMES.get(self.cli, 'the model')} {version}".strip()
        return f"{self.agent} ({product})" if self.agent else f"external {product}"


@dataclass
class AgentFiles:
    name: str
    cli: str | None
    version: str
    gemini_pid: int
    qwen_port: int
    gemini_token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    qwen_token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    files: list[str] = field(default_factory=list)


class Access:
    """The tokens the server accepts, and the agents' discovery files. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens: dict[bytes, Identity] = {}
        self._agents: dict[str, AgentFiles] = {}

    def identify(self, authorization: bytes) -> Identity | None:
        """The identity behind an Authorization header; None when it is no token of ours."""
        found = None
        with self._lock:
            tokens = list(self._tokens.items())
        for expected, identity in tokens:  # every one compared: the time says nothing
            if hmac.compare_digest(authorization, expected):
                found = identity
        return found

    def serve(self, ad: discovery.Advertisement) -> None:
        """Accept the shared files' tokens (a new server: agents register again)."""
        log.secret(ad.token, ad.qwen_token, ad.tools_token, ad.hooks_token)
        with self._lock:
            self._tokens = {
                _bearer(ad.token): Identity("gemini"),
                _bearer(ad.qwen_token): Identity("qwen"),
                _bearer(ad.tools_token): Identity("model"),
                _bearer(ad.hooks_token): Identity("hook"),
            }

    def register(
        self,
        ad: discovery.Advertisement,
        name: str,
        cli: str | None = None,
        version: str = "",
        gemini_pid: int = 0,
        qwen_port: int = 0,
    ) -> dict[str, object]:
        """Write an agent's files (re-using its numbers when given) and return its environment.
        `cli` and `version`: what the agent's command runs, when its package says so."""
        self.unregister(name)
        agent = AgentFiles(
            name,
            cli,
            version,
            gemini_pid if FIRST_AGENT_PID <= gemini_pid <= LAST_AGENT_PID else _free_gemini_pid(),
            qwen_port if qwen_port in AGENT_PORTS else _free_qwen_port(),
        )
        gemini_path = os.path.join(discovery.gemini_dir(), f"gemini-ide-server-{agent.gemini_pid}.json")
        qwen_path = os.path.join(discovery.qwen_dir(), discovery.qwen_file_name(agent.qwen_port))
        gemini = {**ad.gemini_payload(), "authToken": agent.gemini_token, "stdio": discovery.stdio_command(gemini_path)}
        qwen = {**ad.qwen_payload(), "authToken": agent.qwen_token, "stdio": discovery.stdio_command(qwen_path)}
        for path, payload in ((gemini_path, gemini), (qwen_path, qwen)):
            directory, file_name = os.path.split(path)
            discovery.ensure_dir(directory)
            agent.files.append(discovery.write_secret_json(directory, file_name, payload))
        os.utime(qwen_path, (0, 0))  # oldest of all: a Qwen started elsewhere prefers the shared file
        with self._lock:
            self._agents[name] = agent
            log.secret(agent.gemini_token, agent.qwen_token)
            for kind, token in (("gemini", agent.gemini_token), ("qwen", agent.qwen_token)):
                self._tokens[_bearer(token)] = Identity(kind, name, version if kind == cli else "")
        return {
            "gemini_pid": agent.gemini_pid,
            "qwen_port": agent.qwen_port,
            "env": {
                env_names.GEMINI_PID: str(agent.gemini_pid),
                env_names.GEMINI_TOKEN: agent.gemini_token,
                env_names.GEMINI_STDIO_ARGS: json.dumps(gemini["stdio"]["args"]),
                env_names.QWEN_PORT: str(agent.qwen_port),
                env_names.QWEN_STDIO_ARGS: json.dumps(qwen["stdio"]["args"]),
            },
        }

    def rewrite(self, ad: discovery.Advertisement) -> None:
        """The workspace changed: every agent's files say so too."""
        with self._lock:
            agents = list(self._agents.values())
        for agent in agents:
            self.register(ad, agent.name, agent.cli, agent.version, agent.gemini_pid, agent.qwen_port)

    def unregister(self, name: str) -> None:
        with self._lock:
            agent = self._agents.pop(name, None)
            if agent is None:
                return
            self._tokens.pop(_bearer(agent.gemini_token), None)
            self._tokens.pop(_bearer(agent.qwen_token), None)
        for path in agent.files:
            discovery.remove(path)

    def clear(self) -> None:
        """The server stopped: no token is valid and no agent file stays."""
        with self._lock:
            names = list(self._agents)
        for name in names:
            self.unregister(name)
        with self._lock:
            self._tokens = {}

    def files(self) -> list[str]:
        with self._lock:
            return [path for agent in self._agents.values() for path in agent.files]


def _bearer(token: str) -> bytes:
    return b"Bearer " + token.encode()


def _free_gemini_pid() -> int:
    directory = discovery.gemini_dir()
    while True:
        number = FIRST_AGENT_PID + secrets.randbelow(LAST_AGENT_PID - FIRST_AGENT_PID)
        if not os.path.lexists(os.path.join(directory, f"gemini-ide-server-{number}.json")):
            return number


def _free_qwen_port() -> int:
    """A random free lock file name. Random picks first: a few agents' files among 1023 names, so the
    first is nearly always free (looking at every name cost an agent's start 3-25 ms before its spawn)."""
    directory = discovery.qwen_dir()

    def free(port: int) -> bool:
        return not os.path.lexists(os.path.join(directory, discovery.qwen_file_name(port)))

    for _ in range(QWEN_PORT_PICKS):
        port = secrets.choice(AGENT_PORTS)
        if free(port):
            return port
    ports = [port for port in AGENT_PORTS if free(port)]
    if not ports:
        raise RuntimeError(f"no free agent lock file name in {directory}")
    return secrets.choice(ports)
