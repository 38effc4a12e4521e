"""`make bench` section: change review (issue 15).

- A turn-start snapshot of a 5,000-file / 50 MB git work tree (a few files touched since the last
  commit), as the agent waits for it: the hook command's whole run (target <= 300 ms), and the
  snapshot alone; with Neovim's worst main-loop stall meanwhile (it runs in the host).
- `:GeminiChanges` for a turn that changed 100 files, in Neovim (<= 50 ms).
- Taking back one hunk from the changes diff, in Neovim (<= 20 ms).
- `:GeminiChanges undo` of that 100-file turn, in Neovim (<= 150 ms; it held the loop ~730 ms while
  each file took three git runs); and of a turn that made a file a folder of 100 files (issue 31:
  the whole path checked and swapped back in one host call).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from benchlib import STALL_PROBE, Row, row

from changes.helpers import a_turn, hook
from conftest import Editor, Sandbox, git, wait_for
from gemini_companion.changes.snapshot import Snapshotter

FILES, FILE_BYTES = 5000, 10_000
LINE = "x" * 99 + "\n"
REPEATS = 7


def big_repo(root: Path) -> None:
    git(root, "init", "-q")
    for i in range(FILES):
        folder = root / f"d{i // 100:02}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:04}.txt").write_text(LINE * (FILE_BYTES // 100))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    for i in range(5):  # a few files touched since the commit
        (root / "d00" / f"f{i:04}.txt").write_text(f"edited {i}\n" + LINE * 50)


def objects(repo: Path) -> int:
    """Files in the repository's object store (loose objects and packs), counted without git."""
    return sum(len(files) for _, _, files in os.walk(repo / ".git" / "objects"))


def run() -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="gemini-companion-bench-changes-") as tmp:
        sandbox = Sandbox(Path(tmp))
        big_repo(sandbox.project)
        snapshotter = Snapshotter(Path(tmp) / "state")
        alone = []
        for _ in range(REPEATS):
            started = time.perf_counter()
            snapshotter.take(str(sandbox.project))
            alone.append((time.perf_counter() - started) * 1000)
        editor = Editor(sandbox)
        try:
            editor.wait_state("running")
            editor.lua(STALL_PROBE)
            payload = {"hook_event_name": "BeforeAgent", "cwd": str(sandbox.project)}
            hook(editor, sandbox.project, "turn-start", payload, "bench")  # warm: the first takes the index
            hook(editor, sandbox.project, "turn-end", {**payload, "hook_event_name": "AfterAgent"}, "bench")
            waits = []
            editor.lua("bench_stall_reset()")
            for _ in range(REPEATS):
                started = time.perf_counter()
                hook(editor, sandbox.project, "turn-start", payload, "bench")
                waits.append((time.perf_counter() - started) * 1000)
                hook(editor, sandbox.project, "turn-end", {**payload, "hook_event_name": "AfterAgent"}, "bench")
            stall = editor.lua("return bench_stall()") - 5  # less the probe's own period

            def hundred() -> None:
                for i in range(100):
                    (sandbox.project / "d01" / f"f{100 + i:04}.txt").write_text(f"changed {i}\n")

            turn = a_turn(editor, sandbox.project, hundred, agent="bench")
            assert len(turn["files"]) == 100
            # The user's object store stays the user's: a turn among 2,000 untracked files adds nothing
            # to it (their objects go to our own repository), so their next commit has nothing to pack.
            untracked = sandbox.project / "untracked"
            untracked.mkdir()
            for i in range(2000):
                (untracked / f"u{i:04}.txt").write_text(f"scratch {i}\n")
            before = objects(sandbox.project)
            a_turn(editor, sandbox.project, lambda: (untracked / "u0000.txt").write_text("changed\n"), agent="bench")
            added = objects(sandbox.project) - before
            listing = statistics.median(
                editor.lua(
                    "local t = vim.uv.hrtime() vim.cmd('GeminiChanges') vim.cmd('cclose')"
                    " return (vim.uv.hrtime() - t) / 1e6"
                )
                for _ in range(REPEATS)
            )
            undo = editor.lua(
                "local t = vim.uv.hrtime() vim.cmd('GeminiChanges undo ' .. ...) return (vim.uv.hrtime() - t) / 1e6",
                str(turn["id"]),
            )
            assert (sandbox.project / "d01" / "f0199.txt").read_text() == LINE * (FILE_BYTES // 100)  # back
            retyped = sandbox.project / "d03" / "f0300.txt"

            def to_folder() -> None:
                retyped.unlink()
                retyped.mkdir()
                for i in range(100):
                    (retyped / f"n{i:03}.txt").write_text(LINE * 10)

            folder_turn = a_turn(editor, sandbox.project, to_folder, agent="bench")
            assert len(folder_turn["files"]) == 101
            undo_type = editor.lua(
                "local t = vim.uv.hrtime() vim.cmd('GeminiChanges undo ' .. ...) return (vim.uv.hrtime() - t) / 1e6",
                str(folder_turn["id"]),
            )
            assert retyped.read_text() == LINE * (FILE_BYTES // 100)  # the file again
            reverts = []
            for i in range(REPEATS):
                path = sandbox.project / "d02" / f"f{200 + i:04}.txt"
                text = path.read_text().splitlines(keepends=True)
                a_turn(
                    editor, sandbox.project, lambda p=path, t=text: p.write_text("".join([*t[:10], "new\n", *t[11:]]))
                )
                editor.nvim.command("GeminiChanges")
                editor.nvim.command("cfirst")
                wait_for(lambda: editor.lua("return vim.b.gemini_changes ~= nil"), 10, "the changes window")
                reverts.append(
                    editor.lua(
                        "vim.fn.cursor(11, 1) local t = vim.uv.hrtime()"
                        " require('gemini_companion.changes').revert_hunk()"
                        " return (vim.uv.hrtime() - t) / 1e6"
                    )
                )
                assert path.read_text() == "".join(text)
                editor.nvim.command("tabonly | only | enew")
        finally:
            editor.close()
    snapshot, waited, revert = statistics.median(alone), statistics.median(waits), statistics.median(reverts)
    return [
        row("turn-start snapshot, 5,000 files / 50 MB git tree (hook run)", waited, "ms", "<= 300", waited <= 300),
        row("  the snapshot alone (our own index, write-tree)", snapshot, "ms", "-", True),
        row("  worst main-loop stall meanwhile", stall, "ms", "<= 16", stall <= 16),
        row(":GeminiChanges, a turn of 100 files", listing, "ms", "<= 50", listing <= 50),
        row("take back one hunk (changes diff, dp)", revert, "ms", "<= 20", revert <= 20),
        row(":GeminiChanges undo, a turn of 100 files (main loop held)", undo, "ms", "<= 150", undo <= 150),
        row("  a file become a folder of 100 files, undone", undo_type, "ms", "<= 150", undo_type <= 150),
        row("objects added to the user's repository by a turn (2,000 untracked files)", added, "", "0", added == 0),
    ]


if __name__ == "__main__":
    from bench import print_table

    print_table(run())
