"""Each environment variable name the plugin sets or reads for the CLIs and its own processes
(GEMINI_*, QWEN_*) is spelled in code in one Python module (env_names.py) and one Lua module
(env.lua); every other module takes it from there. Comments and docstrings may name them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON_HOME = ROOT / "rplugin/python3/gemini_companion/env_names.py"
LUA_HOME = ROOT / "lua/gemini_companion/env.lua"
NAME = re.compile(r"\b(?:GEMINI|QWEN)_[A-Z][A-Z0-9_]*")


def python_names(source: str) -> set[str]:
    """Names in the string constants of Python code, docstrings left out."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {
        name
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
        for name in NAME.findall(node.value)
    }


def lua_names(source: str) -> set[str]:
    """Names in Lua code, `--` comments left out."""
    return {name for line in source.splitlines() for name in NAME.findall(line.split("--", 1)[0])}


def spelled() -> dict[str, set[str]]:
    """Module -> the names it spells in code."""
    found = {}
    for path in ROOT.glob("rplugin/python3/**/*.py"):
        found[str(path.relative_to(ROOT))] = python_names(path.read_text(encoding="utf-8"))
    for path in [*ROOT.glob("lua/**/*.lua"), *ROOT.glob("plugin/*.lua")]:
        found[str(path.relative_to(ROOT))] = lua_names(path.read_text(encoding="utf-8"))
    return {module: names for module, names in found.items() if names}


def test_env_names_are_spelled_only_in_their_two_homes() -> None:
    homes = {str(PYTHON_HOME.relative_to(ROOT)), str(LUA_HOME.relative_to(ROOT))}
    elsewhere = {module: sorted(names) for module, names in spelled().items() if module not in homes}
    assert elsewhere == {}, "spell these through env_names.py / env.lua instead"


def test_the_homes_hold_the_names_both_sides_use() -> None:
    python, lua = spelled()[str(PYTHON_HOME.relative_to(ROOT))], spelled()[str(LUA_HOME.relative_to(ROOT))]
    # The names both sides act on: the hook's key, the tools' URL and token, the start parameters.
    for name in ("GEMINI_COMPANION_HOOK_ID", "GEMINI_COMPANION_MCP_URL", "GEMINI_COMPANION_MCP_TOKEN"):
        assert name in python and name in lua
    assert "GEMINI_COMPANION_START" in python and "GEMINI_COMPANION_START" in lua


def test_the_check_finds_a_name_in_code_and_not_in_docs() -> None:
    assert python_names('"""QWEN_HOME is read."""\nx = "GEMINI_CLI_IDE_PID"  # QWEN_X\n') == {"GEMINI_CLI_IDE_PID"}
    assert python_names('f"{a} and ${{GEMINI_COMPANION_MCP_URL:-}}"') == {"GEMINI_COMPANION_MCP_URL"}
    assert lua_names("local x = vim.env.QWEN_HOME -- GEMINI_CLI_HOME\n") == {"QWEN_HOME"}
