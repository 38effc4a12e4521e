"""A review driven through the real Gemini IDE client, and the file writes and waits around it
(the review tests share these)."""

from __future__ import annotations

import queue
from pathlib import Path
from typing import Any

import psutil

from conftest import TIMEOUT, Editor, NodeClient, wait_for

DIFF = "require('gemini_companion.review')"


class Review:
    """An editor and a connected Gemini client, with helpers for reviews."""

    def __init__(self, editor: Editor, client: NodeClient) -> None:
        self.editor = editor
        self.client = client
        self.seen: list[dict[str, Any]] = []  # ide/diff* notifications the client received

    def open(self, path: Path | str, content: str) -> int:
        """Ask for a review (openDiff); returns the request id, once the tab is there."""
        request = self.client.send("openDiff", filePath=str(path), newContent=content)
        wait_for(lambda: self.info(path), what=f"the review tab for {path}")
        return request

    def info(self, path: Path | str) -> dict[str, int] | None:
        return self.editor.lua(f"return {DIFF}.info(...)", str(path))

    def outcome(self, request: int) -> dict[str, Any]:
        reply = self.client.reply(request)
        assert reply["ok"], reply
        return reply["result"]

    def error(self, request: int) -> str:
        reply = self.client.reply(request)
        assert not reply["ok"], reply
        return reply["error"]

    def proposal_window(self, path: Path | str) -> None:
        """Make the proposal's window current, as a user reviewing it would."""
        info = self.info(path)
        assert info is not None
        self.editor.lua(
            "vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1])",
            info["proposal"],
        )

    def proposal_lines(self, path: Path | str) -> list[str]:
        info = self.info(path)
        assert info is not None
        return self.editor.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", info["proposal"])

    def closed(self, path: Path | str) -> bool:
        """The review is over and its buffers are gone."""
        return self.info(path) is None and not self.editor.lua(
            "for _, b in ipairs(vim.api.nvim_list_bufs()) do"
            "  if vim.api.nvim_buf_get_name(b):find('gemini://', 1, true) then return true end "
            "end return false"
        )

    def notifications(self, method: str, path: Path | str) -> list[dict[str, Any]]:
        while True:
            try:
                event = self.client.events.get_nowait()
            except queue.Empty:
                break
            if event["event"] == "notification":
                self.seen.append(event)
        return [n for n in self.seen if n["method"] == method and n["params"]["filePath"] == str(path)]

    def tool(self, name: str, **args: Any) -> dict[str, Any]:
        return self.client.call("callTool", name=name, args=args)


def write(path: Path, data: bytes) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


def settle(review: Review, path: Path) -> None:
    """Nothing still in flight: a later round trip has been through Neovim and the host."""
    wait_for(lambda: review.closed(path), what=f"the review of {path} to close")
    wait_for(lambda: not review.editor.status()["diffs"], what="the host to forget the review")


def tabs(editor: Editor) -> int:
    return editor.lua("return #vim.api.nvim_list_tabpages()")


def edit_proposal(review: Review, path: Path, text: str) -> None:
    """Type into the proposal, as a user would (TextChanged fires)."""
    review.proposal_window(path)
    review.editor.nvim.input(f"ggcc{text}<Esc>")
    wait_for(lambda: review.proposal_lines(path)[0] == text, what="the typed edit")


def kill_host(editor: Editor) -> None:
    host = psutil.Process(editor.status()["host_pid"])
    host.kill()
    host.wait(TIMEOUT)
    editor.wait_state("failed")
