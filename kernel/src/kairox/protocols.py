"""The small protocols each extension kind implements.

Each implementation has a unique ``name``. These are structural
(``typing.Protocol``): a plugin does not import a base class.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ._runtime import Runtime
    from ._types import ServerStatus

__all__ = ["CatalogSource", "ManifestFormat", "SkillSource", "ToolProvider", "Transport"]


@runtime_checkable
class Transport(Protocol):
    """An MCP transport kind. ``connect`` opens the byte/message streams for one server.

    The kernel treats the streams as opaque; the MCP plugin defines what they carry.
    """

    name: str

    def connect(self, server: Any, context: Any) -> AbstractAsyncContextManager[Any]: ...


@runtime_checkable
class ToolProvider(Protocol):
    """Adds tools to ``runtime.tools`` while it runs (MCP manager, built-in tools, LSP, ...)."""

    name: str

    async def start(self, runtime: Runtime) -> None:
        """Start; return when the provider's tools are registered (or have failed).

        Long-running work goes into tasks started with ``runtime.spawn``.
        """
        ...

    async def stop(self) -> None:
        """Stop everything started; must not raise."""
        ...

    def status(self) -> Sequence[ServerStatus]:
        """Managed servers and their state (empty when the provider manages none)."""
        ...


@runtime_checkable
class SkillSource(Protocol):
    """Finds skills (see the skills plugin for the shape of what ``scan`` yields)."""

    name: str

    def scan(self, runtime: Runtime) -> Iterable[Any]: ...


@runtime_checkable
class CatalogSource(Protocol):
    """Lists installable things (MCP servers, plugins, skills)."""

    name: str

    async def entries(self, runtime: Runtime) -> Sequence[Any]: ...


@runtime_checkable
class ManifestFormat(Protocol):
    """Recognises a plugin directory and normalises its manifest."""

    name: str
    priority: int

    def probe(self, root: Path) -> Any | None: ...
