"""The environment a stdio server process gets.

A server never sees the whole environment of the agent by default (API keys
for other services live there). It gets a documented base set (:data:`BASE_ENV_VARS`),
the variables its entry declares in ``env`` (``""`` = take the same-named
variable from the runtime environment), the names listed in ``env_vars``,
or everything with ``inherit_env = true``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["BASE_ENV_VARS", "build_env"]

logger = logging.getLogger(__name__)

#: Passed to every server when set in the runtime environment.
BASE_ENV_VARS: tuple[str, ...] = (
    # identity, shell, terminal
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    # locale and time
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    # TLS trust stores (corporate CAs)
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    # proxies, both spellings
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)


def _usable(value: object) -> bool:
    # Exported bash functions ("() { ...") are not values a server needs (the SDK skips them too).
    return isinstance(value, str) and not value.startswith("()")


def build_env(
    runtime_env: Mapping[str, str],
    *,
    env: Mapping[str, Any] | None = None,
    env_vars: Iterable[str] | None = None,
    inherit_env: bool = False,
    server_name: str = "",
) -> dict[str, str]:
    """Compose a server's environment from the runtime's.

    Precedence (later wins): base set (or all of ``runtime_env`` with
    ``inherit_env``), ``env_vars``, declared ``env``. A declared value of ``""``
    is replaced by the runtime's value of that name; if the runtime has none the
    variable is left out (and a warning names it, never a value).
    """
    out: dict[str, str] = {}
    names: Iterable[str] = runtime_env.keys() if inherit_env else BASE_ENV_VARS
    for name in names:
        value = runtime_env.get(name)
        if value is not None and _usable(value):
            out[name] = value
    for name in env_vars or ():
        value = runtime_env.get(name)
        if value is not None:
            out[name] = value
    for name, raw in (env or {}).items():
        name = str(name)
        value = "" if raw is None else raw if isinstance(raw, str) else str(raw)
        if value == "":
            inherited = runtime_env.get(name)
            if inherited is None:
                logger.warning("MCP server %r: env %s is declared as inherited but not set", server_name, name)
                out.pop(name, None)
                continue
            value = inherited
        out[name] = value
    return out
