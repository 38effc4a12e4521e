"""A stand-in agent for terminal tests: shows a prompt, then records every byte it is sent.

Started by the plugin in a Neovim terminal; FAKE_AGENT_LOG names the file it appends to
(raw bytes: pastes, Enter). Its environment at start goes to FAKE_AGENT_LOG + ".env".
FAKE_AGENT_SCREEN replaces what it shows first; FAKE_AGENT_STAMP names a file that gets the
time (CLOCK_MONOTONIC, ns) a paste's end arrived.
"""

import json
import os
import sys
import time
import tty

log = os.environ["FAKE_AGENT_LOG"]
with open(log + ".env.part", "w") as env:  # renamed whole: a test reading it never sees half
    json.dump(dict(os.environ), env)
os.replace(log + ".env.part", log + ".env")
tty.setraw(0)  # every byte as sent: no line editing, Enter stays \r
sys.stdout.write(os.environ.get("FAKE_AGENT_SCREEN", "fake agent\r\nType your message\r\n"))
sys.stdout.flush()
while True:
    data = os.read(0, 65536)
    if not data:
        break
    with open(log, "ab") as out:
        out.write(data)
    if b"\x1b[201~" in data and os.environ.get("FAKE_AGENT_STAMP"):  # a paste's end, on the bench's clock
        with open(os.environ["FAKE_AGENT_STAMP"], "w") as stamp:
            stamp.write(str(time.monotonic_ns()))
    if b"\x04" in data:  # Ctrl-D: exit, as the CLIs do on a second Ctrl-D
        break
