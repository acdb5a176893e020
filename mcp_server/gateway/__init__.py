"""Gateway mode: the chain in front of another MCP server, in both directions."""
