"""PendingEditor: what the companion tells Neovim before pynvim is up goes out in order, once."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

import pytest

from gemini_companion.editor import PendingEditor


class Recorder:
    """An Editor that records calls; requests answer with their own arguments, or fail."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def lua(self, code: str, *args: Any) -> None:
        self.calls.append((code, args))

    def request(self, code: str, *args: Any) -> Future[Any]:
        self.calls.append((code, args))
        future: Future[Any] = Future()
        if code == "fail":
            future.set_exception(RuntimeError("no"))
        else:
            future.set_result(args)
        return future


def test_calls_wait_for_attach_then_go_out_in_order_and_pass_through_after():
    pending, target = PendingEditor(), Recorder()
    pending.lua("a", 1)
    answered = pending.request("b", 2)
    failed = pending.request("fail")
    pending.lua("c", 3)
    assert not answered.done() and target.calls == []
    pending.attach(target)
    assert [code for code, _ in target.calls] == ["a", "b", "fail", "c"]
    assert answered.result(1) == (2,)
    with pytest.raises(RuntimeError):
        failed.result(1)
    pending.lua("d")
    assert pending.request("e", 5).result(1) == (5,)
    assert [code for code, _ in target.calls][-2:] == ["d", "e"]


def test_calls_racing_the_attach_are_neither_lost_nor_reordered():
    pending, target = PendingEditor(), Recorder()
    count = 2000

    def caller() -> None:
        for n in range(count):
            pending.lua("n", n)

    thread = threading.Thread(target=caller)
    thread.start()
    pending.attach(target)
    thread.join(30)
    assert [args[0] for _, args in target.calls] == list(range(count))


def test_a_request_its_caller_gave_up_on_is_dropped_quietly_at_attach(caplog: pytest.LogCaptureFixture):
    pending, target = PendingEditor(), Recorder()
    given_up = pending.request("b", 1)
    given_up.cancel()
    kept = pending.request("c", 2)
    pending.attach(target)  # no InvalidStateError from a callback
    assert given_up.cancelled() and kept.result(1) == (2,)
    assert not [r for r in caplog.records if r.levelname == "ERROR"], caplog.text
