"""The MCP streamable HTTP transport for Kairox."""
