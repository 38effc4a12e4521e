"""`:checkhealth` as text, and the README's plugin-manager specs with the pinned managers to run them
(the core tests and tests/agents/test_attention.py share these)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from conftest import ROOT, Editor


def checkhealth(editor: Editor) -> str:
    editor.nvim.command("checkhealth gemini_companion")
    return "\n".join(editor.nvim.current.buffer[:])


def fixtures() -> Path | None:
    candidates = [os.environ.get("GEMINI_COMPANION_FIXTURES", ""), ROOT.parent / "shared" / "fixtures"]
    for candidate in candidates:
        path = Path(candidate) / "plugin-managers" if candidate else None
        if path and (path / "lazy.nvim").is_dir() and (path / "packer.nvim").is_dir():
            return path
    return None


MANAGERS = fixtures()


def readme_block(after: str) -> str:
    """The first ```lua block after the line that mentions `after` in README.md."""
    text = (ROOT / "README.md").read_text()
    start = text.index(after)
    match = re.compile(r"```lua\n(.*?)```", re.S).search(text, start)
    assert match, f"no lua block after {after!r} in README.md"
    return match[1].strip()
