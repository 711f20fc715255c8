"""The MCP stdio transport for Kairox (own process group, bounded stderr)."""
