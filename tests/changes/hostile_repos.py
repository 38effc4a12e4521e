"""Hostile repositories and what a snapshot stored of them: the snapshot tests
(unit/test_snapshot.py) and the changes tests that run them through Neovim share these."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import git
from gemini_companion.changes.snapshot import Snapshot

# Every hook git knows: each would leave a marker if git ran it.
HOOKS = (
    "applypatch-msg pre-applypatch post-applypatch pre-commit pre-merge-commit prepare-commit-msg commit-msg"
    " post-commit pre-rebase post-checkout post-merge pre-push pre-receive update proc-receive post-receive"
    " post-update reference-transaction push-to-checkout pre-auto-gc post-rewrite sendemail-validate"
    " fsmonitor-watchman p4-changelist p4-prepare-changelist p4-post-changelist p4-pre-submit post-index-change"
).split()
# What a hostile repository's work tree holds (its attributes convert almost every file), as bytes.
FILES = {
    ".gitattributes": b"* text=auto diff=evil\n*.crlf text eol=crlf\nident.txt ident\nfiltered.txt filter=evil\n"
    b"big.lfs filter=lfs\nutf16.txt text working-tree-encoding=UTF-16LE\n",
    ".gitignore": b"ignored.txt\n",
    "plain.txt": b"plain\n",
    "dos.txt": b"one\r\ntwo\r\n",
    "win.crlf": b"a\nb\r\n",
    "ident.txt": b"id $Id: 0123456789abcdef0123456789abcdef01234567 $\n",
    "filtered.txt": b"lower case\n",
    "big.lfs": b"large file\n",
    "utf16.txt": "h\u00e9llo\r\n".encode("utf-16-le"),
    "image.bin": b"\x89PNG\x00\x01\r\n",
    "gone.txt": b"bye\n",
    "sub/.gitattributes": b"* filter=evil ident\n",
    "sub/deep.txt": b"deep $Id$\n",
}
# The turn: what an agent leaves on disk (None: deleted).
TURN = {
    "dos.txt": b"one\r\nTWO\r\n",
    "win.crlf": b"a\r\nb\r\nc\r\n",
    "ident.txt": b"id $Id: 89abcdef0123456789abcdef0123456789abcdef $\nmore\n",
    "filtered.txt": b"lower case, changed\n",
    "utf16.txt": "h\u00e9llo\r\nw\u00f6rld\r\n".encode("utf-16-le"),
    "sub/deep.txt": b"deeper $Id$\n",
    "new.crlf": b"x\r\n",
    "gone.txt": None,
}


def write(root: Path, files: dict[str, bytes | None]) -> None:
    for name, data in files.items():
        path = root / name
        if data is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)


def marker(bin_dir: Path, marks: Path) -> str:
    """A program that leaves `marks/<its first argument>` if anything runs it (and copies stdin
    to stdout, as a filter would)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    marks.mkdir(parents=True, exist_ok=True)
    program = bin_dir / "mark"
    program.write_text(f"#!/bin/sh\ntouch '{marks}'/\"$1\"\nexec cat\n")
    program.chmod(0o755)
    return str(program)


def hooks_dir(path: Path, mark: str, prefix: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name in HOOKS:
        hook = path / name
        hook.write_text(f"#!/bin/sh\nexec {mark} {prefix}-{name} </dev/null\n")
        hook.chmod(0o755)
    return path


def hostile_config(mark: str, git_dir: Path, prefix: str) -> str:
    """Config naming a marker program for every key that can make git run one (or reach
    elsewhere), and keys that would make a snapshot inexact if a snapshot read them."""
    hooks = hooks_dir(git_dir / f"{prefix}-hooks", mark, prefix)
    (git_dir / f"{prefix}-attributes").write_text("* filter=evil ident text eol=crlf\n")
    return f"""
[core]
\tfsmonitor = {mark} {prefix}-fsmonitor
\thooksPath = {hooks}
\tsshCommand = {mark} {prefix}-ssh
\tpager = {mark} {prefix}-pager
\teditor = {mark} {prefix}-editor
\taskPass = {mark} {prefix}-askpass
\tuntrackedCache = true
\tsplitIndex = false
\tignoreStat = true
\tcheckStat = minimal
\ttrustctime = false
\tautocrlf = true
\tattributesFile = {git_dir}/{prefix}-attributes
[diff]
\texternal = {mark} {prefix}-diff-external
[diff "evil"]
\ttextconv = {mark} {prefix}-textconv
\tcommand = {mark} {prefix}-diff-command
[filter "evil"]
\tclean = {mark} {prefix}-clean
\tsmudge = {mark} {prefix}-smudge
\tprocess = {mark} {prefix}-process
\trequired = true
[filter "lfs"]
\tclean = {mark} {prefix}-lfs-clean
\tsmudge = {mark} {prefix}-lfs-smudge
\tprocess = {mark} {prefix}-lfs-process
\trequired = true
[credential]
\thelper = !{mark} {prefix}-credential
[gpg]
\tprogram = {mark} {prefix}-gpg
[commit]
\tgpgSign = true
[pager]
\tdiff = {mark} {prefix}-pager-diff
\tls-files = {mark} {prefix}-pager-ls-files
[sequence]
\teditor = {mark} {prefix}-sequence-editor
[gc]
\tauto = 1
[maintenance]
\tauto = true
"""


def hostile_repo(repo: Path, mark: str) -> Path:
    """A "cloned" repository at `repo`: built and committed with git (its index holding the
    filtered blobs), then armed: config (with include.path and includeIf files), hooks in
    .git/hooks and in every hooksPath, info/attributes, all naming `mark`."""
    repo.mkdir(exist_ok=True)
    git(repo, "init", "-q")
    write(repo, FILES)
    (repo / "ignored.txt").write_text("not tracked\n")
    benign = ["-c", "filter.evil.clean=tr a-z A-Z", "-c", "filter.lfs.clean=tr a-z A-Z"]
    git(repo, *benign, "add", "-A")
    git(repo, *benign, "commit", "-qm", "base")
    dot = repo / ".git"
    with (dot / "config").open("a") as config:
        config.write(hostile_config(mark, dot, "local"))
        config.write(f'[include]\n\tpath = included\n[includeIf "gitdir:/"]\n\tpath = {dot}/included-if\n')
        config.write('[includeIf "onbranch:**"]\n\tpath = included-onbranch\n')
    for name in ("included", "included-if", "included-onbranch"):
        (dot / name).write_text(hostile_config(mark, dot, name))
    hooks_dir(dot / "hooks", mark, "hooks")
    (dot / "info").mkdir(exist_ok=True)
    (dot / "info" / "attributes").write_text("* filter=evil diff=evil ident\n")
    return repo


def global_config(home: Path, mark: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's own config (~/.gitconfig) naming programs too: git-lfs-style filters, hooks, an
    fsmonitor. Our snapshots run none of them either."""
    home.mkdir(parents=True, exist_ok=True)
    included = f'[include]\n\tpath = {home}/included\n[includeIf "gitdir:/"]\n\tpath = {home}/included-if\n'
    (home / ".gitconfig").write_text(hostile_config(mark, home, "global") + included)
    for name in ("included", "included-if"):
        (home / name).write_text(hostile_config(mark, home, f"global-{name}"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg"))


def hostile_env(root: Path, mark: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """GIT_* variables in the editor's environment that would send git elsewhere or run programs."""
    other = root / "elsewhere"
    other.mkdir(exist_ok=True)
    for key, value in {
        "GIT_DIR": str(other),
        "GIT_WORK_TREE": "/",
        "GIT_INDEX_FILE": str(other / "index"),
        "GIT_OBJECT_DIRECTORY": str(other),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(other),
        "GIT_CONFIG_PARAMETERS": f"'core.fsmonitor={mark} env-fsmonitor'",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.hooksPath",
        "GIT_CONFIG_VALUE_0": str(hooks_dir(other / "hooks", mark, "env")),
        "GIT_EXTERNAL_DIFF": f"{mark} env-external-diff",
        "GIT_PAGER": f"{mark} env-pager",
        "GIT_SSH_COMMAND": f"{mark} env-ssh",
        "GIT_ASKPASS": f"{mark} env-askpass",
        "GIT_EDITOR": f"{mark} env-editor",
        "GIT_EXEC_PATH": str(other),
        "GIT_ATTR_SOURCE": "HEAD",
    }.items():
        monkeypatch.setenv(key, value)


def read_git(snap: Snapshot, *args: str) -> bytes:
    """Plain git on the snapshot's repository (no config of anyone's), as a check from outside."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_DIR=snap.git_dir, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
    if snap.alternates:
        env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = snap.alternates
    return subprocess.run(["git", *args], env=env, cwd=snap.git_dir, check=True, capture_output=True).stdout


def stored(snap: Snapshot) -> dict[str, bytes]:
    """Every file of the snapshot, with its bytes (a symlink: its target)."""
    files = {}
    for record in read_git(snap, "ls-tree", "-r", "-z", snap.tree).split(b"\0"):
        if record:
            meta, path = record.split(b"\t", 1)
            files[os.fsdecode(path)] = read_git(snap, "cat-file", "blob", meta.split()[2].decode())
    return files


def on_disk(root: Path, ignored: tuple[str, ...] = ("ignored.txt",)) -> dict[str, bytes]:
    """Every file of the work tree (not in .git, not ignored), with its bytes."""
    files = {}
    for path in root.rglob("*"):
        name = path.relative_to(root).as_posix()
        if ".git" in path.relative_to(root).parts or name in ignored:
            continue
        if path.is_symlink():
            files[name] = os.fsencode(os.readlink(path))
        elif path.is_file():
            files[name] = path.read_bytes()
    return files


def state(*roots: Path) -> dict[str, tuple[bytes, int]]:
    """Every file and folder under `roots` (a git dir): bytes and mtime. A snapshot leaves it as is."""
    found = {}
    for root in roots:
        for path in [root, *root.rglob("*")]:
            info = path.lstat()
            data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
            found[str(path)] = (data, info.st_mtime_ns)
    return found


def no_marks(marks: Path) -> None:
    assert sorted(p.name for p in marks.iterdir()) == [], "git ran a program the repository or config named"
