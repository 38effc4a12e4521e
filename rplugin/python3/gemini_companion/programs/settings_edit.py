"""Merge keys into a CLI's JSON settings file and take them back, exactly: run by cli_settings.lua.

`python settings_edit.py enable SETTINGS JOURNAL KEY=JSON...` sets each dotted KEY to the JSON
value (`KEY+=JSON` appends the value to the list at KEY instead: hook arrays keep the user's
entries; `KEY-=JSON` takes that exact entry out of the list at KEY, `KEY~=JSON` takes KEY out
while it holds exactly JSON: cli_settings.lua names what it recognises as ours without a record;
what held them stays, even emptied: without a record it may be the user's own `{}`);
`python settings_edit.py disable SETTINGS JOURNAL [KEY-=JSON|KEY~=JSON...]` takes back
everything enabled in that file, and those. Prints {"changes": [...]} or {"error": "..."}
(one line; never a traceback), and on disable `unrecorded` (no record of the file) and `left`
(what our entries left empty, kept).

The user's text is edited, never re-serialised: each change is a splice of the bytes at one
key or list item, written in the file's own style (indentation, line ending, separators), so
every byte outside our keys stays, and `disable` after `enable` gives the original bytes back.
Comments are read as the CLIs read them (`//` and `/* */`, strip-json-comments) and are never
cut: an entry taken out leaves every comment that was in or around it.
A symlinked file is edited through the link (its target is replaced, the link stays); the
target keeps its mode and group; in a folder the user cannot create files in, the file is
written in place (as the CLIs save it), with the same checks; a file (or, new, a directory) of another user, a read-only
file or anything but a regular file is refused with nothing changed. The journal (JSON, 0600,
in Neovim's state directory) remembers per settings file and key what was there before (its
exact text) and what we wrote; it is written before the settings file and put back if that
write fails, so neither changes alone. Standard library only: this runs in the plugin's venv
Python, outside the host.

This file is the program (its command line, one edit start to end); the work is in
jsonc.py (the text's comments and spans), settings_doc.py (splices in the user's style),
settings_operations.py (the operations and their record), settings_file.py (reading and writing
the file) and settings_journal.py (the record kept between runs).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

if __name__ == "__main__":  # run by cli_settings.lua: the folder holding the package goes on sys.path
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from gemini_companion.programs.jsonc import jsonc
from gemini_companion.programs.settings_doc import Doc
from gemini_companion.programs.settings_errors import Changed, Refused
from gemini_companion.programs.settings_file import read_settings
from gemini_companion.programs.settings_journal import commit, journal_lock, read_journal
from gemini_companion.programs.settings_operations import apply, take_back

# Times an edit starts over when the file changed while it was being made (the CLI saving it).
ATTEMPTS = 3


def main(argv: list[str]) -> dict[str, Any]:
    verb, path, journal_path, *wanted = argv
    if verb not in ("enable", "disable"):
        raise Refused(f"unknown verb {verb!r}")
    with journal_lock(journal_path):
        for _ in range(ATTEMPTS):
            try:
                return edit(verb, path, journal_path, wanted)
            except Changed:
                continue
    raise Refused(f"{path} kept changing while it was being edited (is a CLI saving it?): nothing was changed")


def edit(verb: str, path: str, journal_path: str, wanted: list[str]) -> dict[str, Any]:
    """One attempt: read the file and the journal, make the edit, write both (Changed: again)."""
    target = os.path.realpath(path) if os.path.islink(path) else path
    original, seen = read_settings(path, target)
    doc = Doc(original)
    journal, journal_text, damaged = read_journal(journal_path)
    if damaged and verb == "enable":
        raise Refused(
            f"{damaged}; delete it (disable-cli still removes the entries it recognises): nothing was changed"
        )
    record: dict[str, Any] = journal.setdefault(path, {})
    if not isinstance(record, dict):
        record = journal[path] = {}
    unrecorded = verb == "disable" and not record
    changed = take_back(doc, record) if verb == "disable" else []
    applied, left = apply(doc, record, verb, wanted)
    changes = [line for line in changed + applied if line]
    if not record:
        journal.pop(path, None)
    if changes:
        jsonc(doc.text)  # our edit is JSON as the CLI reads it, or nothing is written
        commit(path, target, seen, original.encode(), doc.text, journal_path, journal, journal_text, damaged)
    out: dict[str, Any] = {"changes": changes}
    if unrecorded:
        out["unrecorded"] = True
    if left and verb == "disable" and changes:
        out["left"] = f"{', '.join(left)} left empty, as it may have been yours before"
    if damaged:
        out["warning"] = f"{damaged}; removed what is recognisable as ours"
    return out


if __name__ == "__main__":
    try:
        result = main(sys.argv[1:])
    except Refused as e:
        result = {"error": str(e)}
    except Exception as e:  # noqa: BLE001 - one line to the user, whatever happened
        result = {"error": f"cannot edit the settings: {type(e).__name__}: {e}".splitlines()[0]}
    print(json.dumps(result))
