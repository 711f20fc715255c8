"""Tests of kairox-peer, the layer kairox-lsp and kairox-dap share (a package so that module names do not clash)."""
