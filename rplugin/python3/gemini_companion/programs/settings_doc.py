"""The settings text and the edits on it, each a splice of the user's own bytes at one key or list
item, written in the file's own style (indentation, line ending, separators); comments are never
cut. Used by settings_operations.py; the spans come from jsonc.py. Standard library only."""

from __future__ import annotations

import json
import re
from typing import Any

from gemini_companion.programs.jsonc import SPACE, WHITE, Node, blank, end_of, parse
from gemini_companion.programs.settings_errors import Refused


class Doc:
    """The settings text and the edits on it; every edit re-reads the spans. Structure is read
    in the text with its comments made spaces (`blank`); the user's comments are never cut."""

    def __init__(self, text: str) -> None:
        self.text = text if text.strip() else "{}" + ("\n" if not text else text)
        self._blank: tuple[str, str, dict[int, int]] | None = None  # the text as it last was, read
        self._parsed: tuple[str, Node] | None = None
        self.eol = "\r\n" if "\r\n" in self.text else "\n"
        self.unit = self._unit()

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

    def value(self, node: Node) -> Any:
        return json.loads(self.blanked()[node.start : node.end])

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

    def after_comments(self, pos: int) -> int:
        """After the comments that follow `pos` on its line (`"a": 1 // why`), else `pos`."""
        found = pos
        while True:
            pos = end_of(re.compile("[ \t]*"), self.text, pos)
            end = self.comments().get(pos)
            if end is None or "\n" in self.text[pos:end]:
                return found
            found = pos = end

    def space_before(self, pos: int, floor: int) -> int:
        """Where the whitespace (not comments) just before `pos` starts, not before `floor`."""
        return max(floor, len(self.text[:pos].rstrip(WHITE)))

    def space_after(self, pos: int) -> int:
        return end_of(SPACE, self.text, pos)

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
