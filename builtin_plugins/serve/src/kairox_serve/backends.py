"""The gateway's backend MCP servers beyond their tools: their prompts, resources, resource
templates and completions, asked through kairox-mcp's :class:`~kairox_mcp.McpServerManager`.

Names. A backend's prompt is namespaced as its tools are: prompt ``p`` of a server whose
tools are ``<prefix>.<tool>`` is ``<prefix>.<p>``, offered under its exported name
(``sanitize_name``: ``test.simple_prompt`` -> ``test_simple_prompt``). The gateway's own
skills keep their names; a backend prompt whose name a skill (or an earlier backend) has
is left out. A resource keeps its URI: a URI is what the resource is (a backend's tool
results embed it), so the gateway reads a URI from the backend that lists it, else from
the one whose resource template matches it; a URI that two backends claim is refused,
and one that no exposed backend lists or matches is not found without asking anyone.

What is forwarded, :class:`~kairox_serve.exposure.Exposure` decides (``[serve]`` and the
policy): a backend's prompt, resource or template only when its namespaced name passes
``tools`` / ``deny_tools``, and nothing at all of a backend one of whose tools is denied.

Every list and read is asked of the backend for the client's request (``cached=False``):
kairox-mcp keeps what a backend lets it keep (``ttlMs``) for the runtime's own use, and a
result the backend marked ``private`` must not be served from there to another of the
gateway's clients, which the gateway cannot tell apart by principal.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import attrs
import mcp_types as types

from kairox import ResourceContent, Runtime, ToolError
from kairox.ext import sanitize_name

from .convert import content_block
from .exposure import Exposure

if TYPE_CHECKING:
    from kairox_mcp import McpPrompt, McpResource, McpResourceTemplate, McpServerManager

__all__ = ["Backend", "Backends", "BackendRefused", "match_template"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
#: what a backend lists under ``resources``
Listed = TypeVar("Listed", "McpResource", "McpResourceTemplate")

#: the most values one completion answer carries (MCP's limit)
MAX_COMPLETIONS = 100
#: a URI or URI template longer than this is not matched (outside input: bounded work)
MAX_URI = 4096

_EXPRESSION = re.compile(r"\{[^{}]{0,256}\}")
#: RFC 6570 operators whose expansions may hold "/", "?" or "#"
_RESERVED = frozenset("+#./;?&")


@attrs.frozen
class Backend:
    """A ready backend MCP server and the prefix its tools (and prompts) are named under."""

    server: str
    prefix: str

    def name_of(self, item: str) -> tuple[str, str]:
        """``(canonical id, exported name)`` of the backend's prompt (or resource) ``item``."""
        canonical = f"{self.prefix}.{item}"
        return canonical, sanitize_name(canonical)


class BackendRefused(Exception):
    """A request the gateway does not forward (ambiguous, or the backend failed); ``str()`` says why."""


def match_template(template: str, uri: str) -> bool:
    """Whether ``uri`` is an expansion of the RFC 6570 ``template``: its literal parts in
    order, each expression standing for what lies between them (a simple ``{x}`` without
    ``/``, ``?`` or ``#``; ``{+x}``, ``{#x}`` and the others, anything). Each literal is
    found leftmost (``str.find``, no backtracking: bounded work on outside input), which
    decides every template whose expressions are separated by literals."""
    if len(template) > MAX_URI or len(uri) > MAX_URI:
        return False
    literals = _EXPRESSION.split(template)
    expressions = _EXPRESSION.findall(template)
    if not uri.startswith(literals[0]):
        return False
    pos = len(literals[0])
    last = len(expressions) - 1
    for i, (expression, literal) in enumerate(zip(expressions, literals[1:], strict=True)):
        if literal:
            end = uri.find(literal, pos)
            if end < 0:
                return False
        else:  # the last expression takes the rest; of adjacent ones, the later takes it all
            end = len(uri) if i == last else pos
        if expression[1:2] not in _RESERVED and any(c in uri[pos:end] for c in "/?#"):
            return False
        pos = end + len(literal)
    return pos == len(uri)


class Backends:
    """The backends of ``runtime`` as ``exposure`` lets a client see them (no backends when
    kairox-mcp is not loaded)."""

    def __init__(self, runtime: Runtime, exposure: Exposure) -> None:
        self.rt = runtime
        self.exposure = exposure

    def _manager(self) -> McpServerManager | None:
        try:
            from kairox_mcp import manager_of
        except ImportError:  # pragma: no cover - without kairox-mcp there are no backends
            return None
        try:
            return manager_of(self.rt)
        except Exception:  # kairox-mcp installed but not loaded in this runtime
            return None

    def backends(self, feature: str) -> list[Backend]:
        """The ready backends that declared ``feature`` (``prompts``, ``resources``,
        ``completions``) and that the exposure lets through, by server name."""
        manager = self._manager()
        if manager is None:
            return []
        out = []
        for server in sorted(manager.ready_servers(), key=lambda s: s.name):
            client = server.client
            if client is None or not client.supports(feature):
                continue
            if self.exposure.exposes_backend(server.name):
                out.append(Backend(server.name, server.config.tool_prefix or server.name))
        return out

    def backend(self, server: str) -> Backend | None:
        """The ready backend ``server`` if the exposure lets it through, whatever it declared."""
        manager = self._manager()
        if manager is None or not self.exposure.exposes_backend(server):
            return None
        for ready in manager.ready_servers():
            if ready.name == server:
                return Backend(ready.name, ready.config.tool_prefix or ready.name)
        return None

    async def refresh_tools(self) -> bool:
        """Re-list the tools of every backend whose listing is past its ``ttlMs`` (kairox-mcp's
        :meth:`~kairox_mcp.McpServerManager.refresh_tools`); whether any was."""
        manager = self._manager()
        return manager is not None and await manager.refresh_tools() > 0

    async def set_log_level(self, level: str, servers: list[str] | None = None) -> None:
        """Ask every ready backend (of ``servers``, if given) for log records of ``level`` and
        above; one that cannot (it has no ``logging/setLevel``) is logged and left out."""
        manager = self._manager()
        if manager is None:
            return

        async def one(server: str) -> None:
            try:
                await manager.set_log_level(server, level)
            except (ToolError, KeyError) as exc:
                logger.info("kairox serve: MCP server %s: logging/setLevel %s not sent: %s", server, level, exc)

        async with anyio.create_task_group() as tg:
            for server in manager.ready_servers():
                if servers is None or server.name in servers:
                    tg.start_soon(one, server.name)

    async def subscribe(self, backend: Backend, uri: str) -> None:
        manager = self._manager()
        if manager is None:
            raise BackendRefused(f"{uri}: its MCP server is gone")
        try:
            await manager.subscribe(backend.server, uri)
        except (ToolError, KeyError) as exc:
            raise BackendRefused(str(exc)) from None

    async def unsubscribe(self, backend: Backend, uri: str) -> None:
        manager = self._manager()
        if manager is None:
            return
        try:
            await manager.unsubscribe(backend.server, uri)
        except (ToolError, KeyError) as exc:
            logger.info("kairox serve: MCP server %s: resources/unsubscribe %s failed: %s", backend.server, uri, exc)

    async def _each(
        self, feature: str, fn: Callable[[McpServerManager, Backend], Awaitable[list[T]]]
    ) -> list[tuple[Backend, T]]:
        """``fn`` of every backend with ``feature``, concurrently; one that fails is logged and left out."""
        manager = self._manager()
        if manager is None:
            return []
        found: dict[str, list[T]] = {}

        async def one(backend: Backend) -> None:
            try:
                found[backend.server] = await fn(manager, backend)
            except (ToolError, KeyError) as exc:  # KeyError: the server went away meanwhile
                logger.warning("kairox serve: listing the %s of MCP server %s failed: %s", feature, backend.server, exc)

        backends = self.backends(feature)
        async with anyio.create_task_group() as tg:
            for backend in backends:
                tg.start_soon(one, backend)
        return [(b, item) for b in backends for item in found.get(b.server, ())]

    # -- prompts -----------------------------------------------------------------------------
    async def prompts(self, taken: set[str]) -> list[tuple[str, Backend, McpPrompt]]:
        """``(exported name, backend, prompt)`` of every exposed backend prompt whose name is not
        in ``taken`` (the skills' names) nor an earlier backend's."""

        async def fn(manager: McpServerManager, backend: Backend) -> list[McpPrompt]:
            return await manager.list_prompts(backend.server, cached=False)

        out: list[tuple[str, Backend, McpPrompt]] = []
        seen = set(taken)
        for backend, prompt in await self._each("prompts", fn):
            canonical, exported = backend.name_of(prompt.name)
            if exported in seen or not self.exposure.exposes_backend_item(canonical, exported):
                continue
            seen.add(exported)
            out.append((exported, backend, prompt))
        return out

    async def prompt(self, name: str, taken: set[str]) -> tuple[Backend, McpPrompt] | None:
        for exported, backend, prompt in await self.prompts(taken):
            if exported == name:
                return backend, prompt
        return None

    async def get_prompt(
        self, backend: Backend, prompt: McpPrompt, exported: str, arguments: Mapping[str, str]
    ) -> types.GetPromptResult:
        manager = self._manager()
        if manager is None:
            raise BackendRefused(f"prompt {exported}: its MCP server is gone")
        try:
            result = await manager.get_prompt(backend.server, prompt.name, arguments)
        except (ToolError, KeyError) as exc:
            raise BackendRefused(f"prompt {exported}: {exc}") from None
        return types.GetPromptResult(
            description=result.description,
            messages=[
                types.PromptMessage(
                    role="assistant" if m.role == "assistant" else "user", content=content_block(m.content)
                )
                for m in result.messages
            ],
        )

    # -- resources ---------------------------------------------------------------------------
    async def _exposed(
        self, fn: Callable[[McpServerManager, Backend], Awaitable[list[Listed]]]
    ) -> list[tuple[Backend, Listed]]:
        """What ``fn`` lists of every backend with resources, those the exposure lets through by name."""
        listed = await self._each("resources", fn)
        return [(b, item) for b, item in listed if self.exposure.exposes_backend_item(*b.name_of(item.name))]

    async def resources(self) -> list[tuple[Backend, McpResource]]:
        async def fn(manager: McpServerManager, backend: Backend) -> list[McpResource]:
            return await manager.list_resources(backend.server, cached=False)

        return await self._exposed(fn)

    async def templates(self) -> list[tuple[Backend, McpResourceTemplate]]:
        async def fn(manager: McpServerManager, backend: Backend) -> list[McpResourceTemplate]:
            return await manager.list_resource_templates(backend.server, cached=False)

        return await self._exposed(fn)

    async def owner(self, uri: str) -> Backend | None:
        """The exposed backend that lists ``uri``, else the one whose template matches it; ``None``
        when none does. Raises :class:`BackendRefused` when two claim it."""
        listed = {b.server: b for b, r in await self.resources() if r.uri == uri}
        if not listed:
            listed = {b.server: b for b, t in await self.templates() if match_template(t.uri_template, uri)}
        if len(listed) > 1:
            raise BackendRefused(
                f"{uri} is a resource of several MCP servers ({', '.join(sorted(listed))}); the gateway "
                "does not choose between them"
            )
        return next(iter(listed.values()), None)

    async def read(self, backend: Backend, uri: str) -> list[ResourceContent]:
        manager = self._manager()
        if manager is None:
            raise BackendRefused(f"{uri}: its MCP server is gone")
        try:
            return await manager.read_resource(backend.server, uri, cached=False)
        except (ToolError, KeyError) as exc:
            raise BackendRefused(str(exc)) from None

    # -- completions -------------------------------------------------------------------------
    async def complete(
        self, backend: Backend, params: types.CompleteRequestParams, *, prompt: str | None, template: str | None
    ) -> types.Completion:
        manager = self._manager()
        if manager is None:
            raise BackendRefused("its MCP server is gone")
        context = params.context.arguments if params.context is not None else None
        try:
            values = await manager.complete(
                backend.server,
                argument=params.argument.name,
                value=params.argument.value,
                prompt=prompt,
                resource_template=template,
                context=context,
            )
        except (ToolError, KeyError) as exc:
            raise BackendRefused(str(exc)) from None
        values = [v for v in values if isinstance(v, str)]
        return types.Completion(
            values=values[:MAX_COMPLETIONS], total=len(values), has_more=len(values) > MAX_COMPLETIONS
        )


def contents_of(block: ResourceContent) -> types.TextResourceContents | types.BlobResourceContents:
    """A backend's resource contents, as MCP contents of the same kind."""
    extra: dict[str, Any] = {"_meta": block.meta} if block.meta else {}
    if block.blob is not None and block.text is None:
        return types.BlobResourceContents(uri=block.uri, mime_type=block.mime_type, blob=block.blob, **extra)
    return types.TextResourceContents(uri=block.uri, mime_type=block.mime_type, text=block.text or "", **extra)
