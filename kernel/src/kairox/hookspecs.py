"""The kernel's contract: every hook a plugin can implement.

Plugins implement these with ``@kairox.hookimpl`` and are found through the
``kairox`` entry-point group. Registration hooks receive a typed
:class:`~kairox.ext.Registrar`; calling ``registrar.add(obj)`` registers ``obj``
under ``obj.name`` and refuses a duplicate, naming both plugins. The host calls
each plugin's implementation on its own: one that raises is recorded as a
load failure for that plugin and the others still register.

Lifecycle hooks are called by the runtime, one implementation at a time; an
implementation may be a coroutine function. One that raises is reported as a
``HookFailed`` event and never breaks the session it observes. A guard
(``kairox_pre_tool_call``) fails closed: one that raises or does not answer in
time blocks the call, unless it is marked :func:`advisory`.

Evolve hooks by adding keyword arguments; never remove one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from pathlib import Path

    import click

    from ._config import ConfigSection
    from ._events import Event
    from ._hooks import Block, ContextPiece, ToolCall
    from ._policy import Ask
    from ._registrar import Registrar
    from ._runtime import Runtime
    from ._session import Session
    from ._tools import ToolResult
    from .protocols import CatalogSource, ManifestFormat, SkillSource, ToolProvider

__all__ = ["ADVISORY", "advisory", "hookimpl", "hookspec"]

#: marks a hook specification (a plugin that adds hooks of its own, :func:`kairox_addhooks`)
hookspec = pluggy.HookspecMarker("kairox")
#: marks a function as the implementation of a kairox hook
hookimpl = pluggy.HookimplMarker("kairox")

#: the attribute :func:`advisory` sets on a hook implementation
ADVISORY = "kairox_advisory"


def advisory(fn: Any) -> Any:
    """Mark a ``kairox_pre_tool_call`` implementation advisory: when it raises or times out,
    its failure is reported (a ``HookFailed`` event) and the call goes on. Without the mark,
    a guard that fails blocks the call. Put it below ``@kairox.hookimpl``::

        @kairox.hookimpl
        @kairox.advisory
        def kairox_pre_tool_call(call): ...
    """
    setattr(fn, ADVISORY, True)
    return fn


# -- registration hooks ---------------------------------------------------------


@hookspec(historic=True)
def kairox_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    """Add the hook specifications this plugin owns: ``pluginmanager.add_hookspecs(module)``.

    As pytest plugins do with ``pytest_addhooks``, a feature owns the hooks only it calls:
    kairox-mcp owns ``kairox_register_transports`` (see ``kairox_mcp.hookspecs``), and a
    transport plugin implements it like any kairox hook. Called for each plugin as it is
    registered (a historic hook); a plugin whose implementation raises is not loaded.

    :param pluginmanager: the host's pluggy ``PluginManager``.
    :return: nothing; the return value is ignored.
    """


@hookspec
def kairox_register_tool_providers(registrar: Registrar[ToolProvider], runtime: Runtime) -> None:
    """Register tool providers: objects that add and remove tools while the runtime runs.

    Called once per runtime after the config is loaded. The runtime then calls
    every provider's ``start(runtime)`` in parallel (one failing never stops
    the others) and ``stop()`` on close.

    :param registrar: ``registrar.add(provider)``; ``provider.name`` must be unique.
    :param runtime: the runtime being opened (config, events, tools are ready).
    :return: nothing; the return value is ignored.
    """


@hookspec
def kairox_register_skill_sources(registrar: Registrar[SkillSource], runtime: Runtime) -> None:
    """Register skill sources (directories of skill files, plugin bundles, ...).

    Called once per runtime after the config is loaded; the runtime scans every
    source into ``runtime.skills``.

    :param registrar: ``registrar.add(source)``; ``source.name`` must be unique.
    :param runtime: the runtime being opened.
    :return: nothing; the return value is ignored.
    """


@hookspec
def kairox_register_catalog_sources(registrar: Registrar[CatalogSource], runtime: Runtime) -> None:
    """Register marketplace catalog sources (built-in lists, remote documents).

    Called when the catalog is first used (not on every runtime start).

    :param registrar: ``registrar.add(source)``; ``source.name`` must be unique.
    :param runtime: the runtime the catalog belongs to.
    :return: nothing; the return value is ignored.
    """


@hookspec
def kairox_register_manifest_formats(registrar: Registrar[ManifestFormat]) -> None:
    """Register plugin manifest formats.

    Called once per runtime. When a plugin directory is loaded, formats are
    probed in ascending ``priority`` order and the first that recognises the
    directory wins.

    :param registrar: ``registrar.add(fmt)``; ``fmt.name`` must be unique.
    :return: nothing; the return value is ignored.
    """


@hookspec
def kairox_register_config_sections(registrar: Registrar[ConfigSection]) -> None:
    """Claim ``kairox.toml`` sections and give each its schema.

    Called once per runtime before any config file is read. A section nobody
    registered is reported as an error naming the plugins that own sections.

    :param registrar: ``registrar.add(ConfigSection(name=..., schema=...))``.
    :return: nothing; the return value is ignored.
    """


@hookspec
def kairox_register_commands(cli: click.Group) -> None:
    """Add subcommands to the ``kairox`` command line.

    Called once when the CLI starts, before arguments are parsed.

    :param cli: the top-level click group; use ``cli.add_command`` or
        ``@cli.command()``/``@cli.group()``.
    :return: nothing; the return value is ignored.
    """


# -- lifecycle hooks --------------------------------------------------------------


@hookspec
def kairox_session_start(session: Session) -> None:
    """A session has started (``async with runtime.session() as s``).

    Called exactly once per session, before the session is handed to the caller.

    :param session: the new session; ``session.runtime`` is its runtime and
        ``session.state`` a dict the hook may use for per-session data.
    :return: nothing; the return value is ignored.
    """


@hookspec
def kairox_session_end(session: Session, reason: str) -> None:
    """A session has ended.

    Called exactly once per session, also when it ends by an error or a
    cancellation.

    :param session: the session that ended.
    :param reason: ``"closed"``, ``"error"`` or ``"cancelled"``.
    :return: nothing; the return value is ignored.
    """


@hookspec
def kairox_instructions(session: Session, cwd: Path) -> list[Any] | None:
    """Before each turn, give the instructions for every session in the workspace (the
    instruction files a plugin owns: kairox-agents reads ``AGENTS.md`` and ``CLAUDE.md``).

    Called by ``session.turn_context(prompt)`` once per turn, before ``kairox_pre_turn``;
    the instructions come first in ``TurnContext.instructions``, before the tool providers'
    own (an MCP server's ``instructions``).

    :param session: the session the turn belongs to.
    :param cwd: the directory the turn is in (the workspace root unless the host says).
    :return: ``None`` for nothing, or a list of :class:`kairox.ext.Instruction` in the order
        the model is to read them. An exception in the list (returned, not raised: a file
        that was refused) is a problem of the turn. One that raises (a ``[instructions]``
        that does not validate) is reported and fails the turn: instructions carry the
        user's own rules, and a turn does not go on without them.
    """


@hookspec
def kairox_pre_turn(session: Session, prompt: str) -> str | ContextPiece | list[Any] | None:
    """Before each turn, contribute context for the model.

    Called by ``session.turn_context(prompt)`` once per turn.

    :param session: the session the turn belongs to.
    :param prompt: the user's prompt for this turn.
    :return: ``None`` for nothing, a string, a :class:`~kairox.ContextPiece`,
        or a list of those; each piece is labelled with the plugin it came from. An
        exception in the list (returned, not raised) is a problem of the turn.
    """


@hookspec
def kairox_pre_tool_call(call: ToolCall) -> Block | Ask | dict[str, Any] | None:
    """Before a tool runs (after the policy engine allowed it).

    Called once per implementation, in pluggy order; each sees the arguments
    as rewritten by the ones before it. If the arguments are rewritten, they are
    validated against the tool's input schema and the policy engine decides again.

    A guard fails closed: an implementation that raises, or whose coroutine does
    not finish within ``Runtime.hook_timeout`` seconds, blocks the call with the
    reason (and a ``HookFailed`` event), unless it is marked :func:`advisory`.
    So does one that answers anything but the values below (``False``, a string,
    an exception it did not raise): the call is blocked, naming what it answered.

    :param call: the call: ``call.tool`` (the :class:`~kairox.ToolSpec`),
        ``call.arguments``, ``call.session`` (may be ``None``), ``call.runtime``.
    :return: ``None`` to let it run unchanged; a dict to replace the arguments;
        :class:`~kairox.Block` (``Block(reason)``) to refuse the call;
        :class:`~kairox.Ask` (``Ask(reason)``) to have the user asked first: the
        approver is asked even when the policy allowed the call, and the call is
        refused when there is none. A Block from any implementation wins over an Ask.
    """


@hookspec
def kairox_post_tool_call(call: ToolCall, result: ToolResult) -> None:
    """After a tool returned (also when it returned an error result). Not called for a
    call that never reached the tool: arguments that do not fit its schema (the error result
    is the pipeline's), a refusal, a tool that raised or timed out.

    :param call: the call as it was made (final arguments).
    :param result: the :class:`~kairox.ToolResult`.
    :return: nothing; the return value is ignored.
    """


@hookspec
def kairox_event(event: Event, runtime: Runtime) -> None:
    """Observe every event the runtime publishes (lifecycle, tools, hooks, ...).

    Called synchronously as each event is published; keep it fast.

    :param event: the event; ``event.kind`` names its type, ``event.to_dict()`` serialises it.
    :param runtime: the runtime that published it.
    :return: nothing; the return value is ignored.
    """
