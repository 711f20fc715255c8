"""Philont compatibility: mcp.json servers and plugin.json code plugins."""
