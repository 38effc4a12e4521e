"""gemini-companion's own journal of settings edits (JSON, 0600, in Neovim's state directory): per
settings file and key what was there before (its exact text) and what we wrote. It is written
before the settings file and put back if that write fails, so neither changes alone; one edit at
a time holds it (journal_lock). Standard library only."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from typing import Any

from gemini_companion import files
from gemini_companion.programs.settings_errors import Changed, Refused
from gemini_companion.programs.settings_file import MAX_BYTES, current, replace, rewrite


@contextlib.contextmanager
def journal_lock(journal_path: str) -> Iterator[None]:
    """One edit at a time per journal: another Neovim's edit, between this one's reading of the
    record and its writing, would be written over (its record lost). The lock is the journal's
    folder (its parent before the first record): nothing is created, even by an edit refused."""
    folder = os.path.dirname(journal_path)
    try:
        fd = os.open(folder if os.path.isdir(folder) else os.path.dirname(folder), os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        yield  # no folder to lock: no record yet to lose
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # an edit takes a second at most; Neovim's wait bounds it anyway
        yield
    finally:
        os.close(fd)


def read_journal(path: str) -> tuple[dict[str, Any], bytes | None, str | None]:
    """The journal, its bytes (None: no file) and why it cannot be used (None: it can)."""
    try:
        data, _ = files.read(path, MAX_BYTES)
    except FileNotFoundError:
        return {}, None, None
    except OSError as e:
        return {}, None, f"gemini-companion's own record {path} cannot be read ({e.strerror or e})"
    try:
        value = json.loads(data.decode("utf-8")) if data.strip() else {}
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        return {}, data, f"gemini-companion's own record {path} is damaged"
    return value, data, None


def commit(
    path: str,
    target: str,
    seen: tuple[int, ...] | None,
    before: bytes,
    text: str,
    journal_path: str,
    journal: dict[str, Any],
    journal_before: bytes | None,
    damaged: str | None,
) -> None:
    """The journal first, then the settings, only over the version the edit was made on; the
    journal is put back if the settings fail or changed meanwhile."""

    def unchanged() -> None:
        # Saved by someone else since it was read (theirs stays), or a link now pointing elsewhere.
        if current(target) != seen or (target != path and os.path.realpath(path) != target):
            raise Changed

    unchanged()
    if not damaged:
        try:
            os.makedirs(os.path.dirname(journal_path), mode=0o700, exist_ok=True)
            replace(journal_path, json.dumps(journal, indent=2).encode() + b"\n", 0o600)
        except OSError as e:
            raise Refused(
                f"cannot write gemini-companion's own record {journal_path} ({e.strerror}): nothing was changed"
            ) from None
    try:
        if target == path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
        try:
            st: os.stat_result | None = os.stat(target)
        except FileNotFoundError:
            st = None
        data = text.encode("utf-8")
        mode, group = (st.st_mode & 0o7777, st.st_gid) if st else (0o600, None)
        in_place = (lambda: rewrite(path, target, seen, data, before)) if st else None  # a new file cannot be
        replace(target, data, mode, group, unchanged, in_place)
    except (OSError, Changed) as e:
        if not damaged:
            try:
                if journal_before is None:
                    os.unlink(journal_path)
                else:
                    replace(journal_path, journal_before, 0o600)
            except OSError:
                pass
        if isinstance(e, Changed):
            raise
        raise Refused(f"cannot write {target} ({e.strerror}): nothing was changed") from None
