"""JSON with comments, read as Gemini CLI and Qwen Code read their settings: both run
strip-json-comments 3.1.1 and then JSON.parse. Outside strings, `//` runs to the end of the line
and `/* */` to its close (one never closed, to the end of the text); a comment stays as
whitespace, so every value keeps its place and settings_edit.py splices the user's own text.
json_file.lua is the Lua side's reading, the same (tests/unit/test_helpers.py holds both to the
CLIs' own code). Standard library only."""

from __future__ import annotations

import json
import re
from typing import Any

# Comments as both CLIs read them (strip-json-comments 3.1 before JSON.parse): outside strings,
# `//` to the end of the line and `/* */` (one never closed runs to the end of the text).
TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|//(?:[^\r\n]|\r(?!\n))*|/\*.*?(?:\*/|\Z)', re.DOTALL)
# What stays of a comment: JavaScript's whitespace (\\s) as it is, anything else a space.
NOT_JS_SPACE = re.compile("[^\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]")
BOM = "\ufeff"


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


def no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")  # Python reads NaN and Infinity; the CLIs do not
