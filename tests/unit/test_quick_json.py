"""programs/quick_json.py, the hook program's JSON: read as `json.loads` reads and written as
`json.dumps` writes, and the hook's start imports none of the modules it exists to avoid."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from gemini_companion.programs import quick_json

ROOT = Path(__file__).resolve().parents[2]
TEXTS = [
    "{}",
    ' {"a":1} ',
    "[1, 2.5e3, -0, true, false, null]",
    "NaN",
    "-Infinity",
    '{"a": "\\ud800", "b": "\\ud83d\\ude00", "c": "\\u0000"}',
    '{"a":1} x',
    "",
    "{",
    "1 2",
    "\ufeff{}",
    '{"a":1}\x00',
    ' \n\t{"k": "v"}\r\n',
    '{"a": 1, "a": 2}',
    '"\x01"',
    "[" * 50 + "]" * 50,
]


def outcome(read, text):
    try:
        return ("value", repr(read(text)))
    except ValueError:
        return ("refused",)
    except RecursionError:
        return ("too deep",)


@pytest.mark.parametrize("text", TEXTS)
def test_a_text_is_read_as_json_reads_it(text):
    assert outcome(quick_json.loads, text) == outcome(json.loads, text)


def test_random_texts_are_read_as_json_reads_them():
    pieces = ['{"', '"', ":", ",", "[", "]", "{", "}", "1", "-", ".5", "e3", "null", "tru", "true", " "]
    pieces += ["\\u", "d8", "00", "\\"]
    rng = random.Random(31)
    for _ in range(20000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 12)))
        assert outcome(quick_json.loads, text) == outcome(json.loads, text), text


def test_nesting_past_pythons_reader_is_refused_as_json_refuses_it():
    deep = "[" * 100_000 + "]" * 100_000
    assert outcome(quick_json.loads, deep) == outcome(json.loads, deep) == ("too deep",)


def test_the_hooks_values_are_written_as_json_writes_them():
    value = {"event": "turn-start", "agent": None, "tool_input": {"path": "é\x00\ud800 \U0001f600"}, "ok": True, "n": 3}
    assert quick_json.dumps(value) == json.dumps(value)
    assert json.loads(quick_json.dumps(value)) == value


def test_the_hook_program_starts_without_the_modules_it_avoids():
    """Every CLI event starts the hook afresh: json's re, socket's enum and typing cost it 25 ms."""
    hook = ROOT / "rplugin/python3/gemini_companion/programs/hook.py"
    command = [sys.executable, "-I", "-S", "-X", "importtime", str(hook), "tool"]
    run = subprocess.run(command, input=b"{}", capture_output=True, check=True)
    lines = run.stderr.decode().splitlines()
    imported = {line.split("|")[-1].strip() for line in lines if line.startswith("import time:")}
    assert "gemini_companion.programs.hook" in imported or "gemini_companion.files" in imported
    assert not imported & {"json", "re", "socket", "enum", "typing"}
    assert run.stdout == b"{}\n"
