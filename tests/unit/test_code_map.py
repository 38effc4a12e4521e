"""ARCHITECTURE.md's code map names every file of the code: a newcomer finds each module by its name.

A file is named by its path inside its side's package (`review/init.lua`, `changes/git.py`; `{a,b}`
lists as in `agents/terminal/{native,tmux,external}.lua`), or by its bare name where no other file on
its side has that name (`mcp_server.py` in the `server/` item). A folder of one file per tool is named
by its rule; a subpackage's `__init__.py` only marks the package."""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SIDES = ("lua/gemini_companion/", "rplugin/python3/gemini_companion/")
NAME = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w-]+\.(?:lua|py))(?![\w/])")
BRACES = re.compile(r"([\w./-]*)\{([\w,.-]+)\}([\w./-]*)")
ONE_FILE_EACH = {"tools/handlers/": "each tool a file of `tools/handlers/` named after it"}


def named_in(text: str) -> set[str]:
    while found := BRACES.search(text):
        spelled = " ".join(found[1] + part + found[3] for part in found[2].split(","))
        text = text[: found.start()] + spelled + text[found.end() :]
    return set(NAME.findall(text))


def unnamed(text: str, files: list[str]) -> list[str]:
    named, flat = named_in(text), " ".join(text.split())
    missing = []
    for side in SIDES:
        inside = [name[len(side) :] for name in files if name.startswith(side) and name.endswith((".lua", ".py"))]
        bare = Counter(Path(name).name for name in inside)
        for name in inside:
            base = Path(name).name
            if name in named or (bare[base] == 1 and base in named):
                continue
            if "/" in name and base == "__init__.py":
                continue
            if any(name.startswith(folder) and rule in flat for folder, rule in ONE_FILE_EACH.items()):
                continue
            missing.append(side + name)
    return missing


def test_the_code_map_names_every_file() -> None:
    command = ["git", "ls-files", "-co", "--exclude-standard", *SIDES]
    listed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    files = [name for name in listed.stdout.split("\n") if name]
    assert len(files) > 50
    missing = unnamed((ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8"), files)
    assert missing == [], "not in ARCHITECTURE.md's code map:\n" + "\n".join(missing)


def test_a_file_left_out_of_the_map_is_caught() -> None:
    """The check above can fail: a new file no line names is found; braces and unique bare names count."""
    text = "`agents/terminal/{native,tmux}.lua`; `server/` — `http.py`: HTTP"
    files = [
        "lua/gemini_companion/agents/terminal/native.lua",
        "lua/gemini_companion/agents/terminal/tmux.lua",
        "lua/gemini_companion/agents/new_idea.lua",
        "rplugin/python3/gemini_companion/server/http.py",
    ]
    assert unnamed(text, files) == ["lua/gemini_companion/agents/new_idea.lua"]
