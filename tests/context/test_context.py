"""What the real Gemini client's context store holds while a real Neovim is driven.

Every assertion reads `ideContextStore` in the real client (@google/gemini-cli-core),
after its own sorting and truncation: what the agent would be told.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import Editor, NodeClient, wait_for

File = dict[str, Any]


def open_files(gemini: NodeClient) -> list[File]:
    context = gemini.call("context")
    return ((context or {}).get("workspaceState") or {}).get("openFiles") or []


def wait_files(gemini: NodeClient, predicate: Callable[[list[File]], Any], what: str) -> list[File]:
    """The client's open files, once `predicate` holds for them."""
    last: list[list[File]] = [[]]

    def check() -> tuple[list[File]] | None:
        last[0] = open_files(gemini)
        return (last[0],) if predicate(last[0]) else None  # a tuple: an empty list is an answer too

    try:
        return wait_for(check, what=what)[0]
    except AssertionError as err:
        raise AssertionError(f"{err}; the client holds {last[0]!r:.2000}") from None


def wait_active(gemini: NodeClient, path: Path, what: str, **expected: Any) -> File:
    """The active file once it is `path` and has the `expected` fields (None: the field is absent)."""

    def matches(files: list[File]) -> bool:
        if not files or not files[0].get("isActive") or files[0]["path"] != str(path):
            return False
        return all(files[0].get(key) == value for key, value in expected.items())

    return wait_files(gemini, matches, what)[0]


def paths(files: list[File]) -> list[str]:
    return [f["path"] for f in files]


def edit(editor: Editor, path: Path) -> None:
    editor.lua("vim.cmd.edit(vim.fn.fnameescape(...))", str(path))


def write(path: Path, *lines: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def assert_quiet(editor: Editor) -> None:
    """No error reached Neovim's message area."""
    assert editor.lua("return vim.v.errmsg") == ""
    messages = editor.lua("return vim.api.nvim_exec2('messages', { output = true }).output")
    assert "gemini-companion" not in messages and "E5108" not in messages and "Error" not in messages, messages


def yanked(editor: Editor, keys: str) -> str:
    """What Neovim itself yanks for a visual selection made with `keys` (the reference)."""
    editor.nvim.command(f'execute "normal! \\<Esc>{keys}y"')
    return editor.nvim.funcs.getreg('"')


# --- cursor and active file -------------------------------------------------


def test_active_file_and_cursor_in_utf16_characters(editor, gemini, sandbox):
    path = write(sandbox.project / "multibyte.txt", "plain", "aé😀b end")
    before_ms = time.time() * 1000
    edit(editor, path)
    editor.nvim.input("2G0fb")
    # 'b' follows a, é, and 😀 (two UTF-16 code units): it is the 5th code unit.
    active = wait_active(gemini, path, "cursor on 'b'", cursor={"line": 2, "character": 5})
    assert before_ms - 5000 < active["timestamp"] < time.time() * 1000 + 5000  # milliseconds, not seconds
    assert "selectedText" not in active
    editor.nvim.input("A")  # insert mode, after the last character
    wait_active(gemini, path, "cursor after the end", cursor={"line": 2, "character": 10})
    editor.nvim.input("<Esc>")
    assert_quiet(editor)


def test_new_client_gets_the_current_context_when_its_stream_opens(editor, gemini, gemini_factory, sandbox):
    path = write(sandbox.project / "early.txt", "one", "two")
    edit(editor, path)
    editor.nvim.command("normal! 2G")
    wait_active(gemini, path, "first client has the context", cursor={"line": 2, "character": 1})
    # Nothing changes in Neovim from here on: the second client can only get it on connecting.
    late = gemini_factory(editor)
    assert late.call("connect")["status"] == "connected"
    wait_active(late, path, "context on connect", cursor={"line": 2, "character": 1})


# --- selections ---------------------------------------------------------------


def test_charwise_selection(editor, gemini, sandbox):
    path = write(sandbox.project / "sel.txt", "héllo wörld", "second 😀 line", "third")
    edit(editor, path)
    editor.nvim.input("gg0lvj0f😀")
    active = wait_active(gemini, path, "charwise selection", selectedText="éllo wörld\nsecond 😀")
    assert active["cursor"] == {"line": 2, "character": 8}
    assert active["selectedText"] == yanked(editor, "gg0lvj0f😀")
    assert_quiet(editor)


def test_linewise_selection(editor, gemini, sandbox):
    path = write(sandbox.project / "sel.txt", "héllo wörld", "second 😀 line", "third")
    edit(editor, path)
    editor.nvim.input("ggVj")
    wait_active(gemini, path, "linewise selection", selectedText="héllo wörld\nsecond 😀 line")
    assert_quiet(editor)


def test_blockwise_selection_as_neovim_shows_it(editor, gemini, sandbox):
    path = write(sandbox.project / "block.txt", "abcdef", "ab", "a😀cd", "\tTAB")
    edit(editor, path)
    editor.nvim.input("gg0ll<C-v>jjl")
    # Screen columns 3-4: "cd", nothing of the short line, and the right half of the wide 😀
    # (shown as a space) with "c".
    active = wait_active(gemini, path, "block selection", selectedText="cd\n\n c")
    assert active["selectedText"] == yanked(editor, "gg0ll\\<C-v>jjl")
    editor.nvim.input("gg0l<C-v>3j$")  # to the end of every line; the tab is cut, shown as spaces
    active = wait_active(gemini, path, "block to end of lines", selectedText="bcdef\nb\n😀cd\n" + " " * 7 + "TAB")
    assert active["selectedText"] == yanked(editor, "gg0l\\<C-v>3j$")
    assert_quiet(editor)


def test_selection_survives_switching_to_a_terminal(editor, gemini, sandbox):
    other = write(sandbox.project / "other.txt", "other")
    main = write(sandbox.project / "main.txt", "def f():", "    return 1", "end")
    edit(editor, other)
    edit(editor, main)
    editor.nvim.command("botright split | terminal")
    editor.nvim.command("wincmd p")
    editor.nvim.input("ggVj")
    wait_active(gemini, main, "selection", selectedText="def f():\n    return 1")
    editor.nvim.input("<C-w>w")  # to the agent's terminal
    wait_for(lambda: editor.lua("return vim.bo.buftype") == "terminal", what="terminal focused")
    # Something changes while the terminal has focus: the last file is still active, selection kept.
    editor.nvim.command(f"bwipeout {other}")
    files = wait_files(gemini, lambda fs: paths(fs) == [str(main)], "other.txt gone")
    assert files[0]["isActive"] and files[0]["cursor"] == {"line": 2, "character": 1}
    assert files[0]["selectedText"] == "def f():\n    return 1"
    assert_quiet(editor)


def test_selecting_and_switching_in_one_go_keeps_the_selection(editor, gemini, sandbox):
    main = write(sandbox.project / "main.txt", "alpha", "beta", "gamma")
    edit(editor, main)
    editor.nvim.command("botright split | terminal")
    editor.nvim.command("wincmd p")
    wait_active(gemini, main, "main active, no selection", selectedText=None)
    # No debounce window passes between these keys: the selection is read as visual mode ends.
    editor.nvim.input("jVj<C-w>w")
    wait_active(
        gemini, main, "selection after the switch", selectedText="beta\ngamma", cursor={"line": 3, "character": 1}
    )
    assert editor.lua("return vim.bo.buftype") == "terminal"
    assert_quiet(editor)


def test_selection_is_dropped_by_a_motion_without_selecting(editor, gemini, sandbox):
    path = write(sandbox.project / "sel.txt", "one", "two", "three")
    edit(editor, path)
    editor.nvim.input("ggvj")
    wait_active(gemini, path, "selection", selectedText="one\nt")
    editor.nvim.input("<Esc>j")
    wait_active(gemini, path, "no selection", selectedText=None, cursor={"line": 3, "character": 1})
    assert_quiet(editor)


def test_selection_is_capped_at_16_kib(editor, gemini, sandbox):
    lines = [f"{i:05d} ü " + "x" * 60 for i in range(1000)]  # multibyte: the cut must not split 'ü'
    path = write(sandbox.project / "big.txt", *lines)
    edit(editor, path)
    editor.nvim.input("ggVG")
    text = "\n".join(lines).encode()
    expected = text[:16384].decode("utf-8", "ignore")
    wait_active(gemini, path, "capped selection", selectedText=expected)
    assert_quiet(editor)


# --- which files ---------------------------------------------------------------


def test_ten_most_recently_focused_files_newest_first(editor, gemini, sandbox):
    files = [write(sandbox.project / f"f{i:02d}.txt", str(i)) for i in range(12)]
    for path in files:
        edit(editor, path)
    shared = wait_files(
        gemini, lambda fs: paths(fs) == [str(p) for p in reversed(files[2:])], "the last ten files, newest first"
    )
    stamps = [f["timestamp"] for f in shared]
    assert stamps == sorted(stamps, reverse=True) and len(set(stamps)) == 10
    assert [bool(f.get("isActive")) for f in shared] == [True] + [False] * 9
    edit(editor, files[5])  # refocusing moves a file to the front
    shared = wait_files(gemini, lambda fs: fs and fs[0]["path"] == str(files[5]), "f05 first again")
    assert paths(shared)[1:4] == [str(files[11]), str(files[10]), str(files[9])]
    assert_quiet(editor)


def test_max_files_option(editor_factory, gemini_factory, sandbox):
    editor = editor_factory(setup={"context": {"max_files": 3}})
    editor.wait_state("running")
    gemini = gemini_factory(editor)
    assert gemini.call("connect")["status"] == "connected"
    files = [write(sandbox.project / f"f{i}.txt", str(i)) for i in range(5)]
    for path in files:
        edit(editor, path)
    wait_files(gemini, lambda fs: paths(fs) == [str(p) for p in reversed(files[2:])], "three files")


def test_only_real_files_on_disk_are_shared(editor, gemini, sandbox):
    first = write(sandbox.project / "first.txt", "1")
    last = write(sandbox.project / "last.txt", "2")
    write(sandbox.project / "scratch.txt", "a scratch buffer's name may match a file")
    secret = write(sandbox.project / "secret.txt", "TOKEN=1")
    editor.lua(
        "require('gemini_companion').setup({ context = { filter = function(buf)"
        " return not vim.api.nvim_buf_get_name(buf):find('secret', 1, true) end } })"
    )
    edit(editor, first)
    wait_active(gemini, first, "first file")
    editor.nvim.command("help")
    editor.nvim.command("terminal")
    editor.nvim.command("copen")
    editor.nvim.command("enew | setlocal buftype=nofile | file scratch.txt")
    editor.nvim.command("enew")  # unnamed
    edit(editor, sandbox.project / "unsaved.txt")  # not on disk
    edit(editor, secret)  # excluded by the user's filter
    edit(editor, last)
    wait_active(gemini, last, "last file")
    assert paths(open_files(gemini)) == [str(last), str(first)]  # every command above ran before
    assert_quiet(editor)


def test_the_plugins_own_diff_buffers_are_not_shared(editor, gemini, sandbox):
    other = write(sandbox.project / "other.txt", "other")
    main = write(sandbox.project / "main.txt", "old")
    edit(editor, other)
    edit(editor, main)
    wait_active(gemini, main, "main active")
    gemini.send("openDiff", filePath=str(main), newContent="new\n")  # answered only when the user decides
    wait_for(lambda: editor.lua("return vim.fn.tabpagenr('$')") == 2, what="the diff tab")
    assert editor.lua("return vim.bo.buftype") != ""  # focus is in a diff buffer
    editor.nvim.command(f"bwipeout {other}")  # something to send while the diff has focus
    files = wait_files(gemini, lambda fs: str(other) not in paths(fs), "other.txt gone")
    assert paths(files) == [str(main)] and files[0]["isActive"]
    assert_quiet(editor)


def test_is_trusted_is_not_sent_unless_configured(editor, gemini, editor_factory, gemini_factory, sandbox):
    path = write(sandbox.project / "a.txt", "a")
    edit(editor, path)
    wait_active(gemini, path, "active file")
    assert "isTrusted" not in gemini.call("context")["workspaceState"]

    trusting = editor_factory(setup={"context": {"is_trusted": True}})
    trusting.wait_state("running")
    client = gemini_factory(trusting)
    assert client.call("connect")["status"] == "connected"
    edit(trusting, path)
    wait_active(client, path, "active file")
    assert client.call("context")["workspaceState"]["isTrusted"] is True


def test_disabled_context_sharing_loads_and_tracks_nothing(editor_factory, gemini_factory, sandbox):
    editor = editor_factory(setup={"context": {"enabled": False}})
    editor.wait_state("running")
    edit(editor, write(sandbox.project / "a.txt", "a"))
    assert editor.lua("return vim.fn.exists('#gemini_companion_context')") == 0
    assert editor.lua("return package.loaded['gemini_companion.context'] == nil")
    client = gemini_factory(editor)
    assert client.call("connect")["status"] == "connected"
    assert client.call("context") is None


def test_tracking_starts_and_stops_with_the_server(editor_factory, sandbox):
    editor = editor_factory(setup={"auto_start": False})
    assert editor.lua("return package.loaded['gemini_companion.context'] == nil")
    editor.nvim.command("GeminiCompanion start")
    editor.wait_state("running")
    assert editor.lua("return vim.fn.exists('#gemini_companion_context#BufEnter')") == 1
    editor.nvim.command("GeminiCompanion stop")
    assert editor.lua("return vim.fn.exists('#gemini_companion_context')") == 0


def test_bad_options_get_a_clear_error(editor):
    for options, message in [
        ({"context": {"debounce_ms": -1}}, "context.debounce_ms"),
        ({"context": {"max_files": 0}}, "context.max_files"),
        ({"context": {"filter": "secret"}}, "context.filter"),
    ]:
        ok, err = editor.lua("return { pcall(require('gemini_companion').setup, ...) }", options)
        assert not ok and message in err, err
    # An unknown key is dropped with a warning naming the nearest one, not raised (issue 32).
    assert editor.lua("return { pcall(require('gemini_companion').setup, ...) }", {"context": {"colour": 1}}) == [True]
    assert "unknown option context.colour ignored" in editor.messages()


def test_a_burst_of_motions_sends_few_updates(editor, gemini, sandbox):
    path = write(sandbox.project / "long.txt", *[f"line {i}" for i in range(300)])
    edit(editor, path)
    wait_active(gemini, path, "file", cursor={"line": 1, "character": 1})
    while not gemini.events.empty():
        gemini.events.get()
    editor.nvim.input("j" * 200)
    wait_active(gemini, path, "cursor after 200 motions", cursor={"line": 201, "character": 1})
    updates = sum(1 for _ in iter(lambda: None if gemini.events.empty() else gemini.events.get(), None))
    assert 1 <= updates <= 10, updates


# --- closing, deleting, renaming -------------------------------------------------


def test_closed_and_deleted_files_leave_the_list(editor_factory, gemini_factory, sandbox):
    # Buffers following their files (follow/) say a deleted file's line on purpose
    # (tests/follow/test_follow.py): here only the context list is looked at, and no other line.
    editor = editor_factory({"follow": {"enabled": False}})
    editor.wait_state("running")
    gemini = gemini_factory(editor)
    assert gemini.call("connect")["status"] == "connected"
    a = write(sandbox.project / "a.txt", "a")
    b = write(sandbox.project / "b.txt", "b")
    c = write(sandbox.project / "c.txt", "c1", "c2", "c3")
    for path in (a, b, c):
        edit(editor, path)
    wait_files(gemini, lambda fs: paths(fs) == [str(c), str(b), str(a)], "three files")
    editor.nvim.command(f"bdelete {a}")
    wait_files(gemini, lambda fs: paths(fs) == [str(c), str(b)], "a.txt closed")
    b.unlink()
    editor.nvim.input("j")
    wait_files(gemini, lambda fs: paths(fs) == [str(c)], "b.txt deleted on disk")
    c.unlink()  # the active file itself
    editor.nvim.input("j")
    wait_files(gemini, lambda fs: fs == [], "no files left")
    assert_quiet(editor)


def test_paths_with_spaces_and_non_ascii_and_renames(editor, gemini, sandbox):
    path = write(sandbox.project / "my dir" / "ñandú 文件.txt", "hola")
    edit(editor, path)
    wait_active(gemini, path, "non-ASCII path")
    renamed = sandbox.project / "my dir" / "renamed file ü.txt"
    editor.lua("vim.cmd.saveas(vim.fn.fnameescape(...))", str(renamed))
    wait_files(gemini, lambda fs: fs and fs[0]["path"] == str(renamed) and fs[0].get("isActive"), "renamed path")
    assert_quiet(editor)


# --- bad input ---------------------------------------------------------------------


def test_invalid_utf8_and_an_enormous_line(editor, gemini, sandbox):
    path = sandbox.project / "weird.txt"
    path.write_bytes(b"ok \xff\xfe bad\n" + b"x" * 3_000_000 + b"\nend\n")
    editor.lua("vim.cmd('edit ++enc=utf-8 ++bad=keep ' .. vim.fn.fnameescape(...))", str(path))  # keep the bad bytes
    assert editor.lua("return vim.fn.getline(1)") == "ok \udcff\udcfe bad"  # (pynvim's surrogate escapes)
    editor.nvim.input("gg03l")  # on the first invalid byte: each counts as one character
    wait_active(gemini, path, "cursor on invalid byte", cursor={"line": 1, "character": 4})
    editor.nvim.input("V")
    wait_active(gemini, path, "invalid UTF-8 selected", selectedText="ok \ufffd\ufffd bad")
    editor.nvim.input("<Esc>2G$")
    wait_active(gemini, path, "end of the huge line", cursor={"line": 2, "character": 3_000_000})
    editor.nvim.input("10h")
    wait_active(gemini, path, "back along the huge line", cursor={"line": 2, "character": 2_999_990})
    editor.nvim.input("kj")  # same column on another line: counted afresh
    wait_active(gemini, path, "huge line again", cursor={"line": 2, "character": 2_999_990})
    editor.nvim.input("V")
    wait_active(gemini, path, "huge line selected, capped", selectedText="x" * 16384)
    editor.nvim.input("<Esc>")
    assert_quiet(editor)


def test_two_hundred_buffers(editor, gemini, sandbox):
    files = [write(sandbox.project / f"buf{i:03d}.txt", str(i)) for i in range(200)]
    editor.lua("for _, path in ipairs(...) do vim.cmd.edit(vim.fn.fnameescape(path)) end", [str(p) for p in files])
    wait_files(gemini, lambda fs: paths(fs) == [str(p) for p in reversed(files[-10:])], "the last ten of 200")
    editor.nvim.command("bufdo normal! G")  # visits every buffer; the one left current is the active one
    wait_active(gemini, files[-1], "last buffer active after :bufdo")
    assert_quiet(editor)


def test_selecting_a_huge_buffer(editor, gemini, sandbox):
    path = sandbox.project / "huge.txt"
    line = "y" * 41
    with path.open("w") as out:
        for i in range(1_000_000):  # about 50 MB
            out.write(f"{i:07d} {line}\n")
    edit(editor, path)
    head = path.read_bytes()[:16384].decode()
    for keys in ("ggVG", "<Esc>ggvG$", "<Esc>gg0<C-v>G$"):
        editor.nvim.input(keys)
        wait_active(gemini, path, f"capped selection from {keys}", selectedText=head)
        # The next selection must be seen as a change: clear this one first.
        editor.nvim.input("<Esc>gg0")
        wait_active(gemini, path, "no selection", selectedText=None, cursor={"line": 1, "character": 1})
    assert_quiet(editor)
