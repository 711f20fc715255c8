"""MCP client, server lifecycle, manager and tool adapter for Kairox."""
