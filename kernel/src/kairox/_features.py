"""Which distribution provides which feature, for helpful "not installed" errors."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._host import PluginHost

__all__ = ["missing_feature_message", "not_loaded_packages", "provider_of", "remember_not_loaded"]

#: (kind, name) -> distribution that provides it. For a package that is not installed nothing
#: else can say; tests/kernel/test_features.py checks the commands and config sections against
#: what the installed built-in packages register
KNOWN_FEATURES: dict[tuple[str, str], str] = {
    ("transport", "stdio"): "kairox-stdio",
    ("transport", "sse"): "kairox-sse",
    ("transport", "streamable_http"): "kairox-streamable-http",
    ("config section", "mcp_servers"): "kairox-mcp",
    ("config section", "lsp_servers"): "kairox-lsp",
    ("config section", "dap_servers"): "kairox-dap",
    ("config section", "skills"): "kairox-skills",
    ("config section", "plugins"): "kairox-manifests",
    ("config section", "philont"): "kairox-philont",
    ("config section", "catalog"): "kairox-catalog",
    ("config section", "tools"): "kairox-tools",
    ("config section", "instructions"): "kairox-agents",
    ("config section", "serve"): "kairox-serve",
    ("command", "agents"): "kairox-agents",
    ("command", "catalog"): "kairox-catalog",
    ("command", "mcp"): "kairox-mcp",
    ("command", "plugin"): "kairox-manifests",
    ("command", "serve"): "kairox-serve",
    ("command", "skills"): "kairox-skills",
    ("command", "ui"): "kairox-ui",
    ("command", "watch"): "kairox-ui",
}


def provider_of(kind: str, name: str) -> str | None:
    return KNOWN_FEATURES.get((kind, name))


#: plugin packages installed here that the newest plugin host did not load: PEP 503 name ->
#: what a message says of it ("which is installed but not loaded: why")
_ABSENT: dict[str, str] = {}


def _absent(host: PluginHost) -> dict[str, str]:
    """The installed plugin packages ``host`` left out or that failed, and why."""
    from ._host import package_key

    out: dict[str, str] = {}
    for failure in host.failures:
        if failure.distribution and failure.stage != "distribution":  # a distribution's problem names no package
            out.setdefault(package_key(failure.distribution), f"which failed ({failure.stage}): {failure.error}")
    for name, (dist, why) in host.not_loaded.items():
        out[package_key(dist or name)] = f"which is installed but not loaded: {why}"
    return out


def remember_not_loaded(host: PluginHost) -> None:
    """Record which installed plugin packages the plugin host left out or failed to load,
    and why (the newest host's record wins: one process has one environment)."""
    _ABSENT.clear()
    _ABSENT.update(_absent(host))


def not_loaded_packages() -> dict[str, str]:
    """The installed plugin packages the newest plugin host left out or failed to load:
    package name -> why ("which is installed but not loaded: ...")."""
    return dict(_ABSENT)


def missing_feature_message(kind: str, name: str, host: PluginHost | None = None) -> str | None:
    """Why the ``kind`` ``name`` (``"config section"``, ``"mcp_servers"``; ``"command"``,
    ``"plugin"``) is missing: the package that provides it, and whether it is not installed,
    installed but not loaded (and why), or failed. ``None`` when no known package provides it,
    or (with ``host``, asked now rather than the newest host's record) when that package loaded."""
    dist = provider_of(kind, name)
    if dist is None:
        return None
    from ._host import package_key

    absent = _ABSENT if host is None else _absent(host)
    why = absent.get(package_key(dist))
    if why is None and host is not None and any(p.distribution == dist for p in host.plugins()):
        return None  # it loaded: whatever is missing, not for want of the package
    why = why or f"which is not installed (pip install {dist})"
    return f'{kind} "{name}" is provided by {dist}, {why}'
