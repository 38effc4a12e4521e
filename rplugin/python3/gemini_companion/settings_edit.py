"""Merge keys into a CLI's JSON settings file and take them back, exactly: run by cli_settings.lua.

`python settings_edit.py enable|disable SETTINGS JOURNAL KEY...` prints {"changes": [...]} or
{"error": "..."}. The file keeps its key order, indentation style (2 spaces), mode and every
other key; it is replaced atomically. The journal (JSON, 0600) remembers each key's value before
we set it (absent or a value), per settings file, so `disable` restores just that. Standard
library only: this runs in the plugin's venv Python, outside the host.
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


def main() -> None:
    verb, path, journal_path, *names = sys.argv[1:]
    settings = load(path)
    journal = load(journal_path)
    record: dict[str, Any] = journal.setdefault(path, {})
    changes = []
    for name in names:
        keys = name.split(".")
        now = get(settings, keys)
        if verb == "enable" and now is not True:
            record.setdefault(name, now)
            put(settings, keys, True)
            changes.append(f"{name}: {'(absent)' if now is ABSENT else json.dumps(now)} -> true")
        elif verb == "disable" and name in record:
            before = record.pop(name)
            if now is True:  # changed by the user since: theirs now
                put(settings, keys, before)
                changes.append(f"{name}: true -> {'(removed)' if before == ABSENT else json.dumps(before)}")
    if changes:
        save(path, settings)
    if not record:
        journal.pop(path, None)
    save(journal_path, journal)
    print(json.dumps({"changes": changes}))


main()
