"""Marketplace catalog: built-in and remote sources, search and install."""

from __future__ import annotations
