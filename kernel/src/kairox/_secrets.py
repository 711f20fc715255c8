"""Which config values are secrets (never printed, logged or echoed in an error)."""

from __future__ import annotations

import re

__all__ = ["REDACTED", "SECRET_TABLES", "is_secret"]

#: tables whose every value is a secret (environment variables, HTTP headers)
SECRET_TABLES = frozenset({"env", "headers", "http_headers", "env_http_headers"})
_SECRET_KEY = re.compile(r"(token|secret|password|passwd|api[_-]?key|authorization|credential)", re.I)
#: keys that name an environment variable rather than hold a secret
_NAMES_A_VARIABLE = ("_env", "_env_var", "_env_vars")
REDACTED = "<redacted>"


def is_secret(key: str, parent: str = "") -> bool:
    """Is the value at ``parent.key`` a secret?"""
    if parent in SECRET_TABLES and key:
        return True
    return bool(key) and bool(_SECRET_KEY.search(key)) and not key.endswith(_NAMES_A_VARIABLE)
