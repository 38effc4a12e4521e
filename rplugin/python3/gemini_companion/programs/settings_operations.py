"""The edit operations on a settings Doc (settings_doc.py) and the record of what each wrote, so
that it can be taken back exactly: set a key, append to a list, take out an entry of ours, and
undo what a record says. The record is one settings file's part of the journal
(settings_journal.py). Standard library only."""

from __future__ import annotations

import json
from typing import Any

from gemini_companion.programs.jsonc import jsonc
from gemini_companion.programs.settings_doc import Doc

ABSENT = {"absent": True}


def apply(doc: Doc, record: dict[str, Any], verb: str, wanted: list[str]) -> tuple[list[str | None], list[str]]:
    """Each `KEY=JSON`, `KEY+=JSON`, `KEY-=JSON` or `KEY~=JSON` of the command line (settings_edit.py
    says what they do): a line per change (None: nothing to do) and what our entries taken out
    left empty (kept: without a record it may be the user's own `{}`)."""
    changed: list[str | None] = []
    emptied: list[str] = []  # what held only entries of ours: it may have been the user's, empty
    for item in wanted:
        name, _, encoded = item.partition("=")
        value = json.loads(encoded)
        if name.endswith("-"):  # `key-`: entries of ours taken out of the list there
            keys = name[:-1].split(".")
            # Enabling, the list takes the current entry at once; it is recorded as ours then.
            done = doc.remove_item(keys, value, keys[0] if verb == "enable" else None, every=True)
            changed.append(f"{name[:-1]}: - one entry" if done else None)
            emptied += [name[:-1]] if done else []
        elif name.endswith("~"):  # `key~`: a key of ours, while it holds exactly that
            keys = name[:-1].split(".")
            if get(doc, keys) == value:
                doc.remove_key(keys, None)
                changed.append(f"{name[:-1]}: (removed)")
                emptied.append(".".join(keys[:-1]))
        elif verb == "enable" and name.endswith("+"):  # `key+`: appended to the list there
            changed.append(append(doc, record, name[:-1], value))
        elif verb == "enable":
            changed.append(assign(doc, record, name, value))
    return changed, sorted({name for name in emptied if get(doc, name.split(".")) in ({}, [])})


def assign(doc: Doc, record: dict[str, Any], name: str, value: Any) -> str | None:
    keys = name.split(".")
    now = get(doc, keys)
    if now == value:
        return None
    chain = doc.find(keys)
    raw = doc.text[chain[-1].start : chain[-1].end] if now != ABSENT else None
    created, inside = doc.set(keys, value)
    if name in record:  # ours already, set again: what was there before us stays the record
        record[name] = {**entry(record[name], name), "wrote": value}
    else:
        record[name] = {"before": now, "before_text": raw, "wrote": value, "created": created}
        if inside:
            record[name]["inside"] = inside
    return f"{name}: {describe(now)} -> {describe(value)}"


def unassign(doc: Doc, name: str, recorded: dict[str, Any]) -> str | None:
    keys = name.split(".")
    now = get(doc, keys)
    if now != recorded["wrote"]:  # a value changed since is the user's now
        return None
    before = recorded["before"]
    if before == ABSENT:
        doc.remove_key(keys, recorded.get("created"), text_of(recorded.get("inside")))
        return f"{name}: {describe(now)} -> (removed)"
    raw = recorded.get("before_text")
    doc.set(keys, before, raw if isinstance(raw, str) and same(raw, before) else None)
    return f"{name}: {describe(now)} -> {describe(before)}"


def append(doc: Doc, record: dict[str, Any], name: str, value: Any) -> str | None:
    keys = name.split(".")
    now = get(doc, keys)
    if now != ABSENT and not isinstance(now, list):
        return None  # not a list: the user's, left alone
    if now != ABSENT and value in now:
        return None
    if now == ABSENT:
        created, inside = doc.set(keys, [value])
        insides = ["", inside]  # the list is ours; the object it went into had that inside
    else:
        created = None
        insides = [doc.insert(doc.find(keys)[-1], None, value), ""]
    record[name + "+"] = {"appended": value, "created": created}
    if any(insides):
        record[name + "+"]["insides"] = insides
    return f"{name}: + one entry"


def take_back(doc: Doc, record: dict[str, Any]) -> list[str | None]:
    """Undo what `record` says was written, last first; the record is emptied."""
    changed: list[str | None] = []
    for name, recorded in reversed(list(record.items())):
        del record[name]
        if name.endswith("+"):
            got = entry(recorded, name[:-1])
            done = doc.remove_item(name[:-1].split("."), got["appended"], got["created"], False, insides_of(got))
            changed.append(f"{name[:-1]}: - one entry" if done else None)
        else:
            changed.append(unassign(doc, name, entry(recorded, name)))
    return changed


def get(doc: Doc, keys: list[str]) -> Any:
    chain = doc.find(keys)
    return doc.value(chain[-1]) if len(chain) == len(keys) + 1 else ABSENT


def entry(recorded: Any, name: str) -> dict[str, Any]:
    """A journal entry in today's shape; older versions kept less (the value before only, or
    `created` as a boolean) and dropped every object their removal left empty."""
    if not isinstance(recorded, dict) or not ({"before", "wrote"} <= set(recorded) or "appended" in recorded):
        recorded = {"before": recorded, "wrote": True}
    recorded = dict(recorded)
    if not isinstance(recorded.get("created"), (str, type(None))):
        recorded["created"] = name.split(".")[0] if recorded["created"] else None
    if "appended" not in recorded and "created" not in recorded and recorded["before"] == ABSENT:
        recorded["created"] = name.split(".")[0]
    return recorded


def describe(value: Any) -> str:
    if value == ABSENT:
        return "(absent)"
    return "{…}" if isinstance(value, dict) else json.dumps(value)


def same(raw: str, value: Any) -> bool:
    """Does the text `raw` (from the record: with its comments) read as `value`?"""
    try:
        return bool(jsonc(raw) == value)
    except (ValueError, RecursionError):
        return False


def text_of(value: Any) -> str:
    """An inside the journal kept: whitespace only (a damaged journal's anything else is not ours
    to put back)."""
    return value if isinstance(value, str) and not value.strip(" \t\r\n") else ""


def insides_of(recorded: dict[str, Any]) -> tuple[str, str]:
    insides = recorded.get("insides")
    if not isinstance(insides, list) or len(insides) != 2:
        return "", ""
    return text_of(insides[0]), text_of(insides[1])
