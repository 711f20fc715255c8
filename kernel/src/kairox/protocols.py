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
    """Adds tools to ``runtime.tools`` while it runs (MCP manager, built-in tools, LSP, ...).

    Besides these three methods a provider may implement (the runtime looks for them):

    - ``async discover(runtime) -> None``: the discover stage, before anything starts.
      Read what you will run (files, declarations), check workspace items with
      ``runtime.trust.check(...)``, and hand other providers what they own
      (bundles give their servers to the MCP manager). No process, hook, code
      plugin or URL may run here; listing commands open the runtime only this far.
    - ``async start_for(name, arguments) -> None``: lazy activation (``kairox tools
      call NAME``): start only what would provide the tool ``name`` (canonical id or
      exported name), nothing when it is not yours. A provider with this method is
      not started when the runtime opens lazily; one without it is.
    - ``why_missing(name) -> str | None``: why the tool ``name`` is not there
      (its server failed, with the diagnostic; it is untrusted, with the command
      that trusts it), or ``None`` when it would not be yours.
    - ``instructions() -> Iterable[tuple[str, str]]``: (source, text) pairs that
      ``Session.turn_context`` shows the model, labelled by source and bounded (an MCP
      server's ``instructions``).
    - ``withheld_tools() -> list[tuple[str, str]]``: (tool id, why) for tools a server
      lists that are not offered (``kairox tools list`` shows them under ``not_offered``).
    """

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
