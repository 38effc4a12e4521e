"""ASGI gate in front of the MCP app: every request proves it is local and ours.

Checks, in order, before any byte of the body is read or any handler runs:
Host is 127.0.0.1:PORT or localhost:PORT (DNS rebinding), no Origin header or
the server's own (the CLIs send none; every other web page, a rebound one included,
sends a foreign one; a page from this very address is held off by the token alone
anyway, as browsers send no Origin on its GETs), path is /mcp (the IDE client's),
/mcp/editor (the model's tools) or /hooks (the CLIs' hooks), and
`Authorization: Bearer <token>` known to `identify` (which compares in constant
time); the identity it returns goes on in `scope["identity"]`.
An Upgrade (WebSocket) request is a plain request here: server/http.py never switches protocols.

`parse_json` and `quote` keep bad input small: a body is strict JSON or a one-line 4xx, and an
error names an argument by a short prefix only.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from gemini_companion import log

Message = MutableMapping[str, Any]
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MCP_PATH = "/mcp"  # the IDE client's endpoint
EDITOR_PATH = "/mcp/editor"  # the model's editor tools (tools.py)
HOOKS_PATH = "/hooks"  # the CLIs' lifecycle hooks (hook.py): plain JSON, not MCP
MAX_DEPTH = 64  # JSON nesting a request may have; the clients' messages need about 5
QUOTE_CHARS = 48  # what an error message quotes of an argument
MAX_PATH = 4096  # bytes of a path (Linux PATH_MAX): a longer argument names no file


def quote(value: str, limit: int = QUOTE_CHARS) -> str:
    """`value` as an error message names it: repr'd (one line, control characters escaped), at
    most `limit` characters of it; an 8 MiB path never comes back as 8 MiB."""
    return repr(value[:limit]) + ("..." if len(value) > limit else "")


def parse_json(body: bytes) -> Any:
    """A request body as strict JSON: UTF-8, no NaN/Infinity, no float that overflows, no lone
    surrogate, at most MAX_DEPTH levels deep. ValueError with a one-line reason otherwise (what
    Python's json would let through here fails later, as a 500 or a message no client parses)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"the body is not UTF-8 (byte {err.start})") from None
    try:
        value = json.loads(text, parse_constant=_constant, parse_float=_finite)
    except _NotJson as err:
        raise ValueError(str(err)) from None
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"the body is not JSON ({err.msg} at char {err.pos})") from None
    except ValueError:  # the only other: an integer past Python's digit limit
        raise ValueError("a number has too many digits") from None
    if _deeper(value, MAX_DEPTH):
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    if re.search(r"\\u[dD][89a-fA-F]", text):  # a surrogate escape: a pair, or not Unicode at all
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a string holds a lone surrogate (not valid Unicode)") from None
    return value


class _NotJson(ValueError):
    pass


def _constant(name: str) -> Any:
    raise _NotJson(f"{name} is not JSON")


def _finite(literal: str) -> float:
    number = float(literal)
    if math.isinf(number):
        raise _NotJson(f"the number {quote(literal, 24)} does not fit a double")
    return number


def _deeper(value: Any, limit: int) -> bool:
    """Whether arrays and objects nest deeper than `limit` (a loop: no recursion to run out of)."""
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


async def reply(send: Send, status: int, message: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": body})


class RequestGuard:
    """Wraps the MCP ASGI app: only what passes every check reaches it."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        identify: Callable[[bytes], object | None],
        port: int,
        max_body: int,
    ) -> None:
        self._app = app
        self._identify = identify
        self._hosts = {f"127.0.0.1:{port}".encode(), f"localhost:{port}".encode()}
        self._origins = {b"http://" + host for host in self._hosts}
        self._max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:
            headers.setdefault(name, value)
        if headers.get(b"host") not in self._hosts:
            await _refuse(scope, send, 421, "bad host")
            return
        origin = headers.get(b"origin")
        if origin is not None and origin not in self._origins:
            await _refuse(scope, send, 403, "origin not allowed")
            return
        if scope["path"] not in (MCP_PATH, EDITOR_PATH, HOOKS_PATH):
            await _refuse(scope, send, 404, "not found")
            return
        identity = self._identify(headers.get(b"authorization", b""))
        if identity is None:
            await _refuse(scope, send, 401, "unauthorized", [(b"www-authenticate", b"Bearer")])
            return
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self._max_body):
            await _refuse(scope, send, 413, "request body too large")
            return
        scope["identity"] = identity
        await self._app(scope, receive, send)


async def _refuse(
    scope: Scope, send: Send, status: int, message: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    """Answer a request that failed a check, and say so in the log (what was refused, never its headers)."""
    log.write(log.WARN, f"refused {scope.get('method')} {quote(str(scope.get('path')), 100)}: {status} {message}")
    await reply(send, status, message, extra)
