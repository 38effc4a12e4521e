"""The host's log file (log.py) on real files: what it refuses to write through, and what a line
can never carry (server/log_lines.py): a message's text, a second line."""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "rplugin" / "python3"))
from gemini_companion import log
from gemini_companion.server import log_lines


@pytest.fixture(autouse=True)
def off_after() -> Iterator[None]:
    yield
    log.configure({"level": "off"})


def written(path: Path, text: str) -> str:
    deadline = time.monotonic() + 30
    while not (path.exists() and text in path.read_text()):
        assert time.monotonic() < deadline, f"{text!r} never written"
        time.sleep(0.01)
    return path.read_text()


def test_a_fifo_planted_at_the_log_path_is_refused_without_waiting(tmp_path: Path) -> None:
    path = tmp_path / "log" / "companion.log"
    path.parent.mkdir(mode=0o700)
    os.mkfifo(path)
    said: list[str | None] = []
    opener = threading.Thread(target=lambda: said.append(log.configure({"level": "debug", "path": str(path)})))
    opener.start()
    opener.join(10)
    assert said and said[0] is not None and said[0].startswith("log off: cannot write")
    assert not log.enabled(log.ERROR)


def test_a_hard_link_or_a_linked_folder_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.txt"
    other.write_text("someone's\n")
    folder = tmp_path / "log"
    folder.mkdir(mode=0o700)
    os.link(other, folder / "companion.log")
    assert (log.configure({"level": "debug", "path": str(folder / "companion.log")}) or "").startswith("log off")
    linked = tmp_path / "linked"
    linked.symlink_to(folder)
    assert (log.configure({"level": "debug", "path": str(linked / "new.log")}) or "").startswith("log off")
    assert other.read_text() == "someone's\n" and not (folder / "new.log").exists()


def test_a_line_stays_one_line_and_tokens_become_token(tmp_path: Path) -> None:
    path = tmp_path / "log" / "companion.log"
    assert log.configure({"level": "info", "path": str(path)}) is None
    log.secret("a-secret-token-0123456789")
    log.write(log.WARN, "Neovim: one\n2099-01-01 00:00:00.000 ERROR forged\rline\x1b[2J a-secret-token-0123456789")
    log.write(log.DEBUG, "below the level")
    log.write(log.INFO, "the end")
    text = written(path, "the end")
    assert text.count("\n") == 2 and "below the level" not in text
    assert "one\\n2099" in text and "line\\x1b[2J <token>" in text and "a-secret-token" not in text
    assert f"WARN  [{os.getpid()}] Neovim: one" in text  # the host's PID: several Neovims share the file
    assert oct(path.parent.stat().st_mode & 0o777) == "0o700" and oct(path.stat().st_mode & 0o777) == "0o600"


def test_a_hostile_client_name_neither_breaks_a_line_nor_drives_a_terminal(tmp_path: Path) -> None:
    """A client's name and version reach the log as they were sent (its label): C1 controls (U+009B
    is a terminal's CSI), Unicode line separators (a new line to Python's splitlines and to editors)
    and bidi overrides (they show the line reversed) are written escaped, as ASCII controls are."""
    path = tmp_path / "log" / "companion.log"
    assert log.configure({"level": "trace", "path": str(path)}) is None
    hostile = "evil\x9b2J\x85\u2028\u20292099-01-01 ERROR forged\u202etxt.exe\u2066"
    log.write(log.INFO, f"external Gemini CLI {hostile} connected")
    text = written(path, "connected")
    assert text.count("\n") == 1 and len(text.splitlines()) == 1
    assert not any(c in text for c in "\x9b\x85\u2028\u2029\u202e\u2066")
    assert "evil\\x9b2J\\x85\\u2028\\u20292099" in text and "\\u202etxt.exe\\u2066" in text


def test_a_summary_names_paths_and_tools_and_sizes_the_rest() -> None:
    hook = {
        "hook_event_name": "BeforeTool",
        "tool_name": "write_file",
        "tool_input": {"file_path": "/p/a.py", "content": "SECRET TEXT"},
        "prompt": "SECRET PROMPT",
        "transcript_path": "/p/t.json",
    }
    line = log_lines.summary(hook)
    assert "SECRET" not in line
    assert "tool_input={file_path='/p/a.py' content=<11 chars>}" in line and "prompt=<13 chars>" in line
    assert "transcript_path='/p/t.json'" in line and "hook_event_name='BeforeTool'" in line
    deep = log_lines.summary({"a": {"b": {"c": {"d": {"e": 1}}}}, "l": list(range(10)), "path": "x" * 500})
    assert "d=<object of 1>" in deep and "[0 1 2 +7 more]" in deep and len(deep) < 300
    assert log_lines.summary({"path": "a\nb"}) == "{path='a\\nb'}"  # a name's control bytes, escaped


def test_a_stalled_disk_costs_a_bounded_queue_and_the_drops_are_counted(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "log" / "companion.log"
    assert log.configure({"level": "info", "path": str(path)}) is None
    stalled, release = threading.Event(), threading.Event()
    append = log._append

    def slow(fd: int, where: str, data: bytes) -> int:  # a hung home mount, for one write
        stalled.set()
        release.wait(30)
        return append(fd, where, data)

    monkeypatch.setattr(log, "_append", slow)
    monkeypatch.setattr(log, "MAX_WAITING", 100)
    log.write(log.INFO, "first")
    assert stalled.wait(30)
    for n in range(1000):
        log.write(log.INFO, f"line {n}")
    release.set()
    log.write(log.INFO, "after")
    text = written(path, "lines dropped")
    kept = [int(n) for n in re.findall(r"\] line (\d+)$", text, re.M)]
    assert kept == list(range(100))  # the first MAX_WAITING, in order; the rest counted
    dropped = re.search(r"WARN  \[\d+\] (\d+) lines dropped: the log's disk was slow$", text, re.M)
    assert dropped and int(dropped[1]) in (900, 901)  # "after" too, if the writer had not caught up


def test_a_request_line_stays_short_whatever_the_client_sent() -> None:
    line = log_lines.request("x" * 100, "m" * 10_000, "i" * 10_000, {"k" * 10_000: "v" * 10_000}, {"result": {}}, 1.0)
    assert len(line) < 600 and line.endswith("→ ok in 1.0 ms")
    assert " #7 " in log_lines.request("client", "ping", 7, None)
