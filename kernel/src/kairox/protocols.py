"""The small protocols each extension kind implements.

Each implementation has a unique ``name``. These are structural
(``typing.Protocol``): a plugin does not import a base class. What a tool
provider may do besides starting, stopping and reporting is one small protocol
each (:class:`Discovers`, :class:`StartsFor`, :class:`ExplainsMissing`,
:class:`GivesInstructions`, :class:`WithholdsTools`, :class:`ServerControl`),
``runtime_checkable``: the runtime asks ``isinstance(provider, StartsFor)``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ._runtime import Runtime
    from ._types import ServerStatus

__all__ = [
    "CatalogSource",
    "Discovers",
    "ExplainsMissing",
    "GivesInstructions",
    "ManifestFormat",
    "ServerControl",
    "SkillSource",
    "StartsFor",
    "ToolProvider",
    "Transport",
    "WithholdsTools",
]


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

    Constructing one is cheap (the registration hook runs at every open): a provider
    imports what it runs with in :meth:`start` (or ``discover``). Besides these three
    methods a provider may implement any of the protocols below.
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
class Discovers(Protocol):
    """A provider with a discover stage, before anything starts."""

    async def discover(self, runtime: Runtime) -> bool | None:
        """Read what you will run (files, declarations), check workspace items with
        ``runtime.trust.check(...)``, and hand other providers what they own (bundles give
        their servers to the MCP manager). No process, hook, code plugin or URL may run
        here; listing commands open the runtime only this far.

        Return ``False`` when there is nothing to do in this workspace: the runtime then
        leaves the provider *idle* (not started; ``kairox status`` says so) until
        :meth:`Runtime.start_providers` names it. ``True`` or ``None``: it starts as usual.
        """
        ...


@runtime_checkable
class StartsFor(Protocol):
    """A provider that can start part of itself for one tool call (lazy activation,
    ``kairox tools call NAME``). It is not started when the runtime opens lazily."""

    async def start_for(self, name: str, arguments: dict[str, Any]) -> None:
        """Start only what would provide the tool ``name`` (canonical id or exported
        name); nothing when it is not yours."""
        ...


@runtime_checkable
class ExplainsMissing(Protocol):
    """A provider that can say why one of its tools is not there."""

    def why_missing(self, name: str) -> str | None:
        """Why the tool ``name`` is not there (its server failed, with the diagnostic; it
        is untrusted, with the command that trusts it), or ``None`` when it would not be yours."""
        ...


@runtime_checkable
class GivesInstructions(Protocol):
    """A provider whose servers give the model instructions (an MCP server's ``instructions``)."""

    def instructions(self) -> Iterable[tuple[str, str]]:
        """``(source, text)`` pairs that ``Session.turn_context`` shows the model, labelled
        by source and bounded."""
        ...


@runtime_checkable
class WithholdsTools(Protocol):
    """A provider that does not offer some tools its servers list."""

    def withheld_tools(self) -> list[tuple[str, str]]:
        """``(tool id, why)`` for each (``kairox tools list`` shows them under ``not_offered``)."""
        ...


@runtime_checkable
class ServerControl(Protocol):
    """A provider whose servers start again and stop by name: the dashboard and the CLI
    restart an MCP, LSP or DAP server through this, without importing its plugin."""

    def server_names(self) -> Collection[str]:
        """The servers it can restart and stop (declared, trusted, well formed)."""
        ...

    async def restart_server(self, name: str) -> ServerStatus:
        """Restart ``name``; its status once it is ready or failed."""
        ...

    async def stop_server(self, name: str) -> ServerStatus:
        """Stop ``name``; its status once its process is reaped."""
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
