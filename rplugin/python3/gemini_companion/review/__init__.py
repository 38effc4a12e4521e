"""Review: openDiff/closeDiff proposals shown as vimdiff tabs (the Lua half: lua/gemini_companion/review/)."""
