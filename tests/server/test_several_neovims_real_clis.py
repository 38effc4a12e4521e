"""Several Neovims on one project: each CLI reaches its own editor (issue 5)."""

from __future__ import annotations

import pytest

from conftest import NodeClient, Sandbox, wait_for
from harness.fake_model import FakeModel, Turn
from harness.tui import E2E_TIMEOUT, GEMINI_BIN, READY, Tui, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]


def test_each_cli_talks_to_the_neovim_it_runs_in(sandbox: Sandbox):
    target = sandbox.project / "shared.txt"
    target.write_text("one\n")
    edit = Turn(call="write_file", args={"file_path": str(target), "content": "two\n"})
    model = FakeModel([edit, Turn(text="Wrote it.")])
    first = Tui(sandbox, model.url, [str(target)], name="first")
    second = Tui(sandbox, model.url, [str(target)], name="second")
    try:
        for tui in (first, second):
            tui.wait_running()
        assert len(list(sandbox.gemini_dir.iterdir())) == 2
        for tui in (first, second):
            tui.start_cli(str(GEMINI_BIN), READY)
        wait_for(lambda: all(t.status()["clients"] for t in (first, second)), E2E_TIMEOUT, "both CLIs connected")
        assert len(first.status()["clients"]) == len(second.status()["clients"]) == 1

        second.prompt("rewrite shared.txt", lambda: model.requests)
        second.wait_diff()
        assert first.status()["diffs"] == []
        second.ex("w")
        wait_for(lambda: target.read_text() == "two\n", E2E_TIMEOUT, "the write")
    finally:
        first.close()
        second.close()
        model.close()


def test_cli_outside_neovim_connects_to_a_running_instance(editor, sandbox: Sandbox):
    """No inherited variables and no Neovim among its ancestors: the workspace match decides."""
    env = {k: v for k, v in sandbox.env.items() if not k.startswith(("GEMINI_CLI_IDE_", "QWEN_CODE_IDE_"))}
    client = NodeClient("gemini_client.mjs", env, sandbox.project)
    try:
        assert client.call("connect")["status"] == "connected"
        wait_for(lambda: editor.status()["clients"], what="the editor to see the client")
    finally:
        client.close()


def test_pinning_an_outside_cli_with_the_port_variable(editor_factory, sandbox: Sandbox):
    first, second = editor_factory(), editor_factory()
    for editor in (first, second):
        editor.wait_state("running")
    env = {k: v for k, v in sandbox.env.items() if not k.startswith(("GEMINI_CLI_IDE_", "QWEN_CODE_IDE_"))}
    for editor in (first, second):
        pinned = dict(env, GEMINI_CLI_IDE_SERVER_PORT=str(editor.status()["port"]))
        client = NodeClient("gemini_client.mjs", pinned, sandbox.project)
        try:
            assert client.call("connect")["status"] == "connected"
            wait_for(lambda e=editor: e.status()["clients"], what="the pinned editor to see the client")
        finally:
            client.close()
