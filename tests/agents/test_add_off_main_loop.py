""":GeminiAdd looks at a path's folders off Neovim's main loop (agents/at_path.lua `look`): in a folder
of 50,000 names the loop keeps turning while the case twin is looked for (and still found); a
folder that never answers (its opendir blocks on a FIFO until the test lets it go: a hung mount's
behaviour, without FUSE) neither freezes Neovim nor holds the send for ever; and a path on a real
FUSE mount that hangs (where one can be made) is refused in time. The text keeps its place among
the sends asked meanwhile."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from agents.send_helpers import PASTE_END, fake_agent, pastes, received
from conftest import TIMEOUT, Editor, wait_for
from harness.fuse_hang import HangingFS, unavailable

# An opendir (and scandir64, which the synchronous fs_scandir used) of $TEST_HANG_DIR first opens
# $TEST_HANG_FIFO for reading: a real wait in the kernel, until a writer opens it (or it is gone).
HANG_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void hang(const char *path) {
  const char *dir = getenv("TEST_HANG_DIR"), *fifo = getenv("TEST_HANG_FIFO");
  if (dir && fifo && path && strcmp(path, dir) == 0) {
    int fd = open(fifo, O_RDONLY);
    if (fd >= 0) close(fd);
  }
}

void *opendir(const char *path) {
  hang(path);
  void *(*real)(const char *) = (void *(*)(const char *))dlsym(RTLD_NEXT, "opendir");
  return real(path);
}

int scandir64(const char *path, void *list, void *filter, void *compare) {
  hang(path);
  int (*real)(const char *, void *, void *, void *) =
      (int (*)(const char *, void *, void *, void *))dlsym(RTLD_NEXT, "scandir64");
  return real(path, list, filter, compare);
}
"""

COUNT_TURNS = """
_G.turns = 0
_G.turn_counter = vim.uv.new_check()
_G.turn_counter:start(function() _G.turns = _G.turns + 1 end)
"""


def ready_agent(editor_factory: Callable[..., Editor], log: Path) -> Editor:
    """A Neovim whose fake agent runs and has taken a send (the next one is pasted at once)."""
    editor = editor_factory(setup={"agents": {"fake": fake_agent(log)}, "default_agent": "fake"})
    editor.wait_state("running")
    editor.lua("require('gemini_companion.agents').send('fake', 'ready?')")
    wait_for(lambda: PASTE_END in received(log), what="the first paste")
    return editor


def test_a_twin_among_50000_names_is_found_while_the_loop_turns(editor_factory, sandbox):
    log = sandbox.base / "agent.log"
    big = sandbox.project / "big"
    big.mkdir()
    for number in range(50_000):
        os.close(os.open(big / f"f{number:05}.txt", os.O_CREAT | os.O_WRONLY))
    for name in ("Target.txt", "target.txt", "alone.txt"):
        (big / name).write_text("x\n")
    editor = ready_agent(editor_factory, log)
    editor.lua(COUNT_TURNS)
    # At the paste: how many times the loop turned since the command.
    editor.lua(
        "local provider = require('gemini_companion.agents').get('fake').provider"
        " local paste = provider.paste"
        " provider.paste = function(...) _G.at_paste = _G.at_paste or _G.turns - _G.before return paste(...) end"
        " _G.before = _G.turns"
        " vim.cmd.GeminiAdd({ args = { 'big/target.txt', 'big/alone.txt' } })"
        " require('gemini_companion.agents').send('fake', 'after')"
    )
    wait_for(lambda: received(log).count(PASTE_END) == 3, what="the references, then the send after them")
    assert pastes(received(log))[1:] == [b"`big/target.txt` @./big/alone.txt ", b"after"]
    # Each callback reads a bounded number of names: the loop turned many times in between.
    assert editor.lua("return _G.at_paste") >= 50, editor.lua("return _G.at_paste")
    assert "GeminiAdd" not in editor.messages()


def test_many_paths_in_one_folder_read_each_folder_once(editor_factory, sandbox):
    """A tree's or a picker's 1,000 nodes in one folder (and twins among them): each folder on
    the way is read once for the whole command, not once per path (1,000 files in a folder of
    1,000 held the add 4.5 s); every twin still found, the references in the order given."""
    log = sandbox.base / "agent.log"
    many = sandbox.project / "many"
    many.mkdir()
    names = [f"f{number:04}.txt" for number in range(1000)]
    for name in [*names, "F0007.txt"]:
        os.close(os.open(many / name, os.O_CREAT | os.O_WRONLY))
    editor = ready_agent(editor_factory, log)
    editor.lua(
        "_G.opened = {} local opendir = vim.uv.fs_opendir"
        " vim.uv.fs_opendir = function(path, ...) _G.opened[path] = (_G.opened[path] or 0) + 1"
        " return opendir(path, ...) end"
        " vim.cmd.GeminiAdd({ args = vim.tbl_map(function(n) return 'many/' .. n end, ...) })",
        names,
    )
    wait_for(lambda: received(log).count(PASTE_END) == 2, what="the references")
    sent = pastes(received(log))[1].decode().split(" ")
    assert sent[7] == "`many/f0007.txt`" and sent[:3] == ["@./many/f0000.txt", "@./many/f0001.txt", "@./many/f0002.txt"]
    assert len(sent) == 1001 and sent[-1] == ""
    opened = editor.lua("return _G.opened")
    assert opened[str(many)] == 1 and max(opened.values()) == 1, opened


@pytest.mark.skipif(not shutil.which("cc"), reason="needs a C compiler for the hanging opendir")
def test_a_folder_that_never_answers_neither_freezes_neovim_nor_holds_the_send(editor_factory, sandbox):
    shim = sandbox.base / "hang.so"
    source = sandbox.base / "hang.c"
    source.write_text(HANG_SHIM)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(shim), str(source), "-ldl"], check=True, timeout=TIMEOUT)
    hung = sandbox.project / "mount"
    hung.mkdir()
    (hung / "x.txt").write_text("x\n")
    fifo = sandbox.base / "hang.fifo"
    os.mkfifo(fifo)
    sandbox.env.update(LD_PRELOAD=str(shim), TEST_HANG_DIR=str(hung), TEST_HANG_FIFO=str(fifo))
    log = sandbox.base / "agent.log"
    editor = ready_agent(editor_factory, log)
    released = threading.Event()

    def release() -> None:
        """The hang ends: the blocked open returns, no later opendir waits."""
        released.set()
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO: nobody waits
            os.close(fd)
        except OSError:
            pass
        fifo.unlink(missing_ok=True)

    watchdog = threading.Timer(TIMEOUT, release)  # a frozen Neovim answers again, for the test to fail
    watchdog.start()
    try:
        editor.nvim.command(f"GeminiAdd {hung / 'x.txt'}", async_=True)
        editor.lua("require('gemini_companion.agents').send('fake', 'after')")  # an RPC call: it answers
        assert not released.is_set(), "Neovim froze until the folder answered"
        # Bounded: no answer from the folder in time, the path goes as the plain path, in its place.
        wait_for(lambda: received(log).count(PASTE_END) == 3, what="the plain path, then the send after it")
        assert not released.is_set(), "the send waited for the folder"
        assert pastes(received(log))[1:] == [b"`mount/x.txt` ", b"after"]
    finally:
        watchdog.cancel()
        release()


def test_a_path_on_a_hung_mount_is_refused_in_time_and_the_rest_goes(editor_factory, sandbox):
    """A real FUSE mount that stops answering (tests/harness/fuse_hang.py): the path's own stat
    waits in the kernel. Neovim answers meanwhile; after the bound the path is refused in one line,
    and the other path and the send after them go. Asked again, it is refused at once: each stat
    left waiting would hold one of libuv's four threads, and a fifth read would wait behind them."""
    if unavailable() is not None:
        pytest.skip(f"no FUSE mount here: {unavailable()}")
    log = sandbox.base / "agent.log"
    (sandbox.project / "other.txt").write_text("other\n")
    editor = ready_agent(editor_factory, log)
    point = sandbox.project / "mnt"
    point.mkdir()
    try:
        fs = HangingFS(point, {"notes.txt": b"notes\n"})
    except PermissionError as err:  # root without CAP_SYS_ADMIN (a container)
        pytest.skip(f"no FUSE mount here: {err}")
    aborted = threading.Event()

    def abort() -> None:
        aborted.set()
        fs.close()

    watchdog = threading.Timer(TIMEOUT, abort)  # a frozen Neovim answers again, for the test to fail
    watchdog.start()
    try:
        fs.hang()
        editor.nvim.command("GeminiAdd mnt/notes.txt other.txt", async_=True)
        editor.lua("require('gemini_companion.agents').send('fake', 'after')")  # an RPC call: it answers
        assert not aborted.is_set(), "Neovim froze until the mount was aborted"
        wait_for(lambda: received(log).count(PASTE_END) == 3, what="the other path, then the send after it")
        assert not aborted.is_set(), "the send waited for the mount"
        assert pastes(received(log))[1:] == [b"@./other.txt ", b"after"]
        said = [line for line in editor.messages().splitlines() if "GeminiAdd" in line]
        assert said == ["gemini-companion: GeminiAdd: no answer from its folder in 10 s: mnt…"], said  # fits
        # Asked again and again: no more of libuv's four threads wait on the mount, a path elsewhere goes.
        for _ in range(4):
            editor.nvim.command("GeminiAdd mnt/notes.txt")
        editor.nvim.command("GeminiAdd other.txt")
        wait_for(lambda: received(log).count(PASTE_END) == 4, what="a path elsewhere, the mount still hung")
        assert pastes(received(log))[3] == b"@./other.txt " and not aborted.is_set()
    finally:
        watchdog.cancel()
        fs.close()
