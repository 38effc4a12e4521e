"""enable-cli / disable-cli run the settings edit (programs/settings_edit.py) off Neovim's main loop
(agents/cli_settings.lua): Neovim answers while the program runs, and two edits asked one right
after the other run in that order, the second after the first has ended. The program here is the
real one, behind a gate: a wrapper around the Python that runs it waits on a FIFO until the test
lets that run go, and notes when each run starts and ends."""

from __future__ import annotations

import errno
import json
import os
import shlex
import sys
from pathlib import Path

from conftest import wait_for
from harness.settings_edits import settings_edited


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def let_one_run_go(gate: Path) -> None:
    """Open the FIFO for writing once a run waits on it (before: ENXIO), and let that run go."""

    def opened() -> int | None:
        try:
            return os.open(gate, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as error:
            if error.errno != errno.ENXIO:
                raise
            return None

    fd = wait_for(opened, what="a settings edit waiting at the gate")
    os.write(fd, b"go\n")
    os.close(fd)


def test_neovim_answers_while_an_edit_runs_and_two_edits_run_in_order(editor_factory, sandbox):
    gate, runs = sandbox.base / "gate", sandbox.base / "runs.log"
    os.mkfifo(gate)
    wrapper = sandbox.base / "gated-python"
    log, fifo = shlex.quote(str(runs)), shlex.quote(str(gate))
    wrapper.write_text(
        "#!/bin/sh\n"
        f'echo "start $2" >> {log}\n'
        f"read go < {fifo}\n"
        f'{shlex.quote(sys.executable)} "$@"\n'
        "code=$?\n"
        f'echo "end $2" >> {log}\n'
        "exit $code\n"
    )
    wrapper.chmod(0o755)
    settings = sandbox.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    original = '{\n  "theme": "mine" // kept\n}\n'
    settings.write_text(original)
    ed = editor_factory({"cli_settings": "never"})
    ed.wait_state("running")
    ed.lua("vim.g.gemini_companion_python = ...", str(wrapper))  # the host runs already: only the edits
    ed.nvim.command("GeminiCompanion enable-cli gemini", async_=True)
    ed.nvim.command("GeminiCompanion disable-cli gemini", async_=True)
    wait_for(lambda: lines(runs), what="the first edit to start")
    assert ed.lua("return 1 + 1") == 2  # Neovim answers while the program waits at the gate
    assert lines(runs) == ["start enable"]  # the second waits for the first to end
    assert settings.read_text() == original
    let_one_run_go(gate)
    wait_for(lambda: len(lines(runs)) == 3, what="the second edit to start")
    assert lines(runs) == ["start enable", "end enable", "start disable"]
    assert json.loads(settings.read_text().replace("// kept", ""))["ide"]["enabled"] is True  # as enable left it
    let_one_run_go(gate)
    wait_for(lambda: len(lines(runs)) == 4, what="the second edit to end")
    settings_edited(ed)
    assert settings.read_text() == original  # disable took back exactly what enable wrote
    said = [line for line in ed.messages().splitlines() if line.startswith(f"gemini-companion: {settings}: ")]
    assert len(said) == 2, ed.messages()  # one line each, in order
    assert "ide.enabled: (absent) -> true" in said[0], said  # enable's
    assert "hooks.BeforeAgent: - one entry" in said[1] and "ide.enabled: true -> (removed)" in said[1], said
