"""The server's first step: bind the port and write the discovery files.

Before the server's own modules load (see boot.py): a CLI that finds the file
early connects and simply waits in the socket's backlog until the server answers.
"""

from __future__ import annotations

import _socket  # `socket` itself would cost the port file 3 ms (enum flags, selectors)
import os

from gemini_companion import owner
from gemini_companion.server import discovery

TYPE_CHECKING = False  # typing's own costs 3 ms at import; mypy reads this name as typing's
if TYPE_CHECKING:
    import socket


class Launch:
    """A bound port, advertised: what `Companion.start` serves."""

    __slots__ = ("_raw", "ad", "errors", "files", "swept", "taken")

    def __init__(self, raw: _socket.socket, ad: discovery.Advertisement) -> None:
        """Advertise `ad`, served on `raw`: its discovery files written (`files`), or why not
        (`errors`); then the stale files of dead servers removed (`swept`). After, not before: the
        sweep judges each file (three of dead IDEs cost 35-40 ms), a CLI waits for ours, and a stale
        file never bears our names (the port is ours now: a dead server's file of it is replaced)."""
        self._raw = raw
        self.ad = ad
        self.taken: int | None = None  # a kept agents' port that was taken (kept.py): another was bound
        self.files, self.errors = discovery.write_all(ad)
        self.swept = discovery.sweep_stale()

    def listener(self) -> socket.socket:
        return listening(self._raw)

    def abandon(self) -> None:
        """Never served: close the port, take the files back."""
        self._raw.close()
        for path in self.files:
            discovery.remove(path)


def new_token() -> str:
    """256 random bits from the OS, as secrets.token_hex gives them (importing `secrets` costs the
    port file 4 ms: random, hashlib, base64)."""
    return os.urandom(32).hex()


def launch(nvim_pid: int, workspace: list[str], reuse: object = None) -> Launch:
    """`reuse`: the port and tokens agents kept from an earlier Neovim were given (kept.py), served
    again when the port is free; anything else in it is ignored."""
    kept_server = None
    if reuse:  # (imported only then: `re` would cost a plain start's port file)
        from gemini_companion.server import kept

        kept_server = kept.server(reuse)
    sock, taken, tokens = None, None, {}
    if kept_server:
        try:
            sock, tokens = bind_loopback(kept_server[0]), kept_server[1]
        except OSError:
            taken = kept_server[0]
    sock = sock or bind_loopback()
    ad = discovery.Advertisement(
        port=sock.getsockname()[1],
        token=tokens.get("token") or new_token(),
        qwen_token=tokens.get("qwen_token") or new_token(),
        tools_token=tokens.get("tools_token") or new_token(),
        hooks_token=tokens.get("hooks_token") or new_token(),
        ide_pid=ide_pid(nvim_pid),
        nvim_pid=nvim_pid,
        workspace=clean_roots(workspace),
    )
    launched = Launch(sock, ad)
    launched.taken = taken
    return launched


def bind_loopback(port: int = 0) -> _socket.socket:
    """Bind 127.0.0.1 on a free port now (or on `port`: OSError when it is taken), so the port is
    known before anything slow."""
    # IPPROTO_TCP named, not 0: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and
    # accepted sockets inherit it. Without it, a response's body waits behind its headers for the
    # client's delayed ACK (~40 ms on loopback).
    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM, _socket.IPPROTO_TCP)
    # As asyncio's servers: the next Neovim can serve this port again at once (agents/kept.lua),
    # though the connections this one leaves at exit linger (FIN-WAIT-2: the CLIs never close them).
    sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    os.set_inheritable(sock.fileno(), False)
    return sock


def listening(raw: _socket.socket) -> socket.socket:
    """The bound socket as asyncio serves it (`socket` is imported now: the port file is out). The
    protocol is passed on, not read back: where there is no SO_PROTOCOL (macOS) it would read as 0,
    and asyncio would leave Nagle on (see bind_loopback)."""
    import socket

    return socket.socket(raw.family, raw.type, raw.proto, raw.detach())


def ide_pid(nvim_pid: int) -> int:
    """The IDE PID the Gemini CLI computes, so our discovery file name matches its search.

    The CLI walks up to its shell and takes the shell's grandparent. The shell's
    parent is the Neovim server process (`nvim_pid`), so the answer is Neovim's
    parent (the TUI client with Neovim >= 0.10), unless that is init.
    """
    parent = _parent_pid(nvim_pid)
    return parent if parent is not None and parent > 1 else nvim_pid


def _parent_pid(pid: int) -> int | None:
    fields = owner.proc_stat(pid)
    if fields is not None:
        return int(fields[1])
    try:  # no procfs (macOS): psutil knows; imported only here, it costs 25 ms
        import psutil

        return int(psutil.Process(pid).ppid())
    except Exception:  # noqa: BLE001 - gone, or no permission: then Neovim itself
        return None


def clean_roots(roots: list[str]) -> list[str]:
    """Absolute, existing, de-duplicated workspace roots, in the given order."""
    seen: list[str] = []
    for root in roots:
        # The CLIs split workspacePath on ':', so such a root cannot be advertised.
        if not isinstance(root, str) or not os.path.isabs(root) or os.pathsep in root:
            continue
        path = os.path.realpath(root)
        if os.path.isdir(path) and path not in seen:
            seen.append(path)
    return seen
