"""The hook the plugin registers cannot be steered (issue 20): a project's `.env`, which Gemini CLI
loads into its environment in a trusted folder and so into every hook it runs, sets every
variable the hook command, bash, the loader or Python reads, each with a payload that leaves a
marker if it runs. The hook command is run as the CLIs run it (`bash -c`, the entry's `env`
over the CLI's) with a real Neovim and its real host. Outside Neovim nothing runs and nothing is
sent; inside, the turn reaches this Neovim only; with its Python gone it exits 0 and prints
`{}`. The same attack through the real `gemini` is in test_hook_hostile_real_clis.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from changes.hostile_hooks import PLANTED_KEY
from conftest import HARNESS, Editor, Sandbox, wait_for
from gemini_companion import owner as owners
from gemini_companion.contract import STARTUP_ENV
from gemini_companion.programs.hook import HOOKS_PATH, KEY_ENV, key_dir, read_key
from gemini_companion.server import http_guard
from harness.settings_edits import settings_edited

EVENTS = {  # the turn events first, then those that tell an agent's state
    "gemini": ["BeforeAgent", "AfterTool", "AfterAgent", "Notification", "SessionStart"],
    "qwen": [
        "UserPromptSubmit",
        "PostToolUse",
        "Stop",
        "StopFailure",
        "PermissionRequest",
        "Notification",
        "PreToolUse",
        "SessionStart",
    ],
}
OLD_COMMAND = '[ -z "$GEMINI_COMPANION_HOOK" ] || eval "$GEMINI_COMPANION_HOOK turn-start"'  # versions before


def entries(editor: Editor, cli: str) -> list[dict[str, Any]]:
    hooks = editor.lua("return require('gemini_companion.changes').hooks(...)", cli)
    return [hooks[event]["hooks"][0] for event in EVENTS[cli]]


def unprivileged(argv: list[str]) -> list[str]:
    """As `nobody` when the tests run as root: bash takes PS4 from the environment only then."""
    if os.geteuid() != 0:
        return argv
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--inh-caps=-all", *argv]


def run_hook(
    command: str,
    env: dict[str, str],
    cwd: Path,
    entry_env: dict[str, str] | None,
    as_nobody: bool = False,
    payload: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """As Gemini and Qwen run a hook: `bash -c`, the entry's env over the CLI's environment."""
    argv = ["/bin/bash", "-c", command]
    payload = payload or json.dumps({"hook_event_name": "BeforeAgent", "cwd": str(cwd), "session_id": "s"})
    return subprocess.run(
        unprivileged(argv) if as_nobody else argv,
        input=payload,
        env={**env, **(entry_env or {})},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=30,  # a bound for a hung hook; it ends in milliseconds
    )


def cli_env(sandbox: Sandbox) -> dict[str, str]:
    """A CLI's environment outside Neovim: nothing of the plugin's."""
    return {k: v for k, v in sandbox.env.items() if not k.startswith("GEMINI_COMPANION")}


@pytest.fixture
def ed(editor_factory) -> Editor:
    editor = editor_factory()
    editor.wait_state("running")
    return editor


def turns(editor: Editor) -> list[dict[str, Any]]:
    return editor.lua("return require('gemini_companion.changes').turns")


# --- the command the settings hold ---------------------------------------------------------------


@pytest.mark.parametrize("cli", ["gemini", "qwen"])
def test_the_command_holds_no_dollar_and_runs_only_the_plugins_python_on_hook_py(ed, cli):
    python = ed.lua("return vim.fn.exepath((require('gemini_companion.host').python()))")
    hook_py = str(Path(ed.lua("return require('gemini_companion.host').plugin")) / "programs" / "hook.py")
    for entry in entries(ed, cli):
        assert "$" not in json.dumps(entry), entry  # neither the shell nor the CLI's settings expand anything
        assert f"'{python}' -I -S '{hook_py}' " in entry["command"]
        assert "eval" not in entry["command"] and entry["name"] == "gemini-companion"
        assert entry["env"] == STARTUP_ENV  # changes/hooks.lua HOOK_ENV: contract.STARTUP_ENV's twin


# --- outside Neovim -----------------------------------------------------------------------------


@pytest.mark.parametrize("as_nobody", [False, True], ids=["as-user", "unprivileged"])
def test_outside_neovim_a_hostile_env_runs_nothing_and_sends_nothing(ed, sandbox, attack, listener, as_nobody):
    project = attack.marks.parent
    for cli in ("gemini", "qwen"):
        for entry in entries(ed, cli):
            # No key at all (the usual case): silent, at once.
            env = {k: v for k, v in {**cli_env(sandbox), **attack.env}.items() if k != KEY_ENV}
            done = run_hook(entry["command"], env, project, entry["env"], as_nobody)
            assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), done
            # A forged key, well-formed and naming a file the project planted under its TMPDIR.
            done = run_hook(entry["command"], {**cli_env(sandbox), **attack.env}, project, entry["env"], as_nobody)
            assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "{}", ""), done
    assert attack.markers() == [] and listener.connections == 0


def test_the_attack_is_live_without_the_entrys_own_env(ed, sandbox, attack):
    """The control: the same bytes do act on bash (so the test above can fail), and the old command
    ran whatever GEMINI_COMPANION_HOOK said."""
    env = {**cli_env(sandbox), **attack.env}
    run_hook(entries(ed, "gemini")[0]["command"], env, attack.marks.parent, None, as_nobody=True)
    assert {"mark-bash_env", "mark-ps4"} <= set(attack.markers())
    for marker in attack.marks.iterdir():
        marker.unlink()
    run_hook(OLD_COMMAND, env, attack.marks.parent, None)
    assert "mark-old-eval" in attack.markers()


@pytest.mark.parametrize(
    "key",
    [
        PLANTED_KEY,
        "f" * 32,
        "0123456789ABCDEF" * 2,  # upper case
        "a" * 31,
        "a" * 33,
        "../" * 8 + "etc/passwd",
        "a" * 16 + "/../../" + "a" * 9,
        "a" * 31 + "\n",
        "",
    ],
)
def test_a_forged_key_reads_no_other_file_and_sends_nothing(ed, sandbox, listener, attack, key):
    entry = entries(ed, "gemini")[0]
    env = {**cli_env(sandbox), **attack.env, KEY_ENV: key}
    done = run_hook(entry["command"], env, attack.marks.parent, entry["env"])
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "{}", ""), done
    assert attack.markers() == [] and listener.connections == 0
    assert read_key(key) is None


def test_a_key_file_that_is_not_ours_and_private_is_never_read(ed, sandbox, listener, attack):
    """In our own directory: a file open to others, or a symlink, is refused; the same file 0600
    is read (the control)."""
    entry = entries(ed, "gemini")[0]
    key = os.urandom(16).hex()
    directory = Path(key_dir())
    target = attack.marks.parent / "elsewhere.json"
    owner = {owners.OWNER_FIELD: os.getpid()}
    target.write_text(json.dumps({"port": listener.port, "token": "t", "agent": None, **owner}))
    target.chmod(0o600)
    path = directory / f"{key}.json"
    env = {**cli_env(sandbox), KEY_ENV: key}
    try:
        path.symlink_to(target)
        assert run_hook(entry["command"], env, attack.marks.parent, entry["env"]).stdout.strip() == "{}"
        path.unlink()
        shutil.copy(target, path)
        path.chmod(0o644)
        assert run_hook(entry["command"], env, attack.marks.parent, entry["env"]).stdout.strip() == "{}"
        assert listener.connections == 0
        path.chmod(0o600)
        run_hook(entry["command"], env, attack.marks.parent, entry["env"])
        wait_for(lambda: listener.connections == 1, 10, "the hook to report to the file's port")
    finally:
        path.unlink(missing_ok=True)


# --- inside Neovim ------------------------------------------------------------------------------


def test_inside_neovim_turns_reach_this_neovim_only_whatever_the_env_says(ed, sandbox, attack, listener):
    project = sandbox.project
    (project / "a.txt").write_text("one\n")
    terminal_key = ed.env(KEY_ENV)
    registered = ed.lua("return require('gemini_companion.host').request('agent_register', {name = 'gemini'})")
    # A variable the terminal (or the agent) already has is never overridden by a .env.
    for env_of_neovim, agent in (({KEY_ENV: terminal_key}, "external gemini"), (registered["env"], "gemini")):
        env = {**cli_env(sandbox), **attack.env, **env_of_neovim}
        start, tool, end, *_ = entries(ed, "gemini")
        known = len(turns(ed))
        for entry, change in ((start, None), (tool, f"{agent}\n"), (end, None)):
            if change:
                (project / "a.txt").write_text(change)
            done = run_hook(entry["command"], env, project, entry["env"])
            assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "{}", ""), done
        turn = wait_for(lambda known=known: len(turns(ed)) > known and turns(ed)[-1], 30, "the turn")
        assert turn["agent"] == agent and [f["path"] for f in turn["files"]] == ["a.txt"]
    assert attack.markers() == [] and listener.connections == 0


def test_a_payload_nested_deeper_than_pythons_reader_still_marks_the_turn(ed, sandbox):
    """The CLI's payload carries what the model sent (tool arguments): nested 100,000 deep, hook.py's
    json.loads raised RecursionError, not ValueError, and the hook sent nothing: the turn never ended."""
    project = sandbox.project
    (project / "a.txt").write_text("one\n")
    registered = ed.lua("return require('gemini_companion.host').request('agent_register', {name = 'gemini'})")
    env = {**cli_env(sandbox), **registered["env"]}
    start, _, end, *_ = entries(ed, "gemini")
    known = len(turns(ed))
    done = run_hook(start["command"], env, project, start["env"])
    assert (done.returncode, done.stdout.strip()) == (0, "{}"), done
    (project / "a.txt").write_text("two\n")
    nested = '{"hook_event_name": "AfterAgent", "session_id": "s", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    done = run_hook(end["command"], env, project, end["env"], payload=nested)
    assert (done.returncode, done.stdout.strip()) == (0, "{}"), done
    turn = wait_for(lambda: len(turns(ed)) > known and turns(ed)[-1], 30, "the turn")
    wait_for(lambda: turns(ed)[-1].get("ended"), 30, "the turn's end")
    assert [f["path"] for f in turn["files"]] == ["a.txt"]


def test_a_managed_agent_starts_with_what_bash_and_the_loader_read_made_inert(editor_factory, sandbox):
    log = sandbox.base / "agent.log"
    agent = {"cmd": [sys.executable, str(HARNESS / "fake_agent.py")], "env": {"FAKE_AGENT_LOG": str(log)}}
    for name in STARTUP_ENV:
        sandbox.env.pop(name, None)
    own = sandbox.base / "users_own_bash_env.sh"
    own.write_text("")
    sandbox.env["BASH_ENV"] = str(own)  # the user's own value stays
    ed = editor_factory(setup={"agents": {"fake": agent}, "default_agent": "fake"})
    ed.wait_state("running")
    ed.nvim.command("Gemini")
    wait_for(lambda: Path(f"{log}.env").exists(), what="the agent to start")
    env = json.loads(Path(f"{log}.env").read_text())
    assert {k: env[k] for k in STARTUP_ENV} == {**STARTUP_ENV, "BASH_ENV": str(own)}
    # Its own key: its file names the agent, so its turns are its own whatever its env says.
    assert env[KEY_ENV] != ed.env(KEY_ENV) and (read_key(env[KEY_ENV]) or (0, "", None))[2] == "fake"
    ed.nvim.command("GeminiCompanion stop")
    assert read_key(env[KEY_ENV]) is None  # the files go with the server


# --- its Python or hook.py gone ----------------------------------------------------------------


def test_with_its_python_or_hook_py_gone_it_exits_0_and_prints_an_empty_answer(ed, sandbox, open_base):
    venv = open_base / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to(sys.executable)
    ed.lua("vim.g.gemini_companion_python = ...", str(venv / "python"))  # what the settings name
    python_gone = entries(ed, "gemini")
    assert str(venv / "python") in python_gone[0]["command"]
    ed.lua("require('gemini_companion.host').plugin = ...", str(open_base / "removed"))
    hook_gone = entries(ed, "gemini")
    shutil.rmtree(open_base / "venv")  # the venv removed (rebuilt elsewhere)
    env = {**cli_env(sandbox), KEY_ENV: ed.env(KEY_ENV) or ""}
    for entry in python_gone + hook_gone:
        done = run_hook(entry["command"], env, sandbox.project, entry["env"])  # bounded: ends at once
        assert (done.returncode, done.stdout, done.stderr) == (0, "{}\n", ""), done


# --- paths a shell command cannot hold -----------------------------------------------------------


@pytest.mark.parametrize(
    "where, bad",
    [
        ("plugin", "/tmp/$HOME"),
        ("plugin", "/tmp/it's"),
        ("plugin", '/tmp/a"b'),
        ("plugin", "/tmp/a`id`"),
        ("plugin", "/tmp/a\\b"),
        ("plugin", "/tmp/line\nbreak"),
        ("plugin", "relative/path"),
        ("python", "/tmp/${PYTHON:-x}/python"),
        ("python", "no-such-python-anywhere"),
    ],
)
def test_a_path_no_command_can_hold_is_refused_in_one_line(ed, where, bad):
    place = {"plugin": "require('gemini_companion.host').plugin", "python": "vim.g.gemini_companion_python"}[where]
    hooks = ed.lua(f"{place} = ... return require('gemini_companion.changes').hooks('gemini')", bad)
    assert hooks is None
    said = [line for line in ed.messages().splitlines() if "turn hooks not registered" in line]
    assert len(said) == 1 and bad.split("\n")[-1].split("/")[-1] in said[0], said  # the whole path, one line


# --- settings written by earlier versions ------------------------------------------------------


def test_qwen_session_defaults_hold_the_new_entry_once_not_an_inherited_one(editor_factory, sandbox):
    old = {"hooks": [{"type": "command", "command": OLD_COMMAND.replace("turn-start", "turn-end"), "timeout": 7}]}
    admins = {"hooks": [{"type": "command", "command": "echo admin"}]}
    system = sandbox.base / "system-defaults.json"
    system.write_text(json.dumps({"$version": 4, "hooks": {"Stop": [admins, old], "PreCompact": [old]}}))
    sandbox.env["QWEN_CODE_SYSTEM_DEFAULTS_PATH"] = str(system)
    ed = editor_factory(setup={})
    ed.wait_state("running")
    ed.lua("require('gemini_companion.agents.qwen_defaults').ensure()")
    hooks = json.loads(Path(ed.env("QWEN_CODE_SYSTEM_DEFAULTS_PATH") or "").read_text())["hooks"]
    assert hooks["Stop"][0] == admins and len(hooks["Stop"]) == 2
    assert hooks["Stop"][1] == {"hooks": [entries(ed, "qwen")[2]]} and hooks["PreCompact"] == []


def test_settings_an_earlier_version_wrote_are_named_by_health_and_replaced_by_enable_cli(ed, sandbox):
    old = {"hooks": [{"type": "command", "command": OLD_COMMAND, "timeout": 60000}]}
    mine = {"hooks": [{"type": "command", "command": "echo mine"}]}
    settings = sandbox.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"hooks": {"BeforeAgent": [mine, old]}}))
    ed.nvim.command("checkhealth gemini_companion")
    report = "\n".join(ed.nvim.current.buffer[:])
    assert f"WARNING Gemini CLI: {settings} holds turn hooks of another version of the plugin" in report, report
    ed.nvim.command("GeminiCompanion enable-cli gemini")
    settings_edited(ed)
    hooks = json.loads(settings.read_text())["hooks"]
    assert hooks["BeforeAgent"] == [mine, {"hooks": [entries(ed, "gemini")[0]]}]
    ed.nvim.command("GeminiCompanion disable-cli gemini")
    settings_edited(ed)
    assert json.loads(settings.read_text())["hooks"] == {"BeforeAgent": [mine]}


def test_health_names_hooks_gemini_shows_outside_neovim_or_runs_nowhere(editor_factory, sandbox):
    """Entries without our hooksConfig.disabled item (written before it existed; cli_settings =
    'never' keeps them): Gemini shows them outside Neovim. Our hooks' name in the list (Gemini's
    `/hooks enable|disable-all` write back the list as they read it, our item expanded): none run."""
    settings = sandbox.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    ed = editor_factory(setup={"cli_settings": "never"})
    ed.wait_state("running")
    ours = ed.lua("return require('gemini_companion.changes').hooks('gemini')")
    hooks = {event: [entry] for event, entry in ours.items()}
    settings.write_text(json.dumps({"hooks": hooks}))
    ed.nvim.command("checkhealth gemini_companion")
    report = "\n".join(ed.nvim.current.buffer[:])
    shown = "WARNING Gemini CLI shows the turn hooks outside Neovim too: no hooksConfig.disabled item in"
    assert shown in report, report
    settings.write_text(json.dumps({"hooks": hooks, "hooksConfig": {"disabled": ["gemini-companion"]}}))
    ed.nvim.command("checkhealth gemini_companion")
    report = "\n".join(ed.nvim.current.buffer[:])
    assert "WARNING Gemini CLI runs none of the turn hooks: hooksConfig.disabled in" in report, report


def test_a_disabled_list_that_is_not_a_list_stays_and_nothing_is_said_replaced(editor_factory, sandbox):
    settings = sandbox.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    first = editor_factory(setup={"cli_settings": "never"})
    ours = first.lua("return require('gemini_companion.changes').hooks('gemini')")
    first.close()
    hooks = {event: [entry] for event, entry in ours.items()}
    original = json.dumps({"hooks": hooks, "hooksConfig": {"disabled": "x"}})
    settings.write_text(original)
    ed = editor_factory(setup={"cli_settings": "auto"})
    ed.wait_state("running")
    ed.lua("require('gemini_companion.agents.cli_settings').replace_stale_hooks()")  # ran at start: now done
    settings_edited(ed)
    assert settings.read_text() == original
    assert "replaced the turn hooks" not in ed.messages()


def test_hook_py_posts_to_the_servers_hooks_path():
    assert HOOKS_PATH == http_guard.HOOKS_PATH  # hook.py imports none of the server's modules


def test_a_crashed_neovims_key_file_is_swept(editor_factory):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    Path(key_dir()).mkdir(parents=True, exist_ok=True)
    stale = Path(key_dir()) / f"{os.urandom(16).hex()}.json"
    stale.write_text(json.dumps({"port": 1, "token": "t", "agent": None, "neovimCompanionPid": int(dead.stdout)}))
    stale.chmod(0o600)
    editor_factory().wait_state("running")
    assert not stale.exists()


def test_a_key_file_a_killed_host_left_is_never_used(ed, sandbox, listener, attack):
    """A host killed with SIGKILL leaves its key file; an agent that outlives it (in tmux) must not
    send its tool commands to whoever holds that port now, even when the host's PID is in use again."""
    entry = entries(ed, "gemini")[0]
    key = os.urandom(16).hex()
    dead = subprocess.Popen(["true"])
    dead.wait()
    path = Path(key_dir()) / f"{key}.json"
    env = {**cli_env(sandbox), KEY_ENV: key}
    try:
        reused = (os.getpid(), 1)  # a live PID, but another process than the one that wrote the file
        control = (os.getpid(), owners.process_start(os.getpid()))
        for (owner, started), reports in (((dead.pid, None), 0), (reused, 0), (control, 1)):
            path.unlink(missing_ok=True)
            fields = {owners.OWNER_FIELD: owner, owners.OWNER_START_FIELD: started}
            path.write_text(json.dumps({"port": listener.port, "token": "t", "agent": None, **fields}))
            path.chmod(0o600)
            assert run_hook(entry["command"], env, attack.marks.parent, entry["env"]).stdout.strip() == "{}"
            wait_for(lambda reports=reports: listener.connections == reports, 10, "the hook to decide")
    finally:
        path.unlink(missing_ok=True)


# An entry of the version before hook.py moved to programs/ (it would answer `{}` and track nothing).
MOVED_COMMAND = (
    "declare -p GEMINI_COMPANION_HOOK_ID >/dev/null 2>&1 || exit 0; [[ -x '/usr/bin/python3' &&"
    " -f '/old/rplugin/python3/gemini_companion/hook.py' ]] && '/usr/bin/python3' -I -S"
    " '/old/rplugin/python3/gemini_companion/hook.py' turn-start || echo '{}'; exit 0"
)


@pytest.mark.parametrize(("mode", "command"), [("ask", OLD_COMMAND), ("never", OLD_COMMAND), ("ask", MOVED_COMMAND)])
def test_earlier_versions_hooks_are_replaced_at_start_and_nothing_else(editor_factory, sandbox, mode, command):
    """Those entries ran what a .env said, outside Neovim too (or name a hook.py that moved): the
    user said yes to our hooks once, so the next start swaps them for the current ones (not with
    cli_settings = 'never'); every other key, the user's own hooks among them, stays as it was."""
    old = {"hooks": [{"type": "command", "command": command, "timeout": 60000}]}
    mine = {"hooks": [{"type": "command", "command": "echo mine"}]}
    settings = sandbox.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    original = json.dumps({"model": {"name": "x"}, "hooks": {"BeforeAgent": [mine, old], "AfterAgent": [old]}})
    settings.write_text(original)
    editor = editor_factory(setup={"cli_settings": mode})
    editor.wait_state("running")
    if mode == "never":
        # The replacement is scheduled as the host is spawned, long before it reports running.
        assert settings.read_text() == original
        return
    ours = [{"hooks": [entry]} for entry in entries(editor, "gemini")]
    done = wait_for(
        lambda: (s := json.loads(settings.read_text()))["hooks"].get("AfterTool") and s, what="the hooks replaced"
    )
    assert done["model"] == {"name": "x"} and "ide" not in done and "mcpServers" not in done
    assert done["hooks"] == {
        "BeforeAgent": [mine, ours[0]],
        "AfterTool": [ours[1]],
        "AfterAgent": [ours[2]],
        "Notification": [ours[3]],
        "SessionStart": [ours[4]],
    }
    assert json.dumps(command)[1:-1] not in settings.read_text()
    wait_for(lambda: "replaced the turn hooks" in editor.messages(), what="one line that says so")
