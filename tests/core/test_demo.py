"""`make demo` as a user sees it: under tmux at 80x24 and 160x45 it opens without a "Press ENTER"
prompt, and `:Gemini qwen` starts the pinned Qwen from tests/node/ when no qwen is on PATH."""

from __future__ import annotations

import shutil
import subprocess

import psutil
import pytest

from conftest import NODE_DIR, ROOT, TIMEOUT, Sandbox, nvim_binary, wait_for

QWEN_CLI = str(NODE_DIR / "node_modules" / "@qwen-code" / "qwen-code" / "cli.js")

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]


def a_qwen_of(sandbox: Sandbox) -> psutil.Process | None:
    """The pinned Qwen started in this test's world (its HOME), if one runs."""
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if QWEN_CLI in (proc.info["cmdline"] or []) and proc.environ().get("HOME") == str(sandbox.home):
                return proc
        except psutil.Error:
            continue
    return None


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
def test_the_demo_opens_without_a_prompt_and_starts_the_pinned_qwen(sandbox: Sandbox, size: tuple[int, int]) -> None:
    socket = sandbox.base / "tmux.sock"
    # A user's PATH without either CLI (the pinned ones are not on it), and no CI variables.
    env = {k: v for k, v in sandbox.env.items() if k != "CI" and not k.startswith("CI_")}
    env.update(PATH="/usr/local/bin:/usr/bin:/bin", TERM="xterm-256color", GEMINI_COMPANION_NVIM=nvim_binary())
    assert shutil.which("qwen", path=env["PATH"]) is None

    def tmux(*args: str) -> str:
        done = subprocess.run(
            ["tmux", "-S", str(socket), "-f", "/dev/null", *args],
            env=env,
            cwd=sandbox.project,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=True,
        )
        return done.stdout

    demo = f"{ROOT / '.venv' / 'bin' / 'python'} {ROOT / 'scripts' / 'demo.py'}"
    tmux("new-session", "-d", "-x", str(size[0]), "-y", str(size[1]), demo)
    try:
        # The server is up (its discovery file is written) and whatever start-up said is on screen.
        wait_for(lambda: list(sandbox.gemini_dir.glob("gemini-ide-server-*.json")), TIMEOUT, "the server")
        screen = wait_for(lambda: "[Scratch]" in (s := tmux("capture-pane", "-p")) and s, TIMEOUT, "the demo's text")
        assert "Press ENTER" not in screen
        assert screen.splitlines()[0].startswith("gemini-companion demo")
        assert "qwen: not on PATH; the pinned one" in screen.replace("\n", "")

        tmux("send-keys", ":Gemini qwen", "Enter")
        wait_for(lambda: a_qwen_of(sandbox), TIMEOUT, "the pinned Qwen running")
        wait_for(lambda: "://agent/qwen" in tmux("capture-pane", "-p"), TIMEOUT, "the agent's window")
        assert "Press ENTER" not in tmux("capture-pane", "-p")
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, timeout=TIMEOUT)
    wait_for(lambda: a_qwen_of(sandbox) is None, TIMEOUT, "Qwen gone with the demo")
