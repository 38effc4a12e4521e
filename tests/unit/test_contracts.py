"""Each contract has one home; where it must be written twice (Python and Lua, code and docs), the copies agree."""

from __future__ import annotations

import re

from conftest import ROOT
from gemini_companion import contract

LUA_ONLY = {"agents"}  # status().agents is filled by the Lua side (agents.lua)
DOC = (ROOT / "doc" / "gemini_companion.txt").read_text()
LUA = ROOT / "lua" / "gemini_companion"


def luacats_fields(source: str, cls: str) -> list[str]:
    block = source[source.index(f"---@class {cls}") :].split("\n\n", 1)[0]
    return re.findall(r"^---@field (\w+)", block, re.M)


def test_status_shape_is_the_same_in_python_lua_and_the_help():
    python = set(contract.Status.__annotations__)
    lua = set(luacats_fields((LUA / "state.lua").read_text(), "gemini_companion.Status"))
    section = DOC[DOC.index("*gemini_companion.status()*") :].split("Example,", 1)[0]
    documented = set(re.findall(r"^    (\w+) {2,}", section, re.M)) | set(re.findall(r"^    (\w+) \w", section, re.M))
    assert python == lua - LUA_ONLY
    assert python | LUA_ONLY <= documented, python | LUA_ONLY - documented


def test_every_terminal_env_key_is_set_or_unset_together():
    assert contract.ENV_KEYS == tuple(contract.TERMINAL_ENV)
    assert set(contract.terminal_env(None).values()) == {False}
    assert len(set(contract.ENV_KEYS)) == len(contract.ENV_KEYS)
    # Lua has no copy of the list: health.lua and state.lua take the keys from each snapshot; of
    # them env.lua names only the ones Lua acts on (health compares the port and token, state drops
    # the tools' two when tools are off).
    named = set(re.findall(r"'([A-Z_]+)'", (LUA / "env.lua").read_text())) & set(contract.ENV_KEYS)
    assert named <= {
        "GEMINI_CLI_IDE_SERVER_PORT",
        "GEMINI_CLI_IDE_AUTH_TOKEN",
        "GEMINI_COMPANION_MCP_URL",
        "GEMINI_COMPANION_MCP_TOKEN",
        "GEMINI_COMPANION_HOOK_ID",
        "GEMINI_COMPANION_HOOK",
    }


def test_subcommands_come_from_one_table_and_all_are_documented():
    command = (LUA / "command.lua").read_text()
    table = command[command.index("M.subcommands = {") : command.index("\n}\n", command.index("M.subcommands = {"))]
    names = {a or b for a, b in re.findall(r"^  (?:\['([\w-]+)'\]|(\w+)) = ", table, re.M)}
    assert names >= {"start", "stop", "restart", "status", "install"}
    signature = re.search(r"^:GeminiCompanion \[([\w|-]+)\]", DOC, re.M)
    assert signature and set(signature[1].split("|")) == names
    plugin = (ROOT / "plugin" / "gemini_companion.lua").read_text()
    assert "subcommand_names()" in plugin and "'restart'" not in plugin  # completion reads the table


def test_the_message_prefix_is_written_once():
    hits = [p.name for p in LUA.rglob("*.lua") if "'gemini-companion: " in p.read_text()]
    assert hits == ["message.lua"]


def test_the_install_fix_is_written_once():
    hits = [p.name for p in LUA.rglob("*.lua") if ":GeminiCompanion install (or" in p.read_text()]
    assert hits == ["host.lua"]
    python = ROOT / "rplugin" / "python3" / "gemini_companion"
    assert not [p.name for p in python.glob("*.py") if "make install" in p.read_text()]
