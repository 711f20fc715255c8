"""What a manifest format that runs code (Philont ``plugin.json``) gives the loader.

A format may implement, besides ``probe``:

- ``locations(workspace, env[, config]) -> Iterable[Location]``: more places to look
  for its plugins (Philont: ``<workspace>/.philont/plugins`` and ``~/.philont/plugins``);
  ``config``, when the method takes it, is the runtime's :class:`~kairox.ext.Config`;
- ``async activate(manifest, context) -> Activation``: run the plugin's code and
  return the tools and hooks it registered. The loader puts the tools in the
  tool registry (with the plugin's permissions) and the hooks in the runtime's
  hook registry, and calls ``close()`` when the plugin is unloaded.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs

from kairox import ServerStatus, Tool

if TYPE_CHECKING:
    from kairox import Runtime

    from .model import BundleManifest

__all__ = ["Activation", "ActivationContext"]


@attrs.define
class ActivationContext:
    runtime: Runtime
    manifest: BundleManifest
    #: whether a contribution key (``tool/<name>``, ``hook/<name>``) is enabled in the settings
    is_enabled: Callable[[str], bool]


@attrs.define
class Activation:
    tools: list[Tool] = attrs.field(factory=list)
    #: tool id -> contribution key (``tool/<name as the manifest declares it>``); default ``tool/<id>``
    tool_keys: dict[str, str] = attrs.field(factory=dict)
    #: (kairox lifecycle event, function called with the hookspec's keyword arguments, hook name)
    hooks: list[tuple[str, Callable[..., Any], str]] = attrs.field(factory=list)
    close: Callable[[], Awaitable[None]] | None = None
    status: Callable[[], list[ServerStatus]] | None = None
    #: contribution keys the code tried to register but the settings disabled
    skipped: list[str] = attrs.field(factory=list)
