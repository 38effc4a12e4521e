""":GeminiAdd of route names (Next.js `app/[id]/page.tsx`, SvelteKit `+page.svelte`, `(group)/`) with
the real Gemini CLI and Qwen Code under a real Neovim TUI (tmux), against the scripted model: the
model gets exactly the named file and never its siblings a glob of the name would match. Gemini CLI
reads an `@path` through a glob, so the plugin types the plain path and the scripted model reads
what the prompt says with the CLI's own read_file tool; Qwen Code reads the escaped `@path` itself.
A backslash or a final dot in a name goes to both as the plain path (Qwen's absolute); so does, to Gemini, a name
with a twin in another case (README.md beside readme.md: its glob ignores case)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from agents.tui_helpers import add_and_ask, agent_screen, one_agent
from conftest import Sandbox, wait_for
from harness.fake_model import FakeModel, Turn
from harness.tui import E2E_TIMEOUT, READY, Tui, tmux_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is needed to drive the Neovim TUI"),
]

FILES = {
    "app/[id]/page.tsx": "MK_TARGET",
    "app/i/page.tsx": "MK_SIBLING_I",  # what the glob app/[id]/page.tsx matches
    "app/d/page.tsx": "MK_SIBLING_D",
    "src/routes/+page.svelte": "MK_SVELTE",
    "app/(group)/g.tsx": "MK_GROUP",
    "lib/back\\slash.ts": "MK_BACKSLASH",  # no @ form carries it to either CLI: the plain path
    "lib/back/slash.ts": "MK_SIBLING_SLASH",  # what Gemini's reader turns the backslash into
    "lib/dot.": "MK_DOT",  # both CLIs end an @path before a final dot: the plain path
    "lib/dot": "MK_SIBLING_DOT",
    "docs/README.md": "MK_README",  # Gemini's glob ignores case: the plain path
    "docs/readme.md": "MK_SIBLING_README",
}
ASKED = "which files?"


class ReadingModel(FakeModel):
    """A model that reads each path the user's message names in a code span with read_file (as a
    real model would), one per turn, then answers."""

    def __init__(self) -> None:
        super().__init__([])
        self.todo: list[str] | None = None

    def _next_turn(self, body: dict[str, Any]) -> Turn:
        said = json.dumps(body.get("contents") or body.get("messages") or [])
        with self._lock:
            if self.todo is None and ASKED in said:
                last = (body.get("contents") or body.get("messages"))[-1]
                parts = last.get("parts") or last.get("content")
                parts = [{"text": parts}] if isinstance(parts, str) else parts
                asked = [p.get("text", "") for p in parts if ASKED in p.get("text", "")]  # not the files' text
                self.todo = re.findall(r"`([^`]+)`", "".join(asked))
            if self.todo:
                return Turn(call="read_file", args={"file_path": self.todo.pop(0)})
        return Turn(text="Seen.")


@pytest.fixture(params=["gemini", "qwen"])
def running(request: pytest.FixtureRequest, sandbox: Sandbox) -> Iterator[tuple[str, Tui, ReadingModel]]:
    cli = request.param
    model = ReadingModel()
    with one_agent(sandbox, model, cli) as tui:
        yield cli, tui, model


def test_a_route_name_reaches_the_model_as_exactly_that_file(running, sandbox):
    cli, tui, model = running
    for name, marker in FILES.items():
        (sandbox.project / name).parent.mkdir(parents=True, exist_ok=True)
        (sandbox.project / name).write_text(f"{marker}\n")
    tui.ex("Gemini")
    wait_for(lambda: READY in agent_screen(tui, cli), E2E_TIMEOUT, f"{cli}'s prompt")
    named = [name for name, marker in FILES.items() if "SIBLING" not in marker]
    sent = add_and_ask(tui, cli, model, named, "page.svelte", ASKED)

    wanted = [marker for marker in FILES.values() if "SIBLING" not in marker]
    wait_for(lambda: all(marker in sent() for marker in wanted), E2E_TIMEOUT, "the files")
    assert "MK_SIBLING" not in sent(), "a glob of the name read its siblings"
    messages = tui.nvim.api.exec2("messages", {"output": True})["output"]
    assert "GeminiAdd" not in messages, messages
    # The plain paths, each read by the CLI's own tool: exactly that file's text.
    read = list(dict.fromkeys(json.dumps(result) for result in model.tool_results()))  # each request repeats them
    plain = ["MK_TARGET", "MK_BACKSLASH", "MK_DOT", "MK_README"] if cli == "gemini" else ["MK_BACKSLASH", "MK_DOT"]
    assert [[marker for marker in wanted if marker in result] for result in read] == [[m] for m in plain], read
