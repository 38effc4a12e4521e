"""A CLI's lifecycle hook, run by Gemini CLI or Qwen Code for each turn and tool: tells the
editor "turn started / tool X ran / turn ended" and exits 0 at once, whatever happens.

The CLIs' settings run it as a fixed command (changes/hooks.lua): this file, on the plugin's
own Python with `-I -S`. Where it reports to comes from nothing a project can set: a CLI loads
a project's `.env` into its environment, so the environment carries only `KEY_ENV`, an opaque
random key, and the port and token are in the file that key names, in a directory of ours under
/tmp (not TMPDIR: a `.env` may set that). The file must be ours and 0600, its directories ours
and writable by no one else; anything else (no key, a forged one, no file) means "not in this
Neovim": nothing is sent. It only ever POSTs to http://127.0.0.1:<port>/hooks. The host writes
the files (hook_keys.py).
A turn start waits for the editor's snapshot (bounded); an event that only tells the agent's
state (a question for the user, which the CLI waits on) waits only for the server's receipt;
nothing here can fail, decide anything (it prints `{}`) or block the agent beyond those bounds.
Standard library only; started fresh for every event.
"""

from __future__ import annotations

import _socket  # `socket` itself costs 6 ms of a start (enum, selectors): this runs at every event
import os
import stat
import sys

if __name__ == "__main__":  # run by the CLIs' hook command (-I): the folder holding the package goes on sys.path
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from gemini_companion import env_names, files
from gemini_companion.owner import OWNER_FIELD, OWNER_START_FIELD, pid_alive
from gemini_companion.programs import quick_json

KEY_ENV = env_names.HOOK_KEY
KEY_LENGTH = 32  # hex digits
KEY_FILE_BYTES = 4096  # a key file holds a port, a token, an agent name and its owner
HEX = frozenset("0123456789abcdef")
TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
HOOKS_PATH = "/hooks"  # http_guard.HOOKS_PATH (the server's own modules would slow every event)
# The snapshot; "attention" (the CLI waits on it, Gemini before drawing its dialog): only the
# server's receipt, which it sends before Neovim hears of it; every other event: a short bound.
WAIT_SECONDS = {"turn-start": 8.0, "attention": 1.0}
DEFAULT_SECONDS = 2.0
KEPT = (
    "session_id",
    "cwd",
    "hook_event_name",
    "tool_name",
    "tool_input",
    "prompt_id",
    "notification_type",
    "message",
    "title",
    "source",
    "transcript_path",
    "error",
    "error_details",
    "details",
)
TOOL_INPUT = ("file_path", "path", "command")  # what names things, never a file's content
NAMING = ("tool_input", "details")  # the objects kept, each cut down to its strings above
DETAILS = ("type", "title", "command", "rootCommand", "fileName")  # Gemini's edit details carry whole files
MAX_TEXT = 2000  # characters of any one string kept


def key_dir() -> str:
    """Where the key files are: fixed per user, never from the environment."""
    return f"/tmp/gemini-companion-{os.getuid()}/hooks"


def valid_key(key: str) -> bool:
    return len(key) == KEY_LENGTH and set(key) <= HEX


def _our_dir(st: os.stat_result) -> bool:
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def read_key(key: str) -> tuple[int, str, str | None] | None:
    """The port, token and agent name in the key's file; None unless all is ours and well-formed."""
    if not valid_key(key):
        return None
    directory = key_dir()
    try:
        if not _our_dir(os.lstat(os.path.dirname(directory))):
            return None
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            if not _our_dir(os.fstat(dfd)):
                return None
            text, _ = files.read(
                f"{key}.json", KEY_FILE_BYTES, dir_fd=dfd, follow=False, owner=os.getuid(), private=True
            )
        finally:
            os.close(dfd)
        data = quick_json.loads(text)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    port, token, agent = data.get("port"), data.get("token"), data.get("agent")
    if type(port) is not int or not 0 < port < 65536:
        return None
    if not isinstance(token, str) or not 0 < len(token) <= 200 or not set(token) <= TOKEN_CHARS:
        return None
    # A file a killed host left: its port may be anyone's now, and its PID too (the start time says).
    owner, started = data.get(OWNER_FIELD), data.get(OWNER_START_FIELD)
    if type(owner) is not int or not pid_alive(owner, started if type(started) is int else None):
        return None
    return port, token, agent if isinstance(agent, str) else None


def body(event: str, agent: str | None, stdin: str) -> bytes:
    """What the server gets: the event, the agent, and the CLI's fields that name things (never
    a file's content)."""
    try:
        payload = quick_json.loads(stdin or "{}")
    except (ValueError, RecursionError):  # nested deeper than Python's reader goes: no fields kept
        payload = {}
    if not isinstance(payload, dict):
        payload = {}
    tool_input = payload.get("tool_input")
    if isinstance(tool_input, dict):  # paths and commands only, and the first question asked
        kept_input = _strings(tool_input, TOOL_INPUT)
        questions = tool_input.get("questions")
        if isinstance(questions, list) and questions and isinstance(questions[0], dict):
            kept_input.update(_strings({"question": questions[0].get("question")}, ("question",)))
        payload["tool_input"] = kept_input
    details = payload.get("details")
    payload["details"] = _strings(details, DETAILS) if isinstance(details, dict) else None
    kept = {
        key: _bounded(value)
        for key in KEPT
        if isinstance(value := payload.get(key), str) or (key in NAMING and isinstance(value, dict))
    }
    kept.update(event=event, agent=agent)
    kept.setdefault("cwd", os.getcwd())
    return quick_json.dumps(kept).encode()


def _bounded(value: object) -> object:
    """A string cut to MAX_TEXT, its lone surrogates (JSON's `\\ud800`: no character) made U+FFFD:
    the server takes only Unicode, and a dropped event would leave the agent's state behind."""
    if not isinstance(value, str):
        return value
    # JSON's reading joins the pairs: any surrogate left is alone, and becomes U+FFFD here.
    return value[:MAX_TEXT].encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _strings(fields: dict[str, object], keys: tuple[str, ...]) -> dict[str, object]:
    """The string fields of `keys`, each bounded."""
    return {key: _bounded(fields[key]) for key in keys if isinstance(fields.get(key), str)}


def post(port: int, token: str, data: bytes, timeout: float) -> None:
    """POST to this Neovim's loopback server and wait for its answer (a plain socket: it starts
    faster than http.client, and no proxy setting can ever apply)."""
    head = (
        f"POST {HOOKS_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    )
    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(("127.0.0.1", port))
        sock.sendall(head.encode() + data)
        sock.recv(1)  # the answer has begun: the server is done with the event
    finally:
        sock.close()


def main() -> None:
    event = sys.argv[1] if len(sys.argv) > 1 else ""
    found = read_key(os.environ.get(KEY_ENV, ""))
    if found is None:
        return
    port, token, agent = found
    data = body(event, agent, sys.stdin.buffer.read().decode("utf-8", "replace"))  # any bytes: an event
    try:
        post(port, token, data, WAIT_SECONDS.get(event, DEFAULT_SECONDS))
    except OSError:  # Neovim gone or slow: the agent goes on regardless
        pass


if __name__ == "__main__":
    try:
        main()
    except Exception:  # noqa: BLE001 - whatever happens, the agent goes on
        pass
    finally:
        sys.stdout.write("{}\n")  # exit 0 with an empty decision: "go on"
        sys.exit(0)
