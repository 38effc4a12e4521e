"""Context: open files, cursor and selection sent to the CLIs (the Lua half: lua/gemini_companion/context/)."""
