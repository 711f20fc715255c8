"""Start an installed MCP server once, through the kernel, and see whether it reaches Ready.

A second :class:`kairox.Runtime` is opened over the same workspace with a
config holding only the new server (as read back from the file that was
written), so nothing else the workspace declares is started. The MCP plugin is
used only through the kernel API: its provider's ``status()`` (kind ``mcp``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
import attrs
import tomlkit

from kairox import ServerState
from kairox.files import Root, check_toml_keys

if TYPE_CHECKING:
    from kairox import Runtime

__all__ = ["Verification", "verify_server", "verify_values"]

logger = logging.getLogger(__name__)


@attrs.frozen
class Verification:
    outcome: Literal["ready", "failed", "unavailable"]
    detail: str = ""
    tools: int = 0


def _read_back(target: Path, name: str) -> dict[str, Any]:
    text = Root(target.parent, label=str(target.parent)).read_text(target.name)
    check_toml_keys(text)  # a ValueError, as for a server missing from the file
    data = tomlkit.parse(text).unwrap()
    table = data.get("mcp_servers", {}).get(name)
    if not isinstance(table, dict):
        raise ValueError(f"[mcp_servers.{name}] is not in {target} after writing it")
    return table


async def verify_server(
    runtime: Runtime, name: str, target: Path, *, env: Mapping[str, str], timeout: float = 120.0
) -> Verification:
    """Open a runtime with just ``[mcp_servers.NAME]`` from ``target`` and report its state."""

    try:
        table = _read_back(target, name)
    except (OSError, ValueError) as exc:
        return Verification("failed", f"cannot read the installed entry back: {exc}")
    return await _verify(runtime, name, table, str(target), env=env, timeout=timeout)


async def verify_values(
    runtime: Runtime, name: str, values: Mapping[str, Any], target: Path, *, env: Mapping[str, str], timeout: float
) -> Verification:
    """:func:`verify_server` of the table ``values`` before it is written to ``target``: read
    back from its TOML text, as kairox would read it from the file."""
    table = tomlkit.parse(tomlkit.dumps({"mcp_servers": {name: dict(values)}})).unwrap()["mcp_servers"][name]
    return await _verify(runtime, name, table, str(target), env=env, timeout=timeout)


async def _verify(
    runtime: Runtime, name: str, table: dict[str, Any], source: str, *, env: Mapping[str, str], timeout: float
) -> Verification:
    from kairox import Runtime

    if "mcp_servers" not in runtime.config_sections:
        return Verification(
            "unavailable", "kairox-mcp is not installed, so the server cannot be started here (pip install kairox-mcp)"
        )
    documents = [(source, {"mcp_servers": {name: table}})]
    try:
        with anyio.fail_after(timeout):
            async with Runtime.open(
                runtime.workspace,
                home=runtime.home,
                env=env,
                host=runtime.host,
                config_files=[],
                config_documents=documents,
            ) as rt:
                return await _wait_ready(rt, name)
    except TimeoutError:
        return Verification("failed", f"did not become ready within {timeout:g} s")


async def _wait_ready(rt: Runtime, name: str) -> Verification:
    errors = [
        e for e in rt.config.errors if e.path == f"mcp_servers.{name}" or e.path.startswith(f"mcp_servers.{name}.")
    ]
    if errors:
        return Verification("failed", "; ".join(str(e.message if e.path else e) for e in errors))
    while True:
        status = rt.status()
        server = next((s for s in status.servers if s.name == name and s.kind == "mcp"), None)
        if server is not None and server.state is ServerState.READY:
            return Verification("ready", server.detail, server.tools)
        if server is not None and server.state is ServerState.FAILED:
            return Verification("failed", server.detail or "the server failed to start")
        if server is None and all(p.state != "starting" for p in status.providers):
            failed = [f"{p.name}: {p.error}" for p in status.providers if p.state == "failed"]
            why = f" (provider failures: {'; '.join(failed)})" if failed else ""
            return Verification("failed", f"no MCP provider reported a server named {name}{why}")
        await anyio.sleep(0.1)
