"""`make test` on a machine without a tool it needs stops in one line naming the tool and its package."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("luacheck", "tmux", "git", "node", "npm")


def run_make(tmp_path: Path, present: list[str], target: str = "test") -> subprocess.CompletedProcess[str]:
    """`make -n <target>` with a PATH that holds only bash, make and `present` (-n: nothing runs
    when the check passes; the check itself runs at parse time either way)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ["bash", "make", "env", *present]:
        found = shutil.which(tool)
        assert found, f"{tool} is needed to run this test"
        (bin_dir / tool).symlink_to(found)
    return subprocess.run(
        ["make", "-n", target], cwd=ROOT, env={"PATH": str(bin_dir)}, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("absent", TOOLS)
def test_each_missing_tool_is_named_with_its_package_in_one_line(tmp_path: Path, absent: str) -> None:
    done = run_make(tmp_path, [tool for tool in TOOLS if tool != absent])
    package = {"luacheck": "lua-check", "node": "nodejs"}.get(absent, absent)
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode != 0
    assert len(lines) == 1, lines
    assert f"missing {absent} ({package})" in lines[0]


def test_all_missing_are_named_at_once_and_lint_needs_only_its_own(tmp_path: Path) -> None:
    done = run_make(tmp_path, [])
    assert done.returncode != 0
    assert "luacheck (lua-check), tmux (tmux), git (git), node (nodejs), npm (npm)" in done.stderr
    (tmp_path / "lint").mkdir()
    lint = run_make(tmp_path / "lint", ["node", "npm"], "lint")
    assert "missing luacheck (lua-check):" in lint.stderr and "tmux" not in lint.stderr


def test_with_every_tool_the_check_passes(tmp_path: Path) -> None:
    done = run_make(tmp_path, list(TOOLS))
    assert "missing" not in done.stderr, done.stderr
