"""``kairox_serve.asgi:app``: the gateway for an ASGI server, configured by the environment.

    KAIROX_WORKSPACE=/srv/ws KAIROX_SERVE_TOKEN_ENV=MCP_TOKEN MCP_TOKEN=... \\
        uvicorn kairox_serve.asgi:app --host 0.0.0.0 --port 8000 --workers 2 \\
        --http kairox_serve.frontdoor:GuardedHttp --ws none

(``--http``: ``[serve]``'s read deadlines and connection limit, see :mod:`kairox_serve.frontdoor`.)

| variable | meaning | default |
|---|---|---|
| ``KAIROX_WORKSPACE`` | the workspace to serve (it must be trusted) | the current directory |
| ``KAIROX_SERVE_TOKEN_ENV`` | the name of the variable holding the bearer token | none (loopback only) |
| ``KAIROX_SERVE_HOST`` | the address the ASGI server binds (a non-loopback one needs a token or ``[serve.auth]``, checked when the app starts) | ``127.0.0.1`` |
| ``KAIROX_SERVE_STATELESS`` | ``1``/``true``/``yes``/``on``: keep nothing between requests (replicas); ``0``/``false``/``no``/``off``: off; anything else is refused | off |
| ``KAIROX_SERVE_ALLOWED_ORIGINS`` | comma-separated browser origins allowed besides loopback | none |

The app is built when ``app`` is first read (an ASGI server reads it once per worker).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from kairox import ConfigError

from .http import GatewayApp, settings_from
from .runtime import served_runtime

__all__ = ["app_from_env"]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}
_app: GatewayApp | None = None


def app_from_env(env: Mapping[str, str] | None = None) -> GatewayApp:
    """A :class:`GatewayApp` configured by the ``KAIROX_*`` variables of ``env`` (the process's)."""
    env = os.environ if env is None else env
    workspace = env.get("KAIROX_WORKSPACE") or os.getcwd()
    settings = settings_from(
        host=env.get("KAIROX_SERVE_HOST") or "127.0.0.1",
        port=0,
        token_env=env.get("KAIROX_SERVE_TOKEN_ENV") or None,
        env=env,
        stateless=_flag(env, "KAIROX_SERVE_STATELESS"),
        allowed_origins=(env.get("KAIROX_SERVE_ALLOWED_ORIGINS") or "").split(","),
    )
    return GatewayApp(settings, lambda: served_runtime(workspace))


def _flag(env: Mapping[str, str], name: str) -> bool:
    """A yes/no variable; anything else is refused (a typo must not switch the mode silently)."""
    value = env.get(name) or ""
    if value.strip().lower() in _TRUE:
        return True
    if value.strip().lower() in _FALSE:
        return False
    raise ConfigError(f"{value[:40]!r}: expected 1/true/yes/on or 0/false/no/off", path=name)


def __getattr__(name: str) -> Any:
    global _app
    if name == "app":
        if _app is None:
            _app = app_from_env()
        return _app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
