"""Tests of kairox-dap (a package so that module names do not clash with other test areas)."""
