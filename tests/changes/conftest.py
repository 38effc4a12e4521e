"""Fixtures the changes tests share: a repository with a committed base, a Neovim whose hook calls
are answered, and a hostile project's attack with the listener it aims at."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from changes.hostile_hooks import Attack, Listener, open_dir
from conftest import Editor, Sandbox, git


@pytest.fixture
def repo(sandbox: Sandbox) -> Path:
    project = sandbox.project
    git(project, "init", "-q")
    (project / "a.txt").write_text("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n")
    (project / "b.txt").write_text("bee\n")
    (project / "gone.txt").write_text("bye\n")
    (project / "sed.txt").write_text("colour\ncolour\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "base")
    return project


@pytest.fixture
def ed(editor_factory) -> Editor:
    editor = editor_factory()
    editor.wait_state("running")
    return editor


@pytest.fixture
def open_base() -> Iterator[Path]:
    with open_dir() as base:
        yield base


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


@pytest.fixture
def attack(open_base: Path, listener: Listener) -> Attack:
    return Attack(open_base, listener)
