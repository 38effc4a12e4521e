"""The turn hooks enable-cli writes into Gemini's user settings, with the real `gemini`: started
outside Neovim it neither runs nor shows them ("Executing Hook: gemini-companion" stayed on
screen 3 s at every start and turn); started in a Neovim terminal it runs them."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from conftest import TIMEOUT, Sandbox, wait_for
from harness.fake_model import FakeModel, Turn
from harness.settings_edits import settings_edited
from harness.tui import (
    E2E_TIMEOUT,
    GEMINI_BIN,
    READY,
    Tui,
    gemini_settings,
    kill_tmux,
    terminal_env,
    tmux_available,
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the CLI's screen"),
]

WATCH_SECONDS = 5.0  # longer than the 3 s Gemini keeps a hook's notice up
STATUS = re.compile(r"Thinking|esc to cancel")  # the model's spinner row: sampled at chance moments
STEADY_FRAMES = 3  # 300 ms on screen


def watch(tmux: list[str], env: dict[str, str], seconds: float) -> list[str]:
    """The screen every 100 ms for `seconds` (a sampling period, not a wait for anything)."""
    frames: list[str] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        frames.append(subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True, text=True, env=env).stdout)
        time.sleep(0.1)
    return frames


def outside_neovim(sandbox: Sandbox, name: str) -> list[str]:
    """`gemini` in a plain terminal (no Neovim anywhere): the frames from its prompt on, then
    through one turn."""
    model = FakeModel([Turn(text="Hello from the model.")])
    tmux = ["tmux", "-S", str(sandbox.base / f"{name}.sock"), "-f", "/dev/null"]
    env = terminal_env(sandbox, model.url)
    try:
        argv = [*tmux, "new-session", "-d", "-x", "200", "-y", "50", "-c", str(sandbox.project), str(GEMINI_BIN)]
        subprocess.run(argv, env=env, check=True, timeout=TIMEOUT)
        screen = lambda: subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True, text=True, env=env).stdout  # noqa: E731
        wait_for(lambda: READY in screen(), E2E_TIMEOUT, "gemini's prompt")
        frames = watch(tmux, env, WATCH_SECONDS)
        subprocess.run([*tmux, "send-keys", "-l", "hi"], env=env, check=True)
        wait_for(lambda: "> hi" in screen(), E2E_TIMEOUT, "the prompt typed")
        subprocess.run([*tmux, "send-keys", "Enter"], env=env, check=True)
        frames += watch(tmux, env, WATCH_SECONDS)
        wait_for(lambda: "Hello from the model." in screen(), E2E_TIMEOUT, "the model's answer")
        frames.append(screen())
    finally:
        kill_tmux(tmux, env)
        model.close()
    return frames


def lines_seen(frames: list[str], sandbox: Sandbox) -> set[str]:
    """Every piece of text that stayed on screen a moment (in STEADY_FRAMES frames or more) but the
    spinner row (its glyph, phrase and seconds depend on when a frame was taken), the sandbox's path
    named. A piece is a run of text between gaps of three spaces or more: the footer lays its items
    out in columns that move as items come and go (the MCP servers' count comes a moment after the
    prompt, sooner in one run than the next). A piece drawn for less than STEADY_FRAMES is the
    terminal catching up; a hook's notice stays 3 s, 30 frames, and is asserted apart besides."""
    counts: dict[str, int] = {}
    for frame in frames:
        pieces = set()
        for line in frame.replace(str(sandbox.base), "<sandbox>").splitlines():
            if not STATUS.search(line):
                pieces.update(piece for piece in re.split(r"\s{3,}", line.strip()) if piece)
        for piece in pieces:
            counts[piece] = counts.get(piece, 0) + 1
    return {piece for piece, count in counts.items() if count >= STEADY_FRAMES}


def test_geminis_turn_hooks_neither_run_nor_show_outside_neovim(editor_factory, sandbox: Sandbox):
    gemini_settings(sandbox.home, ide_enabled=False)
    settings = sandbox.home / ".gemini" / "settings.json"
    editor = editor_factory(setup={"auto_start": False})
    editor.nvim.command("GeminiCompanion enable-cli gemini")
    settings_edited(editor)
    editor.close()
    written = json.loads(settings.read_text())
    assert written["hooks"]["BeforeAgent"] and written["hooks"]["AfterAgent"]  # the entries are there
    with_ours = settings.read_bytes()

    shown = outside_neovim(sandbox, "with-ours")
    # The control: the same settings without the hook entries. (With the tool entries too, Gemini
    # counts them in its footer, "2 MCP servers": nothing in its settings hides a server's entry.)
    settings.write_text(json.dumps({k: v for k, v in written.items() if k not in ("hooks", "hooksConfig")}))
    control = outside_neovim(sandbox, "without")
    settings.write_bytes(with_ours)

    noticed = [frame for frame in shown if "Executing Hook" in frame or "gemini-companion" in frame]
    assert noticed == [], noticed[0]
    assert "Hello from the model." in shown[-1]
    assert lines_seen(shown, sandbox) == lines_seen(control, sandbox)


def test_gemini_in_a_plain_neovim_terminal_runs_the_turn_hooks(sandbox: Sandbox):
    model = FakeModel([Turn(text="Hello from the model.")])
    tui = Tui(sandbox, model.url, [], ide_enabled=False, setup={"cli_settings": "never"})
    try:
        tui.wait_running()
        tui.ex("GeminiCompanion enable-cli gemini")
        wait_for(lambda: "hooksConfig" in (sandbox.home / ".gemini" / "settings.json").read_text(), TIMEOUT, "written")
        tui.start_cli(str(GEMINI_BIN), READY)
        tui.prompt("hi", lambda: model.requests)
        turns = "return require('gemini_companion.changes').turns"
        turn = wait_for(lambda: tui.lua(turns), E2E_TIMEOUT, "the turn the hooks reported")[-1]
        assert turn["boundary"] == "hooks"
    finally:
        tui.close()
        model.close()


def test_settings_from_before_are_made_quiet_outside_neovim_and_disable_cli_takes_all_back(
    editor_factory, sandbox: Sandbox
):
    """Hook entries written before the `hooksConfig.disabled` item existed: the next start adds
    it (the entries are ours, written after the user's yes); disable-cli without a record (another
    Neovim's, or lost) takes back every byte of ours."""
    gemini_settings(sandbox.home, ide_enabled=False)
    settings = sandbox.home / ".gemini" / "settings.json"
    original = settings.read_text()
    editor = editor_factory(setup={"auto_start": False})
    hooks = editor.lua("return require('gemini_companion.changes').hooks('gemini')")
    editor.close()
    earlier = {**json.loads(original), "hooks": {event: [entry] for event, entry in hooks.items()}}
    settings.write_text(json.dumps(earlier, indent=2))
    editor = editor_factory(setup={"cli_settings": "ask"})
    editor.wait_state("running")
    done = wait_for(lambda: "hooksConfig" in (t := settings.read_text()) and json.loads(t), TIMEOUT, "the item added")
    key = editor.lua("return require('gemini_companion.env').hook_key")
    assert done["hooksConfig"] == {"disabled": ["${" + key + ":-gemini-companion}"]}
    assert done["hooks"] == earlier["hooks"] and "ide" not in done
    (Path(editor.lua("return vim.fn.stdpath('state')")) / "gemini-companion" / "cli-settings.json").unlink()
    editor.nvim.command("GeminiCompanion disable-cli gemini")
    settings_edited(editor)
    after = json.loads(settings.read_text())
    assert "GEMINI_COMPANION" not in settings.read_text() and "gemini-companion" not in settings.read_text()
    # Without a record the lists may stay (empty): no proof they were not the user's.
    assert all(v == [] for v in after.pop("hooks", {}).values()), after
    assert after.pop("hooksConfig", {"disabled": []}) == {"disabled": []}
    assert after == json.loads(original)
