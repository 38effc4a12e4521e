"""Threats and faults from shared/notes/security-reliability.md not covered elsewhere (issue 6).

Each test names its item (T = threat, R = fault). All run over real HTTP against the real
server in a real Neovim.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import stat
import sys
from pathlib import Path

import pytest

from conftest import ROOT, TIMEOUT, Editor, wait_for
from gemini_companion.server import discovery
from harness.mcp_raw import RawSession, initialize_request


def raw(editor: Editor) -> RawSession:
    return RawSession(editor.status()["port"], editor.env("GEMINI_CLI_IDE_AUTH_TOKEN") or "")


def assert_responsive(editor: Editor) -> None:
    """A trivial request to Neovim answers (through the same RPC the UI depends on)."""
    assert editor.lua("return 1 + 1") == 2


def test_text_plain_post_with_token_is_refused_and_opens_no_session(editor):
    session = raw(editor)
    status, _, _ = session.post_raw(b'{"jsonrpc":"2.0","id":1,"method":"initialize"}', **{"Content-Type": "text/plain"})
    assert 400 <= status < 500
    assert editor.status()["clients"] == []


def test_tool_call_with_an_origin_never_reaches_the_handler(editor, sandbox):
    session = raw(editor)
    session.initialize()
    target = sandbox.project / "victim.txt"
    target.write_text("safe\n")
    call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call"}
    call["params"] = {"name": "openDiff", "arguments": {"filePath": str(target), "newContent": "pwned\n"}}
    status, _, _ = session.post_raw(json.dumps(call).encode(), Origin="http://evil.example")
    assert status == 403
    assert editor.status()["diffs"] == []
    assert target.read_text() == "safe\n"


def test_token_stays_out_of_messages_and_every_argv(editor):
    token = editor.env("GEMINI_CLI_IDE_AUTH_TOKEN")
    assert token
    assert token not in editor.messages()
    editor.nvim.command("GeminiCompanionStatus")
    assert token not in editor.messages()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                assert token.encode() not in (proc / "cmdline").read_bytes(), proc.name
            except OSError:
                continue


def test_discovery_file_is_0600_under_a_permissive_umask(tmp_path, monkeypatch):
    old = os.umask(0)
    try:
        path = Path(discovery.write_secret_json(str(tmp_path), "secret.json", {"authToken": "t"}))
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["secret.json"]  # no temp file left behind


def test_symlink_at_the_final_name_is_replaced_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    ide = tmp_path / "ide"
    ide.mkdir(mode=0o700)
    (ide / "gemini-ide-server-1-2.json").symlink_to(victim)
    discovery.write_secret_json(str(ide), "gemini-ide-server-1-2.json", {"authToken": "t"})
    assert victim.read_text() == "untouched"
    assert not (ide / "gemini-ide-server-1-2.json").is_symlink()


@pytest.mark.parametrize("attack", ["symlink", "world-writable", "foreign-owner"])
def test_unsafe_discovery_directory_is_refused_with_a_clear_error(editor_factory, sandbox, tmp_path, attack):
    elsewhere = tmp_path / "attacker"
    elsewhere.mkdir()
    gemini = sandbox.tmp / "gemini"
    if attack == "symlink":
        gemini.symlink_to(elsewhere)
    elif attack == "world-writable":
        gemini.mkdir()
        gemini.chmod(0o777)
    else:
        if os.getuid() != 0:
            pytest.skip("needs root to create a directory owned by someone else")
        gemini.mkdir(mode=0o700)
        os.chown(gemini, 65534, 65534)
    editor = editor_factory()
    status = wait_for(lambda: (s := editor.status()).get("discovery_errors") and s, what="discovery error")
    assert "refusing" in status["discovery_errors"][0]
    assert list(elsewhere.iterdir()) == []
    assert all("gemini-ide-server" not in f for f in status["discovery_files"])
    wait_for(lambda: "refusing" in editor.messages(), what="the error shown to the user")


def test_cors_preflight_gets_no_allow_origin(editor):
    conn = http.client.HTTPConnection("127.0.0.1", editor.status()["port"], timeout=TIMEOUT)
    conn.request(
        "OPTIONS",
        "/mcp",
        headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
    )
    response = conn.getresponse()
    assert 400 <= response.status < 500
    assert response.getheader("access-control-allow-origin") is None
    conn.close()


def test_unknown_or_forged_session_ids_are_refused(editor):
    session = raw(editor)
    session.session_id = "f" * 32
    status, _ = session.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert status == 404
    # Trying to initialize under a chosen id does not bind a session to it.
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}
    status, _ = session.post(init)
    assert 400 <= status < 500
    status, _ = session.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert status == 404


def test_ten_neovims_start_at_once(editor_factory, sandbox):
    editors = [editor_factory() for _ in range(10)]
    statuses = [editor.wait_state("running") for editor in editors]
    ports = {s["port"] for s in statuses}
    assert len(ports) == 10
    assert len(list(sandbox.gemini_dir.iterdir())) == 10
    assert len(list(sandbox.qwen_dir.iterdir())) == 10


def test_keepalive_reaches_an_idle_stream(editor):
    """The client gives up after ~300 s of silence; the server speaks at least every 30 s."""
    session = raw(editor)
    session.initialize()
    stream = session.open_stream()
    stream.fp.raw._sock.settimeout(45)  # type: ignore[union-attr]
    try:
        while True:
            line = stream.readline()
            assert line, "stream ended"
            if line.startswith(b"data:") and json.loads(line[5:]).get("method") == "ping":
                break
    finally:
        stream.close()


def test_malformed_messages_get_errors_and_the_session_survives(editor):
    session = raw(editor)
    session.initialize()
    status, messages, _ = session.post_raw(b"{not json")
    assert status == 400
    status, messages = session.post({"hello": "world"})
    assert 400 <= status < 500 or messages[0]["error"]
    status, messages = session.post([{"jsonrpc": "2.0", "id": 7, "method": "tools/list"}])
    assert 400 <= status < 500 or "error" in messages[0]
    assert session.call("no/such/method")["error"]["code"] == -32601
    unknown_tool = session.call("tools/call", {"name": "rm_rf", "arguments": {}})
    assert unknown_tool["result"]["isError"] is True
    bad_types = session.call("tools/call", {"name": "openDiff", "arguments": {"filePath": 5, "newContent": None}})
    assert bad_types.get("error") or bad_types["result"]["isError"] is True
    assert {t["name"] for t in session.call("tools/list")["result"]["tools"]} >= {"openDiff", "closeDiff"}
    assert_responsive(editor)


def test_session_limit_is_answered_cleanly(editor):
    sessions = []
    refused = None
    for _ in range(80):
        session = raw(editor)
        status, _, response = session.post_raw(json.dumps(initialize_request()).encode())
        if status != 200:
            refused = status
            break
        session.session_id = response.getheader("mcp-session-id")
        sessions.append(session)
    assert refused == 503
    assert_responsive(editor)
    # The sessions already open still work.
    assert sessions[0].call("tools/list")["result"]["tools"]


@pytest.mark.parametrize("variant", ["trailing-slash", "unset", "nowhere"])
def test_tmpdir_variants(editor_factory, sandbox, monkeypatch, variant, tmp_path):
    if variant == "trailing-slash":
        sandbox.env["TMPDIR"] = str(sandbox.tmp) + "/"
        expected: Path | None = sandbox.tmp / "gemini" / "ide"
    elif variant == "unset":
        sandbox.env.pop("TMPDIR")
        for key in ("TMP", "TEMP"):
            sandbox.env.pop(key, None)
        expected = Path("/tmp/gemini/ide")
    else:
        sandbox.env["TMPDIR"] = str(tmp_path / "does-not-exist")
        expected = None
    editor = editor_factory()
    status = editor.wait_state("running")
    gemini_files = [f for f in status["discovery_files"] if "gemini-ide-server" in f]
    if expected is None:
        assert gemini_files == []
        assert "does not exist" in status["discovery_errors"][0]
    else:
        (only,) = gemini_files
        assert Path(only).parent == expected
        assert Path(only).exists()
    editor.close()
    if expected is not None:
        assert not Path(gemini_files[0]).exists()


def test_accept_header_without_event_stream_on_get_is_refused(editor):
    session = raw(editor)
    session.initialize()
    conn = http.client.HTTPConnection("127.0.0.1", session.port, timeout=TIMEOUT)
    conn.request("GET", "/mcp", headers=session.headers(Accept="application/json"))
    assert 400 <= conn.getresponse().status < 500
    conn.close()


def test_chunked_upload_without_length_is_cut_off_and_neovim_stays_responsive(editor):
    session = raw(editor)
    session.initialize()
    with socket.create_connection(("127.0.0.1", session.port), timeout=TIMEOUT) as sock:
        head = "".join(f"{k}: {v}\r\n" for k, v in session.headers().items())
        sock.sendall(
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{session.port}\r\nTransfer-Encoding: chunked\r\n{head}\r\n".encode()
        )
        chunk = b"x" * (1 << 20)
        answer = b""
        sock.settimeout(1)
        for _ in range(64):  # up to 64 MiB, far past the 32 MiB limit
            try:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except OSError:
                break  # the server hung up on us: fine
            assert_responsive(editor)
            try:
                answer = sock.recv(64)
            except TimeoutError:
                continue
            if answer:
                break
        assert answer.startswith(b"HTTP/1.1 413"), answer
    assert_responsive(editor)
    assert session.call("tools/list")["result"]["tools"]  # the session itself is unharmed


def test_a_client_that_never_reads_does_not_starve_the_others(editor_factory, gemini_factory, sandbox):
    editor = editor_factory(setup={"context": {"debounce_ms": 0}})  # an update per command
    editor.wait_state("running")
    gemini = gemini_factory(editor)
    assert gemini.call("connect")["status"] == "connected"
    stuck = raw(editor)
    stuck.initialize("never-reads")
    stream = stuck.open_stream()  # opened, then never read: its socket buffer fills up
    wait_for(lambda: len(editor.status()["clients"]) == 2, what="both clients registered")
    target = sandbox.project / "big.txt"
    target.write_text("".join(f"{i:06d} " + "x" * 200 + "\n" for i in range(2000)))
    editor.nvim.command(f"edit {target}")
    try:
        # Many large updates (a 16 KiB selection each, about 16 MB in all): far more than
        # the stuck client's socket buffers take.
        for line in range(1, 1000):
            editor.nvim.command(f"normal! {line}GV{line + 80}G")
            editor.lua("return 1")  # a round trip lets the update go out
        editor.nvim.input("<Esc>")
        editor.nvim.command("normal! 1999G")
        wait_for(
            lambda: (
                (c := gemini.call("context"))
                and c["workspaceState"]["openFiles"][0].get("cursor", {}).get("line") == 1999
            ),
            what="the reading client to get the latest context",
        )
        updates = gemini.events.qsize()
        assert updates > 800, updates  # megabytes went to the stuck client's full socket
        assert_responsive(editor)
    finally:
        stream.close()


def test_motion_hammering_while_clients_open_and_close_diffs(tmp_path):
    """A short `make soak`: cursor and selections never stop while three clients cycle diffs."""
    sys.path.insert(0, str(ROOT / "benchmarks"))  # the soak itself, as `make soak` runs it
    from soak import soak

    result = soak(tmp_path, seconds=10)
    assert result.cycles >= 3 and result.motions > 0
    assert result.problems == []
