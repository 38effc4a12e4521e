"""A kept agent (agents/kept.lua) calls its editor tools with the session id the server before this
one issued: the CLIs never initialize again after a 404, so on the editor tools' endpoint a session
of its token is resumed. The IDE endpoint's sessions stay strict."""

from __future__ import annotations

import http.client
import json

LIST = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
OLD_SESSION = "0123456789abcdef0123456789abcdef"  # secrets.token_hex(16), as the last server issued


def post(port: int, headers: dict[str, str], body: str, path: str = "/mcp") -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", path, body=body.encode(), headers={"Content-Type": "application/json", **headers})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_an_editor_tools_session_of_an_earlier_server_is_resumed_and_only_that(editor):
    status = editor.status()
    port, tools = status["port"], status["tools"]["headers"]["Authorization"]
    code, body = post(port, {"Authorization": tools, "mcp-session-id": OLD_SESSION}, LIST, "/mcp/editor")
    assert code == 200, body
    assert "get_open_buffers" in [tool["name"] for tool in json.loads(body)["result"]["tools"]]
    # The IDE endpoint's sessions, and ids no server of ours issued, stay unknown.
    ide = f"Bearer {editor.env('GEMINI_CLI_IDE_AUTH_TOKEN')}"
    assert post(port, {"Authorization": ide, "mcp-session-id": OLD_SESSION}, LIST)[0] == 404
    for session in ("../../etc", "x" * 65, "a b"):
        assert post(port, {"Authorization": tools, "mcp-session-id": session}, LIST, "/mcp/editor")[0] == 404
