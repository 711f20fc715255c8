"""Plugin manifests: ``.kairox-plugin``, ``.codex-plugin``, ``.claude-plugin`` (and Claude's
manifest-less layout), the loader that routes each plugin's contributions, settings,
install/uninstall and ``kairox plugin ...``.

Names are loaded lazily so that importing the package stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox.lazy import lazy_exports

if TYPE_CHECKING:
    from .activation import Activation, ActivationContext
    from .discovery import Candidate, DiscoveryContext, Location, discover, probe
    from .errors import ManifestError, Problem
    from .formats import BaseFormat, ClaudeDefaultLayout, ClaudeFormat, CodexFormat, KairoxFormat, builtin_formats
    from .inventory import PluginRecord, evaluate
    from .loader import PluginLoader, loader_of, survey
    from .model import (
        CodeEntry,
        Compatibility,
        Contribution,
        HookDecl,
        InventoryItem,
        PluginManifest,
        PluginManifestView,
        Publisher,
        Requirement,
        Trust,
    )
    from .settings import PluginSettings, SettingsStore

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["Activation", "ActivationContext"], "activation"),
    **dict.fromkeys(["Candidate", "DiscoveryContext", "Location", "discover", "probe"], "discovery"),
    **dict.fromkeys(["ManifestError", "Problem"], "errors"),
    **dict.fromkeys(
        ["BaseFormat", "ClaudeDefaultLayout", "ClaudeFormat", "CodexFormat", "KairoxFormat", "builtin_formats"],
        "formats",
    ),
    **dict.fromkeys(["PluginRecord", "evaluate"], "inventory"),
    **dict.fromkeys(["PluginLoader", "loader_of", "survey"], "loader"),
    **dict.fromkeys(
        [
            "CodeEntry",
            "Compatibility",
            "Contribution",
            "HookDecl",
            "InventoryItem",
            "PluginManifest",
            "PluginManifestView",
            "Publisher",
            "Requirement",
            "Trust",
        ],
        "model",
    ),
    **dict.fromkeys(["PluginSettings", "SettingsStore"], "settings"),
}

__all__ = [
    "Activation",
    "ActivationContext",
    "BaseFormat",
    "Candidate",
    "ClaudeDefaultLayout",
    "ClaudeFormat",
    "CodeEntry",
    "CodexFormat",
    "Compatibility",
    "Contribution",
    "DiscoveryContext",
    "HookDecl",
    "InventoryItem",
    "KairoxFormat",
    "Location",
    "ManifestError",
    "PluginLoader",
    "PluginManifest",
    "PluginManifestView",
    "PluginRecord",
    "PluginSettings",
    "Problem",
    "Publisher",
    "Requirement",
    "SettingsStore",
    "Trust",
    "activation",
    "builtin_formats",
    "discover",
    "discovery",
    "errors",
    "evaluate",
    "formats",
    "inventory",
    "loader",
    "loader_of",
    "model",
    "probe",
    "settings",
    "survey",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
