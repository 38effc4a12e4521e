"""Change review: turns from the CLIs' hooks and git snapshots (the Lua half: lua/gemini_companion/changes/)."""
