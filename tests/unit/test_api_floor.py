"""The Lua keeps to Neovim 0.10's API (the README's minimum; 0.11.4 is the version the suite runs):
every use of an API newer than 0.10 sits behind a `has('nvim-0.11')` check a few lines above it.
The list names what the plugin might reach for; add to it when a newer API is considered."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUARD = re.compile(r"has\(['\"]nvim-0\.1[1-9]['\"]\)")
GUARD_LINES = 8  # how far above a use its check may be
NEWER_THAN_0_10 = {
    "vim.hl (0.11; vim.highlight before)": r"\bvim\.hl\.",
    "vim.fs.relpath / abspath / rm (0.11)": r"\bvim\.fs\.(relpath|abspath|rm)\b",
    "vim.lsp.config / enable / is_enabled (0.11)": r"\bvim\.lsp\.(config|enable|is_enabled)\b",
    "vim.lsp.completion / foldexpr / document_color (0.11+)": r"\bvim\.lsp\.(completion|foldexpr|document_color)\b",
    "vim.diagnostic.jump / status (0.11+)": r"\bvim\.diagnostic\.(jump|status)\b",
    "getregionpos() (0.11)": r"\bgetregionpos\b",
    "vim.list / vim.pack / vim.net / vim.text.indent (0.12)": r"\bvim\.(list|pack|net)\.|\bvim\.text\.indent\b",
    "str_utfindex / str_byteindex with an encoding (0.11)": r"\bstr_(utf|byte)index\([^()]*,\s*['\"]utf-",
    "vim.validate(name, value, ...) (0.11)": r"\bvim\.validate\(\s*['\"]",
    "an LSP client's methods with `:` (0.11)": r"\bclient:(request|notify|supports_method|stop|exec_cmd)\(",
    "jobstart({term = true}) (0.11; termopen before)": r"\bterm\s*=\s*true\b",
}


def uses() -> list[tuple[str, int, str, bool]]:
    """(file, line, what, guarded) for each use of a newer API in lua/ and plugin/ (comments skipped)."""
    found = []
    for path in sorted([*ROOT.glob("lua/**/*.lua"), *ROOT.glob("plugin/*.lua")]):
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            code = line.split("--", 1)[0]
            for what, pattern in NEWER_THAN_0_10.items():
                if re.search(pattern, code):
                    above = lines[max(0, number - 1 - GUARD_LINES) : number]
                    guarded = any(GUARD.search(earlier.split("--", 1)[0]) for earlier in above)
                    found.append((str(path.relative_to(ROOT)), number, what, guarded))
    return found


def test_every_api_newer_than_0_10_is_behind_a_version_check() -> None:
    unguarded = [f"{file}:{line}: {what}" for file, line, what, guarded in uses() if not guarded]
    assert unguarded == [], "newer than the minimum Neovim, unguarded:\n" + "\n".join(unguarded)


def test_the_check_sees_the_guarded_uses_there_are() -> None:
    # The patterns match real code: today's guarded uses (UTF-16 lengths, terminal jobs) are found.
    seen = {(file, what) for file, _, what, guarded in uses() if guarded}
    assert ("lua/gemini_companion/context/init.lua", "str_utfindex / str_byteindex with an encoding (0.11)") in seen
    assert (
        "lua/gemini_companion/agents/terminal/native.lua",
        "jobstart({term = true}) (0.11; termopen before)",
    ) in seen


def test_the_plugin_refuses_older_neovims_in_one_line() -> None:
    text = (ROOT / "plugin" / "gemini_companion.lua").read_text(encoding="utf-8")
    assert "has('nvim-0.10') == 0" in text and "needs Neovim >= 0.10" in text
