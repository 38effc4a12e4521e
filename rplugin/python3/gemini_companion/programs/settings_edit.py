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
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

if __name__ == "__main__":  # run by cli_settings.lua: the folder holding the package goes on sys.path
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from gemini_companion import files
from gemini_companion.programs.jsonc import blank, jsonc

ABSENT = {"absent": True}
# A settings file larger than this is refused: every edit re-reads the text (a few KB, usually).
MAX_BYTES = 1024 * 1024
# Times an edit starts over when the file changed while it was being made (the CLI saving it).
ATTEMPTS = 3
SETTLE_SECONDS = 0.05


class Refused(Exception):
    """A one-line reason; nothing was changed."""


class Changed(Exception):
    """The settings file is no longer what the edit was made on: start over."""


# --- the text, with where each value is -----------------------------------------------------


@dataclass
class Node:
    start: int
    end: int
    kind: str  # object, array or scalar
    members: list[tuple[str, int, int, Node]] = field(default_factory=list)  # key, its start and end, value
    items: list[Node] = field(default_factory=list)


SPACE = re.compile(r"[ \t\r\n]*")
WHITE = " \t\r\n"
STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
SCALAR = re.compile(r"[^ \t\r\n,\]}]*")


def end_of(pattern: re.Pattern[str], text: str, pos: int) -> int:
    found = pattern.match(text, pos)
    return found.end() if found else pos


def parse(text: str) -> Node:
    """Spans of an already validated JSON text (json.loads accepted it; comments made spaces by
    `blank`). Scanned by regular
    expressions, not a character at a time: a 1 MB file is read in a fraction of a second."""
    pos = 0

    def skip() -> None:
        nonlocal pos
        pos = end_of(SPACE, text, pos)

    def string() -> str:
        nonlocal pos
        found = STRING.match(text, pos)
        assert found is not None  # validated JSON: a string starts here
        pos = found.end()
        raw = found.group()
        decoded: str = json.loads(raw) if "\\" in raw else raw[1:-1]
        return decoded

    def value() -> Node:
        nonlocal pos
        skip()
        start = pos
        if text[pos] == "{":
            node = Node(start, 0, "object")
            pos += 1
            skip()
            while text[pos] != "}":
                key_start = pos
                key = string()
                key_end = pos
                skip()
                pos += 1  # the colon
                node.members.append((key, key_start, key_end, value()))
                skip()
                if text[pos] == ",":
                    pos += 1
                    skip()
        elif text[pos] == "[":
            node = Node(start, 0, "array")
            pos += 1
            skip()
            while text[pos] != "]":
                node.items.append(value())
                skip()
                if text[pos] == ",":
                    pos += 1
                    skip()
        elif text[pos] == '"':
            string()
            return Node(start, pos, "scalar")
        else:
            pos = end_of(SCALAR, text, pos)
            return Node(start, pos, "scalar")
        pos += 1
        node.end = pos
        return node

    return value()


class Doc:
    """The settings text and the edits on it; every edit re-reads the spans. Structure is read
    in the text with its comments made spaces (`blank`); the user's comments are never cut."""

    def __init__(self, text: str) -> None:
        self.text = text if text.strip() else "{}" + ("\n" if not text else text)
        self._blank: tuple[str, str, dict[int, int]] | None = None  # the text as it last was, read
        self._parsed: tuple[str, Node] | None = None
        self.eol = "\r\n" if "\r\n" in self.text else "\n"
        self.unit = self._unit()

    def _unit(self) -> str:
        """The file's indentation step: the smallest indentation of a line (outside comments)."""
        lines = [line for line in self.blanked().splitlines()[1:] if line.strip()]
        found = [line[: len(line) - len(line.lstrip(" \t"))] for line in lines]
        found = [lead for lead in found if lead]
        return min(found, key=len) if found else "  "

    def _read(self) -> tuple[str, str, dict[int, int]]:
        if self._blank is None or self._blank[0] is not self.text:
            self._blank = (self.text, *blank(self.text))
        return self._blank

    def root(self) -> Node:
        if self._parsed is None or self._parsed[0] is not self.text:
            self._parsed = (self.text, parse(self.blanked()))
        return self._parsed[1]

    def blanked(self) -> str:
        return self._read()[1]

    def comments(self) -> dict[int, int]:
        return self._read()[2]

    def splice(self, start: int, end: int, new: str) -> None:
        self.text = self.text[:start] + new + self.text[end:]

    def value(self, node: Node) -> Any:
        return json.loads(self.blanked()[node.start : node.end])

    def space_before(self, pos: int, floor: int) -> int:
        """Where the whitespace (not comments) just before `pos` starts, not before `floor`."""
        return max(floor, len(self.text[:pos].rstrip(WHITE)))

    def space_after(self, pos: int) -> int:
        return end_of(SPACE, self.text, pos)

    def after_comments(self, pos: int) -> int:
        """After the comments that follow `pos` on its line (`"a": 1 // why`), else `pos`."""
        found = pos
        while True:
            pos = end_of(re.compile("[ \t]*"), self.text, pos)
            end = self.comments().get(pos)
            if end is None or "\n" in self.text[pos:end]:
                return found
            found = pos = end

    def cut(self, start: int, end: int) -> None:
        """Take out the text from `start` to `end`, but for the comments in it (each with the
        whitespace before it; a `//` one ends its line, or it would swallow what follows)."""
        kept = ""
        for at, stop in sorted(self.comments().items() if "/" in self.text[start:end] else [], reverse=True):
            if start <= at and stop <= end:
                after = kept or self.text[end:]
                line = self.text.startswith("//", at) and not after.lstrip(" \t").startswith(("\n", "\r\n"))
                kept = self.text[self.space_before(at, start) : stop] + (self.eol if line else "") + kept
        if kept:  # and the whitespace the text went on with (the next entry's indentation)
            kept += self.text[self.space_before(end, start) : end]
        if self.line_comment_ends(start) and not (kept or self.text[end:]).lstrip(" \t").startswith(("\n", "\r\n")):
            kept = self.eol + kept.lstrip(" \t")
        self.splice(start, end, kept)

    def line_comment_ends(self, pos: int) -> bool:
        """Does a `//` comment end at `pos` (spaces aside)? What follows it must start a line."""
        before = len(self.text[:pos].rstrip(" \t"))
        if "//" not in self.text[self.text.rfind("\n", 0, before) + 1 : before]:
            return False
        return any(stop == before and self.text.startswith("//", at) for at, stop in self.comments().items())

    def find(self, keys: list[str]) -> list[Node]:
        """The nodes along `keys` from the root, as far as objects hold them (the last wins)."""
        chain = [self.root()]
        for key in keys:
            node = chain[-1]
            found = [member for member in node.members if member[0] == key] if node.kind == "object" else []
            if not found:
                break
            chain.append(found[-1][3])
        return chain

    def indent_at(self, pos: int) -> str:
        line = self.text[self.text.rfind("\n", 0, pos) + 1 : pos]
        return line[: len(line) - len(line.lstrip(" \t"))]

    def dump(self, value: Any, indent: str, inline: bool, colon: str = ": ") -> str:
        if inline:
            return json.dumps(value, separators=(", ", colon))
        return json.dumps(value, indent=self.unit, separators=(",", colon)).replace("\n", self.eol + indent)

    def colon(self, node: Node) -> str:
        """The file's own `key: value` separator, from a member of `node` (or the first found)."""
        for candidate in [node, self.root()]:
            if candidate.members:
                _, _, key_end, value = candidate.members[0]
                colon = self.text[key_end : value.start]
                return colon if colon == self.blanked()[key_end : value.start] else ": "  # not a comment
        return ": "

    @staticmethod
    def spans(container: Node) -> list[tuple[int, int]]:
        """Where each member (from its key) or item of `container` starts and ends."""
        if container.kind == "object":
            return [(m[1], m[3].end) for m in container.members]
        return [(item.start, item.end) for item in container.items]

    def insert(self, container: Node, key: str | None, value: Any) -> str | None:
        """Add a member (key) or an item (key None) at the end of `container`, in its style (after
        the comments on the last one's line). An empty container's whitespace inside (`{ }`,
        `[\n]`, after its comments) is replaced: returned, for `drop` to put back."""
        spans = self.spans(container)
        colon = self.colon(container)
        named = json.dumps(key) + colon if key is not None else ""
        if spans:
            start, end = spans[-1]
            lead = self.text[self.space_before(start, container.start + 1) : start]
            if not lead and len(spans) == 1 and " " in colon:
                lead = " "  # `{"a": 1}`: the file's own spacing, as far as it shows
            inline = "\n" not in lead
            body = self.dump(value, self.indent_at(start), inline, colon)
            at = end if inline else self.after_comments(end)
            self.splice(at, at, lead + named + body)
            self.splice(end, end, ",")
            return None
        inline = "\n" not in self.text
        outer = self.indent_at(container.start)
        inner = outer + self.unit
        entry = named + self.dump(value, inner, inline, colon)
        first = self.space_before(container.end - 1, container.start + 1)  # after the comments inside
        if inline:
            wrapped = entry if first == container.start + 1 else " " + entry
        else:
            wrapped = self.eol + inner + entry + self.eol + outer
        inside = self.text[first : container.end - 1]
        self.splice(first, container.end - 1, wrapped)
        return inside

    def drop(self, container: Node, index: int, inside: str = "") -> None:
        """Take out member or item `index` with exactly one separator and its lead, and never a
        comment; the last one leaves `inside` (what `insert` replaced, when we emptied what it
        filled)."""
        spans = self.spans(container)
        start, end = spans[index]
        if len(spans) == 1:
            lead = self.space_before(start, container.start + 1)
            plain = self.text[lead : container.end - 1] == self.blanked()[lead : container.end - 1]  # no comment
            if plain and ("\n" in inside or not self.line_comment_ends(lead)):
                self.splice(lead, container.end - 1, inside)
            else:
                self.cut(lead, end)
        elif index == len(spans) - 1:
            before = spans[index - 1][1]
            comma = self.blanked().index(",", before)
            self.cut(self.space_before(start, comma + 1), end)
            self.cut(self.space_before(comma, before), comma + 1)
        else:
            comma = self.blanked().index(",", end)
            self.cut(start, self.space_after(comma + 1))

    def set(self, keys: list[str], value: Any, raw: str | None = None) -> tuple[str | None, str | None]:
        """Put `value` (or the exact text `raw`) at `keys`; the dotted prefix it created, if any,
        and the inside of the object it was created in, if that was empty (see `insert`)."""
        chain = self.find(keys)
        if len(chain) == len(keys) + 1:
            node, parent = chain[-1], chain[-2]
            member = next(m for m in parent.members if m[3].start == node.start)
            new = raw if raw is not None else self.dump(value, self.indent_at(member[1]), "\n" not in self.text)
            self.splice(node.start, node.end, new)
            return None, None
        parent = chain[-1]
        if parent.kind != "object":
            raise Refused(f"{'.'.join(keys[: len(chain) - 1])} is not an object: nothing was changed")
        nested: Any = value
        for key in reversed(keys[len(chain) :]):
            nested = {key: nested}
        key = keys[len(chain) - 1]
        inside = self.insert(parent, key, nested)
        return ".".join(keys[: len(chain)]), inside

    def remove_key(self, keys: list[str], created: str | None, inside: str = "") -> None:
        """Take out `keys`, then each object above it left empty, up to `created` (the first
        key we added there; None: none); the object `created` was added to gets back `inside`."""
        depth = len(keys)
        floor = len(created.split(".")) if created else depth
        while depth >= floor:
            chain = self.find(keys[:depth])
            if len(chain) != depth + 1:
                return
            node = chain[-1]
            if depth < len(keys) and (node.kind != "object" or node.members):
                return
            parent = chain[-2]
            self.drop(parent, [m[3].start for m in parent.members].index(node.start), inside if depth == floor else "")
            depth -= 1

    def remove_item(
        self, keys: list[str], value: Any, created: str | None, every: bool, insides: tuple[str, str] = ("", "")
    ) -> bool:
        """Take `value` out of the list at `keys` (once, or `every` time); a list left empty gets
        back its inside, or goes with its emptied parents up to `created` (and the object that was
        added to gets back its own: `insides`, the list's and that object's)."""
        done = False
        while True:
            chain = self.find(keys)
            node = chain[-1]
            if len(chain) != len(keys) + 1 or node.kind != "array":
                return done
            matches = [i for i, item in enumerate(node.items) if self.value(item) == value]
            if not matches:
                break
            self.drop(node, matches[-1], insides[0])
            done = True
            if not every:
                break
        node = self.find(keys)[-1]
        if done and created and node.kind == "array" and not node.items:
            self.remove_key(keys, created, insides[1])
        return done


# --- the operations --------------------------------------------------------------------------


def describe(value: Any) -> str:
    if value == ABSENT:
        return "(absent)"
    return "{…}" if isinstance(value, dict) else json.dumps(value)


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


def same(raw: str, value: Any) -> bool:
    """Does the text `raw` (from the record: with its comments) read as `value`?"""
    try:
        return bool(jsonc(raw) == value)
    except (ValueError, RecursionError):
        return False


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


def text_of(value: Any) -> str:
    """An inside the journal kept: whitespace only (a damaged journal's anything else is not ours
    to put back)."""
    return value if isinstance(value, str) and not value.strip(" \t\r\n") else ""


def insides_of(recorded: dict[str, Any]) -> tuple[str, str]:
    insides = recorded.get("insides")
    if not isinstance(insides, list) or len(insides) != 2:
        return "", ""
    return text_of(insides[0]), text_of(insides[1])


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


def edit(verb: str, path: str, journal_path: str, wanted: list[str]) -> dict[str, Any]:
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
    changed: list[str | None] = []
    unrecorded = verb == "disable" and not record
    if verb == "disable":
        changed += take_back(doc, record)
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
    left = sorted({name for name in emptied if get(doc, name.split(".")) in ({}, [])})
    changes = [line for line in changed if line]
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


# --- files -----------------------------------------------------------------------------------


def owner(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def yours(where: str, st: os.stat_result) -> None:
    """Refused unless the file (or the folder a new one goes into) is this user's: a file left
    owned by root (`sudo nvim` with the user's HOME) is one the user's own CLI cannot rewrite."""
    if st.st_uid != os.geteuid():
        raise Refused(
            f"{where} belongs to {owner(st.st_uid)}, not to you ({owner(os.geteuid())}): "
            "run Neovim as that user; nothing was changed"
        )


def identity(st: os.stat_result | None) -> tuple[int, ...] | None:
    """What tells one version of a file from the next (None: no file)."""
    return None if st is None else (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def current(target: str) -> tuple[int, ...] | None:
    try:
        return identity(os.stat(target))
    except FileNotFoundError:
        return None


def read_settings(path: str, target: str) -> tuple[str, tuple[int, ...] | None]:
    """The settings text, after the checks that make writing it the user's own act, and the
    identity of the version read (the edit is written only over that version)."""
    where = path if target == path else f"{path} (a link to {target})"

    def judge(st: os.stat_result) -> None:  # the file opened is the one judged and read
        yours(where, st)
        if not st.st_mode & stat.S_IWUSR:
            raise Refused(f"{where} is read-only: nothing was changed")
        if st.st_nlink > 1:  # a new file renamed into place would leave the other names behind
            raise Refused(
                f"{where} has {st.st_nlink} hard links, which a rewrite would split (a symlink is kept):"
                " nothing was changed"
            )
        if st.st_size > MAX_BYTES:
            raise Refused(f"{where} is larger than {MAX_BYTES // 1024 // 1024} MiB: nothing was changed")

    try:
        # Never waits: a FIFO would for a writer (and is refused, as any non-regular file).
        data, st = files.read(target, MAX_BYTES, check=judge)
    except FileNotFoundError:
        if target != path:
            raise Refused(f"{where} points at nothing: nothing was changed") from None
        ancestor = os.path.dirname(os.path.abspath(target))
        while not os.path.isdir(ancestor) and ancestor != os.path.dirname(ancestor):
            ancestor = os.path.dirname(ancestor)
        yours(ancestor, os.stat(ancestor))
        return "", None
    except files.Unreadable as err:
        if err.info is not None and stat.S_ISREG(err.info.st_mode):
            raise Changed from None  # grew past the bound as it was read: a CLI writing
        raise Refused(f"{where} is not a regular file: nothing was changed") from None
    seen = current(target)
    if seen != identity(st) or len(data) != st.st_size:
        raise Changed  # written to while it was read: a CLI truncates, then writes
    try:
        text, value = parse_settings(data)
    except ValueError:
        settled(target, seen)  # half written, perhaps: if so, read again
        raise Refused(f"{path} is not valid JSON, comments allowed (a trailing comma?): nothing was changed") from None
    except RecursionError:
        raise Refused(f"{path} is nested too deeply: nothing was changed") from None
    if not text.strip():
        settled(target, seen)  # emptied by a save that is still writing, perhaps
    if text.strip() and not isinstance(value, dict):
        raise Refused(f"{path} does not hold a JSON object: nothing was changed")
    return text, seen


def parse_settings(data: bytes) -> tuple[str, Any]:
    text = data.decode("utf-8")
    return text, jsonc(text) if text.strip() else {}


def settled(target: str, seen: tuple[int, ...] | None) -> None:
    """Changed unless the file stays as it was read for a moment: a save that truncates and then
    writes (the CLIs') can be read in between, empty or cut short. (The modification time moves in
    ticks of a few ms: within one, identity alone cannot tell.)"""
    time.sleep(SETTLE_SECONDS)
    if current(target) != seen:
        raise Changed


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


def replace(
    path: str,
    data: bytes,
    mode: int,
    group: int | None = None,
    still: Callable[[], None] = lambda: None,
    in_place: Callable[[], None] | None = None,
) -> None:
    """Write `data` beside `path`, with `mode` (and `group`), and rename it into place; `still`
    raises when `path` should no longer be replaced (checked last, after the slow part). In a
    folder the user cannot create files in, `in_place` writes instead (when given)."""
    directory = os.path.dirname(path) or "."
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".gemini-companion.", suffix=".tmp")
    except PermissionError:
        if in_place is None:
            raise
        return in_place()
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if group is not None and os.fstat(f.fileno()).st_gid != group:
                os.fchown(f.fileno(), -1, group)
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        still()
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def rewrite(path: str, target: str, seen: tuple[int, ...] | None, data: bytes, before: bytes) -> None:
    """Write `data` over the file itself, as the CLIs' own save does: for a file (reached through
    a link, say) in a folder the user cannot create files in, where no new file can be renamed
    over it. Owner, mode and links stay by themselves. The same guarantees as the rename: only
    over the version read (looked at on the descriptor written, the last thing before the write),
    in one write padded with spaces to the old length, so that the file holds JSON at every
    moment (then cut to its length); if the write fails part way, the old bytes go back."""
    fd = os.open(target, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if identity(os.fstat(fd)) != seen or (target != path and os.path.realpath(path) != target):
            raise Changed
        padded = data + b" " * (len(before) - len(data))
        try:
            write_at_start(fd, padded)
            os.ftruncate(fd, len(data))
            os.fsync(fd)
        except OSError as e:
            try:
                write_at_start(fd, before)
                os.ftruncate(fd, len(before))
                os.fsync(fd)
            except OSError:
                raise Refused(f"cannot write {target} ({e.strerror}) nor put its bytes back: check it") from None
            raise
    finally:
        os.close(fd)


def write_at_start(fd: int, data: bytes) -> None:
    done = 0
    while done < len(data):  # one write but for a full disk or a size limit: then it raises
        done += os.pwrite(fd, data[done:], done)


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


if __name__ == "__main__":
    try:
        result = main(sys.argv[1:])
    except Refused as e:
        result = {"error": str(e)}
    except Exception as e:  # noqa: BLE001 - one line to the user, whatever happened
        result = {"error": f"cannot edit the settings: {type(e).__name__}: {e}".splitlines()[0]}
    print(json.dumps(result))
