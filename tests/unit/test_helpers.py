"""The pure helpers, without Neovim or a network: path checks, line endings, context shaping,
discovery names, process liveness, and the MCP server's JSON-RPC answers (driven as ASGI)."""

from __future__ import annotations

import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from conftest import nvim_binary
from gemini_companion import owner
from gemini_companion.context import context
from gemini_companion.review import review
from gemini_companion.server import access, discovery, jsonrpc, launch, mcp_server, session


@pytest.mark.parametrize("content", ["", "a", "a\n", "a\nb", "a\r\nb\r\n", "a\r\nb\n", "\n\n", "é\r\n漢\r\n", "x\r"])
def test_split_gives_back_exactly_the_content(content):
    parts = review._split(content)
    assert parts["text"] + (parts["eol"] if parts["final_newline"] else "") == content
    assert parts["eol"] == ("\r\n" if content.count("\r\n") and content.count("\r\n") == content.count("\n") else "\n")


def _first_change_by_lines(original: str, proposal: str) -> int:
    """The obvious definition: both texts split into lines, the first pair that differs."""
    old, new = review._split(original), review._split(proposal)
    a, b = old["text"].split(old["eol"]), new["text"].split(new["eol"])
    first = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return max(1, min(first + 1, len(b)))


def test_first_change_points_at_the_first_differing_line():
    assert review._first_change(review._split("a\nb\nc\n"), review._split("a\nB\nc\n")) == 2
    assert review._first_change(review._split("a\n"), review._split("a\nb\n")) == 2
    assert review._first_change(review._split("a\n"), review._split("a\n")) == 1


def test_first_change_agrees_with_comparing_line_by_line():
    # Short alphabets, so texts share long prefixes and end at every kind of boundary; a block
    # smaller than the texts crosses block edges too. Both line endings, mixed ones, none.
    rng = random.Random(7)
    pieces = ["a", "b", "\n", "\r\n", "\r", "é"]
    for _ in range(3000):
        original = "".join(rng.choice(pieces) for _ in range(rng.randrange(12)))
        proposal = original[: rng.randrange(len(original) + 1)] + "".join(
            rng.choice(pieces) for _ in range(rng.randrange(6))
        )
        if rng.random() < 0.3:
            proposal = proposal.replace("\r\n", "\n") if rng.random() < 0.5 else proposal.replace("\n", "\r\n")
        got = review._first_change(review._split(original), review._split(proposal))
        assert got == _first_change_by_lines(original, proposal), (original, proposal)
        common = next((i for i, (x, y) in enumerate(zip(original, proposal, strict=False)) if x != y), None)
        common = min(len(original), len(proposal)) if common is None else common
        assert review._common_prefix(original, proposal, block=3) == common, (original, proposal)
    big = "".join(f"line {n}\n" for n in range(50_000))
    changed = big.replace("line 31337\n", "line 31337 changed\n")
    assert review._first_change(review._split(big), review._split(changed)) == 31338


@pytest.mark.parametrize(
    ("path", "reason"),
    [("", "empty"), ("rel/x.py", "absolute"), ("/a/../b", ".."), ("/a/\x00b", "control"), ("/a\nb", "control")],
)
def test_hostile_paths_are_refused_with_a_reason(path, reason):
    with pytest.raises(review.ReviewError, match=reason):
        review._check_path(path)


def test_context_is_validated_and_copied_clean():
    raw = {"openFiles": [{"path": "/p", "timestamp": 1, "isActive": True, "cursor": {"line": 1, "character": 0}}]}
    assert context.workspace_state(raw) == raw
    for bad in ({}, {"openFiles": [{"path": 1, "timestamp": 1}]}, {"openFiles": [], "isTrusted": "yes"}):
        with pytest.raises(ValueError, match="context"):
            context.workspace_state(bad)


def test_node_tmpdir_follows_node(monkeypatch):
    assert discovery.node_tmpdir({"TMPDIR": "/x/"}) == "/x"
    assert discovery.node_tmpdir({"TMP": "/y"}) == "/y"
    assert discovery.node_tmpdir({}) == "/tmp"
    assert discovery.gemini_file_name(12, 345) == "gemini-ide-server-12-345.json"


def test_clean_roots_resolves_and_drops_what_cannot_be_advertised(tmp_path):
    (tmp_path / "a").mkdir()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "a")
    roots = [str(tmp_path / "a"), str(link), "relative", str(tmp_path / "missing"), str(tmp_path / "a:b")]
    assert launch.clean_roots(roots) == [str(tmp_path / "a")]


def test_process_liveness_sees_zombies_and_reused_pids():
    assert owner.pid_alive(os.getpid(), owner.process_start(os.getpid()))
    assert not owner.pid_alive(0)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie
    try:
        assert not owner.pid_alive(child.pid)
    finally:
        child.wait()
    assert not owner.pid_alive(os.getpid(), started=1)  # same PID, another start time
    assert launch.ide_pid(os.getpid()) == os.getppid()


@pytest.mark.parametrize("swap", ["fifo", "link"])
def test_a_file_swapped_while_it_is_judged_stale_is_never_read_through(tmp_path, monkeypatch, swap):
    """Between the check of a discovery file and its read, another process replaces it by a FIFO
    (a read with no writer waits for ever) or a link: the sweep neither hangs nor follows it."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = json.dumps({"port": 1, "neovimCompanionPid": dead.pid})
    (tmp_path / "elsewhere.json").write_text(stale)  # a file of ours a link could lead to
    path = tmp_path / f"gemini-ide-server-{dead.pid}-1.json"
    path.write_text(stale)

    def replaced(real: Any) -> Any:
        def call(name: Any, *args: Any, **kwargs: Any) -> Any:
            if os.fspath(name) == str(path) and path.is_file() and not path.is_symlink():
                result = real(name, *args, **kwargs) if real is os_lstat else None
                path.unlink()
                os.mkfifo(path) if swap == "fifo" else path.symlink_to(tmp_path / "elsewhere.json")
                return result if real is os_lstat else real(name, *args, **kwargs)
            return real(name, *args, **kwargs)

        return call

    os_lstat = os.lstat
    monkeypatch.setattr(os, "lstat", replaced(os.lstat))  # whichever comes first: the check
    monkeypatch.setattr(os, "open", replaced(os.open))  # or the open
    judged: list[bool] = []
    thread = threading.Thread(target=lambda: judged.append(discovery.is_stale(str(path), dead.pid, 1)), daemon=True)
    thread.start()
    thread.join(30)
    monkeypatch.undo()
    if thread.is_alive():  # let it go: open a writer, so the stuck read ends
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    assert judged == [False]


def test_a_stale_file_of_ours_is_judged_up_to_a_size_bound(tmp_path):
    """Many workspace roots make a file of ours large; a huge one is not read at all."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    judged = []
    for roots in (5_000, 50_000):
        path = tmp_path / f"gemini-ide-server-{dead.pid}-{roots}.json"
        workspace = ":".join(f"/home/user/project-{n}" for n in range(roots))  # ~130 KB, ~1 MB+
        path.write_text(json.dumps({"port": 1, "workspacePath": workspace, "neovimCompanionPid": dead.pid}))
        judged.append(discovery.is_stale(str(path), dead.pid, 1))
    assert judged == [True, False]


def test_discovery_files_are_written_without_waiting_on_the_disk_and_a_crash_leftover_is_swept(tmp_path, monkeypatch):
    """The files that say where the server is are written whole (renamed into place) but never
    fsync'd: a client waits for them (2-10 ms each). A crash before the bytes reach the disk can
    leave a name of ours empty: the sweep takes it for stale; another IDE's empty file (in the
    middle of its own write) is judged by its PID and port, as ever."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("QWEN_HOME", str(tmp_path / "qwen"))

    def no_fsync(fd: int) -> None:
        raise AssertionError("fsync")

    monkeypatch.setattr(os, "fsync", no_fsync)
    ad = discovery.Advertisement(4242, "tok", "qtok", "ttok", "htok", 1, os.getpid(), [str(tmp_path)])
    written, errors = discovery.write_all(ad)
    assert len(written) == 2 and not errors
    registry = access.Access()
    registry.serve(ad)
    registry.register(ad, "gemini", "gemini")
    gemini_dir = Path(discovery.gemini_dir())
    ours = gemini_dir / f"gemini-ide-server-{access.FIRST_AGENT_PID + 7}.json"
    legacy = gemini_dir / f"gemini-ide-server-{os.getpid()}.json"  # an IDE's legacy name: not ours alone
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        writing = gemini_dir / f"gemini-ide-server-1-{listening.getsockname()[1]}.json"  # its IDE is up
        for path in (ours, legacy, writing):
            path.write_bytes(b"")
        swept = discovery.sweep_stale()
    assert swept == [str(ours)]
    assert legacy.exists() and writing.exists() and all(os.path.exists(path) for path in written)


def test_relative_discovery_bases_are_used_where_they_point(tmp_path, monkeypatch):
    """QWEN_HOME and TMPDIR may be relative (Qwen resolves them against its working directory)."""
    monkeypatch.chdir(tmp_path)
    for environ in ({"QWEN_HOME": ".qwen"}, {"QWEN_HOME": "."}):
        directory = discovery.qwen_dir(environ)
        monkeypatch.setenv("QWEN_HOME", environ["QWEN_HOME"])
        discovery.ensure_dir(directory)
        discovery.write_secret_json(directory, "1.lock", {"port": 1})
        assert (tmp_path / directory / "1.lock").is_file(), directory
    monkeypatch.setenv("TMPDIR", ".")
    discovery.ensure_dir(discovery.gemini_dir())
    assert (tmp_path / "gemini" / "ide").is_dir()


class Asgi:
    """The server's HTTP app called directly: what a client would get, without a socket."""

    def __init__(self) -> None:
        async def opened(_sid: str) -> None: ...

        hooks = session.Hooks(on_ready=lambda: None, on_failed=print, on_clients=lambda _c: None, on_stream_open=opened)
        self.access = access.Access()
        self.access.serve(discovery.Advertisement(1, "tok", "qtok", "ttok", "htok", 1, 1, ["/"]))
        limits = session.Limits(max_sessions=2)
        self.server = mcp_server.McpServer(None, self.access.identify, 1, hooks, limits)  # type: ignore[arg-type]
        self.session = ""

    def post(self, message: Any, **headers: str) -> tuple[int, dict[str, str], Any]:
        base = {"host": "127.0.0.1:1", "authorization": "Bearer tok", "content-type": "application/json"}
        if self.session:
            base["mcp-session-id"] = self.session
        base.update(headers)
        body = message if isinstance(message, bytes) else json.dumps(message).encode()
        raw_headers = [(k.encode(), v.encode()) for k, v in base.items()]
        scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": raw_headers}
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(event: dict[str, Any]) -> None:
            sent.append(event)

        asyncio.run(self.server._app(scope, receive, send))
        start, payload = sent[0], b"".join(e.get("body", b"") for e in sent[1:])
        response_headers = {k.decode(): v.decode() for k, v in start.get("headers", [])}
        return start["status"], response_headers, json.loads(payload) if payload else None


def initialize(version: str = "2025-06-18") -> dict[str, Any]:
    params = {"protocolVersion": version, "clientInfo": {"name": "u", "version": "1"}}
    return {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}


def test_initialize_issues_a_session_and_negotiates_the_version():
    app = Asgi()
    status, headers, answer = app.post(initialize("2025-11-25"))
    assert status == 200 and len(headers["mcp-session-id"]) == 32
    assert answer["result"]["protocolVersion"] == "2025-11-25"
    assert app.post(initialize("1999-01-01"))[2]["result"]["protocolVersion"] == jsonrpc.PROTOCOL_VERSIONS[0]
    assert app.post(initialize())[0] == 503  # max_sessions=2


def test_json_rpc_errors_are_answered_and_the_session_survives():
    app = Asgi()
    app.session = app.post(initialize())[1]["mcp-session-id"]
    assert app.post({"jsonrpc": "2.0", "method": "notifications/initialized"})[0] == 202
    assert app.post(b"{not json")[0] == 400
    assert app.post([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])[0] == 400  # no batches
    assert app.post({"jsonrpc": "2.0", "id": 1, "method": "nope"})[2]["error"]["code"] == -32601
    assert app.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {}})[2]["error"]["code"] == -32602
    assert app.post({"jsonrpc": "2.0", "id": 3, "method": "ping"})[2] == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert app.post({"jsonrpc": "2.0", "id": 4, "method": "ping"}, **{"mcp-protocol-version": "1.0"})[0] == 400
    assert app.post({"jsonrpc": "2.0", "id": 5, "method": "ping"}, **{"content-type": "text/plain"})[0] == 415
    app.session = "f" * 32
    assert app.post({"jsonrpc": "2.0", "id": 6, "method": "ping"})[0] == 404


def test_settings_edit_keeps_order_layout_and_mode_and_undoes_exactly(tmp_path):
    script = Path(review.__file__).parents[1] / "programs" / "settings_edit.py"
    settings, journal = tmp_path / "settings.json", tmp_path / "journal.json"
    original = {"zeta": {}, "ide": {"hasSeenNudge": False}, "alpha": None, "list": []}
    settings.write_text(json.dumps(original, indent=2) + "\n")
    settings.chmod(0o640)

    def run(verb: str, *wanted: str) -> dict[str, Any]:
        argv = [sys.executable, str(script), verb, str(settings), str(journal), *wanted]
        return json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)

    def enable() -> dict[str, Any]:
        return run("enable", "ide.enabled=true", "ide.hasSeenNudge=true", 'mcpServers.neovim={"httpUrl": "${U:-}"}')

    assert enable()["changes"] == [
        "ide.enabled: (absent) -> true",
        "ide.hasSeenNudge: false -> true",
        "mcpServers.neovim: (absent) -> {…}",
    ]
    after = json.loads(settings.read_text())
    assert list(after) == ["zeta", "ide", "alpha", "list", "mcpServers"]
    assert after["ide"] == {"hasSeenNudge": True, "enabled": True}
    assert after["mcpServers"] == {"neovim": {"httpUrl": "${U:-}"}}
    assert settings.stat().st_mode & 0o777 == 0o640 and journal.stat().st_mode & 0o777 == 0o600
    assert enable()["changes"] == []
    assert len(run("disable")["changes"]) == 3
    assert settings.read_text() == json.dumps(original, indent=2) + "\n"
    assert run("disable")["changes"] == []


def test_each_token_is_an_identity_and_a_session_belongs_to_its_token():
    app = Asgi()
    gemini = app.post(initialize(), **{"user-agent": "x"})[1]["mcp-session-id"]
    qwen = app.post(initialize(), authorization="Bearer qtok")[1]["mcp-session-id"]
    assert app.server.label(gemini) == "external Gemini CLI 1"
    assert app.server.label(qwen) == "external Qwen Code"  # Qwen's clientInfo version is a fixed 1.0.0
    app.session = qwen
    assert app.post({"jsonrpc": "2.0", "id": 1, "method": "ping"})[0] == 404  # Gemini's token, Qwen's session
    assert app.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, authorization="Bearer qtok")[0] == 200
    assert app.post(initialize(), authorization="Bearer nope")[0] == 401


def test_an_agent_gets_its_own_files_tokens_and_label(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("QWEN_HOME", str(tmp_path / "qwen"))
    ad = discovery.Advertisement(4242, "tok", "qtok", "ttok", "htok", 1, os.getpid(), [str(tmp_path)])
    registry = access.Access()
    registry.serve(ad)
    got = registry.register(ad, "qwen", "qwen", "0.24.4")
    env = got["env"]
    assert isinstance(env, dict)
    gemini_file = tmp_path / "gemini" / "ide" / f"gemini-ide-server-{env['GEMINI_CLI_IDE_PID']}.json"
    qwen_file = tmp_path / "qwen" / "ide" / f"{env['QWEN_CODE_IDE_SERVER_PORT']}.lock"
    assert int(env["GEMINI_CLI_IDE_PID"]) > 2**22 and 0 < int(env["QWEN_CODE_IDE_SERVER_PORT"]) < 1024
    for path in (gemini_file, qwen_file):
        assert os.stat(path).st_mode & 0o777 == 0o600
        assert json.loads(path.read_text())["port"] == 4242  # the real server, whatever the name says
    assert os.stat(qwen_file).st_mtime == 0  # a Qwen started elsewhere prefers the shared lock file
    gemini_token = json.loads(gemini_file.read_text())["authToken"]
    qwen_token = json.loads(qwen_file.read_text())["authToken"]
    assert len({gemini_token, qwen_token, "tok", "qtok"}) == 4
    assert registry.identify(b"Bearer " + qwen_token.encode()) == access.Identity("qwen", "qwen", "0.24.4")
    assert registry.identify(b"Bearer " + gemini_token.encode()).label("0.61.0") == "qwen (Gemini CLI 0.61.0)"
    again = registry.register(ad, "qwen", "qwen", "0.24.4", got["gemini_pid"], got["qwen_port"])  # type: ignore[arg-type]
    assert again["env"] != env and (again["gemini_pid"], again["qwen_port"]) == (got["gemini_pid"], got["qwen_port"])
    assert registry.identify(b"Bearer " + qwen_token.encode()) is None  # re-registered: old tokens are void
    registry.unregister("qwen")
    assert not gemini_file.exists() and not qwen_file.exists()


def test_an_agents_lock_file_name_costs_a_look_at_a_few_names_not_all(tmp_path, monkeypatch):
    """Registering runs before the agent's spawn (the user waits): a free Qwen lock file name is
    found by random picks, looking at every one of the 1023 names only when they are nearly all
    taken; it is still found when a single one is free."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("QWEN_HOME", str(tmp_path / "qwen"))
    ad = discovery.Advertisement(4242, "tok", "qtok", "ttok", "htok", 1, os.getpid(), [str(tmp_path)])
    registry = access.Access()
    registry.serve(ad)
    looked: list[str] = []
    real_lexists = os.path.lexists
    monkeypatch.setattr(os.path, "lexists", lambda path: looked.append(path) or real_lexists(path))
    registry.register(ad, "qwen", "qwen")
    assert 0 < len([path for path in looked if path.endswith(".lock")]) <= access.QWEN_PORT_PICKS
    registry.unregister("qwen")
    lock_dir = tmp_path / "qwen" / "ide"
    for port in access.AGENT_PORTS:
        if port != 700:
            (lock_dir / discovery.qwen_file_name(port)).write_text("{}")
    assert registry.register(ad, "qwen", "qwen")["qwen_port"] == 700
    registry.unregister("qwen")  # its lock file goes with it: now every name is taken
    (lock_dir / discovery.qwen_file_name(700)).write_text("{}")
    with pytest.raises(RuntimeError, match="no free agent lock file name"):
        registry.register(ad, "qwen", "qwen")


def test_settings_spans_agree_with_json_on_any_text():
    """jsonc.parse reads where each value is (edits splice there): every span it gives
    holds what json.loads reads at that place, for any spacing, escapes and nesting."""
    from gemini_companion.programs import jsonc

    rng = random.Random(11)
    spaces = [" ", "\t", "\n", "\r\n", "", "  ", "\n\n"]
    words = ["a", "ide", "k\\ey", 'q"uote', "é", "\u2028", "\x01", "💥", "\\u0041", "", "a/b"]

    def space() -> str:
        return rng.choice(spaces)

    def string() -> str:
        return json.dumps(rng.choice(words), ensure_ascii=rng.random() < 0.5)

    def value(depth: int) -> str:
        roll = rng.random()
        if depth > 4 or roll < 0.35:
            return rng.choice(["1", "-0.5e+3", "true", "false", "null", "12345678901234567890", "0", string()])
        parts = [value(depth + 1) for _ in range(rng.randint(0, 4))]
        if roll < 0.7:
            parts = [string() + space() + ":" + space() + part for part in parts]
            return "{" + space() + ("," + space()).join(parts) + space() + "}"
        return "[" + space() + ("," + space()).join(parts) + space() + "]"

    def read(text: str) -> Any:  # objects as lists of pairs: duplicate keys each keep their value
        return json.loads(text, object_pairs_hook=list)

    def agrees(text: str, node: jsonc.Node, expected: Any) -> None:
        assert read(text[node.start : node.end]) == expected
        if node.kind == "object":
            assert [(key, read(text[child.start : child.end])) for key, _, _, child in node.members] == expected
            for (key, key_start, key_end, child), (_, item) in zip(node.members, expected, strict=True):
                assert json.loads(text[key_start:key_end]) == key
                agrees(text, child, item)
        elif node.kind == "array":
            for child, item in zip(node.items, expected, strict=True):
                agrees(text, child, item)

    for _ in range(3000):
        text = space() + value(0) + space()
        if not text.strip().startswith("{"):
            continue
        agrees(text, jsonc.parse(text), read(text))


def test_settings_spans_agree_with_the_clis_reading_of_comments():
    """With comments anywhere (issue 31): `blank` reads what the CLIs' own strip-json-comments
    (3.1.1, in both bundles) reads, valid or not, and every span parse gives on it holds, in the
    user's text itself, what the CLI reads at that place."""
    from gemini_companion.programs import jsonc, settings_doc, settings_errors, settings_operations

    node = Path(__file__).parents[1] / "node"
    if not (node / "node_modules" / "strip-json-comments").is_dir():
        pytest.skip("no tests/node/node_modules (make node)")
    rng = random.Random(31)
    notes = ["// x", "/* y */", '/* { " } */', '// { "', "/* a\n b */", "/*/ */", "/**/", "// \u00e9 \U0001f4a5"]
    words = ["a", "http://x", "/*", "*/", "//", 'q"/*"', "k\\ey", "a\\", "\u2028"]

    def space() -> str:
        roll = rng.random()
        if roll < 0.5:
            return rng.choice([" ", "\n", "\r\n", "", "\t"])
        note = rng.choice(notes)
        return " " + note + ("\n" if note.startswith("//") else rng.choice(["", " "]))

    def value(depth: int) -> str:
        roll = rng.random()
        if depth > 3 or roll < 0.35:
            return rng.choice(["1", "true", "null", json.dumps(rng.choice(words))])
        parts = [value(depth + 1) for _ in range(rng.randint(0, 3))]
        if roll < 0.7:
            parts = [json.dumps(rng.choice(words)) + space() + ":" + space() + part for part in parts]
            return "{" + space() + ("," + space()).join(parts) + space() + "}"
        return "[" + space() + ("," + space()).join(parts) + space() + "]"

    texts = []
    for _ in range(3000):
        text = space() + "{" + space() + '"k":' + space() + value(0) + space() + "}" + space()
        if rng.random() < 0.1:  # broken at one place: both must refuse it
            at = rng.randrange(len(text))
            text = text[:at] + rng.choice(["/", "*/", '"', "//", "/* \u00a0 */"]) + text[at:]
        texts.append(text)
    script = (
        "const strip = require('strip-json-comments');"
        "const texts = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "process.stdout.write(JSON.stringify(texts.map(t => { try { return JSON.stringify(JSON.parse(strip(t))) }"
        " catch (e) { return null } })))"
    )
    run = subprocess.run(["node", "-e", script], input=json.dumps(texts), capture_output=True, text=True, cwd=node)
    assert run.returncode == 0, run.stderr

    def read(text: str) -> Any:
        return json.loads(text, object_pairs_hook=list)

    def agrees(text: str, blanked: str, node: jsonc.Node, expected: Any) -> None:
        assert read(jsonc.blank(text[node.start : node.end])[0]) == expected
        if node.kind == "object":
            for (key, key_start, key_end, child), (expected_key, item) in zip(node.members, expected, strict=True):
                assert json.loads(text[key_start:key_end]) == key == expected_key
                agrees(text, blanked, child, item)
        elif node.kind == "array":
            for child, item in zip(node.items, expected, strict=True):
                agrees(text, blanked, child, item)

    lua = (  # json_file.lua reads the same (for missing(), ide_enabled(), :checkhealth, trust)
        "vim.opt.runtimepath:prepend(arg[1]); local read = require('gemini_companion.json_file').strip_comments;"
        "local out = {}; for _, t in ipairs(vim.json.decode(io.read('*a'))) do"
        " local ok, v = pcall(vim.json.decode, read(t)); table.insert(out, ok and vim.json.encode(v) or vim.NIL) end;"
        "io.write(vim.json.encode(out))"
    )
    script_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"strip-{os.getpid()}.lua"
    script_path.write_text(lua)
    try:
        neovim = subprocess.run(
            [nvim_binary(), "--clean", "-l", str(script_path), str(Path(__file__).parents[2])],
            input=json.dumps(texts),
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        script_path.unlink()
    assert neovim.returncode == 0, neovim.stderr

    def hollow(value: Any) -> Any:  # Lua has one empty table for {} and []
        if isinstance(value, dict):
            return {k: hollow(v) for k, v in value.items()} or None
        if isinstance(value, list):
            return [hollow(v) for v in value] or None
        return value

    for text, theirs, lua_read in zip(texts, json.loads(run.stdout), json.loads(neovim.stdout), strict=True):
        if theirs is not None:
            assert lua_read is not None and hollow(json.loads(lua_read)) == hollow(json.loads(theirs)), text
        else:  # a comment with a no-break space: JSON.parse refuses what it keeps of it, Lua reads on
            assert lua_read is None or "\u00a0" in text, text

    hook = {"hooks": [{"type": "command", "command": "x"}]}

    def comments_in(text: str) -> list[str]:
        return [text[start:end] for start, end in sorted(jsonc.blank(text)[1].items())]

    def round_trip(text: str) -> None:
        """Enabled, then taken back: the same bytes; taken out without a record: every comment stays."""
        doc, record = settings_doc.Doc(text), {}
        for name, value in [("ide.enabled", True), ("mcpServers.neovim", {"u": 1}), ("k.ide", 1)]:
            try:
                settings_operations.assign(doc, record, name, value)
            except settings_errors.Refused:  # k is no object
                pass
        settings_operations.append(doc, record, "hooks.BeforeAgent", hook)
        enabled = doc.text
        assert jsonc.jsonc(enabled)["ide"] == {"enabled": True}
        settings_operations.take_back(doc, record)
        assert doc.text == text
        # The user comments in our entries since: taken out, they leave each comment
        enabled = enabled.replace('"u":', '/* in */ "u":', 1).replace('"command": "x"', '"command": "x" // c\n', 1)
        bare = settings_doc.Doc(enabled)
        bare.remove_item(["hooks", "BeforeAgent"], hook, None, every=True)
        bare.remove_key(["mcpServers", "neovim"], None)
        bare.remove_key(["k", "ide"], None)
        assert jsonc.jsonc(bare.text)["mcpServers"] == {}
        assert sorted(comments_in(bare.text)) == sorted(comments_in(enabled))

    refused = 0
    for text, theirs in zip(texts, json.loads(run.stdout), strict=True):
        blanked, _ = jsonc.blank(text)
        assert len(blanked) == len(text)  # every value stays where it is
        try:
            ours = jsonc.jsonc(text)
        except ValueError:
            assert theirs is None, text
            refused += 1
            continue
        assert theirs is not None, text
        assert ours == json.loads(theirs)
        # JSON.stringify keeps the last of duplicate keys: compare the spans with Python's own reading
        agrees(text, blanked, jsonc.parse(blanked), read(blanked))
        if len(text) % 3 == 0:  # a third: the unit tests stay fast
            round_trip(text)
    assert 50 < refused < 600
