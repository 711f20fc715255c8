"""kairox-sse's hook implementations (cheap to import: no ``mcp``, no ``httpx2``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox.hookspecs import hookimpl

if TYPE_CHECKING:
    from kairox import Registrar
    from kairox.protocols import Transport


@hookimpl
def kairox_register_transports(registrar: Registrar[Transport]) -> None:
    from .sse import SseTransport

    registrar.add(SseTransport())
