"""Which git repository holds a folder, found as git itself would, by reading files: the nearest
`.git` (a folder, or a file naming one), its `commondir`, and a work tree Neovim's environment
names. Git is never asked: a repository's config could make it run programs."""

from __future__ import annotations

import os

from gemini_companion import files

SMALL_FILE = 1 << 20  # a `.git` file, commondir, info/exclude: read at most this much


def find(cwd: str) -> tuple[str, tuple[str, str] | None, bool]:
    """The folder holding the nearest `.git` at or above `cwd` (else `cwd`), and that repository's
    git dir and common dir (linked worktrees and submodules have a `.git` file naming it), read
    as files as git itself would: git is told where the work tree is, never asked. A work tree
    that Neovim's environment names (GIT_WORK_TREE with GIT_DIR: a dotfiles repository over the
    home folder; not when GIT_DIR is that folder's `.git`: a plain repository) counts as a `.git`
    of its own at that folder, after a `.git` there; then True (only tracked files)."""
    env_tree, env_dir = _env_repo()
    folder, dotfiles = cwd, False
    while True:
        dotgit = os.path.join(folder, ".git")
        if os.path.isdir(dotgit):
            git_dir = dotgit
            break
        if os.path.isfile(dotgit):
            text = read_small(dotgit)
            if text is None or not text.startswith(b"gitdir: "):
                return folder, None, False
            git_dir = os.path.join(folder, os.fsdecode(text[8:].rstrip(b"\r\n")))
            break
        if folder == env_tree:
            git_dir, dotfiles = env_dir, True
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            return cwd, None, False
        folder = parent
    common = read_small(os.path.join(git_dir, "commondir"))
    common_dir = os.path.join(git_dir, os.fsdecode(common.rstrip(b"\r\n"))) if common else git_dir
    return folder, (os.path.normpath(git_dir), os.path.normpath(common_dir)), dotfiles


def read_small(path: str) -> bytes | None:
    """A regular file's first bytes (never a FIFO, a device or a symlink); None if not one."""
    try:
        return files.read(path, SMALL_FILE, follow=False, prefix=True)[0]
    except OSError:
        return None


def _env_repo() -> tuple[str | None, str]:
    """The work tree and git dir Neovim's environment names (both absolute; the git dir has a HEAD
    file), as real paths; else (None, "")."""
    tree, git_dir = os.environ.get("GIT_WORK_TREE", ""), os.environ.get("GIT_DIR", "")
    if not (os.path.isabs(tree) and os.path.isabs(git_dir)) or read_small(os.path.join(git_dir, "HEAD")) is None:
        return None, ""
    tree, git_dir = os.path.realpath(tree), os.path.realpath(git_dir)
    return (None, "") if git_dir == os.path.join(tree, ".git") else (tree, git_dir)
