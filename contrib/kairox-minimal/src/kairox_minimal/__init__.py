"""kairox-minimal: kairox with ``kairox-tools`` and ``kairox-skills`` only (a worked example
of a distribution; ``docs/distributions.md`` walks through it).

A distribution is a package whose dependencies pick the plugin packages and which declares
itself in the ``kairox.distributions`` entry-point group (see ``pyproject.toml``). Where it
is installed, ``kairox`` and ``kairox.Runtime.open()`` load exactly :data:`DISTRIBUTION`'s
plugin set, even when more plugin packages are installed next to it, and its ``config`` is
the lowest configuration layer (below the user's ``~/.kairox/kairox.toml``).
"""

from __future__ import annotations

from kairox import Distribution

__all__ = ["DISTRIBUTION"]

DISTRIBUTION = Distribution(
    "minimal",
    plugins=("kairox-tools", "kairox-skills"),
    # defaults a team would ship: every tool that is not read-only asks first
    config={"policy": {"approval": "untrusted"}},
    description="kairox with the built-in tools and filesystem skills only",
)
