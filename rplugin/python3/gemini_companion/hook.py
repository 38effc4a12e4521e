"""A CLI's lifecycle hook, run by Gemini CLI or Qwen Code for each turn and tool: tells the
editor "turn started / tool X ran / turn ended" and exits 0 at once, whatever happens.

The CLIs' settings name it through the environment (`GEMINI_COMPANION_HOOK`, see
cli_settings.lua and qwen_defaults.lua): outside Neovim the variable is unset and the hook is
a shell `test` that costs nothing. `python hook.py EVENT` reads the CLI's JSON from stdin and
POSTs it to the server (`GEMINI_COMPANION_HOOK_URL`, bearer `GEMINI_COMPANION_HOOK_TOKEN`).
A turn start waits for the editor's snapshot (bounded); nothing here can fail or block the
agent beyond that bound. Standard library only; started fresh for every event.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request

WAIT_SECONDS = {"turn-start": 8.0}  # the snapshot; every other event: a short bound
DEFAULT_SECONDS = 2.0
KEPT = ("session_id", "cwd", "hook_event_name", "tool_name", "tool_input", "prompt_id")


def main() -> None:
    event = sys.argv[1] if len(sys.argv) > 1 else ""
    url, token = os.environ.get("GEMINI_COMPANION_HOOK_URL"), os.environ.get("GEMINI_COMPANION_HOOK_TOKEN")
    if not url or not token:
        return
    try:
        payload = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        payload = {}
    if not isinstance(payload, dict):
        payload = {}
    tool_input = payload.get("tool_input")
    if isinstance(tool_input, dict):  # paths and commands only: never a file's content
        payload["tool_input"] = {k: v for k, v in tool_input.items() if k in ("file_path", "path", "command")}
    body = {key: payload[key] for key in KEPT if key in payload}
    body.update(event=event, agent=os.environ.get("GEMINI_COMPANION_AGENT") or None)
    body.setdefault("cwd", os.getcwd())
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        method="POST",
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never via a proxy
    try:
        with opener.open(request, timeout=WAIT_SECONDS.get(event, DEFAULT_SECONDS)) as response:
            response.read()
    except Exception:  # noqa: BLE001 - Neovim gone or slow: the agent goes on regardless
        pass


if __name__ == "__main__":
    try:
        main()
    finally:
        sys.stdout.write("{}\n")  # exit 0 with an empty decision: "go on"
        sys.exit(0)
