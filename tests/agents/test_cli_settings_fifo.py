"""A FIFO in place of Gemini CLI's settings.json (agents/cli_settings.lua): every read of it opens
without waiting and is refused as not a regular file (files.lua: O_NONBLOCK, judged on the file
opened), so Neovim answers: as it starts (the stale-hooks check), at `:Gemini` (the consent's reads
and the edit, run off the main loop) and in `:checkhealth`. The FIFO is left as it is."""

from __future__ import annotations

import os
import stat

from agents.send_helpers import fake_agent, wait_started


def test_a_fifo_as_the_settings_file_never_holds_neovim(editor_factory, sandbox):
    settings = sandbox.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    os.mkfifo(settings)
    log = sandbox.base / "agent.log"
    setup = {"agents": {"gemini": fake_agent(log)}, "default_agent": "gemini", "cli_settings": "auto"}
    editor = editor_factory(setup=setup)
    editor.wait_state("running")  # the start's stale-hooks check has read it
    editor.nvim.command("Gemini", async_=True)
    wait_started(editor, log)  # its reads refused and the edit ended (off the loop): the agent starts
    assert editor.lua("return 1 + 1") == 2
    editor.nvim.command("checkhealth gemini_companion")
    health = "\n".join(editor.nvim.current.buffer[:])
    assert f"{settings} cannot be read (not a regular file)" in health, health
    assert stat.S_ISFIFO(os.lstat(settings).st_mode)  # left as it is
