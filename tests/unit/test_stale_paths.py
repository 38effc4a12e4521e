"""Names that tell the truth: every file a comment, a docstring or the docs name exists.

Code moved to feature folders left comments naming files at their old places; nothing caught it.
This reads the comments and docstrings of lua/, plugin/ and rplugin/, and the README,
ARCHITECTURE.md and the help, and fails on a `.lua` or `.py` name that is nowhere: a path must
exist from the repository root, either side's package, the tests or the naming file's folder; a
bare name must be some file's name."""

from __future__ import annotations

import io
import re
import subprocess
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[a-z_][\w-]*\.(?:lua|py))(?![\w/])")
BASES = (ROOT, ROOT / "lua" / "gemini_companion", ROOT / "rplugin" / "python3" / "gemini_companion", ROOT / "tests")
DOCS = ("README.md", "ARCHITECTURE.md", "doc/gemini_companion.txt")


def tracked() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True)
    return [name for name in listed.stdout.split("\n") if name and not name.startswith("tests/node/")]


def remarks(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of each comment and docstring; each line of a doc."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".lua":
        for number, line in enumerate(text.splitlines(), 1):
            at = line.find("--")
            if at >= 0:
                yield number, line[at:]
    elif path.suffix == ".py":
        previous = None
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            statement_start = previous in (tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE, None)
            if token.type == tokenize.COMMENT or (token.type == tokenize.STRING and statement_start):
                yield token.start[0], token.string
            if token.type not in (tokenize.NL, tokenize.COMMENT):
                previous = token.type
    else:
        yield from enumerate(text.splitlines(), 1)


def test_every_file_a_comment_or_doc_names_exists() -> None:
    files = tracked()
    names = {Path(name).name for name in files}
    sources = [
        name for name in files if name.split("/")[0] in ("lua", "plugin", "rplugin") and name.endswith((".lua", ".py"))
    ]
    stale = []
    for name in [*sources, *DOCS]:
        path = ROOT / name
        for number, remark in remarks(path):
            for found in NAME.finditer(remark):
                ref = found[1]
                here = (*BASES, path.parent)
                if ("/" in ref and any((base / ref).exists() for base in here)) or ("/" not in ref and ref in names):
                    continue
                stale.append(f"{name}:{number}: {ref}")
    assert not stale, "named but nowhere:\n" + "\n".join(stale)


def test_a_stale_name_is_caught(tmp_path: Path) -> None:
    """The check above can fail: a comment naming a file that moved is found."""
    moved = tmp_path / "x.lua"
    moved.write_text("-- see diff/view.lua for the rendering\nlocal x = 'a.lua' -- not a remark: code\n")
    assert [NAME.findall(text) for _, text in remarks(moved)] == [["diff/view.lua"], []]
    moved = tmp_path / "x.py"
    moved.write_text('"""Reads review/diff.lua."""\nname = "a.py"  # see changes.lua\n')
    assert [NAME.findall(text) for _, text in remarks(moved)] == [["review/diff.lua"], ["changes.lua"]]
