"""The real Gemini and Qwen IDE clients discover, connect to and identify the server."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from conftest import NODE_DIR, NodeClient, client_env


def test_gemini_file_matches_what_the_client_reads(editor, sandbox):
    status = editor.status()
    files = sorted(sandbox.gemini_dir.iterdir())
    assert [f.name for f in files] == [f"gemini-ide-server-{status['pid']}-{status['port']}.json"]
    data = json.loads(files[0].read_text())
    assert data["port"] == status["port"]
    assert data["workspacePath"] == os.path.realpath(sandbox.project)
    assert data["ideInfo"] == {"name": "neovim", "displayName": "Neovim"}
    assert len(data["authToken"]) >= 32
    # The IDE PID is what the CLI computes from a shell in :terminal: Neovim's parent (here, pytest).
    assert status["pid"] == os.getpid()
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert editor.env("GEMINI_CLI_IDE_AUTH_TOKEN") == data["authToken"]
    assert editor.env("GEMINI_CLI_IDE_SERVER_PORT") == str(status["port"])
    assert editor.env("GEMINI_CLI_IDE_PID") == str(status["pid"])


def test_qwen_lock_file(editor, sandbox):
    status = editor.status()
    lock = sandbox.qwen_dir / f"{status['port']}.lock"
    data = json.loads(lock.read_text())
    assert data["ppid"] == editor.pid
    assert data["ideInfo"]["name"] == "neovim" and data["ideName"] == "Neovim"
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    assert editor.env("QWEN_CODE_IDE_SERVER_PORT") == str(status["port"])


def test_real_gemini_client_connects_and_detects_neovim(editor, gemini):
    result = gemini.call("status")
    assert result["status"] == "connected"
    assert result["ide"] == "Neovim"
    clients = editor.status()["clients"]
    assert [c["name"] for c in clients] == ["streamable-http-client"]


def test_real_gemini_client_discovers_from_file_alone(editor, gemini_factory, sandbox):
    """No inherited variables: the file found by PID and workspace is enough."""
    env = {k: v for k, v in client_env(editor).items() if not k.startswith("GEMINI_CLI_IDE_")}
    env["GEMINI_CLI_IDE_PID"] = str(editor.status()["pid"])
    client = NodeClient("gemini_client.mjs", env, sandbox.project)
    try:
        assert client.call("connect")["status"] == "connected"
    finally:
        client.close()


def test_gemini_client_outside_workspace_is_told_directory_mismatch(editor, gemini_factory, tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    client = gemini_factory(editor, cwd=elsewhere)
    result = client.call("connect")
    assert result["status"] == "disconnected"
    assert "Directory mismatch" in result["details"]


def test_real_qwen_client_connects(editor, sandbox):
    node = str(NODE_DIR / "node_modules" / ".bin" / "node")
    client = NodeClient("qwen_client.mjs", client_env(editor), sandbox.project, node=node)
    try:
        result = client.call("connect")
        assert result["status"] == "connected", result
        assert result["ide"] == "Neovim"
    finally:
        client.close()
