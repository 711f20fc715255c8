"""The hooks kairox-mcp owns, added to the host through ``kairox_addhooks``.

Only kairox-mcp calls them, so it declares them, as a pytest plugin declares its hooks
with ``pytest_addhooks``: the kernel knows nothing of MCP transports. A transport plugin
implements them with ``@kairox.hookimpl`` like any kairox hook.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox import hookspec

if TYPE_CHECKING:
    from kairox.ext import Registrar

    from .transport import McpTransport


@hookspec
def kairox_register_transports(registrar: Registrar[McpTransport]) -> None:
    """Register MCP transport kinds (``stdio``, ``sse``, ``streamable_http``).

    Called once per runtime, before the first server connects (a failing implementation
    is its plugin's load failure, published as ``PluginLoadFailed``).

    :param registrar: ``registrar.add(transport)``; ``transport.name`` is the value of
        ``type`` in a server entry; ``transport`` implements
        :class:`kairox_mcp.transport.McpTransport`.
    :return: nothing; the return value is ignored.
    """
