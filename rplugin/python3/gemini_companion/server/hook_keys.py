"""The files hook.py reads to find this Neovim's server (see hook.py): one for every terminal of
this Neovim, and one per managed agent (it names the agent, so the turn is the agent's whatever
its environment says). Each is named by a key that only the environment carries (opaque: a
keyed hash of the server's secret hooks token, so the terminal environment can name it without
state), holds the hooks port and token, and is written 0600 and atomically in a directory of
ours (discovery.py's checked writes). Thread-safe; standard library only.
"""

from __future__ import annotations

import hmac
import os
import threading

from gemini_companion import owner
from gemini_companion.programs.hook import KEY_LENGTH, key_dir, valid_key
from gemini_companion.server import discovery


def key_for(ad: discovery.Advertisement, agent: str | None = None) -> str:
    """The key naming the terminals' file (agent None) or an agent's, for this server."""
    label = "terminals" if agent is None else f"agent:{agent}"
    return hmac.new(ad.hooks_token.encode(), label.encode(), "sha256").hexdigest()[:KEY_LENGTH]


class HookKeys:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._written: dict[str | None, str] = {}  # agent name (None: the terminals') -> file

    def write(self, ad: discovery.Advertisement, agent: str | None = None) -> str:
        """Write the file for the terminals (agent None) or one agent; its key."""
        key = key_for(ad, agent)
        directory = key_dir()
        discovery.ensure_dir(directory)
        payload = {
            "port": ad.port,
            "token": ad.hooks_token,
            "agent": agent,
            owner.OWNER_FIELD: os.getpid(),
            owner.OWNER_START_FIELD: owner.process_start(os.getpid()),
        }
        path = discovery.write_secret_json(directory, f"{key}.json", payload)
        with self._lock:
            self._written[agent] = path  # the same path for this agent while the server runs
        return key

    def remove(self, agent: str | None) -> None:
        with self._lock:
            path = self._written.pop(agent, None)
        if path is not None:
            discovery.remove(path)

    def clear(self) -> None:
        with self._lock:
            paths, self._written = list(self._written.values()), {}
        for path in paths:
            discovery.remove(path)


def sweep_stale() -> int:
    """Remove key files whose host is gone (a crashed Neovim's); how many."""
    directory = key_dir()
    if discovery.check_dir(directory):
        return 0
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    paths = [os.path.join(directory, name) for name in names if name.endswith(".json") and valid_key(name[:-5])]
    stale = [path for path in paths if discovery.is_stale(path, None, None)]
    for path in stale:
        discovery.remove(path)
    return len(stale)
