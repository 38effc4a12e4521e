"""Where the CLIs keep their conversations in a sandbox, and the recorded ones tests/harness/data holds
(tests/agents/test_sessions.py and benchmarks/bench_sessions.py share them)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from conftest import HARNESS, Sandbox
from harness.fake_model import FakeModel
from harness.tui import gemini_settings, qwen_settings

DATA = HARNESS / "data" / "sessions"


QWEN_ID = "bce5e18d-ef17-48bc-baad-1e2f280f43a4"


def gemini_chats(sandbox: Sandbox) -> Path:
    """The sandbox's Gemini home, with this workspace's session files copied from the real CLI."""
    gemini_settings(sandbox.home, ide_enabled=False)
    root = sandbox.home / ".gemini"
    (root / "projects.json").write_text(json.dumps({"projects": {str(sandbox.project): "project"}}))
    chats = root / "tmp" / "project" / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    (chats.parent / ".project_root").write_text(str(sandbox.project))
    for file in (DATA / "gemini-0.61.0").iterdir():
        shutil.copy(file, chats / file.name)
    return chats


def qwen_chats(sandbox: Sandbox) -> Path:
    """Qwen's folder for this workspace, with the real CLI's session (its cwd made this workspace's)."""
    qwen_settings(sandbox.home, ide_enabled=False)
    slug = re.sub("[^a-zA-Z0-9]", "-", str(sandbox.project))
    chats = sandbox.home / ".qwen" / "projects" / slug / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    text = (DATA / "qwen-0.24.4" / f"{QWEN_ID}.jsonl").read_text()
    text = text.replace("/tmp/probe22/q2/project", str(sandbox.project))
    (chats / f"{QWEN_ID}.jsonl").write_text(text)
    return chats


def gemini_env(sandbox: Sandbox, model: FakeModel) -> dict[str, str]:
    return dict(
        sandbox.env,
        GEMINI_CLI_HOME=str(sandbox.home),
        GEMINI_API_KEY="stand-in",
        GOOGLE_GEMINI_BASE_URL=model.url,
        GEMINI_CLI_TRUST_WORKSPACE="true",
    )


def session_text(
    session_id: str,
    prompt: str,
    *,
    preamble: str = "setup",
    summary: str | None = None,
    updated: str = "2026-11-25T23:00:00.000Z",
) -> str:
    """A Gemini session file as gemini-cli 0.61.0 writes it: header, preamble, prompt, answer."""
    lines: list[Any] = [
        {"sessionId": session_id, "projectHash": "x", "startTime": "2026-11-25T22:07:02.608Z", "kind": "main"},
        {"$set": {"messages": [{"id": "p", "type": "user", "content": [{"text": f"<session_context>\n{preamble}"}]}]}},
        {"id": "u", "type": "user", "content": [{"text": prompt}]},
        {"$set": {"lastUpdated": updated}},
        {"id": "g", "type": "gemini", "content": "an answer"},
    ]
    if summary is not None:
        lines.append({"$set": {"summary": summary}})
    return "".join(json.dumps(line) + "\n" for line in lines)
