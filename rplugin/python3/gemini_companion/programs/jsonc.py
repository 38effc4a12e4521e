"""JSON with comments, read as Gemini CLI and Qwen Code read their settings: both run
strip-json-comments 3.1.1 and then JSON.parse. Outside strings, `//` runs to the end of the line
and `/* */` to its close (one never closed, to the end of the text); a comment stays as
whitespace, so every value keeps its place and settings_edit.py splices the user's own text;
`parse` then says where each value is (settings_doc.py edits there).
json_file.lua is the Lua side's reading, the same (tests/unit/test_helpers.py holds both to the
CLIs' own code). Standard library only."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

# Comments as both CLIs read them (strip-json-comments 3.1 before JSON.parse): outside strings,
# `//` to the end of the line and `/* */` (one never closed runs to the end of the text).
TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|//(?:[^\r\n]|\r(?!\n))*|/\*.*?(?:\*/|\Z)', re.DOTALL)
# What stays of a comment: JavaScript's whitespace (\\s) as it is, anything else a space.
NOT_JS_SPACE = re.compile("[^\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]")
BOM = "\ufeff"
# The pieces `parse` reads.
SPACE = re.compile(r"[ \t\r\n]*")
WHITE = " \t\r\n"
STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
SCALAR = re.compile(r"[^ \t\r\n,\]}]*")


def blank(text: str) -> tuple[str, dict[int, int]]:
    """`text` with each comment made spaces (its line breaks kept: every value stays where it is)
    and where each comment starts and ends. A leading byte-order mark reads as a space (Qwen
    drops it; Gemini refuses the file, but it is no worse for our keys)."""
    if "/" not in text:
        return (" " + text[1:] if text.startswith(BOM) else text), {}
    comments: dict[int, int] = {}
    parts: list[str] = []
    done = 0
    for found in TOKEN.finditer(text):
        if found.group()[0] == "/":
            parts += [text[done : found.start()], NOT_JS_SPACE.sub(" ", found.group())]
            comments[found.start()] = done = found.end()
    blanked = "".join(parts) + text[done:] if comments else text
    return (" " + blanked[1:] if blanked.startswith(BOM) else blanked), comments


def jsonc(text: str) -> Any:
    """The value the CLIs read in `text` (ValueError: they cannot read it)."""
    return json.loads(blank(text)[0], parse_constant=no_constant)


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


@dataclass
class Node:
    start: int
    end: int
    kind: str  # object, array or scalar
    members: list[tuple[str, int, int, Node]] = field(default_factory=list)  # key, its start and end, value
    items: list[Node] = field(default_factory=list)


def no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")  # Python reads NaN and Infinity; the CLIs do not


def end_of(pattern: re.Pattern[str], text: str, pos: int) -> int:
    found = pattern.match(text, pos)
    return found.end() if found else pos
