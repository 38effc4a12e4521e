"""What the log says of a message (MCP params, results, hook events, Lua hops): names and sizes, never contents.

A string is written only under a key that names something (a path, a tool, an event); any other
string — a file's text, a selection, a proposal, a header — is written as its length. Deep or
long values are cut, so a line stays short whatever a client sent.
"""

from __future__ import annotations

from typing import Any

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
ITEMS = 3  # of a list, the first few; of an object, every key (a few levels deep)
DEPTH = 4


def summary(value: Any, key: str = "", depth: int = 0) -> str:
    """`value` as the log shows it: `{filePath='/a/b.txt' newContent=<1234 chars>}`."""
    if isinstance(value, str):
        if key in NAME_KEYS:
            return repr(value[:NAME_CHARS] + ("…" if len(value) > NAME_CHARS else ""))
        return f"<{len(value)} chars>"
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, dict):
        if depth >= DEPTH:
            return f"<object of {len(value)}>"
        inner = " ".join(f"{str(k)[:40]}={summary(v, str(k), depth + 1)}" for k, v in list(value.items())[:20])
        more = f" +{len(value) - 20} more" if len(value) > 20 else ""
        return "{" + inner + more + "}"
    if isinstance(value, (list, tuple)):
        if depth >= DEPTH:
            return f"<list of {len(value)}>"
        shown = [summary(item, key, depth + 1) for item in value[:ITEMS]]
        if len(value) > ITEMS:
            shown.append(f"+{len(value) - ITEMS} more")
        return "[" + " ".join(shown) + "]"
    return f"<{type(value).__name__}>"


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
