"""The HTTP client the sse and streamable_http transports share (imports ``httpx2``).

Headers come from :meth:`McpServerConfig.resolve_headers` (secrets stay in the
client, never in logs); every HTTP error status is noted in the server's
diagnostics (method, URL with secrets redacted, status), so ``kairox mcp logs``
explains a failing remote server.
"""

from __future__ import annotations

from typing import Any

import httpx2

from .config import McpServerConfig, redact_url
from .transport import ConnectContext

__all__ = ["make_http_client"]


def make_http_client(
    server: McpServerConfig,
    context: ConnectContext,
    *,
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` for ``server`` (caller enters and closes it)."""
    diag = context.diagnostics

    async def on_response(response: httpx2.Response) -> None:
        if response.status_code >= 400:
            request = response.request
            diag.stderr.append(f"[http] {request.method} {redact_url(str(request.url))} -> {response.status_code}")

    kwargs: dict[str, Any] = {
        "headers": server.resolve_headers(context.env) if headers is None else headers,
        "timeout": timeout or httpx2.Timeout(server.http_timeout, read=server.sse_read_timeout),
        "event_hooks": {"response": [on_response]},
    }
    if auth is not None:
        kwargs["auth"] = auth
    return httpx2.AsyncClient(**kwargs)
