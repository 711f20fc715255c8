"""Which distribution provides which feature, for helpful "not installed" errors."""

from __future__ import annotations

__all__ = ["missing_feature_message", "provider_of", "remember_not_loaded"]

#: (kind, name) -> distribution that provides it
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
}


def provider_of(kind: str, name: str) -> str | None:
    return KNOWN_FEATURES.get((kind, name))


#: plugin packages installed here but not loaded by the newest plugin host: PEP 503 name -> why
_NOT_LOADED: dict[str, str] = {}


def remember_not_loaded(packages: dict[str, str]) -> None:
    """Record which installed plugin packages the plugin host left out, and why (the
    newest host's record wins: one process has one environment)."""
    from ._host import package_key

    _NOT_LOADED.clear()
    _NOT_LOADED.update({package_key(k): v for k, v in packages.items()})


def missing_feature_message(kind: str, name: str) -> str | None:
    dist = provider_of(kind, name)
    if dist is None:
        return None
    from ._host import package_key

    why = _NOT_LOADED.get(package_key(dist))
    if why is not None:
        return f'{kind} "{name}" is provided by {dist}, which is installed but not loaded: {why}'
    return f'{kind} "{name}" is provided by {dist}, which is not installed (pip install {dist})'
