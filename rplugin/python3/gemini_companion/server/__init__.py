"""The MCP server and what guards it: HTTP routing (mcp_server), Host/Origin/token checks (http_guard,
access), discovery files (discovery), the early launch (launch) and the hooks key files (hook_keys)."""
