"""The user's CLI settings file is theirs (issue 21): enable-cli / disable-cli edit through links,
keep owner, group and mode, refuse what the user's own CLI could not read back (another user's
file, a read-only file, an unwritable place), change only our keys byte for byte in every
formatting style, keep the record (journal) and the file in step, find our entries without a
record, and write nothing without an explicit yes. settings_edit.py is run as cli_settings.lua
runs it (its own process, real files, real uids through setpriv); the Lua side in a real Neovim."""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, Editor, wait_for
from gemini_companion.programs import jsonc, settings_edit, settings_file
from harness.settings_edits import edit_settings, settings_edited
from harness.tui import E2E_TIMEOUT, GEMINI_BIN, READY, gemini_settings, kill_tmux, terminal_env, tmux_available

SCRIPT = ROOT / "rplugin" / "python3" / "gemini_companion" / "programs" / "settings_edit.py"
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
HOOK = {"hooks": [{"type": "command", "name": "gemini-companion", "command": "declare -p X || exit 0; run"}]}
SERVER = {"httpUrl": "${GEMINI_COMPANION_MCP_URL:-}", "headers": {"Authorization": "Bearer ${T:-}"}, "trust": True}
# What cli_settings.lua passes for Gemini, in its (sorted) order.
WANT = [
    f"hooks.AfterAgent+={json.dumps(HOOK)}",
    f"hooks.BeforeAgent+={json.dumps(HOOK)}",
    "ide.enabled=true",
    "ide.hasSeenNudge=true",
    f"mcpServers.neovim={json.dumps(SERVER)}",
    f"mcpServers.neovim-open={json.dumps({**SERVER, 'trust': False, 'includeTools': ['open_file']})}",
]


def edit(verb: str, settings: Path, journal: Path, *wanted: str, user: list[str] | None = None) -> dict[str, Any]:
    argv = [*(user or []), sys.executable, str(SCRIPT), verb, str(settings), str(journal), *wanted]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stderr == "", run.stderr  # never a traceback
    assert len(run.stdout.splitlines()) == 1, run.stdout
    return json.loads(run.stdout)


def snapshot(path: Path) -> tuple[bytes, int, int, int]:
    st = os.lstat(path)
    return path.read_bytes(), st.st_mode, st.st_uid, st.st_gid


# --- only our keys change, in every style ---------------------------------------------------------

CORPUS = {
    "two spaces": '{\n  "model": {\n    "name": "gemini-2.5-pro"\n  },\n  "theme": "Dracula"\n}\n',
    "four spaces": '{\n    "theme": "x",\n    "ui": {\n        "hideBanner": true\n    }\n}\n',
    "tabs": '{\n\t"theme": "x",\n\t"ide": {\n\t\t"hasSeenNudge": false\n\t}\n}\n',
    "crlf": '{\r\n  "theme": "x",\r\n  "hooks": {\r\n    "BeforeAgent": []\r\n  }\r\n}\r\n',
    "no final newline": '{\n  "theme": "x"\n}',
    "one line": '{"theme": "x", "ide": {"enabled": true}}',
    "minified": '{"a":1,"b":[1,2,3],"ide":{}}',
    "numbers": '{\n  "n": 1.0e3,\n  "m": 10.50,\n  "k": -0.0,\n  "big": 12345678901234567890\n}\n',
    "escapes": '{\n  "s": "caf\\u00e9 \\ud83d\\ude00 \\/ \\"q\\"",\n  "\\u0041": "k\\u00e9y",\n  "raw": "日本"\n}\n',
    "lone surrogate": '{\n  "s": "\\ud800",\n  "\\udfff": 1\n}\n',
    "inline arrays": '{\n  "excluded": ["a", "b"],\n  "o": {"x": 1, "y": [ ]},\n  "e": {}\n}\n',
    "key order": '{\n  "zeta": 1,\n  "mcpServers": {\n    "mine": {"command": "x"}\n  },\n  "alpha": 2\n}\n',
    "users hooks": (
        '{\n  "hooks": {\n    "BeforeAgent": [\n      {"hooks": [{"type": "command", "command": "echo mine"}]}\n'
        "    ]\n  }\n}\n"
    ),
    "spaced colon": '{\n  "a" : 1 ,\n  "b" : { "c" : 2 }\n}\n',
    "trailing spaces": '{  \n  "a": 1  \n}  \n\n',
    "users own server": '{\n  "mcpServers": {\n    "neovim": { "command": "mine" }\n  }\n}\n',
    "duplicate key": '{\n  "ide": {"enabled": false},\n  "ide": {}\n}\n',
    "empty object": "{}",
    "empty file": "",
    # Filled by enable, emptied by disable: their inside comes back as it was.
    "spaced empty objects": '{\n  "ide": { },\n  "mcpServers": {\n  },\n  "a": 1\n}\n',
    "spaced empty list": '{\n  "hooks": {\n    "BeforeAgent": [ ],\n    "AfterAgent": [\n\n    ]\n  }\n}\n',
    "spaced empty file object": "{ }\n",
    "empty file object on two lines": "{\r\n}\r\n",
    # Comments, as both CLIs read them (issue 31): each stays, byte for byte, where it was.
    "comments around": '// my settings\n{\n  /* theme */ "theme": "x", // dark\n  "a": 1 // last\n}\n// end\n',
    "comment in what we add to": '{\n  "mcpServers": { // mine\n  },\n  "ide": {\n    /* later */\n  }\n}\n',
    "comment holding brace and quote": '{\n  // { "ide": { "enabled": false } }\n  "a": "x" /* " } */\n}\n',
    "slashes in strings": '{\n  "url": "http://x/*y*/", // "z"\n  "p": "a//b"\n}\n',
    "comment over lines": '{\n  "a": 1\n  /* one,\n     two, "three" */\n}\n',
    "comment at the end, no newline": '{\n  "a": 1\n} // end',
    "open comment at the end": '{"a": 1} /* never closed',
    "comments one line": '{/* a */"a": 1 /* b */, "ide": { /* c */ }}',
    "comments crlf": '{\r\n  // first\r\n  "a": 1, // one\r\n  "hooks": { /* h */\r\n  }\r\n}\r\n',
    "comments and users hooks": (
        '{\n  "hooks": {\n    "BeforeAgent": [\n      // mine\n      {"hooks": []} // keep\n    ]\n  }\n}\n'
    ),
    "comment after the last key": '{\n  "ide": {\n    "enabled": false // off for now\n  }\n}\n',
    "byte-order mark": '\ufeff{\r\n  "a": 1 // Notepad\r\n}\r\n',
}


def cli_reads(text: bytes) -> Any:
    """The value the CLIs read: their own strip-json-comments, then JSON.parse (a byte-order mark
    dropped first, as Qwen does; Gemini refuses such a file)."""
    script = (
        "const t = require('fs').readFileSync(0, 'utf8').replace(/^\\uFEFF/, '');"
        "process.stdout.write(JSON.stringify(JSON.parse(require('strip-json-comments')(t))))"
    )
    run = subprocess.run(["node", "-e", script], input=text, capture_output=True, cwd=ROOT / "tests" / "node")
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def our_keys_hold(value: dict[str, Any]) -> bool:
    return (
        value["ide"]["enabled"] is True
        and value["ide"]["hasSeenNudge"] is True
        and value["mcpServers"]["neovim"] == SERVER
        and HOOK in value["hooks"]["BeforeAgent"]
        and HOOK in value["hooks"]["AfterAgent"]
    )


def without_ours(value: Any) -> Any:
    """`value` with what enable adds taken out (and the objects it created that way)."""
    value = json.loads(json.dumps(value))
    for group, names in (("ide", ("enabled", "hasSeenNudge")), ("mcpServers", ("neovim", "neovim-open"))):
        for name in names:
            value.get(group, {}).pop(name, None)
    for event in ("BeforeAgent", "AfterAgent"):
        hooks = value.get("hooks", {})
        if event in hooks:
            hooks[event] = [item for item in hooks[event] if item != HOOK]
    for group in ("ide", "mcpServers", "hooks"):  # what enable created, whole
        for name, inner in list(value.get(group, {}).items()):
            if inner == []:
                del value[group][name]
        if value.get(group) == {}:
            del value[group]
    return value


@pytest.mark.parametrize("style", list(CORPUS))
def test_enable_touches_only_our_keys_and_disable_gives_back_every_byte(tmp_path, style):
    text = CORPUS[style]
    settings, journal = tmp_path / "settings.json", tmp_path / "state" / "journal.json"
    settings.write_bytes(text.encode("utf-8", "surrogatepass"))
    original = settings.read_bytes()
    out = edit("enable", settings, journal, *WANT)
    assert "error" not in out, out
    enabled = settings.read_bytes()
    value = cli_reads(enabled)
    assert our_keys_hold(value), value
    assert edit("enable", settings, journal, *WANT)["changes"] == []  # idempotent
    if text.strip():
        # Every byte of the user's stays where it was: the edit only inserts, except where a key of
        # ours already held another value (then that value's bytes, and only those, are replaced).
        a, b = original.decode("utf-8", "surrogatepass"), enabled.decode("utf-8", "surrogatepass")
        for op, i1, i2, _, _ in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
            if op in ("replace", "delete"):
                # (false -> true may align as fals -> tru, keeping the e)
                assert a[i1:i2].strip() in ("false", "fals", "true", "", "}", '"command": "mine" }'), (op, a[i1:i2], b)
        eol = "\r\n" if "\r\n" in a else "\n"
        assert b.count("\n") == b.count(eol), "one line ending"
        assert without_ours(value) == without_ours(cli_reads(original or b"{}")) or style == "duplicate key"
    assert len(edit("disable", settings, journal)["changes"]) >= 5
    if text.strip():
        assert settings.read_bytes() == original
    else:
        assert json.loads(settings.read_bytes()) == {}
    assert not journal.exists() or str(settings) not in json.loads(journal.read_text())


def test_a_change_of_the_users_in_between_stays_and_the_rest_comes_back(tmp_path):
    settings, journal = tmp_path / "settings.json", tmp_path / "journal.json"
    settings.write_text('{\n\t"theme": "x",\n\t"n": 1.50\n}\n')
    edit("enable", settings, journal, *WANT)
    text = settings.read_text().replace('"theme": "x"', '"theme": "Dracula"')  # the user's edit
    text = text.replace('"hasSeenNudge": true', '"hasSeenNudge": false')  # theirs now
    settings.write_text(text)
    edit("disable", settings, journal)
    assert (
        settings.read_text()
        == '{\n\t"theme": "Dracula",\n\t"n": 1.50,\n\t"ide": {\n\t\t"hasSeenNudge": false\n\t}\n}\n'
    )


USERS = json.dumps({"theme": "Dracula", "model": {"name": "gemini-2.5-pro"}}, indent=2) + "\n"


NOTE = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def test_comments_written_around_our_keys_since_stay_when_they_are_taken_back(tmp_path):
    settings, journal = tmp_path / "settings.json", tmp_path / "journal.json"
    settings.write_text('{\n  "theme": "x" // dark\n}\n')
    edit("enable", settings, journal, *WANT)
    text = settings.read_text()  # the user annotates what we wrote, and adds a key after it
    text = text.replace('"neovim": {', '// the editor\n    "neovim": { /* ours */', 1)
    text = text.replace('"hasSeenNudge": true', '"hasSeenNudge": true // seen', 1)
    text = text.replace('"hooks": {', '"hooks": { /* turns */', 1)
    text = text.rstrip()[:-1].rstrip() + ',\n  // mine, after\n  "zz": 1\n}\n'
    settings.write_text(text)
    assert len(edit("disable", settings, journal)["changes"]) >= 5
    after = settings.read_text()
    assert NOTE.findall(after) == NOTE.findall(text), after
    assert cli_reads(after.encode()) == {"theme": "x", "zz": 1}, after


def test_a_save_read_half_way_is_read_again_when_it_is_done(tmp_path, monkeypatch):
    """The CLIs save in place: truncate, then write. An edit that read the file in between (empty,
    or cut short) wrote back its edit of nothing: every setting of the user's was gone."""
    settings, journal = tmp_path / "settings.json", tmp_path / "journal.json"
    for half in ("", USERS[:20]):
        settings.write_text(half)  # the CLI's save, half way

        def the_save_ends(_seconds: float) -> None:
            settings.write_text(USERS)

        monkeypatch.setattr(settings_file.time, "sleep", the_save_ends)
        out = settings_edit.main(["enable", str(settings), str(journal), "ide.enabled=true"])
        assert out["changes"] == ["ide.enabled: (absent) -> true"]
        assert json.loads(settings.read_text()) == {**json.loads(USERS), "ide": {"enabled": True}}
        settings_edit.main(["disable", str(settings), str(journal)])
        assert settings.read_text() == USERS


def no_new_file_beside(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """`folder` as one the user cannot create files in: the settings there are written in place."""
    mkstemp = tempfile.mkstemp

    def refused(**kwargs: Any) -> tuple[int, str]:
        if Path(kwargs["dir"]) == folder:
            raise PermissionError(13, "Permission denied")
        return mkstemp(**kwargs)

    monkeypatch.setattr(settings_file.tempfile, "mkstemp", refused)


@pytest.mark.parametrize("how", ["renamed", "in place"])
def test_a_save_between_the_read_and_the_write_is_kept(tmp_path, monkeypatch, how):
    """An edit made on a version the CLI has saved over since is made again on the new one."""
    settings, journal = tmp_path / "settings.json", tmp_path / "state" / "journal.json"
    settings.write_text(USERS)
    inode = settings.stat().st_ino
    if how == "in place":
        no_new_file_beside(monkeypatch, tmp_path)
    read_journal = settings_edit.read_journal
    saves = [USERS.replace("Dracula", "Nord"), USERS.replace("Dracula", "Nord").replace("pro", "flash")]

    def the_cli_saves(path: str) -> Any:
        if saves:
            settings.write_text(saves.pop(0))
        return read_journal(path)

    monkeypatch.setattr(settings_edit, "read_journal", the_cli_saves)
    out = settings_edit.main(["enable", str(settings), str(journal), "ide.enabled=true"])
    assert out["changes"] == ["ide.enabled: (absent) -> true"]
    assert json.loads(settings.read_text())["model"]["name"] == "gemini-2.5-flash"
    assert json.loads(settings.read_text())["ide"] == {"enabled": True}
    assert (settings.stat().st_ino == inode) == (how == "in place")
    enabled = settings.read_text()
    saves[:] = [enabled] * settings_edit.ATTEMPTS  # saved again before every write: it gives up
    with pytest.raises(settings_edit.Refused, match="kept changing while it was being edited"):
        settings_edit.main(["disable", str(settings), str(journal)])
    assert settings.read_text() == enabled and json.loads(journal.read_text())  # the record kept


def test_written_in_place_the_file_holds_json_at_every_moment(tmp_path, monkeypatch):
    """In place, a shorter text is written over the longer one padded with spaces, then cut: a CLI
    starting in between (or an edit stopped there) reads JSON, never our text and a tail of the
    old one."""
    settings, journal = tmp_path / "settings.json", tmp_path / "state" / "journal.json"
    settings.write_text('{\n  // mine\n  "theme": "x"\n}\n')
    original = settings.read_bytes()
    no_new_file_beside(monkeypatch, tmp_path)
    settings_edit.main(["enable", str(settings), str(journal), *WANT])
    seen: list[bytes] = []
    ftruncate = os.ftruncate

    def look_first(fd: int, length: int) -> None:
        seen.append(settings.read_bytes())
        ftruncate(fd, length)

    monkeypatch.setattr(settings_edit.os, "ftruncate", look_first)
    settings_edit.main(["disable", str(settings), str(journal)])
    assert settings.read_bytes() == original and seen and len(seen[0]) > len(original)
    assert jsonc.jsonc(seen[0].decode()) == {"theme": "x"} and seen[0].rstrip(b" ") == original


def test_a_save_while_the_edit_is_being_written_is_kept(tmp_path, monkeypatch):
    """The last look is taken after the slow part of the write (fsync), just before the rename."""
    settings, journal = tmp_path / "settings.json", tmp_path / "state" / "journal.json"
    settings.write_text(USERS)
    fsync = os.fsync
    saves = [USERS.replace("Dracula", "Nord")]

    def the_cli_saves_meanwhile(fd: int) -> None:
        fsync(fd)
        if saves and Path(os.readlink(f"/proc/self/fd/{fd}")).parent == tmp_path:  # not the journal's
            settings.write_text(saves.pop())

    monkeypatch.setattr(settings_edit.os, "fsync", the_cli_saves_meanwhile)
    settings_edit.main(["enable", str(settings), str(journal), "ide.enabled=true"])
    assert json.loads(settings.read_text()) == {**json.loads(USERS), "theme": "Nord", "ide": {"enabled": True}}
    assert not saves


def test_a_link_pointed_elsewhere_meanwhile_is_edited_where_it_points_now(tmp_path, monkeypatch):
    """A dotfile manager switching the link between the read and the write: the file the CLI will
    read is the one edited; the one it no longer reads is left as it was."""
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(USERS)
    new.write_text(USERS.replace("Dracula", "Nord"))
    settings, journal = tmp_path / "settings.json", tmp_path / "journal.json"
    settings.symlink_to(old)
    read_journal = settings_edit.read_journal

    def switched(path: str) -> Any:
        if settings.readlink() == old:
            settings.unlink()
            settings.symlink_to(new)
        return read_journal(path)

    monkeypatch.setattr(settings_edit, "read_journal", switched)
    settings_edit.main(["enable", str(settings), str(journal), "ide.enabled=true"])
    assert old.read_text() == USERS and json.loads(new.read_text())["ide"] == {"enabled": True}


# --- links, owners, modes ---------------------------------------------------------------------


def test_a_stow_style_link_is_edited_through_and_stays_a_link(tmp_path):
    dotfiles = tmp_path / "dotfiles" / "gemini" / ".gemini"
    dotfiles.mkdir(parents=True)
    target = dotfiles / "settings.json"
    target.write_text('{\n    "theme": "x"\n}\n')
    target.chmod(0o640)
    os.chown(target, -1, 65534)
    home = tmp_path / "home" / ".gemini"
    home.mkdir(parents=True)
    link = home / "settings.json"
    link.symlink_to(os.path.relpath(target, home))  # what stow makes: a relative link
    before = snapshot(target)
    journal = tmp_path / "journal.json"
    assert edit("enable", link, journal, *WANT)["changes"]
    assert link.is_symlink() and os.readlink(link) == os.path.relpath(target, home)
    assert our_keys_hold(json.loads(target.read_text()))
    st = target.stat()
    assert (st.st_mode, st.st_uid, st.st_gid) == before[1:]
    assert sorted(p.name for p in home.iterdir()) == ["settings.json"]  # no copy, no temporary left
    assert sorted(p.name for p in dotfiles.iterdir()) == ["settings.json"]
    edit("disable", link, journal)
    assert link.is_symlink() and snapshot(target) == before


def test_a_hard_linked_file_is_refused_and_stays_one_file(tmp_path):
    """Replacing it would leave the other name (a dotfiles checkout, say) with the old bytes."""
    dotfiles = tmp_path / "dotfiles-settings.json"
    dotfiles.write_text('{"theme": "x"}\n')
    settings = tmp_path / "settings.json"
    os.link(dotfiles, settings)
    out = edit("enable", settings, tmp_path / "journal.json", *WANT)
    refused(out, "2 hard links", "nothing was changed")
    assert settings.stat().st_ino == dotfiles.stat().st_ino and settings.read_text() == '{"theme": "x"}\n'


def test_a_linked_directory_and_a_chain_of_links_are_followed(tmp_path):
    real = tmp_path / "store" / "abc-home-manager-files" / ".gemini"
    real.mkdir(parents=True)
    (real / "settings.json").write_text('{"a": 1}')
    (tmp_path / "middle.json").symlink_to(real / "settings.json")
    (tmp_path / ".gemini").symlink_to(tmp_path / "store")  # a linked directory too
    link = tmp_path / "settings.json"
    link.symlink_to(tmp_path / "middle.json")
    journal = tmp_path / "journal.json"
    edit("enable", link, journal, "ide.enabled=true")
    assert link.is_symlink() and (tmp_path / "middle.json").is_symlink()
    assert (real / "settings.json").read_text() == '{"a": 1, "ide": {"enabled": true}}'
    edit("disable", link, journal)
    assert (real / "settings.json").read_text() == '{"a": 1}'


def refused(out: dict[str, Any], *words: str) -> None:
    assert set(out) == {"error"}, out
    assert "\n" not in out["error"] and "nothing was changed" in out["error"], out
    for word in words:
        assert word in out["error"], out


def test_a_read_only_file_and_a_link_to_nothing_are_refused(tmp_path):
    settings, journal = tmp_path / "settings.json", tmp_path / "journal.json"
    settings.write_text('{"a": 1}')
    settings.chmod(0o444)
    before = snapshot(settings)
    refused(edit("enable", settings, journal, *WANT), "read-only")
    assert snapshot(settings) == before and not journal.exists()
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere" / "settings.json")
    refused(edit("enable", dangling, journal, *WANT), "points at nothing")
    assert dangling.is_symlink() and not (tmp_path / "nowhere").exists() and not journal.exists()
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    refused(edit("enable", fifo, journal, *WANT), "not a regular file")


def test_another_users_file_or_directory_is_refused_as_root(tmp_path):
    assert os.geteuid() == 0, "the suite runs as root: sudo nvim with the user's HOME"
    settings, journal = tmp_path / "settings.json", tmp_path / "journal.json"
    settings.write_text('{"a": 1}')
    os.chown(settings, 65534, 65534)
    before = snapshot(settings)
    for verb in ("enable", "disable"):
        refused(edit(verb, settings, journal, *WANT), "belongs to nobody (uid 65534)", "root (uid 0)")
    assert snapshot(settings) == before and not journal.exists()
    link = tmp_path / "link.json"  # through a link of root's, the target's owner counts
    link.symlink_to(settings)
    refused(edit("enable", link, journal, *WANT), "belongs to nobody")
    home = tmp_path / "home"  # no file yet: a new one would be root's in the user's directory
    home.mkdir()
    os.chown(home, 65534, 65534)
    refused(edit("enable", home / ".gemini" / "settings.json", journal, *WANT), "belongs to nobody")
    assert list(home.iterdir()) == [] and not journal.exists()


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory outside pytest's private tmp, so that nobody can reach it."""
    path = Path(tempfile.mkdtemp(prefix="settings-safety-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def test_a_linked_file_in_a_folder_the_user_cannot_create_files_in_is_written_in_place(shared):
    """Dotfiles checked out where the user may write the file but not create one beside it (issue
    31): the CLI's own save works there (it writes in place), and so does enable-cli now; it
    refused, as no new file can be renamed over it there."""
    dotfiles = shared / "dotfiles"  # root's, 0755
    dotfiles.mkdir()
    real = dotfiles / "settings.json"
    real.write_text('{\n  // mine\n  "theme": "x"\n}\n')
    os.chown(real, 65534, 65534)
    real.chmod(0o640)
    home, state = shared / "home", shared / "state"
    (home / ".gemini").mkdir(parents=True)
    state.mkdir()
    link = home / ".gemini" / "settings.json"
    link.symlink_to(real)
    for folder in (home, home / ".gemini", state):
        os.chown(folder, 65534, 65534)
    journal = state / "journal.json"
    before, inode = snapshot(real), real.stat().st_ino
    out = edit("enable", link, journal, *WANT, user=NOBODY)
    assert "error" not in out and len(out["changes"]) >= 5, out
    assert our_keys_hold(cli_reads(real.read_bytes())) and b"// mine" in real.read_bytes()
    assert link.is_symlink() and real.stat().st_ino == inode and os.listdir(dotfiles) == ["settings.json"]
    assert snapshot(real)[1:] == before[1:]  # mode, owner, group
    assert len(edit("disable", link, journal, user=NOBODY)["changes"]) >= 5
    assert snapshot(real) == before and real.stat().st_ino == inode


def test_as_the_owner_a_write_that_fails_is_refused_and_the_record_is_put_back(shared):
    state = shared / "state"
    state.mkdir()
    os.chown(state, 65534, 65534)
    journal = state / "journal.json"
    locked = shared / "locked"  # the user's file in a directory they cannot write: written in place
    locked.mkdir()
    settings = locked / "settings.json"
    settings.write_text(json.dumps({"a": "x" * 4000}) + "\n")
    os.chown(settings, 65534, 65534)
    before = snapshot(settings)
    # A file size limit a little over the file's (as a full disk would): the write stops part way.
    limited = ["prlimit", f"--fsize={len(before[0]) + 300}", "--", *NOBODY]
    out = edit("enable", settings, journal, *WANT, user=limited)
    refused(out, "cannot write", str(settings), "File too large")
    assert snapshot(settings) == before and not journal.exists()  # its bytes back, the record taken back
    # An earlier record stays exactly as it was.
    journal.write_text('{"other": {"ide.enabled": {"before": {"absent": true}, "wrote": true}}}\n')
    os.chown(journal, 65534, 65534)
    record = journal.read_bytes()
    refused(edit("enable", settings, journal, *WANT, user=limited), "cannot write")
    assert journal.read_bytes() == record and snapshot(settings) == before
    # A new file cannot be written in place: where the user cannot create it, it is refused.
    closed = shared / "closed"
    closed.mkdir(mode=0o555)
    os.chown(closed, 65534, 65534)
    refused(edit("enable", closed / "settings.json", journal, *WANT, user=NOBODY), "cannot write", "Permission denied")
    assert journal.read_bytes() == record and os.listdir(closed) == []
    # The state directory unwritable: nothing is written at all.
    os.chown(journal, 0, 0)
    os.chown(state, 0, 0)
    home = shared / "home"
    home.mkdir()
    os.chown(home, 65534, 65534)
    mine = home / "settings.json"
    mine.write_text('{"a": 1}\n')
    os.chown(mine, 65534, 65534)
    os.chown(home, 65534, 65534)
    before = snapshot(mine)
    refused(edit("enable", mine, journal, *WANT, user=NOBODY), "gemini-companion's own record", str(journal))
    assert snapshot(mine) == before and journal.read_bytes() == record
    # And when it all can be written, as the owner: owner, group and mode kept.
    os.chown(state, 65534, 65534)
    os.chown(journal, 65534, 65534)
    mine.chmod(0o604)
    assert edit("enable", mine, journal, *WANT, user=NOBODY)["changes"]
    st = mine.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 65534, 0o604)
    edit("disable", mine, journal, user=NOBODY)
    assert snapshot(mine) == (before[0], before[1] & ~0o777 | 0o604, 65534, 65534)


# --- no traceback, for any input -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b'{"a": 1, // mine\n}', "not valid JSON"),
        (b"\xff\xfe{}", "not valid JSON"),
        (b'{"a": "\xc3"}', "not valid JSON"),
        (b"[1, 2]", "does not hold a JSON object"),
        (b"[" * 100000 + b"]" * 100000, "nothing was changed"),
        (b'{"ide": true}', "ide is not an object"),
        (b'{"hooks": {"AfterAgent": 3}}', ""),
        (b"\xef\xbb\xbf", "not valid JSON"),  # a byte-order mark and no object
        (b"// only a comment\n", "not valid JSON"),  # the CLIs refuse it too
        (b'{"a": NaN}', "not valid JSON"),
        (b'{"a": -Infinity}', "not valid JSON"),
    ],
)
def test_any_settings_content_is_one_line_and_changes_nothing(tmp_path, content, why):
    settings, journal = tmp_path / "settings.json", tmp_path / "journal.json"
    settings.write_bytes(content)
    out = edit("enable", settings, journal, *WANT)
    if "error" in out:
        refused(out, why)
        assert settings.read_bytes() == content and not journal.exists()
    else:  # a list that is not a list of ours is the user's: left alone, the rest written
        assert json.loads(settings.read_bytes())["hooks"]["AfterAgent"] == 3
        edit("disable", settings, journal)
        assert settings.read_bytes() == content


# --- the record ------------------------------------------------------------------------------------


def test_older_records_are_still_taken_back(tmp_path):
    settings, journal = tmp_path / "settings.json", tmp_path / "journal.json"
    old_hook = {"hooks": [{"type": "command", "command": "old", "timeout": 60000}]}
    settings.write_text(
        json.dumps({"a": 1, "ide": {"enabled": True, "hasSeenNudge": True}, "hooks": {"AfterAgent": [old_hook]}})
    )
    journal.write_text(
        json.dumps(
            {
                str(settings): {
                    "ide.enabled": {"absent": True},  # the first versions: the value before only
                    "ide.hasSeenNudge": {"before": {"absent": True}, "wrote": True},
                    "hooks.AfterAgent+": {"appended": old_hook, "created": True},
                }
            }
        )
    )
    assert len(edit("disable", settings, journal)["changes"]) == 3
    assert json.loads(settings.read_text()) == {"a": 1}
    assert not journal.exists() or str(settings) not in json.loads(journal.read_text())


def test_an_older_record_set_again_keeps_what_was_there_before(tmp_path):
    settings, journal = tmp_path / "settings.json", tmp_path / "journal.json"
    settings.write_text('{"ide": {"enabled": 1}}')  # the first versions wrote true over the user's 1
    journal.write_text(json.dumps({str(settings): {"ide.enabled": 1}}))
    settings.write_text('{"ide": {"enabled": true}}')
    edit("enable", settings, journal, "ide.enabled=false")  # ours still, set again
    edit("enable", settings, journal, "ide.enabled=true")
    edit("disable", settings, journal)
    assert settings.read_text() == '{"ide": {"enabled": 1}}'


def test_a_damaged_record_is_named_as_ours_and_never_blamed_on_the_settings(tmp_path):
    settings, journal = tmp_path / "settings.json", tmp_path / "state" / "cli-settings.json"
    settings.write_text('{\n  "a": 1\n}\n')
    edit("enable", settings, journal, *WANT)
    enabled = settings.read_bytes()
    journal.write_bytes(journal.read_bytes()[:40])  # truncated
    out = edit("enable", settings, journal, *WANT)
    refused(out, "gemini-companion's own record", str(journal), "damaged")
    assert "not plain JSON" not in out["error"] and "not valid JSON" not in out["error"]
    assert settings.read_bytes() == enabled
    # disable without a usable record: what cli_settings.lua recognises as ours still goes.
    out = edit(
        "disable",
        settings,
        journal,
        f"hooks.AfterAgent-={json.dumps(HOOK)}",
        f"mcpServers.neovim~={json.dumps(SERVER)}",
    )
    assert "gemini-companion's own record" in out["warning"] and str(journal) in out["warning"]
    value = json.loads(settings.read_text())
    # Our entries gone; the list they emptied stays (without a record it may be the user's: issue 31)
    assert value["hooks"]["AfterAgent"] == [] and "neovim" not in value["mcpServers"]


def test_two_neovims_enabling_at_once_keep_both_records(tmp_path, monkeypatch):
    """One record for every Neovim: an edit read it, another wrote it, and the first wrote what it
    had read over it (3 of 20 records lost with two enables at once)."""
    first, second, journal = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "state" / "journal.json"
    first.write_text('{"ide": {"enabled": false}}')
    second.write_text("{}")
    commit, other = settings_edit.commit, []

    def another_neovim_meanwhile(*args: Any) -> None:  # the first has read the record, not written it
        argv = [sys.executable, str(SCRIPT), "enable", str(second), str(journal), *WANT]
        other.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL))
        with contextlib.suppress(subprocess.TimeoutExpired):
            other[0].wait(10)  # it finishes now unless it waits for the first (it must)
        commit(*args)

    monkeypatch.setattr(settings_edit, "commit", another_neovim_meanwhile)
    assert settings_edit.main(["enable", str(first), str(journal), "ide.enabled=true"])["changes"]
    assert other[0].wait(60) == 0
    assert set(json.loads(journal.read_text())) == {str(first), str(second)}
    assert edit("disable", first, journal)["changes"] == ["ide.enabled: true -> false"]


# --- the Lua side: recognising ours without a record, and consent --------------------------------


def gemini_settings_path(editor: Editor) -> Path:
    return Path(editor.lua("return require('gemini_companion.agents.cli_settings').path('gemini')"))


def test_without_any_record_disable_cli_still_removes_our_entries(editor_factory, sandbox):
    ed = editor_factory()
    path = gemini_settings_path(ed)
    path.parent.mkdir(parents=True)
    original = '{\n  "theme": "x",\n  "mcpServers": {\n    "mine": {"command": "x"}\n  }\n}\n'
    path.write_text(original)
    assert edit_settings(ed, "enable")
    journal = sandbox.base / "state" / "nvim" / "gemini-companion" / "cli-settings.json"
    assert journal.exists()
    journal.unlink()  # lost (or written by another Neovim)
    changes = edit_settings(ed, "disable")
    assert changes and not any(line.startswith("ide.") and "->" in line for line in changes), changes
    value = json.loads(path.read_text())
    # Each hook list held only ours: emptied, not removed (it may have been the user's, issue 31)
    assert all(entries == [] for entries in value["hooks"].values()), value
    assert value["mcpServers"] == {"mine": {"command": "x"}}, value
    assert value["ide"] == {"enabled": True, "hasSeenNudge": True}  # could be the user's: kept
    said = [line for line in ed.messages().splitlines() if line.startswith(f"gemini-companion: {path}: hooks.")]
    assert len(said) == 1 and "left empty, as it may have been yours before; ide.enabled" in said[0], ed.messages()


def test_without_a_record_the_users_own_empty_objects_and_ide_mode_stay(editor_factory, sandbox):
    """Settings copied from another machine, the record left behind (issue 31): disable-cli took
    the user's own `"mcpServers": {}` and hook list with our entries, and said nothing of IDE
    mode, which it left on. Only entries provably ours go; what is left is said, in one line."""
    ed = editor_factory()
    path = gemini_settings_path(ed)
    path.parent.mkdir(parents=True)
    original = (
        '{\n  "ide": {\n    "enabled": true, // from VS Code\n    "hasSeenNudge": true\n  },\n'
        '  "mcpServers": {},\n  "hooks": {\n    "BeforeAgent": []\n  }\n}\n'
    )
    path.write_text(original)
    assert edit_settings(ed, "enable")
    enabled = json.loads(jsonc.blank(path.read_text())[0])
    assert enabled["mcpServers"] and enabled["hooks"]["BeforeAgent"], enabled
    (sandbox.base / "state" / "nvim" / "gemini-companion" / "cli-settings.json").unlink()
    changes = edit_settings(ed, "disable")
    value = json.loads(jsonc.blank(path.read_text())[0])
    assert value["mcpServers"] == {} and value["hooks"]["BeforeAgent"] == [], value
    assert value["ide"] == {"enabled": True, "hasSeenNudge": True}
    assert all(entries == [] for entries in value["hooks"].values()), value
    assert "// from VS Code" in path.read_text()
    assert changes and not any("left" in line for line in changes), changes  # changes only
    said = [line for line in ed.messages().splitlines() if line.startswith(f"gemini-companion: {path}: ")]
    assert len(said) == 1, ed.messages()  # what stays, and why: one line
    assert "hooks.BeforeAgent" in said[0] and "mcpServers left empty, as it may have been yours before" in said[0]
    assert said[0].endswith(
        "; ide.enabled, ide.hasSeenNudge left true: no record that enable-cli set it, it may be yours"
        " (/ide disable turns IDE mode off)"
    ), said
    # Removed again, the same text: nothing more is ours.
    text = path.read_text()
    again = edit_settings(ed, "disable")
    assert path.read_text() == text and not any("->" in line or "entry" in line for line in again), again
    # Ours by their exact shape: a user's entry that merely mentions our variable is theirs.
    proxy = {"httpUrl": "http://proxy/?to=${GEMINI_COMPANION_MCP_URL}", "headers": {"X": "y"}}
    path.write_text(json.dumps({"mcpServers": {"neovim": enabled["mcpServers"]["neovim"], "proxy": proxy}}))
    edit_settings(ed, "disable")
    assert json.loads(path.read_text()) == {"mcpServers": {"proxy": proxy}}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["fifo", "link to a device", "over 1 MiB"])
def test_a_settings_file_that_is_no_file_or_is_huge_never_holds_neovim(editor_factory, sandbox, kind):
    """Read at every start (hooks of earlier versions), by enable-cli and :checkhealth: a FIFO held
    Neovim for ever (a read waits for a writer), /dev/zero never ended, a huge file took seconds."""
    settings = sandbox.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(settings)
    elif kind == "link to a device":
        settings.symlink_to("/dev/zero")
    else:
        settings.write_text(json.dumps({f"key{n}": "v" * 100 for n in range(12_000)}))
    before = settings.read_bytes() if kind == "over 1 MiB" else None
    ed = editor_factory({"cli_settings": "auto"})
    ed.wait_state("running")
    ed.nvim.command("GeminiCompanion enable-cli gemini")
    settings_edited(ed)
    said = [line for line in ed.messages().splitlines() if "nothing was changed" in line][-1]
    assert "\n" not in said and said.endswith("nothing was changed"), said
    assert ("not a regular file" if before is None else "larger than 1 MiB") in said
    ed.nvim.command("checkhealth gemini_companion")  # reads it too, and says why it cannot
    report = ed.lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')")
    assert f"{settings} cannot be read" in report, report
    assert before is None or settings.read_bytes() == before
    assert settings.is_symlink() if kind == "link to a device" else not settings.is_symlink()


@pytest.mark.parametrize("named_by", ["GEMINI_CLI_HOME", "HOME", "a relative GEMINI_CLI_HOME"])
def test_an_agent_with_its_own_gemini_home_gets_its_own_settings_file(editor_factory, sandbox, named_by):
    """An agent whose environment names another folder (GEMINI_CLI_HOME, or HOME: the CLI's own
    lookup) reads the settings there: that file is the one asked about, written and taken back; the
    user's own is not touched for it. A relative one is taken from where the agent starts."""
    fake = sandbox.base / "bin" / "gemini"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nsleep 60\n")
    fake.chmod(0o755)
    work = sandbox.project / "work" if named_by.startswith("a relative") else sandbox.base / "work"
    theirs = work / ".gemini" / "settings.json"
    theirs.parent.mkdir(parents=True)
    theirs.write_text('{\n  "theme": "work"\n}\n')
    users = sandbox.home / ".gemini" / "settings.json"
    users.parent.mkdir(parents=True)
    users.write_text('{"theme": "home"}\n')
    env = {named_by: str(work)} if named_by != "a relative GEMINI_CLI_HOME" else {"GEMINI_CLI_HOME": "work"}
    agents = {"work": {"cmd": [str(fake)], "env": env}}
    ed = editor_factory({"cli_settings": "auto", "agents": agents})
    ed.wait_state("running")
    ed.nvim.command("Gemini work")
    settings_edited(ed)
    assert json.loads(theirs.read_text())["ide"]["enabled"] is True
    assert users.read_text() == '{"theme": "home"}\n'
    ed.nvim.command("GeminiCompanion disable-cli gemini")
    settings_edited(ed)
    assert theirs.read_text() == '{\n  "theme": "work"\n}\n'
    assert users.read_text() == '{"theme": "home"}\n'


def test_ask_without_a_ui_is_no_and_says_how_in_one_line(editor_factory):
    ed = editor_factory({"cli_settings": "ask"})
    path = gemini_settings_path(ed)
    path.parent.mkdir(parents=True)
    path.write_text('{"a": 1}')
    assert ed.lua("return #vim.api.nvim_list_uis()") == 0  # --embed --headless, no UI attached
    ed.lua("require('gemini_companion.agents.cli_settings.ask').before_start('gemini', 'ask', nil, function() end)")
    assert path.read_text() == '{"a": 1}'
    said = [line for line in ed.messages().splitlines() if "enable-cli" in line]
    assert len(said) == 1 and "not changed" in said[0], ed.messages()
    ed.lua("require('gemini_companion.agents.cli_settings.ask').command('enable', 'gemini')")  # the explicit command
    settings_edited(ed)
    assert json.loads(path.read_text())["ide"]["enabled"] is True
    path.write_text('{"ide": {"enabled": false}}')  # turned off by the user: asking again needs a UI
    ed.lua("require('gemini_companion.agents.cli_settings.ask').command('enable', 'gemini')")
    settings_edited(ed)
    assert path.read_text() == '{"ide": {"enabled": false}}'


@pytest.mark.parametrize(
    ("key", "written"), [("<Esc>", False), ("<C-c>", False), ("n", False), ("<CR>", False), ("y", True)]
)
def test_only_an_explicit_yes_writes(editor_factory, key, written):
    ed = editor_factory({"cli_settings": "ask"})
    path = gemini_settings_path(ed)
    path.parent.mkdir(parents=True)
    path.write_text('{"a": 1}')
    ed.nvim.ui_attach(80, 24, ext_linegrid=True)
    ed.lua("vim.g.asked = nil")
    ed.nvim.exec_lua(
        "require('gemini_companion.agents.cli_settings.ask').before_start('gemini', 'ask', nil,"
        " function() vim.g.asked = true end)",
        async_=True,
    )
    wait_for(lambda: ed.nvim.api.get_mode()["mode"] == "r?", what="the question up")
    ed.nvim.input(key)
    wait_for(lambda: ed.lua("return vim.g.asked"), what="the question answered")
    assert (path.read_text() != '{"a": 1}') == written


# --- a running CLI and what disable-cli took out ---------------------------------------------------


@contextlib.contextmanager
def gemini_at_its_prompt(sandbox: Any) -> Iterator[Any]:
    """The real `gemini` in a tmux pane of its own, outside Neovim (no model is asked), at its
    prompt: yields `tmux(*args) -> stdout` for that pane's server."""
    env = terminal_env(sandbox, "http://127.0.0.1:9")
    socket = sandbox.base / "tmux.sock"

    def tmux(*args: str) -> str:
        return subprocess.run(["tmux", "-S", str(socket), *args], capture_output=True, text=True, env=env).stdout

    tmux("new-session", "-d", "-x", "160", "-y", "50", "-c", str(sandbox.project), str(GEMINI_BIN))
    try:
        wait_for(lambda: READY in tmux("capture-pane", "-p"), E2E_TIMEOUT, "Gemini's prompt")
        yield tmux
    finally:
        kill_tmux(["tmux", "-S", str(socket)], env)


def save_a_setting(tmux: Any) -> None:
    """`/vim` in Gemini's prompt: it saves its settings (vimMode), writing back all it holds."""
    tmux("send-keys", "-l", "/vim")
    wait_for(lambda: "/vim" in tmux("capture-pane", "-p"), E2E_TIMEOUT, "the command typed")
    tmux("send-keys", "Enter")


@pytest.mark.e2e
@pytest.mark.skipif(not tmux_available(), reason="tmux")
def test_the_real_gemini_writes_back_what_disable_cli_took_out_when_it_saves_a_setting(sandbox):
    """The fact disable-cli warns about, measured: Gemini CLI 0.61.0 keeps the user settings it
    started with and writes them back whole when it saves one of its own (`/vim` here)."""
    gemini_settings(sandbox.home)
    settings = sandbox.home / ".gemini" / "settings.json"
    journal = sandbox.base / "journal.json"
    assert edit("enable", settings, journal, *WANT)["changes"]
    with gemini_at_its_prompt(sandbox) as tmux:
        assert edit("disable", settings, journal)["changes"]
        assert "mcpServers" not in json.loads(settings.read_text())
        save_a_setting(tmux)
        saved = wait_for(
            lambda: "vimMode" in (text := settings.read_text()) and json.loads(text), E2E_TIMEOUT, "a save"
        )
        assert "neovim" in saved["mcpServers"] and saved["ide"]["enabled"] is True, saved


@pytest.mark.e2e
def test_the_real_gemini_reads_a_commented_file_enable_cli_edited(sandbox):
    """Gemini CLI 0.61.0 reads settings with comments (issue 31): what enable-cli wrote into one
    is read by the real CLI (it writes our entries back when it saves `/vim`), comments and all,
    and disable-cli then takes ours out of what Gemini wrote, leaving its comments."""
    gemini_settings(sandbox.home, ide_enabled=False)
    settings = sandbox.home / ".gemini" / "settings.json"
    text = json.dumps(json.loads(settings.read_text()), indent=2).replace('"model": {', '"model": { // the fast one')
    settings.write_text("// my settings\n" + text + "\n/* end */\n")
    journal = sandbox.base / "journal.json"
    assert edit("enable", settings, journal, *WANT)["changes"]
    with gemini_at_its_prompt(sandbox) as tmux:
        save_a_setting(tmux)
        wait_for(lambda: "vimMode" in settings.read_text(), E2E_TIMEOUT, "a save")
    saved = settings.read_text()
    value = cli_reads(saved.encode())
    assert value["mcpServers"]["neovim"] == SERVER and value["ide"]["enabled"] is True, saved
    assert "// the fast one" in saved and "// my settings" in saved, saved
    assert edit("disable", settings, journal)["changes"]
    after = settings.read_text()
    assert "neovim" not in cli_reads(after.encode()).get("mcpServers", {}) and "// the fast one" in after, after


def test_disable_cli_names_the_running_gemini_agents(editor_factory, sandbox):
    package = sandbox.base / "gemini-cli"  # a stand-in install: the plugin knows Gemini by its package
    (package / "bin").mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"name": "@google/gemini-cli", "version": "0.61.0"}))
    cli = package / "bin" / "gemini-like"
    cli.write_text("#!/bin/sh\nexec sleep 300\n")
    cli.chmod(0o755)
    ed = editor_factory({"agents": {"mine": {"cmd": [str(cli)]}}, "default_agent": "mine", "cli_settings": "never"})
    ed.wait_state("running")
    path = gemini_settings_path(ed)
    path.parent.mkdir(parents=True)
    path.write_text("{}")
    ed.lua("require('gemini_companion.agents.cli_settings.ask').command('enable', 'gemini')")
    settings_edited(ed)
    assert "still runs" not in ed.messages()
    ed.lua("require('gemini_companion.agents').open('mine')")
    wait_for(lambda: ed.lua("return #require('gemini_companion.agents').list()") == 1, what="the agent running")
    try:
        ed.lua("require('gemini_companion.agents.cli_settings.ask').command('disable', 'gemini')")
        settings_edited(ed)
        said = [line for line in ed.messages().splitlines() if "still runs" in line]
        assert len(said) == 1 and said[0].startswith("gemini-companion: mine still runs"), ed.messages()
    finally:
        ed.lua("require('gemini_companion.agents').stop()")
