"""Hook implementations of kairox-stdio (cheap to import: no ``mcp`` here)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox.hookspecs import hookimpl

if TYPE_CHECKING:
    from kairox import Registrar
    from kairox.protocols import Transport


@hookimpl
def kairox_register_transports(registrar: Registrar[Transport]) -> None:
    """Register the ``stdio`` transport."""
    from .stdio import StdioTransport

    registrar.add(StdioTransport())
