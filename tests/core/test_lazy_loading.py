"""Loaded the way lazy.nvim users load plugins: `lazy = true` with `cmd`, `keys`, `event = 'VeryLazy'`,
`ft`, or a `require` from the user's own config. Whatever loads it, the first agent comes up connected
(its own token, no restart), every command is there, and a server that cannot start is said in one
line with no agent started unconnected. The real lazy.nvim (../shared/fixtures), a real Neovim TUI
under tmux (VeryLazy waits for a UI), the real `gemini` and `qwen` where a CLI is involved.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import HARNESS, NODE_DIR, ROOT, NodeClient, Sandbox, wait_for
from core.helpers import MANAGERS, readme_block
from harness.fake_model import FakeModel
from harness.tui import E2E_TIMEOUT, Tui, tmux_available

pytestmark = [
    pytest.mark.skipif(MANAGERS is None, reason="plugin-manager snapshots not found (../shared/fixtures)"),
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]

# What plugin/ defines: every one must work from the start.
COMMANDS = [
    "Gemini",
    "GeminiAccept",
    "GeminiAdd",
    "GeminiChanges",
    "GeminiCompanion",
    "GeminiCompanionStatus",
    "GeminiPrompt",
    "GeminiReject",
    "GeminiSend",
]


def user_config(sandbox: Sandbox, spec: str) -> None:
    """The user's init.lua: lazy.nvim with this checkout as a `dir =` plugin given `spec`'s fields."""
    assert MANAGERS is not None
    config = sandbox.base / "config" / "nvim"
    config.mkdir(parents=True, exist_ok=True)
    (config / "init.lua").write_text(f"""
vim.opt.rtp:prepend({str(MANAGERS / "lazy.nvim")!r})
vim.opt.shadafile = 'NONE'
vim.opt.swapfile = false
vim.g.mapleader = ' '
vim.g.gemini_companion_python = vim.env.GEMINI_COMPANION_PYTHON
require('lazy').setup({{ {spec} }}, {{
  install = {{ missing = false }},
  checker = {{ enabled = false }},
  change_detection = {{ enabled = false }},
  rocks = {{ enabled = false }},
}})
""")


def checkout(sandbox: Sandbox) -> Path:
    """This checkout under the name it is published as: lazy.nvim finds the plugin a `require`
    names by its directory's name (the last part of `dir`)."""
    link = sandbox.base / "plugins" / "gemini-companion.nvim"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(ROOT)
    return link


def ours(sandbox: Sandbox, fields: str) -> str:
    """A lazy spec of this checkout, loaded lazily by `fields`."""
    return f"{{ dir = {str(checkout(sandbox))!r}, lazy = true, {fields} }}".replace(", ,", ",")


# The fake agent's setup, as the spec's `opts` (its log is named by the environment).
FAKE_OPTS = (
    "opts = { default_agent = 'fake', agents = { fake = { cmd = { "
    f"{sys.executable!r}, {str(HARNESS / 'fake_agent.py')!r}"
    " }, env = { FAKE_AGENT_LOG = vim.env.FAKE_AGENT_LOG } } } }"
)


@pytest.fixture
def tui_factory(sandbox: Sandbox) -> Iterator[Callable[..., Tui]]:
    made: list[tuple[Tui, FakeModel]] = []

    def make(spec: str, files: list[str] | None = None, env: dict[str, str] | None = None) -> Tui:
        user_config(sandbox, spec)
        sandbox.env.update(env or {})
        # The real CLIs by their plain names, as a user has them on PATH (and Node 22 for Qwen).
        sandbox.env["PATH"] = f"{NODE_DIR / 'node_modules' / '.bin'}{os.pathsep}{sandbox.env['PATH']}"
        model = FakeModel([])
        tui = Tui(sandbox, model.url, files or [], init=None)
        made.append((tui, model))
        return tui

    yield make
    for tui, model in made:
        tui.close()
        model.close()


def loaded(tui: Tui) -> bool:
    return bool(tui.lua("return package.loaded['gemini_companion'] ~= nil"))


def agent_env(log: Path) -> dict[str, str]:
    """The environment the fake agent started with (it writes it as it starts)."""
    path = Path(str(log) + ".env")

    def written() -> dict[str, str] | None:
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    return wait_for(written, E2E_TIMEOUT, "the agent to start")


def assert_connected_first_agent(tui: Tui, sandbox: Sandbox, log: Path) -> None:
    """The first agent's environment names the server and its own token: a real Gemini IDE client
    started with it connects, as that agent."""
    env = agent_env(log)
    assert "GEMINI_CLI_IDE_SERVER_PORT" in env and "GEMINI_CLI_IDE_AUTH_TOKEN" in env, sorted(env)
    assert tui.status()["state"] == "running"
    client = NodeClient("gemini_client.mjs", env, sandbox.project)
    try:
        assert client.call("connect")["status"] == "connected"
        clients = wait_for(lambda: tui.status()["clients"], E2E_TIMEOUT, "the client in the status")
        assert [c.get("agent") for c in clients] == ["fake"], clients
    finally:
        client.close()
    defined = tui.lua("return vim.tbl_keys(vim.api.nvim_get_commands({}))")
    assert set(COMMANDS) <= set(defined), sorted(defined)


def run_when_defined(tui: Tui, command: str) -> None:
    """Run `command` the moment it exists (a user typing it as soon as it can)."""
    code = "if vim.fn.exists(':' .. ...) == 2 then vim.cmd(...) return true end return false"
    wait_for(lambda: tui.lua(code, command.split()[0], command), E2E_TIMEOUT, f":{command} defined")


def keys(*typed: str) -> Callable[[Tui], None]:
    def press(tui: Tui) -> None:
        tui.keys(*typed)

    return press


def lua(code: str) -> Callable[[Tui], None]:
    def run(tui: Tui) -> None:
        tui.lua(code)

    return run


# form → (the spec's fields, what the user does first: load the plugin and ask for the agent at once).
FORMS: dict[str, tuple[str, Callable[[Tui], None]]] = {
    "cmd": ("cmd = 'Gemini'", lua("vim.cmd('Gemini')")),
    "keys-command": ("keys = { { '<leader>ag', '<cmd>Gemini<cr>' } }", keys("Space", "a", "g")),
    "keys-lua-api": (
        "keys = { { '<leader>ag', function() require('gemini_companion.agents').toggle() end } }",
        keys("Space", "a", "g"),
    ),
    "event-VeryLazy": ("event = 'VeryLazy'", lambda tui: run_when_defined(tui, "Gemini")),
    "ft": ("ft = 'python'", lua("vim.cmd.edit('hello.py') vim.cmd('Gemini')")),
    "require": ("", lua("require('gemini_companion').status() vim.cmd('Gemini')")),
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_lazy_form_gives_a_connected_first_agent(form, tui_factory, sandbox):
    fields, first_use = FORMS[form]
    log = sandbox.base / "agent.log"
    tui = tui_factory(ours(sandbox, f"{fields}, {FAKE_OPTS}"), env={"FAKE_AGENT_LOG": str(log)})
    if form != "event-VeryLazy":
        assert not loaded(tui)  # lazy indeed: nothing of ours before the first use
    first_use(tui)
    assert_connected_first_agent(tui, sandbox, log)
    assert "E492" not in tui.nvim.api.exec2("messages", {"output": True})["output"]


def test_very_lazy_starts_the_server_when_it_loads_after_vimenter(tui_factory, sandbox):
    tui = tui_factory(ours(sandbox, f"event = 'VeryLazy', {FAKE_OPTS}"))
    wait_for(lambda: loaded(tui), E2E_TIMEOUT, "VeryLazy to load the plugin")
    assert tui.nvim.eval("v:vim_did_enter") == 1
    wait_for(lambda: tui.status()["state"] == "running", E2E_TIMEOUT, "the server, with no command typed")


def readme_lazy_spec(sandbox: Sandbox) -> str:
    """The README's lazy-loaded lazy.nvim spec, on this checkout."""
    spec = readme_block("loaded on first use")
    assert "'OWNER/gemini-companion.nvim'," in spec
    return spec.replace("'OWNER/gemini-companion.nvim',", f"dir = {str(checkout(sandbox))!r},")


def test_the_readme_lazy_spec_lists_every_command(tui_factory, sandbox):
    spec = readme_lazy_spec(sandbox)
    listed = re.findall(r"'(Gemini\w*)'", spec.split("keys")[0])
    assert sorted(listed) == COMMANDS
    tui = tui_factory(spec)
    tui.lua("require('gemini_companion')")
    defined = tui.lua("return vim.tbl_keys(vim.api.nvim_get_commands({}))")
    assert sorted(c for c in defined if c.startswith("Gemini")) == COMMANDS  # nothing left out


# What the user does first with the README's spec (never :Gemini): a command, or its visual-mode key.
FIRST: dict[str, Callable[[Tui], None]] = {
    "GeminiAdd": lua("vim.cmd('GeminiAdd')"),
    "GeminiSend": lua("vim.cmd('GeminiSend')"),
    "keys-visual-send": keys("V", "j", "Space", "a", "s"),
}


@pytest.mark.parametrize("first", sorted(FIRST))
def test_readme_lazy_spec_any_command_first_starts_a_connected_agent(first, tui_factory, sandbox):
    log = sandbox.base / "agent.log"
    (sandbox.project / "notes.txt").write_text("alpha\nbeta\n")
    spec = readme_lazy_spec(sandbox).replace("opts = {},", FAKE_OPTS + ",")
    tui = tui_factory(spec, ["notes.txt"], env={"FAKE_AGENT_LOG": str(log)})
    assert not loaded(tui)
    FIRST[first](tui)
    assert_connected_first_agent(tui, sandbox, log)
    # What the command sends reaches the agent once it takes input.
    wait_for(lambda: log.exists() and "notes.txt" in log.read_text(errors="replace"), E2E_TIMEOUT, "the text sent")


def not_started_line(tui: Tui) -> str:
    """The one line that says the agent was not started, and why."""
    said = wait_for(
        lambda: "fake not started" in (m := tui.nvim.api.exec2("messages", {"output": True})["output"]) and m,
        E2E_TIMEOUT,
        "the line saying why",
    )
    return next(line for line in said.splitlines() if "fake not started" in line)


def test_a_server_that_cannot_start_is_said_in_one_line_and_no_agent_starts(tui_factory, sandbox):
    log = sandbox.base / "agent.log"
    broken = sandbox.base / "broken-python"
    broken.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named pynvim' >&2\nexit 1\n")
    broken.chmod(0o755)
    env = {"FAKE_AGENT_LOG": str(log), "GEMINI_COMPANION_PYTHON": str(broken)}
    tui = tui_factory(ours(sandbox, f"cmd = 'Gemini', {FAKE_OPTS}"), env=env)
    tui.lua("vim.cmd('Gemini')")
    said = not_started_line(tui)
    assert "No module named pynvim" in said, said
    assert tui.status()["agents"] == [] and not Path(str(log) + ".env").exists()


def test_a_server_that_never_answers_is_waited_for_a_bounded_time_and_no_agent_starts(tui_factory, sandbox):
    log = sandbox.base / "agent.log"
    hung = sandbox.base / "hung-python"
    hung.write_text("#!/bin/sh\nexec sleep 600\n")  # a host that starts and never says a word
    hung.chmod(0o755)
    env = {"FAKE_AGENT_LOG": str(log), "GEMINI_COMPANION_PYTHON": str(hung)}
    tui = tui_factory(ours(sandbox, f"cmd = 'Gemini', {FAKE_OPTS}"), env=env)
    # (The require loads the plugin, as a statusline would; the bound is shortened for the test.)
    tui.lua("require('gemini_companion.agents.served').timeout_ms = 2000 vim.cmd('Gemini')")
    assert tui.lua("return vim.fn.mode()") == "n"  # Neovim goes on meanwhile: nothing waits in a loop
    said = not_started_line(tui)
    assert "did not answer within 2 s" in said, said
    assert tui.status()["agents"] == [] and not Path(str(log) + ".env").exists()
    # Ended here: Neovim's exit asks the host to stop and would wait for this one for ever.
    tui.lua("require('gemini_companion.host').shutdown()")


def first_cli_connects(tui: Tui, label: str) -> None:
    wait_for(
        lambda: [c["label"] for c in tui.status()["clients"]] == [label],
        E2E_TIMEOUT,
        f"{label} connected with its own token, no restart",
    )


@pytest.mark.e2e
def test_real_gemini_first_cmd_load_comes_up_connected(tui_factory, sandbox):
    """The issue's spec verbatim: `lazy = true, cmd = 'Gemini'`, no opts (setup() never runs)."""
    tui = tui_factory(ours(sandbox, "cmd = 'Gemini'"))
    assert not loaded(tui)
    tui.ex("Gemini")
    tui.wait_screen("(Y)es, (N)o")  # the one question before the first start (IDE mode in its settings)
    tui.type("y")
    tui.wait_ready()
    first_cli_connects(tui, "gemini (Gemini CLI 0.61.0)")


@pytest.mark.e2e
def test_real_qwen_first_load_by_the_readme_spec_comes_up_connected(tui_factory, sandbox):
    tui = tui_factory(readme_lazy_spec(sandbox))
    assert not loaded(tui)
    tui.ex("Gemini qwen")
    tui.wait_ready()
    first_cli_connects(tui, "qwen (Qwen Code 0.24.4)")
