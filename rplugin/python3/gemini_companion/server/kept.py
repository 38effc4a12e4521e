"""Agents that outlived their Neovim (`terminal.tmux.keep`, agents/kept.lua): the port and tokens
they were given, served again by the next Neovim in that workspace so their editor tools (whose URL
and token a CLI reads once, at its start) and turn hooks (whose key file names the hooks token)
answer again. What the record says is data: only a well-formed port and tokens are taken from it.
Standard library only (launch.py imports it before the server loads).
"""

from __future__ import annotations

import re

from gemini_companion.server.discovery import Advertisement

TOKEN = re.compile(r"[A-Za-z0-9_-]{32,128}")  # launch.new_token's hex, access.py's urlsafe
TOKENS = ("token", "qwen_token", "tools_token", "hooks_token")


def server(reuse: object) -> tuple[int, dict[str, str]] | None:
    """The port and tokens in `reuse` when every one of them is well formed; else None (a new
    server, as without a record)."""
    if not isinstance(reuse, dict):
        return None
    port = reuse.get("port")
    if not isinstance(port, int) or isinstance(port, bool) or not 1024 <= port <= 65535:
        return None
    tokens = {name: reuse.get(name) for name in TOKENS}
    checked = {name: token for name, token in tokens.items() if isinstance(token, str) and TOKEN.fullmatch(token)}
    return (port, checked) if len(checked) == len(TOKENS) else None


def secrets(ad: Advertisement) -> dict[str, object]:
    """What a record keeps of a running server."""
    return {"port": ad.port, **{name: getattr(ad, name) for name in TOKENS}}
