""":GeminiAdd inside the real file trees (issue 35): a range of nodes (`:'<,'>GeminiAdd`, a `<Cmd>`
mapping in Visual mode), nvim-tree's and netrw's marks, and every neo-tree source (filesystem,
buffers, git_status in a real repository). The trees are the pinned snapshots in
/work/shared/fixtures/user-plugins (offline); the agent is tests/harness/fake_agent.py, which
records the bytes it is sent. Names are data: each node goes through the one sender the typed
`:GeminiAdd path...` uses, so a tree's paste must be byte for byte that command's paste of the
paths the tree's own API gives for those lines."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import HARNESS, Editor, Sandbox, git, wait_for

USER_PLUGINS = Path("/work/shared/fixtures/user-plugins")
NEO_TREE = ["plenary.nvim", "nui.nvim", "neo-tree.nvim"]
# (Put on the runtimepath after startup: its plugin/ file, which defines :Neotree, is sourced by hand.)
NEO_TREE_OPEN = "require('neo-tree').setup({}) vim.cmd('runtime! plugin/neo-tree.lua | Neotree SOURCE current')"

# Each tree: its snapshots, its filetype, how its README opens it on the working directory.
TREES = {
    "nvim-tree": (["nvim-tree.lua"], "NvimTree", "require('nvim-tree').setup({}) require('nvim-tree.api').tree.open()"),
    "neo-tree": (NEO_TREE, "neo-tree", NEO_TREE_OPEN.replace("SOURCE", "filesystem")),
    "oil": (["oil.nvim"], "oil", "require('oil').setup({}) require('oil').open(vim.fn.getcwd())"),
    "mini.files": (["mini.nvim"], "minifiles", "require('mini.files').setup({}) MiniFiles.open(vim.fn.getcwd())"),
    "netrw": ([], "netrw", "vim.cmd.Explore(vim.fn.getcwd())"),
}
# The node under the cursor, by each tree's own public API (what `:GeminiAdd` read before ranges).
UNDER_CURSOR = {
    "NvimTree": "local n = require('nvim-tree.api').tree.get_node_under_cursor() return n and n.absolute_path",
    "neo-tree": "local n = require('neo-tree.sources.manager').get_state_for_window().tree:get_node() return n.path",
    "oil": "local e = require('oil').get_cursor_entry() return e and (require('oil').get_current_dir() .. e.name)",
    "minifiles": "local e = MiniFiles.get_fs_entry() return e and e.path",
    "netrw": "return vim.fs.joinpath(vim.b.netrw_curdir, vim.fn['netrw#Call']('NetrwGetWord'))",
}
# Names a shell, Vim or a CLI would read as something else: spaces, quotes, % and # (Vim's file
# names), a leading -, a newline, bytes that are not UTF-8.
HOSTILE = [b"a b.txt", b'it\'s "q".txt', b"100%.txt", b"#h.txt", b"-flag.txt", b"nl\nname.txt", b"bad\xff.txt"]


def fake_agent(log: Path) -> dict[str, Any]:
    agent = {"cmd": [sys.executable, str(HARNESS / "fake_agent.py")], "env": {"FAKE_AGENT_LOG": str(log)}}
    return {"agents": {"fake": agent}, "default_agent": "fake"}


def pastes(log: Path) -> list[bytes]:
    data = log.read_bytes() if log.exists() else b""
    return re.findall(rb"\x1b\[200~(.*?)\x1b\[201~", data, re.DOTALL)


def wait_pastes(log: Path, count: int) -> list[bytes]:
    return wait_for(lambda: len(found := pastes(log)) >= count and found, what=f"paste {count} at the agent")


def files(project: Path, *names: bytes) -> None:
    for name in names:
        (project / os.fsdecode(name)).write_bytes(b"x\n")


def open_tree(editor: Editor, tree: str, shown: str = "plain.txt") -> str:
    """`tree` opened on the project, once it shows `shown`; its filetype."""
    plugins, filetype, opening = TREES[tree]
    for plugin in plugins:
        editor.lua("vim.opt.rtp:prepend(...)", str(USER_PLUGINS / plugin))
    editor.lua(opening)
    wait_for(lambda: editor.lua("return vim.bo.filetype") == filetype, what=f"the {tree} window")
    wait_for(lambda: line_of(editor, shown), what=f"{tree} showing {shown}")
    return filetype


def in_tree(
    editor_factory: Any, sandbox: Sandbox, tree: str, *names: bytes, options: str = ""
) -> tuple[Editor, Path, str]:
    """A Neovim with the fake agent, in `tree` on the project (Lua `options` run first), where
    files `names` and plain.txt are added; the agent's log, the tree's filetype."""
    log = sandbox.base / "agent.log"
    files(sandbox.project, *names, b"plain.txt")
    editor = editor_factory(setup=fake_agent(log))
    editor.wait_state("running")
    editor.lua(options)
    return editor, log, open_tree(editor, tree)


def line_of(editor: Editor, name: str) -> int | None:
    """The first line that shows the node `name` (a tree may draw its lines again as it settles)."""
    pattern = re.compile(rf"(^|[\s/]){re.escape(name)}/?(\s|$)")
    lines = editor.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")
    return next((i + 1 for i, text in enumerate(lines) if isinstance(text, str) and pattern.search(text)), None)


def under_cursor(editor: Editor, filetype: str, line: int) -> bytes:
    """The path the tree's own API gives for `line` (the cursor moved there), as bytes."""
    editor.nvim.api.win_set_cursor(0, [line, 0])
    path = editor.lua(UNDER_CURSOR[filetype])
    return os.fsencode(path) if isinstance(path, str) else path


def add_literally(editor: Editor, paths: list[bytes]) -> None:
    """The typed `:GeminiAdd path...`: the one sender every node must go through."""
    editor.lua("vim.cmd.GeminiAdd({ args = { ... }, magic = { file = false } })", *paths)


def add_range(editor: Editor, log: Path, filetype: str, first: int, last: int) -> tuple[list[bytes], bytes]:
    """`:{first},{last}GeminiAdd`, checked against `:GeminiAdd` of the paths the tree's own API gives
    for those lines: the same paste. The paths, and the paste."""
    expected = [under_cursor(editor, filetype, line) for line in range(first, last + 1)]
    count = len(pastes(log))
    editor.nvim.command(f"{first},{last}GeminiAdd")
    ranged = wait_pastes(log, count + 1)[count]
    add_literally(editor, expected)
    assert wait_pastes(log, count + 2)[count + 1] == ranged
    return expected, ranged


def cursor(editor: Editor) -> tuple[int, list[int]]:
    return editor.nvim.api.get_current_win().handle, editor.nvim.api.win_get_cursor(0)


@pytest.mark.parametrize("tree", sorted(TREES))
def test_a_range_adds_every_node_in_order_through_the_one_sender(editor_factory, sandbox, tree):
    """`:{first},{last}GeminiAdd` over a folder and hostile names: every node of those lines, in
    order, each once, the folder as a folder, byte for byte what `:GeminiAdd` of the same paths
    sends; the cursor and window stay."""
    (sandbox.project / "sub").mkdir()
    (sandbox.project / "sub" / "inner.txt").write_text("x\n")
    editor, log, filetype = in_tree(editor_factory, sandbox, tree, *HOSTILE)
    first, last = line_of(editor, "sub"), editor.lua("return vim.api.nvim_buf_line_count(0)")
    assert first is not None
    editor.nvim.api.win_set_cursor(0, [first + 1, 0])
    before = cursor(editor)
    editor.nvim.command(f"{first},{last}GeminiAdd")
    wait_pastes(log, 1)
    assert cursor(editor) == before and editor.lua("return vim.bo.filetype") == filetype
    expected, ranged = add_range(editor, log, filetype, first, last)
    # Every name as itself (netrw alone cannot show a newline in a name: it draws two lines).
    project = bytes(sandbox.project)
    assert expected[0].rstrip(b"/") == project + b"/sub" and expected[-1] == project + b"/plain.txt"
    for name in HOSTILE:
        assert (project + b"/" + name in expected) == (tree != "netrw" or b"\n" not in name), name
    assert pastes(log)[0] == ranged
    assert ranged.startswith(b"@./sub/ ") and ranged.endswith(b" @./plain.txt ")
    for ref in [b"@./a\\ b.txt ", b"@./100%.txt ", b"@./\\#h.txt ", b"@./-flag.txt "]:
        assert ranged.count(ref) == 1, ref


def test_a_visual_mode_mapping_adds_the_lines_being_selected(editor_factory, sandbox):
    """A `<Cmd>` mapping in Visual mode (no range): the selection being made; Visual mode stays."""
    editor, log, _ = in_tree(editor_factory, sandbox, "mini.files", b"one.txt", b"two.txt")
    editor.lua("vim.keymap.set('x', '<F3>', '<Cmd>GeminiAdd<CR>')")
    editor.nvim.api.win_set_cursor(0, [line_of(editor, "one.txt"), 0])
    editor.nvim.input("Vj<F3>")
    assert wait_pastes(log, 1) == [b"@./one.txt @./plain.txt "]
    assert editor.nvim.api.get_mode()["mode"] == "V"


def test_nvim_tree_marks_go_when_there_is_no_range(editor_factory, sandbox):
    """With marks and no range: the marked nodes (by path), and how many; a range still wins; with
    the marks cleared, the node under the cursor."""
    (sandbox.project / "sub").mkdir()
    editor, log, _ = in_tree(editor_factory, sandbox, "nvim-tree", b"-flag.txt", b"a b.txt")
    for name in ["plain.txt", "sub", "a b.txt"]:
        editor.nvim.api.win_set_cursor(0, [line_of(editor, name), 0])
        editor.lua("require('nvim-tree.api').marks.toggle()")
    wait_for(lambda: editor.lua("return #require('nvim-tree.api').marks.list()") == 3, what="three marks")
    editor.nvim.api.win_set_cursor(0, [line_of(editor, "-flag.txt"), 0])
    editor.nvim.command("GeminiAdd")
    assert wait_pastes(log, 1) == [b"@./a\\ b.txt @./plain.txt @./sub/ "]
    assert "GeminiAdd: 3 marked nodes" in editor.messages()
    line = line_of(editor, "-flag.txt")
    editor.nvim.command(f"{line},{line}GeminiAdd")
    assert wait_pastes(log, 2)[1] == b"@./-flag.txt "
    editor.lua("require('nvim-tree.api').marks.clear()")
    editor.nvim.command("GeminiAdd")
    assert wait_pastes(log, 3)[2] == b"@./-flag.txt "


def test_netrw_marked_files_go_when_there_is_no_range(editor_factory, sandbox):
    editor, log, _ = in_tree(editor_factory, sandbox, "netrw", b"#h.txt", b"z.txt")
    for name in ["z.txt", "#h.txt"]:  # in the order they are marked
        editor.nvim.api.win_set_cursor(0, [line_of(editor, name), 0])
        editor.nvim.input("mf")
        wait_for(lambda: editor.nvim.api.get_mode()["mode"] == "n" and not editor.nvim.api.get_mode()["blocking"])
    editor.nvim.api.win_set_cursor(0, [line_of(editor, "plain.txt"), 0])
    wait_for(lambda: len(editor.lua("return vim.fn['netrw#Expose']('netrwmarkfilelist')")) == 2, what="two marks")
    editor.nvim.command("GeminiAdd")
    assert wait_pastes(log, 1) == [b"@./z.txt @./\\#h.txt "]
    assert "GeminiAdd: 2 marked nodes" in editor.messages()


def neo_tree_source(editor: Editor, source: str, shown: str) -> None:
    for plugin in NEO_TREE:
        editor.lua("vim.opt.rtp:prepend(...)", str(USER_PLUGINS / plugin))
    editor.lua(NEO_TREE_OPEN.replace("SOURCE", source))
    wait_for(lambda: editor.lua("return vim.b.neo_tree_source") == source, what=f"neo-tree's {source}")
    wait_for(lambda: line_of(editor, shown), what=f"{source} showing {shown}")


def test_neo_tree_buffers_source_adds_the_buffers_files(editor_factory, sandbox):
    log = sandbox.base / "agent.log"
    names = [b"a b.txt", b"100%.txt", b"plain.txt"]
    files(sandbox.project, *names)
    editor = editor_factory(setup=fake_agent(log))
    editor.wait_state("running")
    for name in names:
        path = bytes(sandbox.project / os.fsdecode(name))
        editor.lua("local b = vim.fn.bufadd(...) vim.fn.bufload(b) vim.bo[b].buflisted = true", path)
    neo_tree_source(editor, "buffers", "plain.txt")
    editor.nvim.api.win_set_cursor(0, [line_of(editor, "100%.txt"), 0])
    editor.nvim.command("GeminiAdd")
    assert wait_pastes(log, 1) == [b"@./100%.txt "]
    lines = sorted(line_of(editor, os.fsdecode(name)) or 0 for name in names)
    paths, refs = add_range(editor, log, "neo-tree", lines[0], lines[-1])
    assert sorted(paths) == [bytes(sandbox.project) + b"/" + name for name in sorted(names)]
    assert b"@./a\\ b.txt " in refs


def test_neo_tree_git_status_source_adds_the_changed_files(editor_factory, sandbox):
    """A real repository with a modified and an untracked file: both are nodes to add."""
    log = sandbox.base / "agent.log"
    repo = sandbox.project
    files(repo, b"kept.txt", b"changed #1.txt")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "first")
    (repo / "changed #1.txt").write_text("changed\n")
    files(repo, b"-new.txt")
    editor = editor_factory(setup=fake_agent(log))
    editor.wait_state("running")
    neo_tree_source(editor, "git_status", "-new.txt")
    wait_for(lambda: line_of(editor, "changed #1.txt"), what="the modified file")
    assert line_of(editor, "kept.txt") is None
    editor.nvim.api.win_set_cursor(0, [line_of(editor, "-new.txt"), 0])
    editor.nvim.command("GeminiAdd")
    assert wait_pastes(log, 1) == [b"@./-new.txt "]
    lines = sorted([line_of(editor, "-new.txt") or 0, line_of(editor, "changed #1.txt") or 0])
    paths, refs = add_range(editor, log, "neo-tree", lines[0], lines[-1])
    assert sorted(paths) == [bytes(repo / "-new.txt"), bytes(repo / "changed #1.txt")]
    assert b"@./changed\\ \\#1.txt " in refs


def test_marks_and_ranges_outside_a_tree_change_nothing(editor_factory, sandbox: Sandbox):
    """In a file, a range is the file (`:GeminiAdd` adds files, not lines)."""
    log = sandbox.base / "agent.log"
    (sandbox.project / "code.py").write_text("a = 1\nb = 2\n")
    editor = editor_factory(setup=fake_agent(log))
    editor.wait_state("running")
    editor.nvim.command(f"edit {sandbox.project / 'code.py'}")
    editor.nvim.command("1,2GeminiAdd")
    assert wait_pastes(log, 1) == [b"@./code.py "]


@pytest.mark.parametrize("tree", ["neo-tree", "nvim-tree"])
def test_the_root_is_a_node_alone_never_part_of_a_range(editor_factory, sandbox, tree):
    """The tree's root line (the project) under the cursor adds the project, as before; a range
    that starts at the top adds its nodes, not the whole project besides (as the trees' own
    Visual-mode actions do)."""
    editor, log, _ = in_tree(editor_factory, sandbox, tree, b"a.txt")
    editor.nvim.api.win_set_cursor(0, [1, 0])
    editor.nvim.command("GeminiAdd")
    assert wait_pastes(log, 1) == [b"@./ "]
    editor.nvim.command("1,$GeminiAdd")
    assert wait_pastes(log, 2)[1] == b"@./a.txt @./plain.txt "


def test_netrw_tree_listing_names_each_line_in_its_own_folder(editor_factory, sandbox):
    """netrw's tree listing (`g:netrw_liststyle` 3) with a folder opened: a top-level name the
    opened folder also holds is the top-level file, not the folder's (netrw's current folder is the
    one last opened); a range adds each line in its own folder, and not the whole tree top."""
    (sandbox.project / "sub").mkdir()
    (sandbox.project / "sub" / "inner.txt").write_text("x\n")
    editor, log, _ = in_tree(editor_factory, sandbox, "netrw", b"inner.txt", options="vim.g.netrw_liststyle = 3")
    editor.nvim.api.win_set_cursor(0, [line_of(editor, "sub"), 0])
    editor.nvim.input("<CR>")  # the folder opened in the tree
    wait_for(lambda: editor.lua("return vim.fn.search('| | inner.txt', 'nw')") > 0, what="sub's file shown")
    editor.nvim.api.win_set_cursor(0, [editor.lua("return vim.fn.search('^| inner.txt', 'nw')"), 0])
    editor.nvim.command("GeminiAdd")
    assert wait_pastes(log, 1) == [b"@./inner.txt "]
    editor.nvim.command("1,$GeminiAdd")
    assert wait_pastes(log, 2)[1] == b"@./sub/ @./sub/inner.txt @./inner.txt @./plain.txt "
