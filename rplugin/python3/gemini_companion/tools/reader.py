"""File reads off the server loop, each bounded in time: a hung mount is a one-line error and
holds up no later call."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

from gemini_companion.tools.confined import ToolError

READ_SECONDS = 5.0  # a file that gives no bytes in this time (a hung mount) is an error
MAX_HUNG_READS = 16  # reads still stuck after their time: more refuse at once (threads are not free)


class Reader:
    """Runs file reads off the server loop, each on a thread of its own, for at most
    READ_SECONDS: a read stuck in the kernel (a hung mount) cannot be cancelled, so it keeps only
    its own thread and never holds up later calls (the shared executor would, once its few workers
    all hang). While MAX_HUNG_READS reads are still stuck past their time, reads are refused at
    once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._hung = 0

    async def run(self, what: str, read: Callable[[], Any]) -> Any:
        """read()'s value, or ToolError (one line) when it does not return in time."""
        import asyncio  # here, not at the top: asyncio costs the host's startup 45 ms

        with self._lock:
            if self._hung >= MAX_HUNG_READS:
                raise ToolError(f"{self._hung} earlier file reads are still hung (a stuck mount?)")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        state = {"ended": False, "late": False}

        def work() -> None:
            try:
                value: Any = ("ok", read())
            except Exception as err:  # noqa: BLE001 - handed to the caller, who raises it
                value = ("raise", err)
            with self._lock:
                state["ended"] = True
                self._hung -= state["late"]
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
                loop.call_soon_threadsafe(settle, future, value)

        threading.Thread(target=work, name="gemini-companion-read", daemon=True).start()
        try:
            kind, value = await asyncio.wait_for(asyncio.shield(future), READ_SECONDS)
        except asyncio.TimeoutError:
            with self._lock:
                if not state["ended"]:
                    state["late"] = True
                    self._hung += 1
            raise ToolError(f"{what} gave nothing within {READ_SECONDS:g} s (a hung mount?)") from None
        if kind == "raise":
            raise value
        return value


def settle(future: Any, answer: Any) -> None:
    """Give a waiting future its answer, unless it has one (a call ended meanwhile)."""
    if not future.done():
        future.set_result(answer)
