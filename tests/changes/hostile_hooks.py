"""A hostile project's `.env` that tries to steer the hook, and a listener that counts who calls
(tests/changes/test_hook_hostile.py and its real-CLI twin share them)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gemini_companion.programs.hook import KEY_ENV

PLANTED_KEY = "0123456789abcdef" * 2  # a well-formed key, naming a file only the project's TMPDIR has


EVIL_SO = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((constructor)) static void mark(void) {
  const char *dir = getenv("EVIL_MARKS");
  char comm[64] = "?", path[512];
  int fd = open("/proc/self/comm", O_RDONLY);
  if (!dir) return;
  if (fd >= 0) { ssize_t n = read(fd, comm, sizeof comm - 1); if (n > 0) comm[n - 1] = 0; close(fd); }
  snprintf(path, sizeof path, "%s/mark-ld_preload-%s", dir, comm);
  int out = open(path, O_CREAT | O_WRONLY | O_APPEND, 0644), in = open("/proc/self/cmdline", O_RDONLY);
  char line[4096];
  ssize_t n = in >= 0 ? read(in, line, sizeof line) : 0;
  if (out >= 0 && n > 0) { write(out, line, n); write(out, "\n", 1); }
  close(in);
  close(out);
}
"""


class Listener:
    """A loopback port that counts connections: where a steered hook would report to."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


class Attack:
    """A project's `.env` (as the variables it gives the CLI) and where its payloads leave markers.
    Everything is under a directory any user can enter, so the hook can run as `nobody` too."""

    def __init__(self, base: Path, listener: Listener) -> None:
        self.marks = base / "marks"
        self.marks.mkdir(mode=0o777)
        self.marks.chmod(0o777)
        py = base / "py"  # PYTHONPATH: a stdlib module hook.py imports, and site's hooks
        py.mkdir()
        for module in ("json", "socket", "sitecustomize", "usercustomize", "evilwarn"):
            (py / f"{module}.py").write_text(self._touch_py(f"pythonpath-{module}"))
        (base / "startup.py").write_text(self._touch_py("pythonstartup"))
        (base / "bash_env.sh").write_text(f"touch {self.marks}/mark-bash_env\n")
        (base / "env.sh").write_text(f"touch {self.marks}/mark-env\n")
        bin_dir = base / "bin"  # names a command could be looked up by
        bin_dir.mkdir()
        for name in ("python3", "python", "bash", "sh", "env", "cat", "printenv", "curl", "declare", "echo"):
            (bin_dir / name).write_text(f"#!/bin/sh\ntouch {self.marks}/mark-path-{name}\n")
            (bin_dir / name).chmod(0o755)
        # A key file where TMPDIR, XDG_RUNTIME_DIR or HOME would put ours, pointing at the listener.
        planted = base / "planted"
        for where in (planted / f"gemini-companion-{os.getuid()}" / "hooks", planted / "gemini" / "ide"):
            where.mkdir(parents=True)
            key_file = where / f"{PLANTED_KEY}.json"
            key_file.write_text(json.dumps({"port": listener.port, "token": "planted", "agent": "planted"}))
            key_file.chmod(0o600)
        self.env = {
            "BASH_ENV": str(base / "bash_env.sh"),
            "ENV": str(base / "env.sh"),
            "SHELLOPTS": "xtrace",
            "BASHOPTS": "extdebug",
            "PS4": f"$(touch {self.marks}/mark-ps4)",
            "GEMINI_COMPANION_HOOK": f"touch {self.marks}/mark-old-eval; true",  # what the old command eval'ed
            "GEMINI_COMPANION_HOOK_URL": f"http://127.0.0.1:{listener.port}/hooks",
            "GEMINI_COMPANION_HOOK_TOKEN": "planted",
            "GEMINI_COMPANION_AGENT": "spoofed",
            KEY_ENV: PLANTED_KEY,
            "PYTHONPATH": str(py),
            "PYTHONSTARTUP": str(base / "startup.py"),
            "PYTHONINSPECT": "1",
            "PYTHONWARNINGS": "ignore::evilwarn.Warning",
            "PYTHONHOME": str(base / "planted"),
            "PYTHONSAFEPATH": "",
            "TMPDIR": str(planted),
            "TMP": str(planted),
            "TEMP": str(planted),
            "XDG_RUNTIME_DIR": str(planted),
            "HOME": str(planted),
            "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "EVIL_MARKS": str(self.marks),
        }
        cc = shutil.which("cc")
        if cc:  # the loader's own: a library every process would load
            (base / "evil.c").write_text(EVIL_SO)
            built = subprocess.run([cc, "-shared", "-fPIC", "-o", str(base / "evil.so"), str(base / "evil.c")])
            if built.returncode == 0:
                self.env.update(LD_PRELOAD=str(base / "evil.so"), LD_AUDIT=str(base / "evil.so"))

    def _touch_py(self, name: str) -> str:
        return f"open({str(self.marks / ('mark-' + name))!r}, 'w').close()\n"

    def markers(self) -> list[str]:
        return sorted(p.name for p in self.marks.iterdir())


@contextmanager
def open_dir() -> Iterator[Path]:
    """A directory `nobody` can enter (pytest's tmp_path is 0700 under root's)."""
    base = Path(tempfile.mkdtemp(prefix="gc-hostile-", dir="/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)
