"""`:GeminiChanges` with every kind of file name (a newline, glob and pathspec-magic characters, a
leading `-` or `:`, a trailing space, a backslash, bytes that are not UTF-8, a long name) through
a whole turn in a real Neovim with real git: listed, shown with its own bytes, taken back by hunk,
by file and by `undo` byte for byte, never touching another file; and a repeated revert that says
truthfully that nothing is left to take back."""

from __future__ import annotations

import os
from pathlib import Path

from changes.helpers import INFO, WARN, a_turn, agent_turn, listen, said
from conftest import git, wait_for

ODD = [
    b"new\nline",
    b"\n",
    b" \tx",
    b"*",
    b"?[a]",
    b":x",
    b":(glob)*",
    b"-x",
    b"trail ",
    b"back\\slash",
    b"bad\xff\xfe",
    b"L" * 250,
    "\u00e9".encode() * 125,  # 250 bytes in 125 characters: its hidden temporary name is cut by bytes
    b"sub/*",
]
PLAIN = [b"a", b"b", b"sub/a"]  # what a glob or a magic pathspec among the names would match


def before(name: bytes) -> bytes:
    return repr(name).encode() + b"\n2\n3\n4\n5\n"


def after(name: bytes) -> bytes:
    return repr(name).encode() + b"\nTWO\n3\nFOUR\n5\n"


def on_disk(root: Path) -> dict[bytes, bytes]:
    found = {}
    for folder, dirs, names in os.walk(bytes(root)):
        dirs[:] = [d for d in dirs if d != b".git"]
        for name in names:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, bytes(root))] = Path(os.fsdecode(path)).read_bytes()
    return found


HUNK = "the hunk is as before the turn"


def test_every_file_name_goes_through_list_diff_hunk_file_and_undo(ed, sandbox):
    project = sandbox.project
    (project / "sub").mkdir()
    for name in ODD + PLAIN + [b"c"]:
        Path(os.fsdecode(bytes(project) + b"/" + name)).write_bytes(before(name))
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "base")
    original = on_disk(project)

    def agent() -> None:
        for name in ODD + PLAIN:
            Path(os.fsdecode(bytes(project) + b"/" + name)).write_bytes(after(name))

    turn = a_turn(ed, project, agent)
    paths = [os.fsencode(f["path"]) for f in turn["files"]]
    assert sorted(paths) == sorted(ODD + PLAIN)  # listed, each as itself
    assert all(f["status"] == "modified" and (f["added"], f["removed"]) == (2, 2) for f in turn["files"])
    expect = {**original, **{name: after(name) for name in ODD + PLAIN}}
    assert on_disk(project) == expect
    listen(ed)
    ed.nvim.command("GeminiChanges")
    for index, name in enumerate(ODD):
        ed.nvim.command(f"cc {paths.index(name) + 1}")
        wait_for(
            lambda name=name: ed.lua("return vim.b.gemini_changes and vim.b.gemini_changes.path == ...", name),
            10,
            f"the changes window of {name!r}",
        )
        # The turn's start of this very file, and the file itself beside it.
        text = "return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n') .. '\\n'"
        assert os.fsencode(ed.lua(text)) == before(name)
        now = wait_for(
            lambda: ed.lua(
                "for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do"
                " if vim.w[w].gemini_changes_now then return vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w)) end"
                " end"
            ),
            10,
            "the file's window",
        )
        assert os.fsencode(now) == bytes(project) + b"/" + name
        # The first hunk with `dp`; again: nothing left to take back.
        ed.nvim.command("call cursor(2, 1)")
        ed.nvim.feedkeys("dp")
        expect[name] = before(name)[: -len(b"4\n5\n")] + b"FOUR\n5\n"
        wait_for(lambda: on_disk(project) == expect, 10, f"the hunk of {name!r} taken back")
        shown = ed.lua("return vim.fn.strtrans(...)", name)  # one line: a newline shown as ^@
        assert "\n" not in shown
        wait_for(lambda shown=shown: said(ed) == (f"{shown}: 1 taken back", INFO), 10, "said")
        ed.nvim.feedkeys("dp")
        back = (f"{shown}: nothing left to take back ({HUNK})", INFO)
        wait_for(lambda back=back: said(ed) == back, 10, "dp again")
        assert on_disk(project) == expect
        if index % 2 == 0:  # the whole file, named by its path
            ed.lua("require('gemini_companion.changes').command({'revert', ...})", bytes(project) + b"/" + name)
            expect[name] = before(name)
            assert on_disk(project) == expect
            assert said(ed) == (f"{shown}: 1 taken back, 1 already back", INFO)  # its other hunk; the first
    ed.nvim.command("GeminiChanges undo")  # the rest: the other half's second hunks and the plain files
    assert on_disk(project) == original
    # Taken back: a hunk of each name left and each plain file; already: the first hunks of those
    # names and the files reverted whole.
    halves = (len(ODD) // 2, (len(ODD) + 1) // 2)
    counts = f"{halves[0] + len(PLAIN)} taken back, {halves[0] + halves[1]} already back"
    assert said(ed) == (f"turn {turn['id']} (gemini): {counts}", INFO)
    ed.nvim.command("GeminiChanges undo")
    assert said(ed) == (
        f"turn {turn['id']} (gemini): nothing left to take back (every file is as before the turn)",
        INFO,
    )
    assert on_disk(project) == original


def test_a_repeated_undo_revert_or_dp_says_nothing_is_left(ed, repo):
    turn = a_turn(ed, repo, lambda: agent_turn(repo))
    listen(ed)
    what = f"turn {turn['id']} (gemini)"
    ed.nvim.command(f"GeminiChanges revert {repo / 'a.txt'}")
    assert said(ed) == ("a.txt: 1 taken back", INFO)
    ed.nvim.command(f"GeminiChanges revert {repo / 'a.txt'}")
    assert said(ed) == ("a.txt: nothing left to take back (it is as before the turn)", INFO)
    # Partly taken back, one file changed after the turn by the user.
    (repo / "sed.txt").write_text("mine\n")
    ed.nvim.command("GeminiChanges undo")
    message, level = said(ed)
    assert (
        message.startswith(f"{what}: 2 taken back, 1 already back, 1 refused (:copen lists them): ") and level == WARN
    )
    ed.nvim.command("GeminiChanges undo")
    message, level = said(ed)
    assert message.startswith(f"{what}: 0 taken back, 3 already back, 1 refused") and level == WARN
    assert (repo / "sed.txt").read_text() == "mine\n"
    (repo / "sed.txt").write_text("colour\ncolour\n")  # the user puts it back as it was
    ed.nvim.command("GeminiChanges undo")
    assert said(ed) == (f"{what}: nothing left to take back (every file is as before the turn)", INFO)
    ed.nvim.command("GeminiChanges undo")
    assert said(ed) == (f"{what}: nothing left to take back (every file is as before the turn)", INFO)
    assert (repo / "a.txt").read_text() == "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n" and not (repo / "new.txt").exists()


def test_dp_twice_on_a_hunk_says_it_is_back(ed, repo):
    a_turn(ed, repo, lambda: agent_turn(repo))
    listen(ed)
    ed.nvim.command("GeminiChanges")
    ed.nvim.command("cfirst")  # a.txt
    wait_for(lambda: ed.lua("return vim.b.gemini_changes ~= nil"), 10, "the changes window")
    wait_for(lambda: ed.lua("return #vim.api.nvim_tabpage_list_wins(0)") >= 2, 10, "the diff pair")
    for line, text in ((2, "1\n2\n3\n4\n5\n6\n7\n8\nNINE\n10\n"), (9, "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n")):
        ed.nvim.command(f"call cursor({line}, 1)")
        ed.nvim.feedkeys("dp")
        wait_for(lambda text=text: (repo / "a.txt").read_text() == text, 10, "the hunk taken back")
        wait_for(lambda: said(ed) == ("a.txt: 1 taken back", INFO), 10, "said")
        ed.nvim.feedkeys("dp")
        wait_for(lambda: said(ed) == (f"a.txt: nothing left to take back ({HUNK})", INFO), 10, "dp again")
        assert (repo / "a.txt").read_text() == text
    assert (repo / "new.txt").exists()  # only a.txt was asked for


def test_a_revert_argument_is_taken_literally(ed, sandbox):
    """`~`, `%`, `#`, `$HOME`, a space and a leading `-` in `:GeminiChanges revert <name>` name that
    very file in the current folder: nothing is expanded."""
    project = sandbox.project
    names = ["~", "%", "#", "$HOME", "a b", "-x", "x"]
    for name in names:
        (project / name).write_text(f"{name}\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "base")
    (sandbox.home / "x").write_text("home's\n")
    turn = a_turn(ed, project, lambda: [(project / n).write_text(f"{n} changed\n") for n in names])
    assert len(turn["files"]) == len(names)
    ed.nvim.chdir(str(project))
    ed.nvim.command(f"edit {project / 'x'}")  # `%` would be this file, `#` none
    listen(ed)
    expect = {name: f"{name} changed\n" for name in names}
    for name, typed in (("~", "~"), ("%", "%"), ("#", "#"), ("$HOME", "$HOME"), ("a b", "a\\ b"), ("-x", "-x")):
        ed.nvim.command(f"GeminiChanges revert {typed}")
        expect[name] = f"{name}\n"
        assert {n: (project / n).read_text() for n in names} == expect, typed
        assert said(ed) == (f"{name}: 1 taken back", INFO)
    ed.nvim.command("GeminiChanges revert a b")
    assert said(ed) == ("revert takes one file (a space in its name: put a \\ before it)", 4)
    assert (project / "x").read_text() == "x changed\n" and (sandbox.home / "x").read_text() == "home's\n"


def test_a_second_undo_of_modes_links_and_kinds_finds_nothing_left(ed, sandbox):
    """ "Already back" compares kind, bytes, link target and execute bit: a mode change, a retargeted
    link, a file become a link, a created and a deleted file, each undone once, then nothing."""
    project = sandbox.project
    (project / "mode.sh").write_text("echo\n")
    (project / "gone.txt").write_text("bye\n")
    (project / "to_link").write_text("o\n")
    (project / "link").symlink_to("t")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "base")

    def agent() -> None:
        (project / "mode.sh").chmod(0o755)
        (project / "gone.txt").unlink()
        (project / "link").unlink()
        (project / "link").symlink_to("o")
        (project / "to_link").unlink()
        (project / "to_link").symlink_to("o")
        (project / "new.txt").write_text("new\n")

    turn = a_turn(ed, project, agent)
    assert len(turn["files"]) == 5
    listen(ed)
    what = f"turn {turn['id']} (gemini)"
    ed.nvim.command("GeminiChanges undo")
    assert said(ed) == (f"{what}: 5 taken back", INFO)
    ed.nvim.command("GeminiChanges undo")
    assert said(ed) == (f"{what}: nothing left to take back (every file is as before the turn)", INFO)
    # The user's own text since, with the turn's execute bit: the bit goes back, the text stays.
    (project / "mode.sh").write_text("mine\n")
    (project / "mode.sh").chmod(0o755)
    ed.nvim.command("GeminiChanges undo")
    assert said(ed) == (f"{what}: 1 taken back, 4 already back", INFO)
    assert (project / "mode.sh").read_text() == "mine\n" and (project / "mode.sh").stat().st_mode & 0o777 == 0o644
    ed.nvim.command("GeminiChanges undo")
    assert said(ed) == (
        f"{what}: nothing left to take back (what the turn changed is back; the rest was changed since)",
        INFO,
    )
    assert os.readlink(project / "link") == "t" and (project / "to_link").read_text() == "o\n"
    assert not (project / "new.txt").exists() and (project / "gone.txt").read_text() == "bye\n"


def test_a_carriage_return_in_a_name(ed, sandbox):
    project = sandbox.project
    names = [b"cr\r", b"\rcr", b"crlf\r\n"]
    for name in names:
        Path(os.fsdecode(bytes(project) + b"/" + name)).write_bytes(before(name))
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "base")
    original = on_disk(project)
    turn = a_turn(
        ed, project, lambda: [Path(os.fsdecode(bytes(project) + b"/" + n)).write_bytes(after(n)) for n in names]
    )
    assert sorted(os.fsencode(f["path"]) for f in turn["files"]) == sorted(names)
    ed.nvim.command("GeminiChanges undo")
    assert on_disk(project) == original
