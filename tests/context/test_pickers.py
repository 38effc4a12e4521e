"""Picker actions (issue 35): inside the real telescope, fzf-lua and snacks (picker and explorer),
pinned in /work/shared/fixtures/user-plugins/ and set up as the help's snippets say, the action hands
the selected files, or the entry under the cursor when none is selected, to the agent exactly as
:GeminiAdd would. The agent is tests/harness/fake_agent.py, which records the bytes it is sent (a
CLI read as Gemini: a name with a `"` goes as the plain path, in a code span)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import HARNESS, Editor, wait_for

PLUGINS = Path("/work/shared/fixtures/user-plugins")
PASTE = re.compile(rb"\x1b\[200~(.*?)\x1b\[201~", re.DOTALL)

QUOTED, HASHED, PLAIN = "it's [q] 100%.txt", "#x y.txt", "plain.txt"
NEWLINE = "new\nline.txt"  # listed by the explorer (it reads the folder); the others list lines of `find`
# What :GeminiAdd sends for each (at_path.lua's forms), in the working directory or a folder of it
# (a name with a newline: nothing, one line says why).
SENT = {
    QUOTED: "`{}it's [q] 100%.txt`",
    HASHED: "@./{}\\#x\\ y.txt",
    PLAIN: "@./{}plain.txt",
    NEWLINE: "",
}
FOLDERS = {"": "", "sub dir": "sub\\ dir/"}  # a folder, and as an @path names it
# A query that leaves only that name in fzf (the typed keys, '<' as <lt>).
QUERY = {QUOTED: "100%", HASHED: "#x"}

TELESCOPE = """
vim.opt.rtp:prepend(...)
local add = require('gemini_companion.pickers').telescope_action
require('telescope').setup({ defaults = { mappings = { i = { ['<C-g>'] = add }, n = { ['<C-g>'] = add } } } })
require('telescope.builtin').find_files((select(2, ...)))
"""
TELESCOPE_COUNT = """
local picker = require('telescope.actions.state').get_current_picker(vim.api.nvim_get_current_buf())
return picker and picker.manager and picker.manager:num_results() or 0
"""
TELESCOPE_SELECT = """
local names, cursor = ...
local prompt = vim.api.nvim_get_current_buf()
local picker = require('telescope.actions.state').get_current_picker(prompt)
local function row(name)
  for i = 1, picker.manager:num_results() do
    if picker.manager:get_entry(i).value:gsub('^%./', '') == name then return picker:get_row(i) end
  end
end
for _, name in ipairs(names) do
  picker:set_selection(row(name))
  require('telescope.actions').toggle_selection(prompt)
end
picker:set_selection(row(cursor))
"""

# With file icons (mini.icons), as most users have them: the action reads past them.
FZF_LUA = """
vim.opt.rtp:prepend(...)
vim.opt.rtp:prepend(select(3, ...))
require('mini.icons').setup()
require('fzf-lua').setup({
  files = { file_icons = 'mini' },
  actions = { files = { true, ['ctrl-g'] = require('gemini_companion.pickers').fzf_lua_action } },
})
require('fzf-lua').files((select(2, ...)))
"""

SNACKS = """
local path, source, opts = ...
vim.opt.rtp:prepend(path)
require('snacks').setup({
  explorer = { enabled = true },
  picker = {
    actions = { gemini_add = require('gemini_companion.pickers').snacks_action },
    win = {
      input = { keys = { ['<C-g>'] = { 'gemini_add', mode = { 'n', 'i' } } } },
      list = { keys = { ['<C-g>'] = 'gemini_add' } },
    },
  },
})
Snacks.picker[source](opts)
"""
# The names a snacks picker lists; the picker's own focused window (input or list) has the keys.
SNACKS_NAMES = """
local picker = Snacks.picker.get()[1]
if not picker or not picker.list.win:valid() then return {} end
local names = {}
for _, item in ipairs(picker:items()) do table.insert(names, vim.fs.basename(Snacks.picker.util.path(item) or '')) end
return names
"""
SNACKS_SELECT = """
local names, cursor = ...
local picker = Snacks.picker.get()[1]
local function find(name)
  for i, item in ipairs(picker:items()) do
    if vim.fs.basename(Snacks.picker.util.path(item)) == name then return i, item end
  end
end
for _, name in ipairs(names) do picker.list:select(select(2, find(name))) end
picker.list:view((find(cursor)))
"""


def pastes(log: Path) -> list[bytes]:
    return PASTE.findall(log.read_bytes()) if log.exists() else []


def telescope(editor: Editor, names: list[str], cursor: str, files: int, opts: dict[str, str]) -> None:
    editor.lua("vim.opt.rtp:prepend(...)", str(PLUGINS / "plenary.nvim"))
    editor.lua(TELESCOPE, str(PLUGINS / "telescope.nvim"), opts)
    wait_for(lambda: editor.lua(TELESCOPE_COUNT) == files, what="telescope listing the files")
    editor.lua(TELESCOPE_SELECT, names, cursor)
    editor.nvim.input("<C-g>")


def fzf_lua(editor: Editor, names: list[str], cursor: str, files: int, opts: dict[str, str]) -> None:
    editor.lua(FZF_LUA, str(PLUGINS / "fzf-lua"), opts, str(PLUGINS / "mini.nvim"))

    def shows(count: str) -> bool:  # fzf's info line, e.g. `1/4 (2)`
        return editor.lua("return vim.bo.buftype") == "terminal" and any(
            re.match(rf"\s*{count}\b", line) for line in editor.nvim.current.buffer[:]
        )

    wait_for(lambda: shows(f"{files}/{files}"), what="fzf listing the files")
    for name in names:
        editor.nvim.input(QUERY[name])
        wait_for(lambda: shows(f"1/{files}"), what=f"fzf finding {name!r}")
        editor.nvim.input("<Tab><C-u>")
        wait_for(lambda: shows(f"{files}/{files}"), what="the query cleared")
    editor.nvim.input(QUERY[cursor])
    wait_for(lambda: shows(f"1/{files}"), what=f"fzf finding {cursor!r}")
    editor.nvim.input("<C-g>")


def snacks(source: str) -> Callable[[Editor, list[str], str, int, dict[str, str]], None]:
    def drive(editor: Editor, names: list[str], cursor: str, files: int, opts: dict[str, str]) -> None:
        editor.lua(SNACKS, str(PLUGINS / "snacks.nvim"), source, opts)
        wait_for(lambda: len(set(editor.lua(SNACKS_NAMES)) & set(SENT)) == files, what=f"snacks {source} listing")
        editor.lua(SNACKS_SELECT, names, cursor)
        editor.nvim.input("<C-g>")

    return drive


PICKERS = {
    "telescope": telescope,
    "fzf-lua": fzf_lua,
    "snacks-picker": snacks("files"),
    "snacks-explorer": snacks("explorer"),
}


def project(folder: Path, picker: str) -> int:
    names = [QUOTED, HASHED, PLAIN] + ([NEWLINE] if picker == "snacks-explorer" else [])
    folder.mkdir(exist_ok=True)
    for name in names:
        (folder / name).write_text("x\n")
    return len(names)


@pytest.mark.parametrize("picker", sorted(PICKERS))
@pytest.mark.parametrize("selected", ["two-selected", "none-selected"])
@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_a_picker_action_adds_files_as_gemini_add_does(editor_factory, sandbox, picker, selected, folder):
    """In the working directory, and opened on a folder of it (`cwd`): the names the picker holds
    relative to its folder are the files in that folder."""
    log = sandbox.base / "agent.log"
    agent = {"cmd": [sys.executable, str(HARNESS / "fake_agent.py")], "env": {"FAKE_AGENT_LOG": str(log)}}
    editor = editor_factory(setup={"agents": {"fake": agent}, "default_agent": "fake"})
    editor.wait_state("running")
    files = project(sandbox.project / folder, picker)
    two = [QUOTED, NEWLINE if picker == "snacks-explorer" else HASHED]
    opts = {"cwd": str(sandbox.project / folder)} if folder else {}  # the picker's own option
    window = editor.nvim.api.get_current_win()
    PICKERS[picker](editor, two if selected == "two-selected" else [], HASHED, files, opts)
    sent = wait_for(lambda: pastes(log), what="the references at the agent")
    # Where the user was: back in their window, or still in the explorer (not in the agent's).
    if picker == "snacks-explorer":
        assert editor.lua("return vim.bo.filetype") == "snacks_picker_list"
        assert editor.lua("return #Snacks.picker.get()[1].list.selected") == 0  # as its own actions leave it
    else:
        wait_for(lambda: editor.nvim.api.get_current_win() == window, what="the focus back in the window")

    def ref(name: str) -> bytes:
        plain = folder + "/" if folder else ""
        return SENT[name].format(FOLDERS[folder] if SENT[name].startswith("@") else plain).encode()

    if selected == "two-selected":  # in the order selected (the entry under the cursor is not one)
        assert sent == [b"".join(ref(name) + b" " for name in two if SENT[name])]
    else:
        assert sent == [ref(HASHED) + b" "]
    refused = NEWLINE in two and selected == "two-selected"
    assert ("GeminiAdd: a control character: " in editor.messages()) == refused, editor.messages()
    assert ("GeminiAdd" in editor.messages()) == refused, editor.messages()


def test_add_for_other_pickers_takes_every_name_as_a_path(editor_factory, sandbox):
    """`pickers.add(paths)`, for a picker without its own action: a file named like an agent is a
    file, `./` parts are not shown, a missing one is refused as :GeminiAdd refuses it, nothing at all
    is one warning."""
    log = sandbox.base / "agent.log"
    agent = {"cmd": [sys.executable, str(HARNESS / "fake_agent.py")], "env": {"FAKE_AGENT_LOG": str(log)}}
    editor = editor_factory(setup={"agents": {"fake": agent}, "default_agent": "fake"})
    editor.wait_state("running")
    for name in ["fake", "gemini", "qwen"]:
        (sandbox.project / name).write_text("x\n")
    add = "require('gemini_companion.pickers').add(...)"
    editor.lua(add, ["fake", "./gemini", str(sandbox.project) + "/./qwen", "missing"])
    assert wait_for(lambda: pastes(log), what="the references") == [b"@./fake @./gemini @./qwen "]
    assert "GeminiAdd: no such file: missing" in editor.messages()
    editor.lua(add, [])
    assert "GeminiAdd: no file in the picker" in editor.messages()
