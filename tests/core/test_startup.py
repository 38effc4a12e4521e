"""Startup loads the plugin's public face only: setup()'s options are kept and checked at their
first use (issue 34: the plugin's share of startup was about 4 ms, `config` alone 0.7 ms)."""

from __future__ import annotations

from conftest import TIMEOUT, wait_for

# Runs after the user's init and plugin/ files, before VimEnter: what startup itself loaded.
PROBE = (
    "lua _G.at_startup = vim.tbl_filter(function(name) return name:find('^gemini_companion') end,"
    " vim.tbl_keys(package.loaded))"
)


def test_startup_loads_the_public_face_only_and_the_options_hold_at_first_use(editor_factory):
    editor = editor_factory({"auto_start": False, "diff": {"layout": "horizontal"}}, ["-c", PROBE])
    assert editor.lua("return _G.at_startup") == ["gemini_companion"]
    options = "return require('gemini_companion.config').options"
    assert editor.lua(options + ".diff.layout") == "horizontal"
    assert editor.lua(options + ".auto_start") is False


def test_a_wrong_option_at_startup_is_one_line_at_first_use_and_the_defaults_stand(editor_factory):
    editor = editor_factory({"auto_start": False, "resume": "sometimes"}, ["-c", PROBE])
    assert editor.lua("return _G.at_startup") == ["gemini_companion"]
    assert editor.lua("return require('gemini_companion.config').options.resume") == "ask"  # the default
    said = wait_for(lambda: "option resume" in editor.messages() and editor.messages(), TIMEOUT, "the error")
    line = next(line for line in said.splitlines() if "option resume" in line)
    assert line == "gemini-companion: option resume: expected 'ask', 'always' or 'never', got \"sometimes\""
    assert "traceback" not in said and "E5113" not in said


def test_an_unknown_option_at_startup_is_warned_and_the_others_hold(editor_factory):
    editor = editor_factory({"auto_start": False, "diff": {"fcous": False, "layout": "horizontal"}})
    assert editor.lua("return require('gemini_companion.config').options.diff.layout") == "horizontal"
    said = wait_for(lambda: "unknown option" in editor.messages() and editor.messages(), TIMEOUT, "the warning")
    assert "unknown option diff.fcous ignored (did you mean diff.focus?)" in said
