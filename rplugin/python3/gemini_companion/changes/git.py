"""git on our own repositories, the one way the snapshots run it: GIT_DIR always ours, of the
environment's GIT_* variables only the user's choice of config files, SAFE_CONFIG over every config
file (no hook, no fsmonitor, exact stat checks), bounded in time; and the user's object store as a
read-only alternate only while git cannot be held by its info/alternates.
Standard library and the `git` binary only."""

from __future__ import annotations

import os
import re
import stat
import subprocess

__all__ = ["GIT_SECONDS", "SAFE_CONFIG", "SnapshotError", "quoted", "run", "unsafe_alternates"]

GIT_SECONDS = 30.0
# On every command line (they win over every config file and its includes) and in our
# repositories' config (for changes/git.lua's reads): no hook (update-index runs post-index-change,
# update-ref reference-transaction) and no fsmonitor program or daemon; and every file's stat data
# checked, as a snapshot must be exact (a user's global core.ignoreStat would take a file's next
# change for none).
SAFE_CONFIG = {
    "core.hooksPath": "/dev/null",
    "core.fsmonitor": "false",
    "core.checkStat": "default",
    "core.trustctime": "true",
    "core.ignoreStat": "false",
    "core.autocrlf": "false",
    # git's default: a user's small global value would take every file over it for binary (no diff).
    "core.bigFileThreshold": "512m",
}
# Which config files git reads is the user's choice; every other GIT_* variable (GIT_DIR,
# GIT_WORK_TREE, GIT_INDEX_FILE, GIT_OBJECT_DIRECTORY, GIT_CONFIG_PARAMETERS, ...) is dropped
# (GIT_DIR and GIT_WORK_TREE only name a dotfiles work tree, read as files: see user_repo.py).
USER_GIT_ENV = ("GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_GLOBAL")
GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_NO_LAZY_FETCH": "1", "LC_ALL": "C"}
# What `quoted` writes: printable ASCII but `"` and `\`, every other byte as \ooo.
QUOTED = re.compile(r'"((?:[ !#-\[\]-~]|\\[0-7]{3})*)"')


class SnapshotError(Exception):
    """One line: why no snapshot could be taken."""


def quoted(path: str) -> str:
    """`path` as a GIT_ALTERNATE_OBJECT_DIRECTORIES entry: C-quoted, as it may hold a `:`."""
    raw = os.fsencode(path)
    return '"' + "".join(chr(b) if 32 <= b < 127 and b not in b'"\\' else f"\\{b:03o}" for b in raw) + '"'


def unsafe_alternates(alternates: str) -> str:
    """Why the user's object store is not read as our alternate, or "": git would open its
    info/alternates, which must be absent or a regular file (a FIFO there, or a device, would
    hold git, and so every snapshot, forever). The one judge of it: changes/git.lua asks it too
    (`changes_alternates`) before each of its reads. `alternates` must be one absolute path as
    `quoted` wrote it: another git would read from where it runs, not where this looks."""
    whole = QUOTED.fullmatch(alternates)
    raw = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m[1], 8)]), whole[1].encode("ascii")) if whole else b""
    if not raw.startswith(b"/"):
        return f"{alternates!a} is not one absolute path: its objects are not read"
    path = os.path.join(os.fsdecode(raw), "info", "alternates")
    try:
        if stat.S_ISREG(os.lstat(path).st_mode):
            return ""
    except (FileNotFoundError, NotADirectoryError):
        return ""
    except OSError:
        pass
    return f"{path} is not a regular file: its objects are not read"


def run(
    repo: str,
    args: list[str],
    work_tree: str | None = None,
    stdin: str | None = None,
    *,
    index: str | None = None,
    alternates: str = "",
) -> str:
    """git on our repository `repo`, the only way the snapshots run git: its config and the
    user's (system, global) with SAFE_CONFIG over both; of the environment's GIT_* variables only
    the user's choice of config files; in `work_tree` (else our state directory)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in USER_GIT_ENV}
    env.update(GIT_ENV, GIT_DIR=repo)
    if work_tree:
        env["GIT_WORK_TREE"] = work_tree
    if index:
        env["GIT_INDEX_FILE"] = index
    unsafe = alternates and unsafe_alternates(alternates)
    if alternates and not unsafe:
        env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = alternates
    overrides = [arg for key, value in SAFE_CONFIG.items() for arg in ("-c", f"{key}={value}")]
    try:
        done = subprocess.run(
            ["git", "--no-pager", *overrides, *args],
            cwd=work_tree or os.path.dirname(repo),
            env=env,
            # Bytes both ways: text mode would turn a CR in a file name into LF (universal newlines).
            input=None if stdin is None else stdin.encode("utf-8", "surrogateescape"),
            capture_output=True,
            timeout=GIT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:  # its message is the whole command line: name the problem
        raise SnapshotError(f"git {args[0]} gave no answer in {GIT_SECONDS:g} s") from None
    except OSError as err:
        raise SnapshotError(f"git {args[0]}: {err.strerror or err}") from None
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = f" ({unsafe})" if unsafe else ""
        raise SnapshotError(f"git {args[0]}: {lines[-1] if lines else f'exit {done.returncode}'}{why}")
    return done.stdout.decode("utf-8", "surrogateescape")
