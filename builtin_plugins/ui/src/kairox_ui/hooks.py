"""kairox-ui's hookimpls."""

from __future__ import annotations
