"""Which hosts are this machine only: the dashboard's and the gateway's binds, and the
plain-``http`` URLs a bundle may name."""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback_host"]

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost"})


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (a bind address, a URL's host name; IPv6 with or without brackets)
    is loopback: a loopback address, or ``localhost`` by one of its usual names."""
    name = host.strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
