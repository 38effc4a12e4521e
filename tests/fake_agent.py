"""A stand-in agent for terminal tests: shows a prompt, then records every byte it is sent.

Started by the plugin in a Neovim terminal; FAKE_AGENT_LOG names the file it appends to
(raw bytes: pastes, Enter). Its environment at start goes to FAKE_AGENT_LOG + ".env".
FAKE_AGENT_SCREEN replaces what it shows first.
"""

import json
import os
import sys
import tty

log = os.environ["FAKE_AGENT_LOG"]
with open(log + ".env", "w") as env:
    json.dump(dict(os.environ), env)
tty.setraw(0)  # every byte as sent: no line editing, Enter stays \r
sys.stdout.write(os.environ.get("FAKE_AGENT_SCREEN", "fake agent\r\nType your message\r\n"))
sys.stdout.flush()
while True:
    data = os.read(0, 65536)
    if not data:
        break
    with open(log, "ab") as out:
        out.write(data)
    if b"\x04" in data:  # Ctrl-D: exit, as the CLIs do on a second Ctrl-D
        break
