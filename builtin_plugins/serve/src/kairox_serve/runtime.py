"""Opening the runtime a gateway serves: only a trusted workspace is served."""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from kairox import ConfigError, KairoxError, Runtime
from kairox.ext import TrustState, TrustStore, user_home

from .config import ServeConfig

__all__ = [
    "BrokenServeConfig",
    "UntrustedWorkspace",
    "check_serve_config",
    "check_trusted",
    "serve_config",
    "served_runtime",
    "start_served",
]


class UntrustedWorkspace(KairoxError):
    """``kairox serve`` refuses a workspace the user has not trusted (or that changed since)."""


class BrokenServeConfig(KairoxError):
    """``kairox serve`` refuses to start on a ``[serve]`` section with errors: its defaults
    would expose every tool that the broken allow or deny list was written to keep out."""


#: the keys of ``[serve]`` only the user's own config may set: who may call, what each
#: principal may do and how much, where calls are recorded (a workspace, trusted or not,
#: would choose its own callers, widen their rules or lift their limits, or point the
#: replicas' shared state, limits and held calls, at a server of its choosing)
USER_ONLY = ("auth", "principals", "audit", "limits", "state")


def check_serve_config(rt: Runtime) -> None:
    """Raise :class:`BrokenServeConfig` naming each error (file and field) of ``[serve]``,
    and each of :data:`USER_ONLY` a workspace file sets."""
    errors = config_errors(rt)
    for key in USER_ONLY:
        source = rt.config.source_of("serve", key)
        # the config's own verdict on the file (found through the workspace, whatever links
        # lead where inside it), not a comparison of resolved names a link inside it defeats
        if source and rt.config.scope_of(source) == "workspace":
            errors.append(
                ConfigError(
                    "is the user's to set (who may call the gateway, what each principal may do and how much, "
                    "where calls are recorded and the replicas' state is kept): move it to your own ~/.kairox/kairox.toml",
                    file=source,
                    path=f"serve.{key}",
                )
            )
    if errors:
        listed = "; ".join(e.render() for e in errors[:5]) + (
            f"; and {len(errors) - 5} more" if len(errors) > 5 else ""
        )
        raise BrokenServeConfig(
            f"[serve] has errors, and kairox serve does not start on its defaults, which would expose what it "
            f"was written to restrict: {listed}"
        )


def check_trusted(rt: Runtime) -> None:
    """Raise :class:`UntrustedWorkspace` unless the user trusts the workspace as it is now.

    A gateway hands the workspace's tools to whatever connects, so it serves only what
    the user said may run: an untrusted workspace, or one with items changed since it
    was trusted, is refused with the command that trusts it."""
    trust = rt.trust
    problem = f" ({trust.problem})" if trust.problem else ""
    if not trust.trusted:
        raise UntrustedWorkspace(
            f"the workspace {rt.workspace} is not trusted, and kairox serve serves only a trusted workspace{problem}; "
            f"{trust.hint()}, then start kairox serve again. {_trust_store_note(rt)}"
        )
    pending = trust.pending
    if pending:
        names = ", ".join(sorted(item.name for item in pending)[:5])
        more = f" and {len(pending) - 5} more" if len(pending) > 5 else ""
        raise UntrustedWorkspace(
            f"the workspace {rt.workspace} has changed since you trusted it ({names}{more}), and kairox serve "
            f"serves only what you trusted; {trust.hint(TrustState.CHANGED)}, then start kairox serve again"
        )


def _trust_store_note(rt: Runtime) -> str:
    """Which trust store this process read, and from which variable: an MCP host starts
    ``kairox serve`` with the environment its own config names (the Inspector and the SDKs
    pass a few variables, not ``KAIROX_HOME``), so a workspace trusted under one home is
    untrusted to a gateway that reads another."""
    home = rt.home or user_home(rt.env)
    store = TrustStore(home).path
    if rt.home is not None:
        return f"This gateway reads trust from {store}."
    if rt.env.get("KAIROX_HOME"):
        return f"This gateway reads trust from {store} (KAIROX_HOME={rt.env['KAIROX_HOME']})."
    return (
        f"This gateway reads trust from {store} (KAIROX_HOME is not set in its environment); "
        "if you trusted it with KAIROX_HOME set, give the MCP host that starts kairox serve the same "
        "KAIROX_HOME (its server entry's env)."
    )


def serve_config(rt: Runtime) -> ServeConfig:
    """The ``[serve]`` section in effect (its defaults when the section is absent or broken)."""
    if "serve" not in rt.config_sections:
        return ServeConfig()
    value = rt.config.section("serve")
    return value if isinstance(value, ServeConfig) else ServeConfig()


@asynccontextmanager
async def served_runtime(workspace: str | os.PathLike[str], **kwargs: Any) -> AsyncIterator[Runtime]:
    """``Runtime.open`` for serving: discover, refuse an untrusted workspace, then start
    every provider (``kwargs`` go to :meth:`kairox.Runtime.open`)."""
    async with Runtime.open(workspace, start=False, **kwargs) as rt:
        await start_served(rt)
        yield rt


async def start_served(rt: Runtime) -> None:
    """Refuse an untrusted workspace; give the runtime the gateway's host callbacks (unless
    it has its own); start every provider."""
    check_trusted(rt)
    check_serve_config(rt)
    for name, callback in host_callbacks(rt).items():
        if getattr(rt, name, None) is None:
            setattr(rt, name, callback)
    await rt.start_providers()


def host_callbacks(rt: Runtime) -> dict[str, Any]:
    """The runtime's own host callbacks and approver: with them kairox-mcp declares the
    capabilities to backend servers. A request during a client's tool call goes to that
    call's session instead (:class:`kairox_serve.forward.ClientLink`); one during a client's
    ``prompts/get`` (no kairox session) to that request's link; any other is refused, saying
    why, and roots asked outside every client's request are the gateway's."""
    from .forward import runtime_approver, runtime_elicitation, runtime_list_roots, runtime_sampling

    return {
        "sampling_callback": runtime_sampling,
        "elicitation_callback": runtime_elicitation,
        "list_roots_callback": functools.partial(runtime_list_roots, rt),
        "approver": runtime_approver,
    }


def config_errors(rt: Runtime) -> list[ConfigError]:
    return [e for e in rt.config.errors if (e.path or "").startswith("serve")]
