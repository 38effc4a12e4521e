"""Start, stop, exit, crash and restart: files, ports, environment and processes end up right."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from pathlib import Path

import psutil
import pytest

from conftest import NODE_DIR, TIMEOUT, Editor, wait_for


def port_open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def host_process(editor: Editor) -> psutil.Process:
    return psutil.Process(editor.status()["host_pid"])


def test_qa_removes_files_closes_port_and_ends_host(editor, sandbox):
    status = editor.status()
    host = host_process(editor)
    files = [*sandbox.gemini_dir.iterdir(), *sandbox.qwen_dir.iterdir()]
    assert len(files) == 2
    editor.close()
    assert not any(path.exists() for path in files)
    host.wait(TIMEOUT)
    wait_for(lambda: not port_open(status["port"]), what="port closed")


def test_sigkill_of_neovim_ends_host_which_removes_its_files(editor_factory, sandbox):
    editor = editor_factory()
    editor.wait_state("running")
    host = host_process(editor)
    os.kill(editor.pid, signal.SIGKILL)
    host.wait(TIMEOUT)  # stdin EOF ends the host; the server thread is a daemon
    assert list(sandbox.gemini_dir.iterdir()) == []
    assert list(sandbox.qwen_dir.iterdir()) == []


def test_qa_with_a_host_that_never_answers_still_exits_and_the_next_start_sweeps(editor_factory, sandbox):
    """A host stopped (SIGSTOP, a debugger, a stuck thread) never answers `stop`: Neovim's exit
    waited on it for ever. It ends the host after a bound instead; its files go at the next start."""
    editor = editor_factory()
    editor.wait_state("running")
    host = host_process(editor)
    nvim = psutil.Process(editor.pid)
    host.send_signal(signal.SIGSTOP)
    editor.nvim.command("qa!", async_=True)  # no answer: Neovim is exiting
    nvim.wait(TIMEOUT)  # psutil.TimeoutExpired after TIMEOUT: Neovim hung on its exit
    wait_for(lambda: not host.is_running() or host.status() == psutil.STATUS_ZOMBIE, what="the host ended")
    second = editor_factory()
    status = second.wait_state("running")
    remaining = sorted(p.name for p in sandbox.gemini_dir.iterdir())
    assert remaining == [f"gemini-ide-server-{status['pid']}-{status['port']}.json"]


def test_editor_and_host_killed_then_next_start_sweeps(editor_factory, sandbox):
    first = editor_factory()
    first.wait_state("running")
    host = host_process(first)
    os.kill(first.pid, signal.SIGSTOP)  # a frozen Neovim cannot clean up after its host either
    host.kill()
    wait_for(lambda: not host.is_running() or host.status() == psutil.STATUS_ZOMBIE, what="the host to die")
    os.kill(first.pid, signal.SIGKILL)
    assert len(list(sandbox.gemini_dir.iterdir())) == 1  # nobody could clean up

    second = editor_factory()
    status = second.wait_state("running")
    remaining = sorted(p.name for p in sandbox.gemini_dir.iterdir())
    assert remaining == [f"gemini-ide-server-{status['pid']}-{status['port']}.json"]
    assert sorted(p.name for p in sandbox.qwen_dir.iterdir()) == [f"{status['port']}.lock"]


def zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_killed_neovims_qwen_defaults_file_is_swept_by_the_next(editor_factory, sandbox):
    """The file holds the server's token: SIGKILL leaves it (nothing runs at exit). The next Neovim
    removes it, and only it: not a live Neovim's, not through a link, not what is not ours."""
    first, live = editor_factory(), editor_factory()
    first.wait_state("running")
    live.wait_state("running")
    left = Path(first.env("QWEN_CODE_SYSTEM_DEFAULTS_PATH") or "")
    kept = Path(live.env("QWEN_CODE_SYSTEM_DEFAULTS_PATH") or "")
    assert left.parent == kept.parent and left != kept  # one folder for every Neovim of this user
    folder = left.parent
    token = first.status()["tools"]["headers"]["Authorization"]
    os.kill(first.pid, signal.SIGKILL)
    wait_for(lambda: not psutil.pid_exists(first.pid) or zombie(first.pid), what="Neovim killed")
    assert token in left.read_text()  # nobody could clean up
    elsewhere = sandbox.base / "elsewhere.json"
    elsewhere.write_text("{}")
    link = folder / f"qwen-system-defaults-{first.pid}.json"
    link.symlink_to(elsewhere)
    reused = folder / f"qwen-system-defaults-{os.getpid()}-1.json"  # its PID runs, started at another time
    reused.write_text("{}")
    unknown = folder / f"qwen-system-defaults-{os.getpid()}.json"  # an earlier name: its PID runs, kept
    unknown.write_text("{}")
    other = folder / "notes.txt"
    other.write_text("mine")

    second = editor_factory()
    second.wait_state("running")
    mine = Path(second.env("QWEN_CODE_SYSTEM_DEFAULTS_PATH") or "")
    stays = [mine, kept, link, other, unknown]
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in stays)
    assert link.is_symlink() and elsewhere.read_text() == "{}"


def test_a_qwen_started_before_the_server_is_up_gets_no_half_file(editor_factory, sandbox):
    """The file names the server's tools: until they exist a terminal is not pointed at it (a Qwen
    reads it once, as it starts); from then on it holds them."""
    system = sandbox.base / "system-defaults.json"
    system.write_text("{}")
    sandbox.env["QWEN_CODE_SYSTEM_DEFAULTS_PATH"] = str(system)
    editor = editor_factory(setup={"auto_start": False})
    editor.lua(
        "_G.seen = {} vim.api.nvim_create_autocmd('User', {pattern = 'GeminiStatusChanged', callback = function()"
        " local path = vim.env.QWEN_CODE_SYSTEM_DEFAULTS_PATH local read = require('gemini_companion.files').read"
        " table.insert(_G.seen, {path = path, text = path and read(path)}) end})"
    )
    # What a terminal opened right after the start (before the server is up) is given.
    at_start = editor.lua(
        "vim.cmd('GeminiCompanion start') local path = vim.env.QWEN_CODE_SYSTEM_DEFAULTS_PATH"
        " return {path = path, text = path and require('gemini_companion.files').read(path)}"
    )
    tools = editor.wait_state("running")["tools"]
    editor.lua("require('gemini_companion.agents.qwen_defaults').ensure()")  # as a setup() again would
    seen = editor.lua("return _G.seen")
    ours = [s for s in [at_start, *seen] if s["path"] != str(system)]
    assert ours, seen
    for each in ours:  # every moment a terminal could have read it
        assert tools["url"] in json.loads(each["text"])["mcpServers"]["neovim"]["httpUrl"], each
    assert json.loads(Path(editor.env("QWEN_CODE_SYSTEM_DEFAULTS_PATH") or "").read_text())["mcpServers"]


def test_stale_file_whose_port_another_process_took_is_swept(editor_factory, sandbox):
    """The crashed editor's port now belongs to someone else; the file must still go."""
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    port = squatter.getsockname()[1]
    dead = subprocess.Popen(["true"])
    dead.wait()
    sandbox.gemini_dir.mkdir(parents=True, mode=0o700)
    stale = sandbox.gemini_dir / f"gemini-ide-server-{os.getpid()}-{port}.json"
    stale.write_text(json.dumps({"port": port, "workspacePath": "/", "authToken": "x", "neovimCompanionPid": dead.pid}))
    try:
        editor = editor_factory()
        editor.wait_state("running")
        assert not stale.exists()
    finally:
        squatter.close()


def test_a_fifo_or_link_named_like_a_stale_file_neither_stalls_the_start_nor_is_swept(
    editor_factory, sandbox, tmp_path
):
    """The sweep at start reads each file it judges: never through a link, never
    waiting on a FIFO (a read of one with no writer blocks for ever)."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = {"port": 1, "workspacePath": "/", "authToken": "x", "neovimCompanionPid": dead.pid}
    target = tmp_path / "stale-elsewhere.json"
    target.write_text(json.dumps(stale))
    sandbox.gemini_dir.mkdir(parents=True, mode=0o700)
    sandbox.qwen_dir.mkdir(parents=True, mode=0o700)
    fifos = [sandbox.gemini_dir / f"gemini-ide-server-{dead.pid}-1.json", sandbox.qwen_dir / "2.lock"]
    for fifo in fifos:
        os.mkfifo(fifo, 0o600)
    link = sandbox.gemini_dir / f"gemini-ide-server-{dead.pid}-3.json"
    link.symlink_to(target)
    own = sandbox.gemini_dir / f"gemini-ide-server-{dead.pid}-4.json"  # the control: swept
    own.write_text(json.dumps(stale))
    editor_factory().wait_state("running")
    assert all(fifo.exists() for fifo in fifos) and link.is_symlink() and target.exists()
    assert not own.exists()


def test_a_file_nested_deeper_than_pythons_reader_does_not_stop_the_start(editor_factory, sandbox):
    """A file in the discovery folder (any process of the user's can write there: an agent) holding
    JSON nested 100,000 deep: the sweep's json.loads raised RecursionError, not ValueError, and every
    later start failed on it. It is a file not understood now: kept, and the server starts."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    sandbox.gemini_dir.mkdir(parents=True, mode=0o700)
    nested = sandbox.gemini_dir / f"gemini-ide-server-{dead.pid}-1.json"
    nested.write_text("[" * 100_000 + "]" * 100_000)
    editor_factory().wait_state("running")
    assert nested.exists()


def test_foreign_file_of_a_live_server_is_left_alone(editor_factory, sandbox):
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    port = squatter.getsockname()[1]
    sandbox.gemini_dir.mkdir(parents=True, mode=0o700)
    other = sandbox.gemini_dir / f"gemini-ide-server-{os.getpid()}-{port}.json"
    other.write_text(json.dumps({"port": port, "workspacePath": "/", "authToken": "x"}))
    try:
        editor_factory().wait_state("running")
        assert other.exists()
    finally:
        squatter.close()


def test_stop_and_start_commands(editor, sandbox):
    old = editor.status()
    old_token = editor.env("GEMINI_CLI_IDE_AUTH_TOKEN")
    editor.nvim.command("GeminiCompanion stop")
    assert list(sandbox.gemini_dir.iterdir()) == []  # synchronous: gone when the command returns
    assert editor.status()["state"] == "stopped"
    assert editor.env("GEMINI_CLI_IDE_SERVER_PORT") is None
    assert editor.env("GEMINI_CLI_IDE_AUTH_TOKEN") is None
    wait_for(lambda: not port_open(old["port"]), what="old port closed")

    editor.nvim.command("GeminiCompanion start")
    new = editor.wait_state("running")
    assert new["port"] != old["port"]
    assert editor.env("GEMINI_CLI_IDE_AUTH_TOKEN") not in (None, old_token)
    assert len(list(sandbox.gemini_dir.iterdir())) == 1


def test_restart_rotates_the_token(editor):
    token = editor.env("GEMINI_CLI_IDE_AUTH_TOKEN")
    port = editor.status()["port"]
    editor.nvim.command("GeminiCompanion restart")
    wait_for(lambda: (s := editor.status())["state"] == "running" and s["port"] != port, what="restarted")
    assert editor.env("GEMINI_CLI_IDE_AUTH_TOKEN") not in (None, token)


def test_dir_changed_rewrites_files_and_environment(editor, sandbox, tmp_path):
    other = tmp_path / "other project"
    other.mkdir()
    editor.nvim.command(f"cd {other}")
    expected = os.path.realpath(other)
    wait_for(lambda: editor.status()["workspace"] == [expected], what="workspace updated")
    (gemini_file,) = sandbox.gemini_dir.iterdir()
    assert json.loads(gemini_file.read_text())["workspacePath"] == expected
    assert editor.env("GEMINI_CLI_IDE_WORKSPACE_PATH") == expected
    assert editor.env("QWEN_CODE_IDE_WORKSPACE_PATH") == expected


def test_extra_workspace_folders_are_advertised(editor_factory, sandbox, tmp_path):
    extra = tmp_path / "extra"
    extra.mkdir()
    editor = editor_factory(setup={"workspace_folders": [str(extra)]})
    status = editor.wait_state("running")
    assert status["workspace"] == [os.path.realpath(sandbox.project), os.path.realpath(extra)]
    assert editor.env("GEMINI_CLI_IDE_WORKSPACE_PATH") == f"{os.path.realpath(sandbox.project)}:{extra}"


def test_auto_start_can_be_disabled(editor_factory, sandbox):
    editor = editor_factory(setup={"auto_start": False})
    # Let startup and the deferred autostart run: a round trip through the event loop.
    editor.lua("vim.wait(200, function() return false end)")
    assert editor.status()["state"] == "stopped"
    assert editor.lua("return require('gemini_companion.host').started") is False
    assert not sandbox.gemini_dir.exists() or list(sandbox.gemini_dir.iterdir()) == []
    editor.nvim.command("GeminiCompanion start")
    editor.wait_state("running")


def test_invalid_option_is_a_clear_error(editor_factory):
    editor = editor_factory()
    # A typo is ignored with one line naming the nearest option, and the rest of the setup applies.
    editor.lua("require('gemini_companion').setup({ auto_strat = true, diff = { focus = false } })")
    said = "gemini-companion: unknown option auto_strat ignored (did you mean auto_start?)"
    assert said in editor.messages().splitlines()
    assert editor.lua("return require('gemini_companion.config').options.diff.focus") is False
    with pytest.raises(Exception, match="auto_start"):
        editor.lua("require('gemini_companion').setup({ auto_start = 'yes' })")


def test_terminal_inherits_connection_environment(editor, sandbox):
    out = sandbox.base / "env.txt"
    editor.nvim.command(
        "terminal sh -c 'printenv GEMINI_CLI_IDE_SERVER_PORT GEMINI_CLI_IDE_PID QWEN_CODE_IDE_SERVER_PORT > "
        f"{out}.tmp && mv {out}.tmp {out}'"
    )
    lines = wait_for(lambda: out.exists() and out.read_text().split(), what="terminal output")
    status = editor.status()
    assert lines == [str(status["port"]), str(status["pid"]), str(status["port"])]


def test_gemini_in_a_terminal_shell_finds_the_server_by_pid_walk(editor, sandbox):
    """The real client, started from a shell that Neovim spawned, with no connection variables."""
    editor.lua(
        """
        local script, node = ...
        _G.probe_out = {}
        local cmd = 'unset GEMINI_CLI_IDE_SERVER_PORT GEMINI_CLI_IDE_AUTH_TOKEN GEMINI_CLI_IDE_PID'
          .. ' GEMINI_CLI_IDE_WORKSPACE_PATH; ' .. node .. ' ' .. script .. '; true'
        _G.probe_job = vim.fn.jobstart({ 'bash', '-c', cmd }, {
          stdout_buffered = false,
          on_stdout = function(_, data) vim.list_extend(_G.probe_out, data) end,
        })
        vim.fn.chansend(_G.probe_job, '{"id":1,"cmd":"connect"}\\n')
        """,
        str(NODE_DIR / "gemini_client.mjs"),
        "node",
    )

    def connected():
        for line in editor.lua("return _G.probe_out"):
            if line.startswith('{"id":1'):
                return json.loads(line)
        return None

    reply = wait_for(connected, what="client reply")
    assert reply["result"]["status"] == "connected", reply
    assert reply["result"]["ide"] == "Neovim"
    editor.lua("vim.fn.jobstop(_G.probe_job)")


def test_host_is_not_spawned_during_startup(editor_factory, sandbox):
    """The Python host starts after VimEnter, never inside init.lua or VimEnter itself."""
    editor = editor_factory(
        args=[
            "--cmd",
            "autocmd VimEnter * let g:host_at_vimenter ="
            " luaeval(\"package.loaded['gemini_companion.host'] and require('gemini_companion.host').channel or 0\")",
        ]
    )
    assert editor.nvim.vars["host_at_vimenter"] == 0
    editor.wait_state("running")


def test_the_discovery_file_is_out_before_pythons_site_loads(editor_factory, sandbox):
    """The host writes the discovery file before `site` (site-packages, .pth files, sitecustomize)
    loads, which the file needs none of; site still loads, so pynvim is found and the host runs."""
    customize = sandbox.base / "customize"
    customize.mkdir()
    seen = sandbox.base / "files_at_site"
    (customize / "sitecustomize.py").write_text(
        "import glob, os\n"
        f"files = glob.glob(os.path.join({str(sandbox.gemini_dir)!r}, 'gemini-ide-server-*.json'))\n"
        f"open({str(seen)!r}, 'w').write(str(len(files)))\n"
    )
    sandbox.env["PYTHONPATH"] = str(customize)
    editor = editor_factory()
    editor.wait_state("running")
    assert seen.read_text() == "1"


def test_host_killed_under_a_running_neovim_then_restarted(editor, sandbox):
    """Host death is noticed at once, said once, taken back; `restart` brings a fresh host in this Neovim."""
    editor.lua(
        "_G.events = 0 vim.api.nvim_create_autocmd('User', {pattern = 'GeminiCompanionStatus',"
        " callback = function() _G.events = _G.events + 1 end})"
    )
    before = editor.status()
    old_token = editor.env("GEMINI_CLI_IDE_AUTH_TOKEN")
    host = host_process(editor)
    files = [*sandbox.gemini_dir.iterdir(), *sandbox.qwen_dir.iterdir()]
    host.kill()
    host.wait(TIMEOUT)
    status = editor.wait_state("failed")
    assert "killed" in status["error"] and "restart" in status["error"], status
    assert editor.lua("return _G.events") >= 1, "User GeminiCompanionStatus fired"
    assert not any(path.exists() for path in files)
    assert editor.env("GEMINI_CLI_IDE_SERVER_PORT") is None
    assert editor.env("GEMINI_CLI_IDE_AUTH_TOKEN") is None
    shown = editor.messages()
    assert shown.count("the Python host was killed") == 1, shown
    assert shown.count("gemini-companion: gemini-companion") == 0, shown
    editor.nvim.command("normal! ggjk")  # context tracking must not spam errors now
    assert editor.messages().count("gemini-companion") == shown.count("gemini-companion")

    editor.nvim.command("GeminiCompanion restart")  # how fast: `make bench`
    status = editor.wait_state("running")
    assert status["host_pid"] != before["host_pid"] and status["port"] != before["port"]
    assert status.get("error") is None
    token = editor.env("GEMINI_CLI_IDE_AUTH_TOKEN")
    assert token and token != old_token
    assert editor.env("GEMINI_CLI_IDE_SERVER_PORT") == str(status["port"])
    assert all(os.path.exists(path) for path in status["discovery_files"]) and len(status["discovery_files"]) == 2
    editor.close()  # VimLeavePre must not hang or complain
