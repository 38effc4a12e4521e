"""A tiny FUSE file system in pure Python (no package) that can be made to hang, for tests.

It opens /dev/fuse, mounts it with mount(2) and answers the kernel's FUSE protocol itself: a root
folder with a few read-only files. `hang()` makes it stop answering: from then on every request
(a stat, a lookup, an open, a read) waits in the kernel as it does on a dead network mount.
`close()` always ends it: the connection is aborted (fusectl's `abort` where it is mounted, and
closing the device in any case), so every waiter gets an error, and the mount is detached.

Needs root (or CAP_SYS_ADMIN) and /dev/fuse: `unavailable()` says why not, for a skip.
"""

from __future__ import annotations

import ctypes
import errno
import os
import select
import stat
import struct
import threading
from pathlib import Path

# Opcodes and reply layouts of include/uapi/linux/fuse.h (protocol 7.x).
LOOKUP, FORGET, GETATTR, OPEN, READ, STATFS, RELEASE = 1, 2, 3, 14, 15, 17, 18
FLUSH, INIT, OPENDIR, READDIR, RELEASEDIR, BATCH_FORGET = 25, 26, 27, 28, 29, 42
IN_HEADER = struct.Struct("<IIQQIIIHH")  # len, opcode, unique, nodeid, uid, gid, pid, extlen, pad
OUT_HEADER = struct.Struct("<IiQ")  # len, error, unique
ATTR = struct.Struct("<QQQQQQIIIIIIIIII")  # ino size blocks a/m/ctime nsecs mode nlink uid gid rdev blksize flags
ROOT = 1
MS_NOSUID, MS_NODEV, MNT_DETACH = 2, 4, 2


def unavailable() -> str | None:
    """Why a FUSE mount cannot be made here (None: it can)."""
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    if os.geteuid() != 0:
        return "mounting needs root (CAP_SYS_ADMIN)"
    try:
        os.close(os.open("/dev/fuse", os.O_RDWR))
    except OSError as err:
        return f"/dev/fuse: {err.strerror}"
    return None


class HangingFS:
    """Serves `files` (name -> bytes) at `mountpoint` until `hang()`; `close()` ends it."""

    def __init__(self, mountpoint: Path, files: dict[str, bytes]) -> None:
        self.mountpoint = mountpoint
        self.names = list(files)
        self.data = list(files.values())  # node id of a file: its index + 2
        self.hung = threading.Event()
        self.stopping = threading.Event()
        self.unanswered = 0  # requests read while hung
        self.fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
        self.libc = ctypes.CDLL(None, use_errno=True)
        options = f"fd={self.fd},rootmode=40000,user_id=0,group_id=0,allow_other".encode()
        if self.libc.mount(b"hangingfs", bytes(mountpoint), b"fuse", MS_NOSUID | MS_NODEV, options) != 0:
            err = ctypes.get_errno()
            os.close(self.fd)
            raise OSError(err, f"mount: {os.strerror(err)}")
        self.thread = threading.Thread(target=self._serve, name="hangingfs", daemon=True)
        self.thread.start()
        # The connection's number (fusectl): the mount's device minor. Asked while it answers.
        self.connection = os.minor(os.stat(mountpoint).st_dev)

    def hang(self) -> None:
        """From now on no request is answered."""
        self.hung.set()

    def close(self) -> None:
        """Abort the connection (every waiter gets an error) and detach the mount. Idempotent."""
        if self.stopping.is_set():
            return
        self.stopping.set()
        abort = Path(f"/sys/fs/fuse/connections/{self.connection}/abort")
        if abort.exists():
            abort.write_text("1")
        self.thread.join(10)  # it polls: it sees `stopping` within 0.1 s
        os.close(self.fd)  # the last descriptor of the device: the kernel aborts the connection
        self.libc.umount2(bytes(self.mountpoint), MNT_DETACH)

    def _serve(self) -> None:
        while not self.stopping.is_set():
            if not select.select([self.fd], [], [], 0.1)[0]:
                continue
            try:
                request = os.read(self.fd, 1 << 20 | 4096)
            except OSError as err:  # ENOENT: interrupted request; ENODEV: unmounted
                if err.errno == errno.ENODEV:
                    return
                continue
            _, opcode, unique, node, *_ = IN_HEADER.unpack_from(request)
            if self.hung.is_set():
                self.unanswered += 1
                continue
            if opcode in (FORGET, BATCH_FORGET):
                continue  # never answered
            error, body = self._answer(opcode, node, request[IN_HEADER.size :])
            try:
                os.write(self.fd, OUT_HEADER.pack(OUT_HEADER.size + len(body), -error, unique) + body)
            except OSError:  # the request was interrupted meanwhile
                pass

    def _attr(self, node: int) -> bytes:
        if node == ROOT:
            mode, size = stat.S_IFDIR | 0o755, 0
        else:
            mode, size = stat.S_IFREG | 0o644, len(self.data[node - 2])
        return ATTR.pack(node, size, (size + 511) // 512, 0, 0, 0, 0, 0, 0, mode, 1, 0, 0, 0, 4096, 0)

    def _known(self, node: int) -> bool:
        return node == ROOT or 2 <= node < len(self.names) + 2

    def _answer(self, opcode: int, node: int, arg: bytes) -> tuple[int, bytes]:
        """(errno, reply body) for one request. Nothing is cached by the kernel (validity 0): every
        stat and lookup comes here, as on a network file system."""
        if opcode == INIT:
            _major, minor, readahead = struct.unpack_from("<III", arg)
            # major, minor, max_readahead, flags, max_background, congestion, max_write, time_gran,
            # max_pages, map_alignment, flags2, max_stack_depth, 6 unused
            return 0, struct.pack("<IIIIHHIIHHII24x", 7, min(minor, 31), readahead, 0, 16, 12, 1 << 16, 1, 0, 0, 0, 0)
        if not self._known(node):
            return errno.ENOENT, b""
        if opcode == LOOKUP:
            name = arg.split(b"\0", 1)[0].decode()
            if node != ROOT or name not in self.names:
                return errno.ENOENT, b""
            child = self.names.index(name) + 2
            return 0, struct.pack("<QQQQII", child, 0, 0, 0, 0, 0) + self._attr(child)
        if opcode == GETATTR:
            return 0, struct.pack("<QII", 0, 0, 0) + self._attr(node)
        if opcode in (OPEN, OPENDIR):
            return 0, struct.pack("<QIi", node, 0, 0)
        if opcode == READ:
            offset, size = struct.unpack_from("<8xQI", arg)
            return 0, self.data[node - 2][offset : offset + size] if node != ROOT else b""
        if opcode == READDIR:
            offset, size = struct.unpack_from("<8xQI", arg)
            out = b""
            entries = [(".", ROOT, stat.S_IFDIR), ("..", ROOT, stat.S_IFDIR)]
            entries += [(name, i + 2, stat.S_IFREG) for i, name in enumerate(self.names)]
            for index in range(offset, len(entries)):
                name, ino, kind = entries[index]
                raw = name.encode()
                entry = struct.pack("<QQII", ino, index + 1, len(raw), kind >> 12) + raw
                entry += b"\0" * (-len(entry) % 8)
                if len(out) + len(entry) > size:
                    break
                out += entry
            return 0, out
        if opcode == STATFS:
            return 0, struct.pack("<QQQQQIII28x", 0, 0, 0, len(self.names) + 1, 0, 4096, 255, 4096)
        if opcode in (RELEASE, RELEASEDIR, FLUSH):
            return 0, b""
        return errno.ENOSYS, b""  # GETXATTR, ACCESS, LSEEK, STATX...: not supported
