"""The host's log with each real CLI under tmux: `:Gemini` starts it, it connects, its hooks
run, the scripted model reads a buffer with unsaved text through the editor tools. At 'trace' the
log has each of those, with times, and never a token or the text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import Sandbox, wait_for
from harness.fake_model import FakeModel, Turn
from harness.tui import E2E_TIMEOUT, GEMINI_BIN, NODE22, QWEN_CLI, Tui, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]

ON_DISK = "ON_DISK = 'text-4b1e'"
UNSAVED = "UNSAVED = 'text-a9c2'"
# Each CLI's name for the tool, its label, its turn's first hook (client-facts.md).
CLIS = {
    "gemini": ([str(GEMINI_BIN)], "mcp_neovim_read_buffer", r"gemini \(Gemini CLI [\d.]+\)", "BeforeAgent"),
    "qwen": (
        [str(NODE22), str(QWEN_CLI)],
        "mcp__neovim__read_buffer",
        r"qwen \(Qwen Code [\d.]+\)",
        "UserPromptSubmit",
    ),
}


@pytest.mark.parametrize("cli", list(CLIS))
def test_a_real_session_is_logged_without_a_token_or_the_text(sandbox: Sandbox, cli: str):
    cmd, tool, label, turn_hook = CLIS[cli]
    app = sandbox.project / "app.py"
    app.write_text(ON_DISK + "\n")
    model = FakeModel([Turn(call=tool, args={"path": "app.py"}), Turn(text="Read it.")])
    setup = {
        "agents": {cli: {"cmd": cmd}},
        "default_agent": cli,
        "cli_settings": "auto",
        "log": {"level": "trace"},
    }
    tui = Tui(sandbox, model.url, [str(app)], ide_enabled=False, setup=setup)
    log = sandbox.base / "state" / "nvim" / "gemini-companion" / "companion.log"
    try:
        tui.wait_running()
        tui.lua("vim.api.nvim_buf_set_lines(0, 0, 0, false, {...})", UNSAVED)
        tui.ex("Gemini")
        wait_for(lambda: tui.status()["clients"], E2E_TIMEOUT, f"{cli} to connect")
        # Started all through (its MCP servers loaded): a prompt sent sooner may lose its Enter.
        started = "hook_event_name='SessionStart'"
        wait_for(lambda: started in log.read_text(), E2E_TIMEOUT, f"{cli}'s SessionStart hook in the log")
        try:
            tui.ask_agent("read app.py", lambda: model.requests)
        except AssertionError as err:
            raise AssertionError(f"{err}; the screen:\n{tui.screen()}\nthe log:\n{log.read_text()[-3000:]}") from None
        tui.wait_screen("Read it.")
        assert UNSAVED in json.dumps(model.tool_results())  # the model did read the text
        status = tui.status()
        tokens = [status["tools"]["headers"]["Authorization"].removeprefix("Bearer ")]
        for path in status["discovery_files"]:
            if path.endswith((".json", ".lock")):  # each CLI's, the shared one and the agent's own
                tokens.append(json.loads(Path(path).read_text())["authToken"])
        read = r" DEBUG .*→ 'tools/call' #\d+ \{name='read_buffer' arguments=\{path='app.py'\}.* → ok .* in \d+\.\d ms"
        wait_for(lambda: re.search(read, log.read_text()), E2E_TIMEOUT, "the read_buffer call in the log")
        text = log.read_text()
    finally:
        tui.close()
        model.close()
    assert re.search(rf" INFO  \[\d+\] {label} connected to /mcp ", text), text[-3000:]
    assert re.search(r" DEBUG .*← ide/contextUpdate \{workspaceState=", text), text[-3000:]
    hook = rf" DEBUG \[\d+\] hook \{{.*hook_event_name='{turn_hook}'.*\}} → .* in \d+\.\d ms"
    assert re.search(hook, text), text[-3000:]
    assert len(tokens) >= 5  # the tools' header, both shared files, the agent's own two
    for token in tokens:
        assert len(token) >= 32 and token not in text
    assert "text-4b1e" not in text and "text-a9c2" not in text
