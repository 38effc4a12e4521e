"""The hook the plugin registers cannot be steered, with the real `gemini` (0.61.0): in a trusted
folder it loads a project's `.env` (the workspace's, a parent's, or `.gemini/.env`) into its
environment and so into every hook. That `.env` sets every variable the hook, its command, bash,
the loader or Python reads, each with a payload that leaves a marker if it runs. Outside Neovim
(settings written by the plugin's own enable-cli) the turn reaches the model, nothing runs and
nothing is sent; inside Neovim (:Gemini) the turn reaches this Neovim, and nothing runs. With its
Python gone, the hook lets the turn go on (an old-style command blocked it: the control)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from changes.hostile_hooks import Attack, Listener
from conftest import Editor, Sandbox, wait_for
from gemini_companion.contract import STARTUP_ENV
from gemini_companion.programs.hook import KEY_ENV
from harness.fake_model import FakeModel, Turn
from harness.settings_edits import edit_settings
from harness.tui import E2E_TIMEOUT, GEMINI_BIN, NODE22, QWEN_CLI, Tui, gemini_settings, terminal_env, tmux_available

pytestmark = [pytest.mark.e2e]

ENV_FILES = {"workspace": ".env", "parent": "../.env", "gemini-dir": ".gemini/.env"}


def dotenv(values: dict[str, str]) -> str:
    """A `.env` file: single quotes keep every value literal (dotenv's own rule)."""
    assert not any("'" in v or "\n" in v for v in values.values())
    return "".join(f"{key}='{value}'\n" for key, value in values.items())


def probe(dump: Path) -> dict[str, Any]:
    """A user's own hook that records the environment the CLI gives hooks (with bash's startup
    variables inert itself): proof that the `.env` was loaded and reached them."""
    return {"hooks": [{"type": "command", "command": f"env > {dump}; echo '{{}}'", "env": STARTUP_ENV}]}


def enable_cli(editor: Editor) -> dict[str, Any]:
    """The plugin's own enable-cli, into the sandbox HOME's Gemini settings; the settings."""
    changes = edit_settings(editor, "enable")
    assert changes, changes
    path = Path(editor.lua("return require('gemini_companion.agents.cli_settings').path('gemini')"))
    return json.loads(path.read_text())


def run_gemini(sandbox: Sandbox, model: FakeModel, cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """`gemini -p` in a plain terminal (no Neovim): the CLI's env has nothing of the plugin's, and
    no TMPDIR or XDG_RUNTIME_DIR, so the `.env`'s values for them land."""
    env = {k: v for k, v in terminal_env(sandbox, model.url).items() if not k.startswith("GEMINI_COMPANION")}
    for name in ("TMPDIR", "TMP", "TEMP", "XDG_RUNTIME_DIR"):
        env.pop(name, None)
    env.update(extra)
    return subprocess.run(
        [str(GEMINI_BIN), "-p", "say hello"], cwd=cwd, env=env, capture_output=True, text=True, timeout=E2E_TIMEOUT
    )


def ours_ran(attack: Attack) -> dict[str, str]:
    """What the payloads left, but for Gemini's own processes: with LD_PRELOAD in a `.env`, Gemini
    itself runs `git` and `sh -c ps ...` with it (out of the plugin's hands; see the report). The
    library records each process's command line: the hook's bash and Python name hook.py."""
    left = {m: (attack.marks / m).read_text(errors="replace").replace("\0", " ") for m in attack.markers()}
    return {m: text for m, text in left.items() if not m.startswith("mark-ld_preload-") or "hook.py" in text}


@pytest.fixture
def ed(editor_factory) -> Editor:
    editor = editor_factory()
    editor.wait_state("running")
    return editor


@pytest.mark.parametrize("where", list(ENV_FILES))
def test_outside_neovim_a_hostile_env_file_runs_nothing_and_sends_nothing(
    ed, sandbox, attack: Attack, listener: Listener, where
):
    gemini_settings(sandbox.home)
    settings = enable_cli(ed)
    dump = attack.marks.parent / "hook-env.txt"
    settings["hooks"]["BeforeAgent"].insert(0, probe(dump))
    (sandbox.home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    workspace = attack.marks.parent / "parent" / "project"
    (workspace / ".gemini").mkdir(parents=True)
    (workspace / ENV_FILES[where]).write_text(dotenv(attack.env))
    model = FakeModel([Turn(text="Hello from the model.")])
    try:
        done = run_gemini(sandbox, model, workspace)
    finally:
        model.close()
    assert done.returncode == 0 and "Hello from the model." in done.stdout, done
    loaded = dump.read_text()  # the hooks saw the .env: the attack was live
    assert f"EVIL_MARKS={attack.marks}" in loaded and f"{KEY_ENV}=" in loaded, loaded
    assert ours_ran(attack) == {}
    assert listener.connections == 0
    assert ed.lua("return #require('gemini_companion.changes').turns") == 0  # no Neovim was told


@pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI")
@pytest.mark.parametrize("cli", ["gemini", "qwen"])
def test_inside_neovim_turns_reach_this_neovim_and_a_hostile_env_file_runs_nothing(
    sandbox, attack: Attack, listener: Listener, cli
):
    project = sandbox.project
    target = str(project / "a.txt")
    (project / "a.txt").write_text("alpha\n")
    (project / ".env").write_text(dotenv(attack.env))
    read_first = [Turn(call="read_file", args={"file_path": target})] if cli == "qwen" else []
    model = FakeModel(
        [*read_first, Turn(call="write_file", args={"file_path": target, "content": "beta\n"}), Turn(text="Done.")]
    )
    command = {"gemini": [str(GEMINI_BIN), "--yolo"], "qwen": [str(NODE22), str(QWEN_CLI), "--yolo"]}[cli]
    setup = {"agents": {cli: {"cmd": command}}, "default_agent": cli, "cli_settings": "auto"}
    tui = Tui(sandbox, model.url, [target], ide_enabled=False, setup=setup)
    try:
        tui.wait_running()
        tui.ex("Gemini")
        tui.ask_agent("change a.txt", lambda: model.requests)
        turns = "return require('gemini_companion.changes').turns"
        turn = wait_for(lambda: [t for t in tui.lua(turns) if t["files"]], E2E_TIMEOUT, "the turn")[-1]
        assert turn["agent"] == cli and turn["boundary"] == "hooks"
        assert [f["path"] for f in turn["files"]] == ["a.txt"]
    finally:
        tui.close()
        model.close()
    # Not even the CLI's own processes: the agent's env has LD_PRELOAD and the rest set (inert).
    assert attack.markers() == [] and listener.connections == 0


def test_with_its_python_gone_the_turn_still_reaches_the_model(ed, sandbox, open_base):
    venv = open_base / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to(Path(ed.lua("return vim.fn.exepath((require('gemini_companion.host').python()))")))
    ed.lua("vim.g.gemini_companion_python = ...", str(venv / "python"))
    gemini_settings(sandbox.home)
    enable_cli(ed)
    shutil.rmtree(open_base / "venv")  # removed (rebuilt elsewhere) after enable-cli wrote its path
    model = FakeModel([Turn(text="Still here.")])
    try:
        done = run_gemini(sandbox, model, sandbox.project, **{KEY_ENV: "ab" * 16})  # as in a Neovim terminal
        assert done.returncode == 0 and "Still here." in done.stdout, done
        # The control: the command earlier versions wrote, with the same Python gone, blocks the turn.
        asked = len(model.requests)
        old = '[ -z "$GEMINI_COMPANION_HOOK" ] || eval "$GEMINI_COMPANION_HOOK turn-start"'
        settings = json.loads((sandbox.home / ".gemini" / "settings.json").read_text())
        settings["hooks"] = {"BeforeAgent": [{"hooks": [{"type": "command", "command": old, "timeout": 10000}]}]}
        (sandbox.home / ".gemini" / "settings.json").write_text(json.dumps(settings))
        gone = f"{venv / 'python'} -I -S {open_base / 'hook.py'}"
        done = run_gemini(sandbox, model, sandbox.project, GEMINI_COMPANION_HOOK=gone)
        assert len(model.requests) == asked, done  # blocked: the model never asked
    finally:
        model.close()
