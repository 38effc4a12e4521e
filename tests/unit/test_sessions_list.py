"""programs/sessions_list.py without Neovim: what it shows of a text, and what one listing reads."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from gemini_companion.programs import sessions_list


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\x00b", "a^@b"),
        ("lone \ud800 half", "lone \ufffd half"),
        ("\x1b]52;c;aGk=\x07 x", "^[]52;c;aGk=^G x"),
        ("right\u202eleft", "right<202e>left"),
        ("two\nlines\r\n\tand  tabs", "two lines and tabs"),
        ("c1\x9b[31m", "c1<9b>[31m"),
        ("", None),
        (None, None),
    ],
)
def test_a_text_is_shown_as_one_safe_line(text, expected):
    assert sessions_list.shown(text) == expected


def test_a_megabyte_of_title_is_cut():
    shown = sessions_list.shown("y" * 1_000_000)
    assert shown is not None and len(shown) == sessions_list.TEXT_MAX


def test_one_listing_reads_a_bounded_number_of_bytes(tmp_path: Path, monkeypatch):
    """Files whose first prompt follows a huge line are read through; one listing stops reading
    past READ_MAX (a folder of them would otherwise be read whole, newest 100 at 64 MiB each)."""
    monkeypatch.setattr(sessions_list, "READ_MAX", 3 * 1024 * 1024)
    monkeypatch.setattr(sessions_list, "spent", [0])
    for i in range(5):
        sid = str(uuid.uuid4())
        lines = [
            {"sessionId": sid, "projectHash": "x", "startTime": "2026-11-25T22:07:02.608Z", "kind": "main"},
            {"$set": {"messages": [{"id": "p", "type": "user", "content": [{"text": "x" * 2_000_000}]}]}},
            {"id": "u", "type": "user", "content": [{"text": f"prompt {i}"}]},
        ]
        path = tmp_path / f"session-2026-11-25T22-0{i}-{sid[:8]}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        os.utime(path, (1000 + i, 1000 + i))
    listed = sessions_list.list_gemini(str(tmp_path), 100)
    assert [s["prompt"] for s in listed] == ["prompt 4", "prompt 3"]


def test_a_sessions_id_is_listed_as_the_cli_wrote_it(tmp_path: Path):
    """The id goes back to the CLI's --resume: one in upper case (or mixed) is not lowercased."""
    sid = "ABCDEF12-" + str(uuid.uuid4())[9:].upper()
    lines = [
        {"sessionId": sid, "projectHash": "x", "startTime": "2026-11-25T22:07:02.608Z", "kind": "main"},
        {"id": "u", "type": "user", "content": [{"text": "the user's prompt"}]},
    ]
    path = tmp_path / f"session-2026-11-25T22-07-{sid[:8].lower()}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert [s["id"] for s in sessions_list.list_gemini(str(tmp_path), 100)] == [sid]
