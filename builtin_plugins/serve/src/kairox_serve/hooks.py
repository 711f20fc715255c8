"""kairox-serve's hookimpls."""

from __future__ import annotations
