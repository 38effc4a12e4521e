"""Files two agents both changed in turns that ran at the same time: each turn's list names the
other agents (`FileChange.also`), so that neither list passes for the whole story of such a file
(`:GeminiChanges` shows "also changed by ...").

A file counts once it is in both turns' lists, as changes.py made them (what each agent's tools
named is its own; a change no tool named, a shell command's, is in both): so a turn is marked when
the later of the two ends, and the earlier one, ended already, is told to Lua again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gemini_companion.changes.changes import Turn


def mark(turn: Turn, others: list[Turn]) -> list[Turn]:
    """Mark the files `turn` (just ended) and each of `others` (other agents' turns in the same
    work tree that overlapped it) both changed, in both lists; the ended `others` whose list
    changed (to be told again)."""
    mine = {change.path for change in turn.files}
    told_again = []
    for other in others:
        if other.after is None or other.agent == turn.agent:  # still going: marked when it ends
            continue
        both = mine & {change.path for change in other.files}
        for change in turn.files:
            if change.path in both and other.agent not in change.also:
                change.also.append(other.agent)
        grew = [change for change in other.files if change.path in both and turn.agent not in change.also]
        for change in grew:
            change.also.append(turn.agent)
        if grew:
            told_again.append(other)
    return told_again
