"""files.read, the Python side's one reader of files it does not control: every refusal is judged on
the file opened, and nothing it is handed can make it wait or read past its bound."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "rplugin" / "python3"))
from gemini_companion import files


def refused(path: str | Path, limit: int = 100, **kwargs: object) -> str:
    with pytest.raises(files.Unreadable) as raised:
        files.read(str(path), limit, **kwargs)  # type: ignore[arg-type]
    return raised.value.reason


def test_a_regular_file_is_read_with_the_stat_of_what_was_opened(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"a\0b\xff")
    data, info = files.read(str(path), 4)
    assert data == b"a\0b\xff" and info.st_ino == path.stat().st_ino


def test_what_is_no_regular_file_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "zero").symlink_to("/dev/zero")
    assert refused(fifo) == "not a regular file"  # no writer ever comes: it would wait for ever
    assert refused(tmp_path / "zero") == "not a regular file"
    assert refused(tmp_path) == "a folder"


def test_a_larger_file_is_refused_or_read_up_to_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"x" * 101)
    assert refused(path) == "larger than 100 bytes"
    assert files.read(str(path), 100, prefix=True)[0] == b"x" * 100
    path.write_bytes(b"x" * 100)
    assert files.read(str(path), 100)[0] == b"x" * 100


def test_a_file_that_grows_as_it_is_read_is_refused(tmp_path: Path) -> None:
    """fstat said small; what is read says otherwise (a writer appending meanwhile)."""
    path = tmp_path / "growing"
    path.write_bytes(b"x" * 10)

    def grow(info: os.stat_result) -> None:
        with path.open("ab") as file:
            file.write(b"y" * 200)

    assert refused(path, check=grow) == "larger than 100 bytes (it grew as it was read)"


def test_links_owner_mode_and_a_folder_handle(tmp_path: Path) -> None:
    path = tmp_path / "key.json"
    path.write_bytes(b"{}")
    path.chmod(0o644)
    (tmp_path / "link").symlink_to(path)
    assert files.read(str(tmp_path / "link"), 10)[0] == b"{}"
    with pytest.raises(OSError) as raised:
        files.read(str(tmp_path / "link"), 10, follow=False)
    assert not isinstance(raised.value, files.Unreadable)  # ELOOP from the open itself
    assert refused(path, owner=os.getuid() + 1) == "not yours"
    assert refused(path, private=True) == "open to other users"
    path.chmod(0o600)
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert files.read("key.json", 10, dir_fd=folder, follow=False, owner=os.getuid(), private=True)[0] == b"{}"
    finally:
        os.close(folder)


def test_a_callers_own_check_runs_on_the_file_opened_before_any_byte_is_read(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"data")
    seen: list[int] = []

    def check(info: os.stat_result) -> None:
        seen.append(info.st_size)
        raise files.Unreadable("read-only", info)

    assert refused(path, check=check) == "read-only" and seen == [4]


def test_a_fifo_swapped_in_after_a_check_by_path_is_still_never_waited_on(tmp_path: Path) -> None:
    """The reader judges what it opened, not what a stat of the path said a moment before."""
    path = tmp_path / "f"
    path.write_bytes(b"{}")
    assert path.is_file()
    path.unlink()
    os.mkfifo(path)
    done = threading.Event()
    result: list[str] = []

    def run() -> None:
        result.append(refused(path))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(10), "the read waited on a FIFO"
    assert result == ["not a regular file"]


def test_a_revert_never_reads_more_of_a_file_than_the_turn_left(tmp_path: Path) -> None:
    """The check before a revert read the file there whole (no bound): a huge file put in its place
    was read into memory to be compared. It is judged by what the turn left, and not read past it."""
    from gemini_companion.changes import revert

    with (tmp_path / "f").open("wb") as huge:
        huge.truncate(1 << 40)  # sparse: a terabyte that costs no disk
    (tmp_path / "small").write_bytes(b"turn\n")
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(revert.RevertError, match="changed after the turn"):
            revert._replace(folder, "f", {"kind": "file", "data": "turn\n"}, {"kind": "none"})
        assert (tmp_path / "f").stat().st_size == 1 << 40  # left as it is
        revert._replace(folder, "small", {"kind": "file", "data": "turn\n"}, {"kind": "none"})
        assert not (tmp_path / "small").exists()
    finally:
        os.close(folder)
