"""Distributions: a package that declares which plugin packages kairox loads, and its defaults.

A team ships its own kairox as one package whose dependencies pick the plugin packages,
and which says so to the kernel through the ``kairox.distributions`` entry-point group::

    [project.entry-points."kairox.distributions"]
    acme = "acme_kairox:DISTRIBUTION"

    # acme_kairox/__init__.py
    DISTRIBUTION = kairox.Distribution(
        "acme",
        plugins=("tools", "skills", "mcp", "stdio"),
        config={"policy": {"approval": "untrusted"}},
        policy_floor={"sandbox": "workspace_write", "rules": {"shell.*": "ask"}},
    )

In an environment where it is installed, :func:`kairox.ext.build_plugin_host` (so
``Runtime.open()`` and every ``kairox`` command) loads exactly that set of plugin
packages and the distribution's own package (its own skills, hooks and tools); its
``config`` is the lowest configuration layer, below the user's file, and its
``policy_floor`` the values of ``[policy]`` no user or workspace file may loosen.
``KAIROX_DISTRIBUTION=NAME`` picks one when several are installed (``none``: no
distribution: every installed plugin package loads); ``KAIROX_LOAD_PLUGINS`` still
narrows the set and ``KAIROX_DISABLE_PLUGINS`` still takes plugins out of it.

A distribution that cannot be chosen or loaded fails closed: no plugin package loads
(its defaults may be what keeps the policy strict), and the reason is a load failure
that ``kairox plugins`` and ``kairox status`` show.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import attrs

from ._entrypoints import InstalledEntryPoints

__all__ = ["DISTRIBUTION_GROUP", "Distribution", "DistributionChoice", "choose_distribution"]

logger = logging.getLogger(__name__)

#: the entry-point group a distribution package declares itself in
DISTRIBUTION_GROUP = "kairox.distributions"


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not all(isinstance(v, str) and v.strip() for v in value):
        raise TypeError("plugins must be a list of plugin package or entry-point names")
    return tuple(v.strip() for v in value)


#: what a policy floor may hold: the values only a stricter one may replace
_FLOOR_KEYS = ("approval", "sandbox", "include_temp_dir", "rules")


def _floor(value: Any) -> dict[str, Any]:
    """A ``[policy]`` table of what no config file may loosen, checked now: a floor that
    does not hold fails the distribution (closed) rather than guard nothing."""
    from ._types import ApprovalPolicy, SandboxPolicy

    if not isinstance(value, Mapping):
        raise TypeError("policy_floor must be a table shaped like [policy] ({'approval': 'untrusted', ...})")
    unknown = sorted(str(k) for k in value if k not in _FLOOR_KEYS)
    if unknown:
        raise TypeError(f"policy_floor may set {', '.join(_FLOOR_KEYS)}; not {', '.join(unknown)}")
    floor = dict(value)
    for key, kind in (("approval", ApprovalPolicy), ("sandbox", SandboxPolicy)):
        if key in floor and floor[key] not in {v.value for v in kind}:
            raise TypeError(f"policy_floor {key} must be one of {', '.join(v.value for v in kind)}, not {floor[key]!r}")
    if "include_temp_dir" in floor and not isinstance(floor["include_temp_dir"], bool):
        raise TypeError("policy_floor include_temp_dir must be true or false")
    rules = floor.get("rules", {})
    if not isinstance(rules, Mapping) or not all(isinstance(p, str) and a in ("ask", "deny") for p, a in rules.items()):
        raise TypeError("policy_floor rules must be a table of tool patterns to 'ask' or 'deny'")
    if "rules" in floor:
        floor["rules"] = dict(rules)
    return floor


def _table(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(v, Mapping) for v in value.values()):
        raise TypeError("config must be a table of config sections ({'policy': {...}, ...})")
    return {str(k): dict(v) for k, v in value.items()}


@attrs.frozen
class Distribution:
    """A kairox distribution: its name, the plugin packages it loads, its default config."""

    name: str
    #: entry-point names (``mcp``) or plugin package names (``kairox-mcp``), compared as PEP 503 names
    plugins: tuple[str, ...] = attrs.field(converter=_names)
    #: the lowest configuration layer (a kairox.toml document as a dict), below the user's file
    config: dict[str, Any] = attrs.field(factory=dict, converter=_table)
    description: str = ""
    #: ``[policy]`` values no config file may loosen (``approval``, ``sandbox``,
    #: ``include_temp_dir``, ``ask``/``deny`` ``rules``): a looser user or workspace value
    #: is reported as not applied and the floor's applies
    policy_floor: dict[str, Any] = attrs.field(factory=dict, converter=_floor)


@attrs.frozen
class DistributionChoice:
    """Which distribution applies in this environment, and what went wrong choosing it."""

    distribution: Distribution | None = None
    #: the package that declared it, and that package's version
    package: str | None = None
    version: str | None = None
    #: problems to report (a distribution that does not load, an ambiguous choice);
    #: with any, no plugin package loads
    problems: tuple[str, ...] = ()

    def config_documents(self) -> list[tuple[str, dict[str, Any]]]:
        """The distribution's default config as :func:`kairox.ext.load_config` ``defaults``."""
        dist = self.distribution
        if dist is None or not dist.config or self.problems:
            return []
        return [(f"<distribution {dist.name} ({self.package})>", {k: dict(v) for k, v in dist.config.items()})]

    def floor_documents(self) -> list[tuple[str, dict[str, Any]]]:
        """The distribution's policy floor as :func:`kairox.ext.load_config` ``floors``."""
        dist = self.distribution
        if dist is None or not dist.policy_floor or self.problems:
            return []
        return [(f"<distribution {dist.name} ({self.package}) policy floor>", {"policy": dict(dist.policy_floor)})]

    def plugin_set(self) -> frozenset[str]:
        """The PEP 503 names of the plugin packages that load: the distribution's ``plugins``
        and its own package (so its own skills, hooks and tools load without listing itself)."""
        from ._host import package_key

        dist = self.distribution
        if dist is None:
            return frozenset()
        own = {package_key(self.package)} if self.package else set()
        return frozenset({package_key(n) for n in dist.plugins} | own)

    @property
    def label(self) -> str:
        dist = self.distribution
        return f"distribution {dist.name!r} ({self.package})" if dist else "no distribution"


def choose_distribution(installed: InstalledEntryPoints, env: Mapping[str, str]) -> DistributionChoice:
    """The installed distribution that applies: the one ``KAIROX_DISTRIBUTION`` names, or
    the only one installed. Never raises: a problem is in :attr:`DistributionChoice.problems`
    (and then the host loads no plugin package)."""
    wanted = env.get("KAIROX_DISTRIBUTION", "").strip()
    if wanted.lower() == "none":
        return DistributionChoice()
    candidates = list(installed.entry_points)
    if wanted:
        chosen = [ep for ep in candidates if ep.name == wanted]
        if not chosen:
            names = ", ".join(sorted(ep.name for ep in candidates)) or "none is installed"
            return DistributionChoice(
                problems=(f"KAIROX_DISTRIBUTION={wanted!r} names no installed distribution ({names})",)
            )
    elif len(candidates) > 1:
        names = ", ".join(sorted(f"{ep.name} ({ep.dist_name})" for ep in candidates))
        return DistributionChoice(
            problems=(
                f"several kairox distributions are installed ({names}); set KAIROX_DISTRIBUTION to one of "
                "them (or to 'none' for every installed plugin package)",
            )
        )
    else:
        chosen = candidates
    if not chosen:
        return DistributionChoice()
    ep = chosen[0]
    try:
        value = ep.load()
        if callable(value) and not isinstance(value, Distribution):
            value = value()
        if not isinstance(value, Distribution):
            raise TypeError(f"{ep.value} is a {type(value).__name__}, not a kairox.Distribution")
    except Exception as exc:
        return DistributionChoice(
            package=ep.dist_name,
            version=ep.version,
            problems=(f"distribution {ep.name!r} of {ep.dist_name} does not load: {type(exc).__name__}: {exc}",),
        )
    return DistributionChoice(value, ep.dist_name, ep.version)
