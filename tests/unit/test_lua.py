"""The Lua unit tests (tests/unit/lua/*_spec.lua), run by a headless Neovim with -l."""

from __future__ import annotations

import subprocess

from conftest import ROOT, nvim_binary


def test_lua_units_pass():
    run = subprocess.run(
        [nvim_binary(), "--clean", "-l", str(ROOT / "tests" / "unit" / "lua" / "run.lua"), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert " passed" in run.stdout + run.stderr, run.stdout + run.stderr
