"""Waiting for the CLI settings edits, which agents/cli_settings.lua runs off Neovim's main loop
(one after the other): what an `enable`/`disable` answered, and the end of the edits a command
such as `:GeminiCompanion enable-cli` asked for."""

from __future__ import annotations

from typing import Any

from conftest import Editor, wait_for

EDIT = """
local verb, cli = ...
local out
require('gemini_companion.agents.cli_settings')[verb](cli, nil, function(changes, err)
  out = { changes or vim.NIL, err }
end)
vim.wait(60000, function() return out ~= nil end)
return out and out[1]
"""


def edit_settings(editor: Editor, verb: str, cli: str = "gemini") -> Any:
    """`enable` or `disable` of `cli`'s user settings, waited for: the changes (None: refused)."""
    return editor.lua(EDIT, verb, cli)


def settings_edited(editor: Editor) -> None:
    """Wait until no edit runs or waits."""
    busy = "return require('gemini_companion.agents.cli_settings').busy()"
    wait_for(lambda: not editor.lua(busy), what="the settings edits to end")
