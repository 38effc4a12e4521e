"""`:checkhealth gemini_companion`, and the one-line hints when the plugin cannot run."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pynvim

from conftest import Editor, wait_for
from core.helpers import checkhealth
from harness.settings_edits import settings_edited

BROKEN = ("E117", "stack traceback", "Error executing", "Traceback")


def run(editor: Editor, command: str) -> str:
    """A command's output; an error message it gives is raised by nvim_exec2, so it is caught."""
    try:
        return editor.nvim.api.exec2(command, {"output": True})["output"]
    except pynvim.NvimError as err:
        return str(err)


def messages(editor: Editor) -> str:
    return editor.messages()


def lines_with(report: str, word: str) -> list[str]:
    return [line for line in report.splitlines() if word in line]


def test_health_is_ok_for_a_running_server(editor):
    status = editor.status()
    report = checkhealth(editor)
    assert not lines_with(report, "ERROR"), report
    assert re.search(rf"OK .*running on 127\.0\.0\.1:{status['port']}", report), report
    for dependency in ("pynvim", "h11", "psutil"):
        assert re.search(rf"OK {dependency} \d", report), report
    assert re.search(r"OK running \(pid \d+, channel \d+\)", report), report
    assert re.search(r"its log: level 'warn', \S+/gemini-companion/companion\.log \(:GeminiCompanion log\)", report)
    for path in status["discovery_files"]:
        assert f"OK discovery file {path}" in report
    assert "OK terminals opened from now on point at this server" in report
    # The token is reported as set, never shown.
    token = editor.env("GEMINI_CLI_IDE_AUTH_TOKEN")
    assert token and token not in report
    assert "GEMINI_CLI_IDE_AUTH_TOKEN is set" in report


def test_health_checks_each_agent_and_gemini_ide_mode(editor_factory, sandbox):
    settings = sandbox.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text('{"ide": {"enabled": false}}')
    setup = {
        "agents": {
            "here": {"cmd": ["sh"]},
            "gone": {"cmd": ["no-such-cli"]},
            "far": {"cmd": ["sh"], "provider": "external"},
        },
        "default_agent": "here",
    }
    report = checkhealth(editor_factory(setup=setup))
    assert "OK here: sh (native)" in report
    assert "WARNING gone: no-such-cli (native): not on PATH" in report
    assert "ERROR far: sh (external): terminal.external.cmd is not set" in report
    assert f"WARNING Gemini CLI: you turned IDE mode off in {settings}" in report


def test_health_says_where_the_model_finds_the_editor_tools(editor_factory, sandbox):
    editor = editor_factory()
    editor.wait_state("running")
    report = checkhealth(editor)
    assert f"OK endpoint {editor.status()['tools']['url']}" in report
    assert "OK Qwen Code: registered in this session's defaults file" in report
    assert "WARNING Gemini CLI: mcpServers.neovim, mcpServers.neovim-open not in" in report
    assert f"Gemini CLI: {sandbox.project} is not trusted yet (no rule in" in report
    editor.nvim.command("GeminiCompanion enable-cli gemini")
    settings_edited(editor)
    trusted = sandbox.home / ".gemini" / "trustedFolders.json"
    trusted.write_text(json.dumps({str(sandbox.project): "TRUST_FOLDER", str(sandbox.project / "sub"): "DO_NOT_TRUST"}))
    report = checkhealth(editor)
    assert "OK Gemini CLI: registered in" in report
    assert f"OK Gemini CLI trusts {sandbox.project}" in report, report
    (sandbox.project / "sub").mkdir()
    editor.nvim.command(f"cd {sandbox.project / 'sub'}")
    report = checkhealth(editor)
    assert "WARNING Gemini CLI starts no MCP server in an untrusted folder" in report, report
    assert "DO_NOT_TRUST" in report
    assert "WARNING Gemini CLI runs no hooks in a folder it does not trust" in report
    assert "OK Qwen Code: turn hooks in this session's defaults file" in report
    assert "is outside git: snapshots go to a private repository" in report


def test_health_reports_an_unsafe_discovery_directory(editor_factory, sandbox):
    unsafe = sandbox.tmp / "gemini"
    unsafe.mkdir()
    unsafe.chmod(0o777)  # writable by others, no sticky bit: another user could plant files
    ed = editor_factory()
    ed.wait_state("running")
    report = checkhealth(ed)
    assert any("writable by others" in line for line in lines_with(report, "ERROR")), report
    assert lines_with(report, "ERROR no Gemini discovery file was written"), report
    assert not list(unsafe.iterdir())  # nothing was written there


def test_health_reports_a_tmpdir_that_does_not_exist(editor_factory, sandbox):
    sandbox.env["TMPDIR"] = str(sandbox.base / "nowhere")
    ed = editor_factory(setup={"auto_start": False})
    report = checkhealth(ed)
    assert lines_with(report, f"ERROR TMPDIR={sandbox.base / 'nowhere'} points to a directory that does not exist")


def test_missing_python_gives_one_clear_line_per_command(editor_factory, sandbox, tmp_path: Path):
    sandbox.env["GEMINI_COMPANION_PYTHON"] = str(tmp_path / "no-venv" / "bin" / "python")
    ed = editor_factory()
    # Nothing at startup; the state says why, and the first :terminal says it once.
    status = wait_for(lambda: (s := ed.status())["state"] == "failed" and s, what="the failed start")
    assert "make install" in status["error"] and messages(ed) == "", messages(ed)
    ed.nvim.command("terminal")
    wait_for(lambda: messages(ed).count("make install") == 1, what="the hint on first use")
    hints: dict[str, int] = {}
    for command in ("GeminiCompanion start", "GeminiCompanionStatus", "GeminiCompanion restart"):
        ed.nvim.command("messages clear")
        output = run(ed, command) + messages(ed)
        hints[command] = sum("make install" in line for line in output.splitlines())
        assert not any(word in output for word in BROKEN), (command, output)
    assert hints == dict.fromkeys(hints, 1), hints
    status = ed.status()
    assert status["state"] == "failed" and "does not exist" in status["error"], status
    report = checkhealth(ed)
    assert lines_with(report, "ERROR"), report
    assert "make install" in report


def test_running_update_remote_plugins_anyway_changes_nothing(editor, sandbox):
    """A user's habit: the plugin needs no manifest, and a manifest written anyway does no harm."""
    editor.nvim.vars["python3_host_prog"] = sys.executable  # a user with a working Python provider
    editor.nvim.command("UpdateRemotePlugins")
    # Loaded by the provider's host the package exports no handlers: nothing is registered twice.
    assert "gemini_companion" not in (sandbox.base / "rplugin.vim").read_text()
    port = editor.status()["port"]
    editor.nvim.command("GeminiCompanion restart")
    status = editor.wait_state("running")
    assert status["port"] != port
    assert not any(word in messages(editor) for word in BROKEN)


def test_host_without_h11_fails_with_make_install(editor_factory, sandbox, tmp_path: Path):
    # Shadow the installed `h11` with a package that cannot be imported: the host's
    # Python then behaves exactly like one where `h11` is missing.
    shadow = tmp_path / "shadow" / "h11"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'h11'\", name='h11')\n")
    sandbox.env["PYTHONPATH"] = str(shadow.parent)
    ed = editor_factory()
    status = ed.wait_state("failed")
    assert "make install" in status["error"] and "h11" in status["error"], status
    assert not status["discovery_files"] and not list(sandbox.gemini_dir.iterdir())
    assert ed.env("GEMINI_CLI_IDE_SERVER_PORT") is None
    shown = messages(ed)
    assert "make install" in shown and not any(word in shown for word in BROKEN), shown
    report = checkhealth(ed)
    assert lines_with(report, "ERROR failed:"), report
    assert lines_with(report, "ERROR h11"), report
    assert "make install" in report
