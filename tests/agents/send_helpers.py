"""The hostile selection and file name the send tests paste, what each is shown as, and the fake
agent that records what arrives (tests/agents/test_send_hostile.py, its real-CLI twin and
test_placeholders.py share them)."""

from __future__ import annotations

import codecs
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import HARNESS, Editor, Sandbox, wait_for

# Every way a selection could try to act: the paste's end and start markers, CSI/OSC/DCS sequences,
# keys (^C ^D ^U ESC CR BEL BS NUL DEL), CRLF, C1 controls (8-bit CSI/OSC/NEL, as UTF-8 and as raw
# bytes), bytes that are not UTF-8 (lone, surrogate, overlong, truncated), @references the CLIs
# would attach, a fence, and text that must stay as it is (TAB, LF, non-ASCII, a lone @).
HOSTILE_LINES = [
    b"def f():  # paste end \x1b[201~ then Enter \r and more text",
    b"\x1b[200~ a nested paste start, \x1b[201~\r\x03 and its end",
    b"csi \x1b[31mred\x1b[0m \x1b[2J\x1b[H osc \x1b]52;c;aGk=\x07 osc-st \x1b]0;title\x1b\\ dcs \x1bP1$qm\x1b\\",
    b"keys ^C\x03 ^D\x04 ^U\x15 ^Z\x1a ^S\x13 ^Q\x11 esc\x1b bel\x07 bs\x08 nul\x00 del\x7f ^[O\x1bOA",
    b"a CRLF line\r",
    b"c1 \xc2\x9b31m csi8 \xc2\x9d0;x\xc2\x9c osc8 \xc2\x85 nel \xc2\x80 \xc2\x9f",
    b"raw \x9b31m \x9d \xff\xfe invalid \xed\xa0\x80 surrogate \xe0\x80\x80 overlong \xf4\x90\x80\x80 big \xe2\x82",
    b"refs @secret.txt @./secret.txt mail@secret.txt \\@secret.txt @~/.ssh/id_rsa @/etc/passwd @",
    b"\tkept: tab, \xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80 \xc2\xa0nbsp ``` fence",
    b"/about",
]


# A file name carrying the same kind of bytes (no NUL or slash can be in one).
HOSTILE_NAME = b"evil\x1b[201~\r\x03\x15 \x1b]0;x\x07\n\t\xc2\x9b\xff @secret.txt.py"


def _per_byte(error: UnicodeError) -> tuple[str, int]:
    assert isinstance(error, UnicodeDecodeError)
    return "\ufffd" * (error.end - error.start), error.end


codecs.register_error("gemini_companion_per_byte", _per_byte)


def shown(raw: bytes, one_line: bool = False) -> str:
    """The documented mapping: CRLF -> LF; LF and TAB kept (not in a name); every other C0 control
    -> U+2400 + code, DEL -> U+2421; C1 controls and each byte that is not UTF-8 -> U+FFFD."""
    raw = raw.replace(b"\r\n", b"\n")
    text = raw.decode("utf-8", "gemini_companion_per_byte")
    kept = "" if one_line else "\n\t"
    out = []
    for char in text:
        code = ord(char)
        if char in kept:
            out.append(char)
        elif code < 0x20:
            out.append(chr(0x2400 + code))
        elif code == 0x7F:
            out.append("\u2421")
        elif 0x80 <= code <= 0x9F:
            out.append("\ufffd")
        else:
            out.append(char)
    return "".join(out)


def snippet(name: bytes, where: str, lines: list[bytes], filetype: str, prompt: str = "") -> str:
    """What :GeminiSend pastes: every @ of the name and the code gets a backslash."""
    fence = "```"
    while any(fence.encode() in line for line in lines):  # one the code cannot close
        fence += "`"
    code = shown(b"\n".join(lines))
    body = f"From {shown(name, one_line=True)} ({where}):\n{fence}{filetype}\n{code}\n{fence}\n"
    return body.replace("@", "\\@") + prompt


PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"


def fake_agent(log: Path, bracketed: bool = True) -> dict[str, Any]:
    screen = ("\x1b[?2004h" if bracketed else "") + "fake agent\r\nType your message\r\n"
    return {
        "cmd": [sys.executable, str(HARNESS / "fake_agent.py")],
        "env": {"FAKE_AGENT_LOG": str(log), "FAKE_AGENT_SCREEN": screen},
    }


def received(log: Path) -> bytes:
    return log.read_bytes() if log.exists() else b""


def pastes(data: bytes) -> list[bytes]:
    """The bracketed pastes in `data`; fails when any byte is outside one (or an Enter ends `data`)."""
    found = re.findall(rb"\x1b\[200~(.*?)\x1b\[201~", data, re.DOTALL)
    assert b"".join(PASTE_START + p + PASTE_END for p in found) == data, data
    return found


def wait_started(editor: Editor, log: Path) -> None:
    wait_for(lambda: Path(str(log) + ".env").exists(), what="the agent to start")
    wait_for(lambda: editor.status()["agents"], what="the agent listed")


def editing_with_agent(editor_factory: Callable[..., Editor], sandbox: Sandbox) -> tuple[Editor, Path]:
    """A Neovim editing project/app.py (three lines), the fake agent running beside it, the focus
    back in the file; and the agent's log."""
    log = sandbox.base / "agent.log"
    (sandbox.project / "app.py").write_text("import os\nx = 1\ny = 2\n")
    editor = editor_factory(setup={"agents": {"fake": fake_agent(log)}, "default_agent": "fake"})
    editor.wait_state("running")
    editor.nvim.command("edit app.py")
    editor.nvim.command("Gemini")
    wait_started(editor, log)
    editor.nvim.command("wincmd p")
    return editor, log
