"""Helpers of the MCP tests: an in-memory transport (unit tests only) and runtime opening."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from kairox._runtime import Runtime
from kairox.hookspecs import hookimpl


class MemoryTransport:
    """Runs an in-process SDK server (``MCPServer`` or low-level ``Server``) per server name.

    Registered as transport ``memory``; a config entry ``type = "memory"`` picks the
    server registered under the entry's name. For unit tests of the client side only.
    """

    name = "memory"

    def __init__(self, servers: Mapping[str, Any]) -> None:
        self.servers = dict(servers)
        self.connects: list[str] = []

    def connect(self, server: Any, context: Any) -> AbstractAsyncContextManager[Any]:
        from mcp.client._memory import InMemoryTransport

        self.connects.append(context.server_name)
        return InMemoryTransport(self.servers[context.server_name])


class TransportPlugin:
    """An inline plugin registering the given transports."""

    def __init__(self, *transports: Any) -> None:
        self.transports = transports

    @hookimpl
    def kairox_register_transports(self, registrar: Any) -> None:
        for t in self.transports:
            registrar.add(t)


def memory_config(**fields: Any) -> dict[str, Any]:
    return {"type": "memory", **fields}


@asynccontextmanager
async def open_runtime(
    workspace: Path,
    servers: Mapping[str, Any],
    *,
    transports: tuple[Any, ...] = (),
    load_entrypoints: bool = True,
    env: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> AsyncIterator[Runtime]:
    """A runtime over ``workspace`` whose only config is ``[mcp_servers]`` = ``servers``.

    The servers are the user's own (config given in code) and, unless an entry says
    otherwise, ``trust_annotations = true``: these tests rely on the peers' read-only hints.
    Annotations as untrusted input are tested in tests/security/test_annotations.py."""
    plugins: list[Any] = list(kwargs.pop("plugins", ()))
    if transports:
        plugins.append(TransportPlugin(*transports))
    if not load_entrypoints:
        import kairox_mcp.hooks

        plugins.append(kairox_mcp.hooks)
    entries = {name: {"trust_annotations": True, **entry} for name, entry in servers.items()}
    docs = [(str(workspace / "kairox.toml"), {"mcp_servers": entries})] if servers else []
    async with Runtime.open(
        workspace,
        config_documents=docs,
        config_files=[],
        plugins=plugins,
        load_entrypoints=load_entrypoints,
        env=dict(env) if env is not None else {"PATH": "/usr/bin:/bin", "HOME": str(workspace)},
        **kwargs,
    ) as rt:
        yield rt
