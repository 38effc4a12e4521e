"""Discovery files: where Gemini CLI and Qwen Code look for this server.

Standard library only, so `health_probe.py` can use it from a plain interpreter, and only the
cheap part of it: the port file is written with this module before anything else loads, so paths
are strings (pathlib costs 4 ms), and neither `typing` nor `socket` is imported (3 ms each).
Files hold the auth token: they are created 0600 under an exclusive temporary
name and renamed into place, relative to a checked directory descriptor, so no
write ever goes through a symlink or lands in a directory another user controls.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Callable

from gemini_companion import env_names, files
from gemini_companion.owner import OWNER_FIELD, OWNER_START_FIELD, pid_alive, process_start

TYPE_CHECKING = False  # typing's own costs 3 ms at import; mypy reads this name as typing's
if TYPE_CHECKING:
    from typing import Any

GEMINI_FILE_RE = re.compile(r"^gemini-ide-server-(\d+)-(\d+)\.json$")
MAX_PID = 2**22  # PID_MAX_LIMIT on 64-bit Linux
GEMINI_AGENT_FILE_RE = re.compile(r"^gemini-ide-server-(\d+)\.json$")  # an agent's own (access.py)
QWEN_FILE_RE = re.compile(r"^(\d+)\.lock$")
IDE_INFO = {"name": "neovim", "displayName": "Neovim"}
# Run by a CLI that cannot reach us over HTTP (in a container it dials host.docker.internal).
STDIO_BRIDGE = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "programs", "stdio_bridge.py")
# A discovery file is read only if it is this small (ours: under 1 KB, plus the workspace roots).
MAX_FILE_BYTES = 1024 * 1024


class DiscoveryError(Exception):
    """A discovery directory or file cannot be used safely."""


def node_tmpdir(environ: dict[str, str] | None = None) -> str:
    """Node's `os.tmpdir()` on POSIX: TMPDIR, TMP, TEMP, else /tmp; one trailing slash dropped."""
    env = os.environ if environ is None else environ
    path = env.get("TMPDIR") or env.get("TMP") or env.get("TEMP") or "/tmp"
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    return path


def gemini_dir(environ: dict[str, str] | None = None) -> str:
    # Node's path.join, which the CLI searches with, normalizes the same way.
    return os.path.normpath(os.path.join(node_tmpdir(environ), "gemini", "ide"))


def qwen_dir(environ: dict[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    home = env.get(env_names.QWEN_HOME) or os.path.join(os.path.expanduser("~"), ".qwen")
    return os.path.normpath(os.path.join(home, "ide"))


def gemini_file_name(ide_pid: int, port: int) -> str:
    return f"gemini-ide-server-{ide_pid}-{port}.json"


def qwen_file_name(port: int) -> str:
    return f"{port}.lock"


def check_dir(path: str) -> str | None:
    """Why `path` is unsafe for secrets (None when it is fine).

    It must be a real directory (not a symlink), owned by us, and not writable by
    group or others unless the sticky bit is set.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return f"{path} does not exist"
    except OSError as err:
        return f"{path}: {err.strerror}"
    return _check_dir_stat(path, st)


def _check_dir_stat(path: str, st: os.stat_result) -> str | None:
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symlink"
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if st.st_uid != os.getuid():
        return f"{path} is owned by uid {st.st_uid}, not by you (uid {os.getuid()})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        return f"{path} is writable by others (mode {stat.S_IMODE(st.st_mode):o}) without the sticky bit"
    return None


def ensure_dir(path: str) -> None:
    """Create `path` and its parent (mode 0700) inside an existing base, and check both.

    The base itself (TMPDIR, or the Qwen home's parent) is not ours to create or judge:
    /tmp is root's, and a TMPDIR that points nowhere is reported, not conjured.
    """
    parent = os.path.dirname(path) or os.curdir  # a relative TMPDIR or QWEN_HOME: "." at the top
    base = os.path.dirname(parent) or os.curdir
    if not os.path.isdir(base):
        raise DiscoveryError(f"cannot use {path}: {base} does not exist or is not a directory")
    for directory in (parent, path):
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass
        except OSError as err:
            raise DiscoveryError(f"cannot create {directory}: {err.strerror}") from err
        problem = check_dir(directory)
        if problem:
            raise DiscoveryError(f"refusing to use {directory}: {problem}")


def _open_dir(path: str) -> int:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as err:
        raise DiscoveryError(f"cannot use {path}: {err.strerror}") from None
    problem = _check_dir_stat(path, os.fstat(fd))
    if problem:
        os.close(fd)
        raise DiscoveryError(f"refusing to use {path}: {problem}")
    return fd


def write_secret_json(directory: str, name: str, data: dict[str, Any]) -> str:
    """Write `data` to directory/name atomically, mode 0600 from the first byte. Not synced to the
    disk: the file describes a live process (a reader sees it whole once renamed, from the page
    cache), a crash ends that process too, and each fsync cost a client's wait 2-10 ms (the
    discovery file at startup, an agent's three files before its spawn). A crash may leave the
    name empty: the sweep takes such a file for stale (is_stale)."""
    payload = json.dumps(data).encode()
    dfd = _open_dir(directory)
    temp = f".{name}.{os.urandom(6).hex()}.tmp"  # not `secrets`: see launch.new_token
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dfd)
        try:
            os.write(fd, payload)
        finally:
            os.close(fd)
        # rename() replaces a symlink at `name` instead of following it.
        os.rename(temp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except OSError as err:
        try:
            os.unlink(temp, dir_fd=dfd)
        except OSError:
            pass
        raise DiscoveryError(f"cannot write {os.path.join(directory, name)}: {err.strerror}") from err
    finally:
        os.close(dfd)
    return os.path.join(directory, name)


def remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class Advertisement:
    """What both CLIs need to find and trust this server; never changed once made. (A plain class:
    dataclasses or typing's NamedTuple would cost the port file, written before the server loads,
    milliseconds of imports.)"""

    __slots__ = ("hooks_token", "ide_pid", "nvim_pid", "port", "qwen_token", "token", "tools_token", "workspace")

    def __init__(
        self,
        port: int,
        token: str,  # in the Gemini file
        qwen_token: str,  # in the Qwen lock file: a different one tells the server which CLI connected
        tools_token: str,  # for the model's editor tools (tools.py), given to the CLIs' settings
        hooks_token: str,  # for the CLIs' lifecycle hooks (hook.py -> changes.py)
        ide_pid: int,
        nvim_pid: int,
        workspace: list[str],
    ) -> None:
        self.port = port
        self.token = token
        self.qwen_token = qwen_token
        self.tools_token = tools_token
        self.hooks_token = hooks_token
        self.ide_pid = ide_pid
        self.nvim_pid = nvim_pid
        self.workspace = workspace

    def with_workspace(self, workspace: list[str]) -> Advertisement:
        return Advertisement(
            self.port,
            self.token,
            self.qwen_token,
            self.tools_token,
            self.hooks_token,
            self.ide_pid,
            self.nvim_pid,
            workspace,
        )

    @property
    def workspace_path(self) -> str:
        return os.pathsep.join(self.workspace)

    def gemini_stdio(self) -> dict[str, Any]:
        return stdio_command(os.path.join(gemini_dir(), gemini_file_name(self.ide_pid, self.port)))

    def qwen_stdio(self) -> dict[str, Any]:
        return stdio_command(os.path.join(qwen_dir(), qwen_file_name(self.port)))

    def gemini_payload(self) -> dict[str, Any]:
        return {
            "port": self.port,
            "workspacePath": self.workspace_path,
            "authToken": self.token,
            "ideInfo": IDE_INFO,
            "stdio": self.gemini_stdio(),
            OWNER_FIELD: os.getpid(),
            OWNER_START_FIELD: process_start(os.getpid()),
        }

    def qwen_payload(self) -> dict[str, Any]:
        return {
            "port": self.port,
            "workspacePath": self.workspace_path,
            "authToken": self.qwen_token,
            # Qwen deletes lock files whose ppid is dead: Neovim outlives nothing we serve.
            "ppid": self.nvim_pid,
            "ideInfo": IDE_INFO,
            "ideName": IDE_INFO["displayName"],
            "stdio": self.qwen_stdio(),
            OWNER_FIELD: os.getpid(),
            OWNER_START_FIELD: process_start(os.getpid()),
        }


def stdio_command(discovery_file: str) -> dict[str, Any]:
    """The bridge command for a discovery file: argv is world-readable, so it names the file, not the token."""
    # -I: no user site or PYTHON* variables, and the plugin's own modules never shadow the stdlib.
    return {"command": sys.executable, "args": ["-I", STDIO_BRIDGE, discovery_file]}


def write_all(ad: Advertisement) -> tuple[list[str], list[str]]:
    """Write the Gemini and Qwen files; return the paths written and one error line per
    failure, naming the CLI that cannot find the server ("Qwen Code cannot find ...")."""
    written: list[str] = []
    errors: list[str] = []
    targets = [
        ("Gemini CLI", gemini_dir(), gemini_file_name(ad.ide_pid, ad.port), ad.gemini_payload()),
        ("Qwen Code", qwen_dir(), qwen_file_name(ad.port), ad.qwen_payload()),
    ]
    for cli, directory, name, payload in targets:
        try:
            ensure_dir(directory)
            written.append(write_secret_json(directory, name, payload))
        except DiscoveryError as err:
            errors.append(f"{cli} cannot find this server: {err}")
    return written, errors


def port_listening(port: int) -> bool:
    import socket  # only for another's file: the port file's path does not pay for it

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.3):
            return True
    except OSError:
        return False


def is_stale(path: str, name_pid: int | None, port: int | None) -> bool:
    """Whether `path` (a regular file of ours) names a server that is gone. `port` None: an agent's
    file (access.py) or a hook key file (hook_keys.py), judged by its owner field alone (and
    `name_pid`, an agent file's number)."""
    data = _read_own_json(path)
    if data is None:
        return False
    owner = data.get(OWNER_FIELD)
    if isinstance(owner, int):
        started = data.get(OWNER_START_FIELD)
        return owner != os.getpid() and not pid_alive(owner, started if isinstance(started, int) else None)
    if port is None:
        # Empty: a crash before its bytes reached the disk (write_secret_json), under a name nobody
        # else writes (a hook key file; an agent's, numbered above any PID: access.py).
        return not data and (name_pid is None or name_pid > MAX_PID)
    # Someone else's file: only when nobody can be behind it.
    pid = name_pid if name_pid is not None else data.get("ppid")
    pid_dead = not isinstance(pid, int) or not pid_alive(pid)
    return pid_dead and not port_listening(port)


def _read_own_json(path: str) -> dict[str, Any] | None:
    """The JSON object in `path` ({} for other JSON) if it is a small regular file of ours, judged on
    the file opened (never through a link, never waiting on a FIFO put in its place); else None."""
    try:
        text = files.read(path, MAX_FILE_BYTES, follow=False, owner=os.getuid())[0]
        data = json.loads(text) if text else {}  # empty: see write_secret_json
    except (OSError, ValueError, RecursionError):  # RecursionError: nested deeper than Python's reader goes
        return None
    return data if isinstance(data, dict) else {}


def sweep_stale() -> list[str]:
    """Delete this user's discovery files whose server is gone; return what was removed."""
    removed: list[str] = []
    # Each kind of file, and what its name says: (PID, port). An agent's file says neither.
    kinds: list[tuple[str, re.Pattern[str], Callable[[re.Match[str]], tuple[int | None, int | None]]]] = [
        (gemini_dir(), GEMINI_FILE_RE, lambda m: (int(m[1]), int(m[2]))),
        (gemini_dir(), GEMINI_AGENT_FILE_RE, lambda m: (int(m[1]), None)),
        (qwen_dir(), QWEN_FILE_RE, lambda m: (None, int(m[1]))),
    ]
    for directory, pattern, parse in kinds:
        if check_dir(directory):
            continue
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            match = pattern.match(name)
            if not match:
                continue
            name_pid, port = parse(match)
            path = os.path.join(directory, name)
            if is_stale(path, name_pid, port):
                remove(path)
                removed.append(path)
    return removed
