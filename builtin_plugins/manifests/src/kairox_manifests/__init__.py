"""Plugin manifest formats: .kairox-plugin, .codex-plugin, .claude-plugin."""
