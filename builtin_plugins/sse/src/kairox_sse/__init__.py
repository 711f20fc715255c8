"""The MCP legacy HTTP+SSE transport for Kairox."""
