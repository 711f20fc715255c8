"""Marketplace catalog: built-in and remote sources, search and install."""
