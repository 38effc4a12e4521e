"""What `:checkhealth gemini_companion` needs to know about the Python host, as JSON on stdout.

Run as a script by the host Python (`python health_probe.py`), standard library only,
so it also works — and says what is missing — when the host lacks the plugin's
dependencies. It imports the server's `discovery.py` (also stdlib only; importing the
package loads no pynvim) so the directories it checks are exactly the ones the server uses.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import pwd
import stat
import sys
from typing import Any

# The folder holding the package (by name, not resolved: a symlinked script still finds its own).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from gemini_companion.server import discovery

# Distribution name -> module the server imports.
DEPENDENCIES = {"pynvim": "pynvim", "h11": "h11", "psutil": "psutil"}


def dependency(dist: str, module: str) -> dict[str, Any]:
    """Installed version (None when missing) and whether the module really imports."""
    try:
        version: str | None = importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        version = None
    try:
        importlib.import_module(module)
        error = None
    except Exception as err:  # noqa: BLE001 - any failure to import is the answer
        error = f"{type(err).__name__}: {err}"
    return {"name": dist, "version": version, "error": error}


def owner(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def directory(path: str, base: bool = False) -> dict[str, Any]:
    """Ownership and mode of `path`, and why it is unsafe (None when it is fine or missing).

    The base temporary directory may be shared (root-owned /tmp with the sticky
    bit) and may be a symlink; the directories under it must pass `check_dir`.
    """
    info: dict[str, Any] = {"path": path, "exists": False, "problem": None}
    try:
        st = os.stat(path) if base else os.lstat(path)
    except FileNotFoundError:
        return info
    except OSError as err:
        info["problem"] = f"{path}: {err.strerror}"
        return info
    info.update(exists=True, mode=f"{stat.S_IMODE(st.st_mode):04o}", owner=owner(st.st_uid))
    if not base:
        info["problem"] = discovery.check_dir(path)
    elif not stat.S_ISDIR(st.st_mode):
        info["problem"] = f"{path} is not a directory"
    elif st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
        info["problem"] = f"{path} is writable by others (mode {stat.S_IMODE(st.st_mode):o}) without the sticky bit"
    return info


def main() -> None:
    tmp = discovery.node_tmpdir()
    gemini = discovery.gemini_dir()
    qwen = discovery.qwen_dir()
    report = {
        "python": {"executable": sys.executable, "version": ".".join(map(str, sys.version_info[:3]))},
        "dependencies": [dependency(dist, module) for dist, module in DEPENDENCIES.items()],
        "tmpdir": {key: os.environ.get(key) for key in ("TMPDIR", "TMP", "TEMP")},
        "directories": {
            "gemini": [directory(tmp, base=True), directory(os.path.dirname(gemini) or os.curdir), directory(gemini)],
            "qwen": [directory(os.path.dirname(qwen) or os.curdir), directory(qwen)],
        },
    }
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main()
