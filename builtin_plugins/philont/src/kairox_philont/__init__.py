"""Philont compatibility: ``plugin.json`` code plugins, direct or in a worker process."""

from __future__ import annotations
