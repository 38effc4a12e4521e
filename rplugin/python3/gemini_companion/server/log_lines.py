"""What the log says of a message (MCP params, results, hook events, Lua hops): names and sizes, never contents.

A string is written only under a key that names something (NAME_KEYS: a tool, an event; or a key
ending in "path"); any other string — a file's text, a selection, a proposal, a header — is
written as its length. Deep or long values are cut, so a line stays short whatever a client sent.
"""

from __future__ import annotations

from typing import Any

from gemini_companion.server.http_guard import quote

# Keys whose string values name things (paths, tools, events, methods) rather than hold text.
NAME_KEYS = frozenset(
    {
        "path",
        "filePath",
        "file_path",
        "absolute_path",
        "name",
        "uri",
        "cwd",
        "severity",
        "method",
        "state",
        "cli",
        "version",
        "tool_name",
        "hook_event_name",
        "event",
        "source",
        "session",
        "session_id",
        "agent",
        "label",
        "reason",
        "outcome",
        "kind",
        "protocolVersion",
        "level",
        "workspace",
        "state_dir",
    }
)
NAME_CHARS = 200  # a name longer than this is cut
ITEMS = 3  # of a list, the first few
KEYS = 20  # of an object, at most this many keys
DEPTH = 4


def summary(value: Any) -> str:
    """`value` as the log shows it: `{filePath='/a/b.txt' newContent=<1234 chars>}`."""
    parts: list[str] = []
    _summary(value, "", 0, parts)
    return "".join(parts)


def request(
    label: str, name: str, request_id: Any, params: Any, answer: dict[str, Any] | None = None, ms: float = 0.0
) -> str:
    """A client's request as it arrives, or (with its answer) once answered, with the time it took."""
    shown = request_id if isinstance(request_id, int) else quote(str(request_id), 40)  # a string: any length
    line = f"{label} → {quote(name, 100)} #{shown} {summary(params)}"
    return line if answer is None else f"{line} → {result(answer)} in {ms:.1f} ms"


def result(answer: dict[str, Any]) -> str:
    """A JSON-RPC answer: its error, or what its result holds (items and characters; a tool's own
    error text, which is ours, in full)."""
    if "error" in answer:
        err = answer["error"]
        return f"error {err.get('code')}: {str(err.get('message'))[:NAME_CHARS]}"
    res = answer.get("result")
    if not isinstance(res, dict) or not isinstance(res.get("content"), list):
        return "ok"
    texts = [str(item.get("text", "")) for item in res["content"] if isinstance(item, dict)]
    if res.get("isError"):
        return "tool error: " + " ".join(texts)[:NAME_CHARS]
    return f"ok ({len(texts)} items, {sum(len(text) for text in texts)} chars)"


def _summary(value: Any, key: str, depth: int, out: list[str]) -> None:
    """Appends to `out`: one list for the whole line, no string built per level."""
    kind = type(value)
    if kind is str:
        if key in NAME_KEYS or key.endswith(("path", "Path")):
            out.append(repr(value) if len(value) <= NAME_CHARS else repr(value[:NAME_CHARS] + "…"))
        else:
            out.append(f"<{len(value)} chars>")
    elif value is None or kind in (bool, int, float):
        out.append(str(value))
    elif kind is dict:
        if depth >= DEPTH:
            out.append(f"<object of {len(value)}>")
            return
        out.append("{")
        for n, (k, v) in enumerate(value.items()):
            if n == KEYS:
                out.append(f" +{len(value) - KEYS} more")
                break
            name = k if type(k) is str and len(k) <= 40 else str(k)[:40]
            out.append(f"{name}=" if n == 0 else f" {name}=")
            _summary(v, name, depth + 1, out)
        out.append("}")
    elif kind in (list, tuple):
        if depth >= DEPTH:
            out.append(f"<list of {len(value)}>")
            return
        out.append("[")
        for n, item in enumerate(value[:ITEMS]):
            if n:
                out.append(" ")
            _summary(item, key, depth + 1, out)
        if len(value) > ITEMS:
            out.append(f" +{len(value) - ITEMS} more")
        out.append("]")
    else:  # a subclass (a str enum, a dict of another kind): said by its type alone
        out.append(f"<{kind.__name__}>")
