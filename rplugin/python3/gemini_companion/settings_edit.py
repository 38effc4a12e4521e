"""Merge keys into a CLI's JSON settings file and take them back, exactly: run by cli_settings.lua.

`python settings_edit.py enable SETTINGS JOURNAL KEY=JSON...` sets each dotted KEY to the JSON
value (`KEY+=JSON` appends the value to the list at KEY instead: hook arrays keep the user's
entries; `KEY-=JSON` takes that exact entry out of the list at KEY: cli_settings.lua names the
entries of ours an earlier version wrote); `python settings_edit.py disable SETTINGS JOURNAL
[KEY-=JSON...]` takes back everything enabled in that file, and those entries. Either prints
{"changes": [...]} or {"error": "..."}. The file keeps its key order, indentation style (2
spaces), mode and every other key; it is replaced atomically. The journal (JSON, 0600)
remembers, per settings file and key, the value before we set it (absent or a value) and the
value we wrote: `disable` restores a key only while it still holds ours (a value the user
changed since is theirs). Standard library only: this runs in the plugin's venv Python, outside
the host.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

ABSENT = {"absent": True}


def load(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return {}
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        raise SystemExit(json.dumps({"error": f"{path} is not plain JSON (comments?): nothing was changed"})) from None
    if not isinstance(value, dict):
        raise SystemExit(json.dumps({"error": f"{path} does not hold a JSON object: nothing was changed"}))
    return value


def save(path: str, value: dict[str, Any]) -> None:
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o600
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".gemini-companion.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(value, f, indent=2, ensure_ascii=False)
            f.write("\n")
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def get(tree: dict[str, Any], keys: list[str]) -> Any:
    node: Any = tree
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return ABSENT
        node = node[key]
    return node


def put(tree: dict[str, Any], keys: list[str], value: Any) -> None:
    node = tree
    for key in keys[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    if value == ABSENT:
        node.pop(keys[-1], None)
        if not node and len(keys) > 1:
            put(tree, keys[:-1], ABSENT)  # drop the object we emptied
    else:
        node[keys[-1]] = value


def describe(value: Any) -> str:
    if value == ABSENT:
        return "(absent)"
    return "{…}" if isinstance(value, dict) else json.dumps(value)


def entry(recorded: Any) -> dict[str, Any]:
    """A journal entry; early journals kept only the value before, and we always wrote true."""
    if isinstance(recorded, dict) and set(recorded) in ({"before", "wrote"}, {"appended", "created"}):
        return recorded
    return {"before": recorded, "wrote": True}


def assign(settings: dict[str, Any], record: dict[str, Any], name: str, value: Any) -> str | None:
    keys = name.split(".")
    now = get(settings, keys)
    if now == value:
        return None
    before = entry(record[name])["before"] if name in record else now
    record[name] = {"before": before, "wrote": value}
    put(settings, keys, value)
    return f"{name}: {describe(now)} -> {describe(value)}"


def unassign(settings: dict[str, Any], name: str, recorded: dict[str, Any]) -> str | None:
    keys = name.split(".")
    now = get(settings, keys)
    if now != recorded["wrote"]:  # a value changed since is the user's now
        return None
    put(settings, keys, recorded["before"])
    return f"{name}: {describe(now)} -> {'(removed)' if recorded['before'] == ABSENT else describe(recorded['before'])}"


def append(settings: dict[str, Any], record: dict[str, Any], name: str, value: Any) -> str | None:
    keys = name.split(".")
    now = get(settings, keys)
    if now != ABSENT and not isinstance(now, list):
        return None  # not a list: the user's, left alone
    if now != ABSENT and value in now:
        return None
    put(settings, keys, ([] if now == ABSENT else now) + [value])
    record[name + "+"] = {"appended": value, "created": now == ABSENT}
    return f"{name}: + one entry"


def remove(settings: dict[str, Any], name: str, value: Any) -> str | None:
    """Take `value` out of the list at `name`; a list left empty goes (it held only ours)."""
    keys = name.split(".")
    now = get(settings, keys)
    if not isinstance(now, list) or value not in now:
        return None
    rest = [item for item in now if item != value]
    put(settings, keys, rest or ABSENT)
    return f"{name}: - one entry"


def unappend(settings: dict[str, Any], name: str, recorded: dict[str, Any]) -> str | None:
    keys = name.split(".")
    now = get(settings, keys)
    if not isinstance(now, list) or recorded["appended"] not in now:
        return None
    rest = [item for item in now if item != recorded["appended"]]
    put(settings, keys, ABSENT if not rest and recorded["created"] else rest)
    return f"{name}: - one entry"


def main() -> None:
    verb, path, journal_path, *wanted = sys.argv[1:]
    settings = load(path)
    journal = load(journal_path)
    record: dict[str, Any] = journal.setdefault(path, {})
    changed: list[str | None] = []
    if verb == "disable":
        for name, recorded in list(record.items()):
            del record[name]
            if name.endswith("+"):
                changed.append(unappend(settings, name[:-1], entry(recorded)))
            else:
                changed.append(unassign(settings, name, entry(recorded)))
    for item in wanted:
        name, _, encoded = item.partition("=")
        value = json.loads(encoded)
        if name.endswith("-"):  # `key-`: an entry of ours taken out of the list there
            changed.append(remove(settings, name[:-1], value))
        elif verb == "enable" and name.endswith("+"):  # `key+`: appended to the list there
            changed.append(append(settings, record, name[:-1], value))
        elif verb == "enable":
            changed.append(assign(settings, record, name, value))
    changes = [line for line in changed if line]
    if changes:
        save(path, settings)
    if not record:
        journal.pop(path, None)
    save(journal_path, journal)
    print(json.dumps({"changes": changes}, ensure_ascii=False))


main()
