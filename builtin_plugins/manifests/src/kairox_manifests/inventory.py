"""Deciding what loads: settings, compatibility and trust for each discovered plugin.

Pure decisions (no activation): used by the loader before it activates a
plugin, and by ``kairox plugin list/inspect`` to show why something would or
would not load.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from .compat import check_compatibility
from .discovery import Candidate, DiscoveryContext
from .errors import Problem
from .model import BundleManifest, BundleManifestView, Contribution, InventoryItem, permissions_to_dict

__all__ = [
    "ItemState",
    "BundleRecord",
    "contribution_enabled",
    "evaluate",
    "bundle_enabled",
    "trust_of",
]


@attrs.define
class ItemState:
    enabled: bool = True
    loaded: bool = False
    detail: str = ""


@attrs.define
class BundleRecord:
    """One discovered plugin and what became of it."""

    candidate: Candidate
    state: str = "available"
    reason: str = ""
    trusted: bool = False
    incompatible: list[str] = attrs.field(factory=list)
    items: dict[str, ItemState] = attrs.field(factory=dict)
    #: contributions that exist only once the code ran (tools a code plugin registered)
    extra: list[Contribution] = attrs.field(factory=list)
    undo: list[Callable[[], Any]] = attrs.field(factory=list)
    activation: Any = None
    #: what this machine lacks that the plugin asks for without needing it to load
    #: (a ``requiresEnv`` variable that is not set)
    warnings: list[Problem] = attrs.field(factory=list)

    @property
    def name(self) -> str:
        return self.candidate.name

    @property
    def manifest(self) -> BundleManifest | None:
        return self.candidate.manifest

    def view(self) -> BundleManifestView:
        cand = self.candidate
        m = cand.manifest
        problems: list[Problem] = list(m.problems) if m else []
        if cand.error is not None:
            problems = [Problem.from_error(e) for e in cand.error.errors] + problems
        problems += self.warnings
        inventory: list[InventoryItem] = []
        for c in [*(m.contributions if m else ()), *self.extra]:
            st = self.items.get(c.key, ItemState())
            inventory.append(InventoryItem(c.kind, c.name, str(c.source), st.enabled, st.loaded, st.detail))
        compat = m.compatibility.to_dict() if m else {}
        return BundleManifestView(
            name=self.name,
            format=m.format if m else "?",
            root=str(cand.root),
            scope=cand.scope,
            state=self.state,
            reason=self.reason,
            version=m.version if m else None,
            description=m.description if m else "",
            enabled=self.state not in ("disabled",),
            inventory=tuple(inventory),
            permissions=permissions_to_dict(m.permissions) if m else None,
            compatibility=compat,
            compatible=not self.incompatible,
            incompatibilities=tuple(self.incompatible),
            trust=m.trust.value if m else "unknown",
            trusted=self.trusted,
            publisher=m.publisher.to_dict() if m and m.publisher else None,
            problems=tuple(problems),
            formats=m.all_formats if m else (),
            metadata=dict(m.metadata) if m else {},
        )


def unset_variables(manifest: BundleManifest, env: Mapping[str, str]) -> list[Problem]:
    """A warning for each variable the plugin's code lists (Philont's ``requiresEnv``) that is
    not set here. The list is what the code's environment may hold, not a precondition: the
    plugin runs without the variable, as Philont runs it."""
    if manifest.code is None:
        return []
    file = str(manifest.manifest_file) if manifest.manifest_file else None
    return [
        Problem(
            f"{name} is not set: the plugin's code runs without it",
            file=file,
            path=f"requiresEnv[{i}]",
            kind="environment",
        )
        for i, name in enumerate(manifest.code.requires_env)
        if not env.get(name)
    ]


def _disabled(ctx: DiscoveryContext, scope: str) -> list[str]:
    """``[plugins] disabled`` for bundles of ``scope``: the user's list always applies; a
    workspace's list only adds to it, and only for the workspace's own bundles."""

    def names(value: Any) -> list[str]:
        return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []

    out = names(ctx.user_values.get("disabled")) if ctx.runtime_config is not None else list(ctx.config.disabled)
    if scope != "user":
        out += names(ctx.workspace_values.get("disabled"))
    return out


def bundle_enabled(ctx: DiscoveryContext, manifest: BundleManifest, scope: str = "workspace") -> tuple[bool, str]:
    """Whether the settings let the plugin load. A bundle of the user's own is switched
    off only by the user's files and settings, never by a workspace's."""
    name = manifest.name
    values = ctx.values_for(scope)
    if values.get("enabled") is False:
        return False, "manifest plugins are off ([plugins] enabled = false)"
    if name in _disabled(ctx, scope):
        return False, "disabled in [plugins] disabled"
    entry = ctx.settings.entry(name, scope)
    explicit = entry.get("enabled")
    if explicit is False:
        return False, "disabled in the plugin settings (kairox plugin enable to turn it on)"
    if explicit is None and manifest.default_enabled is False:
        return False, "off by default (defaultEnabled is false; kairox plugin enable to turn it on)"
    return True, ""


def contribution_enabled(
    ctx: DiscoveryContext, plugin: str, contribution: Contribution, scope: str = "workspace"
) -> bool:
    disabled = _disabled(ctx, scope)
    if f"{plugin}:{contribution.key}" in disabled or f"{plugin}:{contribution.name}" in disabled:
        return False
    return ctx.settings.contribution_enabled(plugin, contribution.key, scope)


def trust_of(ctx: DiscoveryContext, candidate: Candidate) -> tuple[bool, str]:
    """Whether the plugin may load without asking, and if not, why."""
    from .trust import candidate_trust

    return candidate_trust(ctx, candidate)


def evaluate(
    candidate: Candidate, ctx: DiscoveryContext, *, env: Mapping[str, str] | None = None, check: bool = True
) -> BundleRecord:
    """Everything but trust prompting and activation: failed / shadowed / disabled /
    incompatible / untrusted / available, with the per-contribution enabled flags."""
    rec = BundleRecord(candidate)
    if candidate.error is not None:
        rec.state, rec.reason = "failed", str(candidate.error)
        return rec
    manifest = candidate.manifest
    assert manifest is not None
    for c in manifest.contributions:
        on = contribution_enabled(ctx, manifest.name, c, candidate.scope)
        rec.items[c.key] = ItemState(enabled=on, detail="" if on else "disabled in the settings")
    rec.trusted, why_not = trust_of(ctx, candidate)
    if candidate.shadowed_by is not None:
        winner = candidate.shadowed_by
        rec.state = "shadowed"
        rec.reason = f"shadowed by {winner.root} ({winner.location.origin}, priority {winner.location.priority})"
        if not rec.trusted and winner.trusted:
            rec.reason = f"ignored: an untrusted copy; the trusted {winner.name} from {winner.root} loads instead"
        return rec
    enabled, why = bundle_enabled(ctx, manifest, candidate.scope)
    if not enabled:
        rec.state, rec.reason = "disabled", why
        return rec
    if not rec.trusted:  # before the compatibility check: it runs `<binary> --version`
        rec.state, rec.reason = "untrusted", why_not
        return rec
    rec.warnings = unset_variables(manifest, env if env is not None else ctx.env)
    if check:
        rec.incompatible = check_compatibility(manifest.compatibility, env=env if env is not None else ctx.env)
        if rec.incompatible:
            rec.state, rec.reason = "incompatible", "; ".join(rec.incompatible)
            return rec
    return rec
