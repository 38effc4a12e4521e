"""Four agents at once in one work tree (issue 34): two Gemini and two Qwen, their turns
interleaved, each told by the real hook program as its CLI runs it. Each turn's list holds
exactly its agent's files; a file two agents changed in turns at the same time is named as such
in both lists (changes/overlap.py)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from changes.helpers import hook, turns
from conftest import Editor, wait_for

# Each CLI's events, as changes/hooks.lua registers them: turn start, a tool's end, turn end.
EVENTS = {
    "gemini": ("BeforeAgent", "AfterTool", "AfterAgent"),
    "qwen": ("UserPromptSubmit", "PostToolUse", "Stop"),
}
AGENTS = {"gemini-1": "gemini", "qwen-1": "qwen", "gemini-2": "gemini", "qwen-2": "qwen"}


class Agent:
    """One managed agent, its hooks run as its CLI runs them."""

    def __init__(self, ed: Editor, repo: Path, name: str) -> None:
        self.ed, self.repo, self.name, self.cli = ed, repo, name, AGENTS[name]
        self.writes = 0

    def _hook(self, kind: str, event: str, **fields: Any) -> None:
        payload = {"hook_event_name": event, "cwd": str(self.repo), "session_id": self.name, **fields}
        hook(self.ed, self.repo, kind, payload, self.name, self.cli)

    def start(self) -> None:
        self._hook("turn-start", EVENTS[self.cli][0], prompt="go")

    def write(self, name: str) -> None:
        self.writes += 1
        (self.repo / name).write_text(f"{self.name} was here ({self.writes})\n")
        tool = {"file_path": str(self.repo / name), "content": "(what the model wrote)"}
        self._hook("tool", EVENTS[self.cli][1], tool_name="write_file", tool_input=tool)

    def end(self) -> None:
        self._hook("turn-end", EVENTS[self.cli][2])


def settle(ed: Editor, want: dict[tuple[str, int], dict[str, list[str]]]) -> None:
    """The last turns' lists come to be `want` (a turn told again comes a moment after its end)."""
    with contextlib.suppress(AssertionError):
        wait_for(lambda: lists(ed, len(want)) == want, 60, "the lists")
    assert lists(ed, len(want)) == want


def lists(ed: Editor, count: int) -> dict[tuple[str, int], dict[str, list[str]]]:
    """The last `count` ended turns: (agent, its nth turn) -> each file and whom else it names."""
    ended = wait_for(lambda: len(t := turns(ed)) >= count and t, 60, f"{count} turns")[-count:]
    seen: dict[str, int] = {}
    out = {}
    for turn in sorted(ended, key=lambda t: t["id"]):
        seen[turn["agent"]] = seen.get(turn["agent"], 0) + 1
        out[(turn["agent"], seen[turn["agent"]])] = {f["path"]: sorted(f.get("also") or []) for f in turn["files"]}
    return out


def test_four_agents_at_once_each_turn_lists_its_own_files_and_names_the_overlaps(ed, repo):
    agents = {name: Agent(ed, repo, name) for name in AGENTS}
    g1, q1, g2, q2 = (agents[n] for n in ("gemini-1", "qwen-1", "gemini-2", "qwen-2"))
    # Round 1, interleaved: all four going at once; gemini-1 and qwen-2 both write shared.txt.
    for agent in (g1, q1, g2, q2):
        agent.start()
    g1.write("g1.txt")
    q1.write("q1.txt")
    q2.write("shared.txt")
    g2.write("g2.txt")
    g1.write("shared.txt")
    q2.write("q2.txt")
    q1.end()
    q2.write("q2-more.txt")
    g1.end()  # ends with qwen-2 still going: its overlap is named when qwen-2 ends
    g2.end()
    q2.end()
    want = {
        "qwen-1": {"q1.txt": []},
        "gemini-1": {"g1.txt": [], "shared.txt": ["qwen-2"]},
        "gemini-2": {"g2.txt": []},
        "qwen-2": {"q2.txt": [], "q2-more.txt": [], "shared.txt": ["gemini-1"]},
    }
    settle(ed, {(agent, 1): files for agent, files in want.items()})
    # The list as the user reads it.
    shared = next(t for t in turns(ed) if t["agent"] == "qwen-2")
    ed.nvim.command(f"GeminiChanges {shared['id']}")
    texts = {i["module"]: i["text"] for i in ed.lua("return vim.fn.getqflist({items = 1}).items")}
    assert texts["shared.txt"] == "created +1 -0 (qwen-2; also changed by gemini-1 at the same time)", texts
    assert texts["q2.txt"] == "created +1 -0 (qwen-2)"

    # Round 2: one after another, the same file: no overlap named. Then two that overlap only
    # partly (qwen-1 starts before gemini-2 ends) and change one file each, and the same one.
    g1.start()
    g1.write("shared.txt")
    g1.end()
    q2.start()
    q2.write("shared.txt")
    q2.end()
    g2.start()
    g2.write("g2.txt")
    q1.start()
    g2.write("both.txt")
    g2.end()
    q1.write("both.txt")
    q1.write("q1.txt")
    q1.end()
    settle(
        ed,
        {
            ("gemini-1", 1): {"shared.txt": []},
            ("qwen-2", 1): {"shared.txt": []},
            ("gemini-2", 1): {"g2.txt": [], "both.txt": ["qwen-1"]},
            ("qwen-1", 1): {"both.txt": ["gemini-2"], "q1.txt": []},
        },
    )


def test_an_agent_stopped_in_the_middle_of_a_turn_ends_it_with_what_it_changed(ed, repo):
    """Agents come and go all day; one stopped (its terminal closed, the CLI killed) before its
    turn's end hook leaves no turn open, and kept, for good: it ends with what the agent changed."""
    stopped = [Agent(ed, repo, name) for name in ("gemini-1", "qwen-1", "gemini-2")]
    for agent in stopped:
        agent.start()
        agent.write(f"by-{agent.name}.txt")
        ed.lua("require('gemini_companion.host').notify('agent_unregister', {name = ...})", agent.name)
    ended = wait_for(lambda: len(t := turns(ed)) == len(stopped) and t, 60, "the stopped agents' turns to end")
    assert {t["agent"]: [f["path"] for f in t["files"]] for t in ended} == {
        agent.name: [f"by-{agent.name}.txt"] for agent in stopped
    }
    kept = wait_for(lambda: (c := ed.status()["changes"]) and not c["last"]["open"] and c, 30, "none open")
    assert kept["turns"] == len(stopped)
