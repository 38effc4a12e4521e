"""Editor tools the model calls on /mcp/editor (the Lua half: lua/gemini_companion/tools/)."""
