"""Events kairox-manifests publishes on the runtime's event bus."""

from __future__ import annotations

import attrs

from kairox import Event

__all__ = [
    "BundleContributionFailed",
    "BundleHookFailed",
    "BundleHookRan",
    "BundleLoaded",
    "BundleManifestsDisagree",
    "BundleNotLoaded",
]


@attrs.frozen
class BundleLoaded(Event):
    plugin: str
    format: str
    root: str
    scope: str
    contributions: tuple[str, ...] = ()


@attrs.frozen
class BundleNotLoaded(Event):
    """A discovered plugin that is not loaded: ``state`` is ``disabled``, ``incompatible``,
    ``untrusted``, ``shadowed`` or ``failed``; ``reason`` says why."""

    plugin: str
    root: str
    state: str
    reason: str


@attrs.frozen
class BundleContributionFailed(Event):
    """One contribution (``kind/name``) of a loaded plugin could not be routed."""

    plugin: str
    contribution: str
    error: str


@attrs.frozen
class BundleHookRan(Event):
    """A manifest hook script ran; ``outcome`` is ``ok``, ``context`` (its text reaches the
    model), ``blocked``, ``asked``, ``rewrote``, or ``ignored`` (a background hook answered a
    block, an ask or new arguments, which nothing waits for)."""

    plugin: str
    hook: str
    event: str
    outcome: str
    duration_s: float = 0.0
    detail: str = ""


@attrs.frozen
class BundleHookFailed(Event):
    """A manifest hook script failed (did not start, timed out, exited non-zero, answered
    nonsense). The call or turn it observed goes on as if the hook were absent, unless it
    guards the call (``pre_tool_call``) and declared ``"onError": "block"``, or its stdout
    held an answer kairox could not read: then the call is blocked."""

    plugin: str
    hook: str
    event: str
    error: str
    stderr: str = ""


@attrs.frozen
class BundleManifestsDisagree(Event):
    """A directory read by several manifest formats whose manifests disagree (a name, a
    version, two skills of one name): the first manifest in resolution order is used.
    Published once per disagreement when the runtime discovers its bundles."""

    plugin: str
    root: str
    file: str
    field: str
    message: str
