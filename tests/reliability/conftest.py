"""Fixtures of the reliability (fault-injection) suite."""

from __future__ import annotations

import sys
from pathlib import Path

# The stdio transport helpers (open_session, server, ...) live with the stdio tests.
_STDIO_TESTS = str(Path(__file__).resolve().parent.parent / "stdio")
if _STDIO_TESTS not in sys.path:
    sys.path.insert(0, _STDIO_TESTS)
