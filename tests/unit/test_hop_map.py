"""Every hop between Lua and Python is in `:h gemini-companion-hops`, and every hop there is in the code."""

from __future__ import annotations

import re

from conftest import ROOT
from gemini_companion.companion import Companion

PYTHON = ROOT / "rplugin" / "python3" / "gemini_companion"
LUA = ROOT / "lua" / "gemini_companion"


def documented() -> set[tuple[str, str]]:
    doc = (ROOT / "doc" / "gemini_companion.txt").read_text()
    table = doc[doc.index("*gemini-companion-hops*") : doc.index("Names ~")]
    return {(m[1], m[2]) for m in re.finditer(r"^(Lua → Python|Python → Lua)\s+`([\w.]+)`", table, re.M)}


def in_code() -> set[tuple[str, str]]:
    hops = set()
    for path in LUA.rglob("*.lua"):
        for name in re.findall(r"host\.(?:notify|request)\('(\w+)'", path.read_text()):
            hops.add(("Lua → Python", name))
    for path in PYTHON.rglob("*.py"):
        source = path.read_text()
        aliases = dict(re.findall(r"^(\w+_LUA) = \"require\('gemini_companion\.(\w+)'\)\"", source, re.M))
        for module, function in re.findall(r"require\('gemini_companion\.([\w.]+)'\)\.(\w+)\(", source):
            hops.add(("Python → Lua", f"{module}.{function}"))
        for alias, function in re.findall(r"\{(\w+_LUA)\}\.(\w+)\(", source):
            hops.add(("Python → Lua", f"{aliases[alias]}.{function}"))
    return hops


def test_hop_map_matches_the_code():
    code, doc = in_code(), documented()
    assert code - doc == set(), "in the code, not in :h gemini-companion-hops"
    assert doc - code == set(), "in :h gemini-companion-hops, not in the code"


def test_every_lua_to_python_hop_has_a_handler():
    class Editor:  # nothing is sent: only the method table is read
        def lua(self, code: str, *args: object) -> None: ...

        def request(self, code: str, *args: object) -> None: ...

    handlers = set(Companion(Editor())._methods)  # type: ignore[arg-type]
    wanted = {name for direction, name in documented() if direction == "Lua → Python"}
    assert wanted == handlers
