"""The thin pynvim entry point of the plugin's own host (boot.py puts it on the package there only).

The companion (started early by boot.py, or made here) gets pynvim's editor;
the server's own modules load on its worker thread.
Two functions carry every call from Lua: `GeminiCompanionNotify` (async, never
blocks Neovim) and `GeminiCompanionRequest` (sync, for the few calls that must
finish first, such as `stop` on VimLeavePre). It needs no manifest entry at all:
host.lua starts this host itself (through boot.py).
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import msgpack
import pynvim
from pynvim.compat import unicode_errors_default

PACKER_BYTES = 256 * 1024  # msgpack's Packer starts with this buffer and only ever grows it


def _text_size(value: Any, depth: int = 0) -> int:
    """Characters of the strings in `value` (arguments to Lua: a few levels deep at most)."""
    if isinstance(value, str):
        return len(value)
    if depth > 4:
        return 0
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return sum(_text_size(item, depth + 1) for item in value)
    return 0


class _Editor:
    """Neovim as seen from any thread of the host."""

    def __init__(self, nvim: pynvim.Nvim) -> None:
        self._nvim = nvim

    def lua(self, code: str, *args: Any) -> None:
        def run() -> None:
            self._nvim.exec_lua(code, *args, async_=True)
            if _text_size(args) > PACKER_BYTES:
                self._fresh_packer()

        self._nvim.async_call(run)

    def _fresh_packer(self) -> None:
        """pynvim's msgpack Packer keeps the buffer of the largest message it packed (2 MiB after
        a 1 MB review) for the host's life: a fresh one gives it back. pynvim's own attribute
        chain; where it differs, the memory simply stays."""
        session = getattr(self._nvim, "_session", None)
        stream = getattr(getattr(session, "_async_session", None), "_msgpack_stream", None)
        if stream is not None and isinstance(getattr(stream, "_packer", None), msgpack.Packer):
            stream._packer = msgpack.Packer(unicode_errors=unicode_errors_default)

    def request(self, code: str, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()

        def run() -> None:
            try:
                future.set_result(self._nvim.exec_lua(code, *args))
            except Exception as err:  # noqa: BLE001 - handed to the waiting thread
                future.set_exception(err)

        self._nvim.async_call(run)
        return future


class GeminiCompanionPlugin:
    def __init__(self, nvim: pynvim.Nvim) -> None:
        from gemini_companion import companion  # loaded already when boot.py started it early

        self._companion = companion.attach(_Editor(nvim))

    @pynvim.function("GeminiCompanionNotify", sync=False)
    def notify(self, args: list[Any]) -> None:
        self._companion.run(*_call(args))

    @pynvim.function("GeminiCompanionRequest", sync=True)
    def request(self, args: list[Any]) -> Any:
        return self._companion.handle(*_call(args))


def _call(args: list[Any]) -> tuple[str, dict[str, Any]]:
    """A call from host.lua: the method's name and its parameters."""
    return args[0], (args[1] if len(args) > 1 else None) or {}


pynvim.plugin(GeminiCompanionPlugin)  # imported by boot.py only, in the plugin's own host
