"""Tests of kairox-lsp (a package so that module names do not clash with other test areas)."""
