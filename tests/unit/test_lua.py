"""The Lua unit tests (tests/unit/lua/*_spec.lua), run by a headless Neovim with -l."""

from __future__ import annotations

import os
import subprocess

from conftest import ROOT, nvim_binary


def test_lua_units_pass(tmp_path):
    home = {key: str(tmp_path / key.lower()) for key in ("HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME")}
    run = subprocess.run(
        [nvim_binary(), "--clean", "-l", str(ROOT / "tests" / "unit" / "lua" / "run.lua"), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **home},  # nothing of the real HOME is read or written
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert " passed" in run.stdout + run.stderr, run.stdout + run.stderr
