"""Neovim as the host's features see it, and the stand-in they talk to before pynvim is up.

The host serves before it loads pynvim (see programs/boot.py): what the companion tells Neovim
meanwhile waits in a `PendingEditor`, in order, and goes out once pynvim's editor is attached.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any, Protocol


class Editor(Protocol):
    def lua(self, code: str, *args: Any) -> None:
        """Run Lua in Neovim without waiting; callable from any thread."""

    def request(self, code: str, *args: Any) -> Future[Any]:
        """Run Lua in Neovim; the future gets its return value. Callable from any thread."""


class PendingEditor:
    """An Editor whose calls wait for `attach`, then pass straight through."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._target: Editor | None = None
        self._waiting: list[tuple[str, tuple[Any, ...], Future[Any] | None]] = []

    def attach(self, target: Editor) -> None:
        with self._lock:  # held while flushing: nothing overtakes what waited
            for code, args, future in self._waiting:
                if future is None:
                    target.lua(code, *args)
                else:
                    _chain(target.request(code, *args), future)
            self._waiting = []
            self._target = target

    def lua(self, code: str, *args: Any) -> None:
        with self._lock:
            if self._target is None:
                self._waiting.append((code, args, None))
                return
        self._target.lua(code, *args)

    def request(self, code: str, *args: Any) -> Future[Any]:
        with self._lock:
            if self._target is None:
                future: Future[Any] = Future()
                self._waiting.append((code, args, future))
                return future
        return self._target.request(code, *args)


def _chain(source: Future[Any], target: Future[Any]) -> None:
    def copy(done: Future[Any]) -> None:
        if target.done():  # its caller gave up meanwhile
            return
        if done.cancelled():
            target.cancel()
            return
        error = done.exception()
        if error is not None:
            target.set_exception(error)
        else:
            target.set_result(done.result())

    source.add_done_callback(copy)
