"""The one judge of whether git may read the user's object store as our alternate (changes/git.py
`quoted` and `unsafe_alternates`), asked by the snapshots and by changes/git.lua's reads (through the
`changes_alternates` hop, checked here at its handler): every byte of the path quoted as git reads
it and read back, and no info/alternates that could hold git is ever handed to it."""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import git
from gemini_companion.changes.git import quoted, unsafe_alternates
from gemini_companion.companion import Companion

# A user's repository may live at any path: git's `:` separator, quotes, a backslash, control
# bytes, UTF-8 and bytes that are not.
NAMES = [b"plain", b"with:colon", b'quo"te', b"back\\slash", b"new\nline", b"tab\tand space", b"\xc3\xa9", b"\xff"]


class _Editor:  # the hop's handler only: nothing is sent
    def lua(self, code: str, *args: object) -> None: ...

    def request(self, code: str, *args: object) -> None: ...


def asked_by_lua(alternates: str) -> str:
    """What changes/git.lua is answered (`changes_alternates`)."""
    return Companion(_Editor())._methods["changes_alternates"]({"alternates": alternates})["unsafe"]  # type: ignore[arg-type]


def judged(alternates: str) -> str:
    """Both doors give one answer."""
    answer = unsafe_alternates(alternates)
    assert asked_by_lua(alternates) == answer
    return answer


@pytest.mark.parametrize("name", NAMES, ids=repr)
def test_a_quoted_path_is_the_one_git_reads_and_the_one_judged(tmp_path, name):
    repo = os.path.join(os.fsencode(tmp_path), name)
    os.mkdir(repo)
    git(repo, "init", "-q")  # type: ignore[arg-type]
    put = ["git", "hash-object", "-w", "--stdin"]
    oid = subprocess.run(put, cwd=repo, input=b"theirs\n", capture_output=True, check=True).stdout.decode().strip()
    objects = os.fsdecode(os.path.join(repo, b".git", b"objects"))
    alternates = quoted(objects)
    assert alternates.isascii() and alternates.isprintable()
    # git finds the user's blob through it (the quoting is git's own).
    ours = str(tmp_path / "ours.git")
    subprocess.run(["git", "init", "-q", "--bare", ours], check=True)
    env = {**os.environ, "GIT_ALTERNATE_OBJECT_DIRECTORIES": alternates}
    shown = subprocess.run(["git", "--git-dir", ours, "cat-file", "-p", oid], env=env, capture_output=True)
    assert shown.stdout == b"theirs\n"
    assert judged(alternates) == ""  # no info/alternates: nothing to hold git
    fifo = os.path.join(objects, "info", "alternates")
    os.mkfifo(fifo)
    assert judged(alternates) == f"{fifo} is not a regular file: its objects are not read"


def _make(kind: str, info: str) -> None:
    path = os.path.join(info, "alternates")
    if kind == "a regular file":
        open(path, "w").close()
    elif kind == "a FIFO":
        os.mkfifo(path)
    elif kind == "a folder":
        os.mkdir(path)
    elif kind == "a link to a regular file":
        open(path + ".real", "w").close()
        os.symlink(path + ".real", path)


KINDS = [("absent", True), ("a regular file", True), ("a FIFO", False), ("a folder", False)]


@pytest.mark.parametrize(("kind", "safe"), [*KINDS, ("a link to a regular file", False)])
def test_only_an_absent_or_regular_alternates_file_is_handed_to_git(tmp_path, kind, safe):
    info = tmp_path / "objects" / "info"
    info.mkdir(parents=True)
    _make(kind, str(info))
    why = f"{info / 'alternates'} is not a regular file: its objects are not read"
    assert judged(quoted(str(tmp_path / "objects"))) == ("" if safe else why)


def test_objects_that_are_a_file_hold_no_alternates_file(tmp_path):
    (tmp_path / "objects").write_text("not a folder\n")  # ENOTDIR: git finds nothing there either
    assert judged(quoted(str(tmp_path / "objects"))) == ""


NOT_ONE = ['"objects"', '"./objects"', quoted("relative/objects"), "/unquoted", '"/a":"/b"', '"/bad\\9"', '"/x\n"', ""]


@pytest.mark.parametrize("alternates", NOT_ONE)
def test_what_is_not_one_absolute_quoted_path_is_never_handed_to_git(tmp_path, monkeypatch, alternates):
    """git reads a relative alternate from where it runs (the snapshots and Lua run it in different
    folders), not from where the judge looks; a second entry would go unjudged."""
    (tmp_path / "objects" / "info").mkdir(parents=True)
    os.mkfifo(tmp_path / "objects" / "info" / "alternates")
    monkeypatch.chdir(tmp_path)
    why = judged(alternates)
    assert why.endswith(" is not one absolute path: its objects are not read") and "\n" not in why
