"""Plugin dependencies: Claude Code's ``dependencies``, read and resolved.

A manifest lists the plugins it needs: a name (``"audit-logger"``), or
``{"name", "version", "marketplace"}`` with ``version`` an npm semver range
(``~2.1.0``, ``^2.0``, ``>=1.2 <2``, ``1.2.0 - 1.5.0``, ``||``), matched by
``semantic_version.NpmSpec`` as Claude Code matches it with Node's ``semver``.

Kairox installs nothing to satisfy one: a dependency is resolved among the plugins
discovery found, by the same scope rules: a user plugin's among the user's own
plugins only (a workspace never decides whether the user's own plugin loads), a
workspace plugin's among all. A dependency that is missing, whose version is out of
range (or not declared when a range is), or that does not load itself (disabled,
untrusted, failed...) keeps the plugin from loading: its state is ``incompatible``
and the reason names the dependency. ``marketplace`` is shown, not checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kairox.ext import describe_value

from ._schema import join
from .errors import ManifestError
from .model import Dependency

if TYPE_CHECKING:
    from .inventory import BundleRecord

__all__ = ["parse_dependencies", "resolve_dependencies", "version_matches"]

#: a range longer than this is refused (it is matched on every discovery)
MAX_RANGE = 256
#: states of a dependency that let its dependents load
_LOADS = ("available", "loaded")


def _spec(text: str) -> Any:
    import semantic_version

    if len(text) > MAX_RANGE:
        raise ValueError(f"a version range is at most {MAX_RANGE} characters")
    return semantic_version.NpmSpec(text.strip() or "*")


def version_matches(version: str, spec: str) -> bool:
    """Whether ``version`` (a semantic version; ``1.2`` is read as ``1.2.0``) is in the npm
    range ``spec``. Raises ``ValueError`` when either is not what it should be."""
    import semantic_version

    try:
        parsed = semantic_version.Version(version.strip().removeprefix("v"))
    except ValueError:
        parsed = semantic_version.Version.coerce(version.strip().removeprefix("v"))
    return bool(_spec(spec).match(parsed))


def _entry(item: Any, *, file: str | None, path: str) -> Dependency:
    from .formats._common import NAME_RE

    if isinstance(item, str):
        item = {"name": item}
    if not isinstance(item, dict):
        raise ManifestError(
            f"expected a plugin name or {{name, version, marketplace}}, got {describe_value(item)}",
            file=file,
            path=path,
        )
    for key in item:
        if key not in ("name", "version", "marketplace"):
            raise ManifestError("unknown field of a dependency", file=file, path=join(path, str(key)))
    name = item.get("name")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise ManifestError(f"{describe_value(name)} is not a plugin name", file=file, path=join(path, "name"))
    version = item.get("version", "")
    if not isinstance(version, str):
        raise ManifestError(
            f"expected a version range (a string), got {describe_value(version)}",
            file=file,
            path=join(path, "version"),
        )
    try:
        _spec(version)
    except ValueError as exc:
        raise ManifestError(
            f"{version!r} is not an npm version range ({exc})", file=file, path=join(path, "version")
        ) from None
    marketplace = item.get("marketplace")
    if marketplace is not None and not isinstance(marketplace, str):
        raise ManifestError(
            f"expected a marketplace name (a string), got {describe_value(marketplace)}",
            file=file,
            path=join(path, "marketplace"),
        )
    return Dependency(name, version.strip(), marketplace)


def parse_dependencies(value: Any, *, file: str | None, path: str = "dependencies") -> tuple[Dependency, ...]:
    """The manifest's ``dependencies`` (``None``: none). A wrong shape or a range that does
    not parse raises :class:`ManifestError` naming the file and the field."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ManifestError(f"expected a list of dependencies, got {describe_value(value)}", file=file, path=path)
    out: dict[str, Dependency] = {}
    for i, item in enumerate(value):
        dep = _entry(item, file=file, path=join(path, i))
        out.setdefault(dep.name, dep)
    return tuple(out.values())


def _provider(pool: Sequence[BundleRecord], name: str, scope: str) -> BundleRecord | None:
    """The plugin ``name`` a plugin of ``scope`` may depend on: the copy that loads, else any."""
    found = [
        r
        for r in pool
        if r.manifest is not None and r.name == name and (scope != "user" or r.candidate.scope == "user")
    ]
    return next((r for r in found if r.state != "shadowed"), found[0] if found else None)


def _winner(pool: Sequence[BundleRecord], name: str) -> BundleRecord | None:
    return next((r for r in pool if r.manifest is not None and r.name == name and r.state != "shadowed"), None)


def _unmet(rec: BundleRecord, dep: Dependency, pool: Sequence[BundleRecord]) -> str | None:
    """Why ``dep`` of ``rec`` is not met (``None`` when it is)."""
    provider = _provider(pool, dep.name, rec.candidate.scope)
    if provider is None:
        where = " among your own plugins (where a user plugin's resolve)" if rec.candidate.scope == "user" else ""
        return f"needs plugin {dep.name}, which was not found{where}"
    loading = _winner(pool, dep.name) if provider.state == "shadowed" else provider
    if loading is None or loading.state not in _LOADS:
        state = loading.state if loading is not None else provider.state
        why = loading.reason if loading is not None else provider.reason
        return f"needs plugin {dep.name}, which is {state}" + (f" ({why})" if why else "")
    if not dep.version:
        return None
    assert provider.manifest is not None
    version = provider.manifest.version
    if not version:
        return f"needs plugin {dep.name} {dep.version}; {provider.candidate.root} declares no version"
    try:
        ok = version_matches(version, dep.version)
    except ValueError:
        return f"needs plugin {dep.name} {dep.version}; its version {version!r} is not a semantic version"
    if not ok:
        return f"needs plugin {dep.name} {dep.version}, found {version} ({provider.candidate.root})"
    return None


def resolve_dependencies(records: Sequence[BundleRecord], pool: Sequence[BundleRecord] | None = None) -> None:
    """Mark every ``available`` record of ``records`` whose dependencies (resolved in ``pool``,
    default ``records``) are not met as ``incompatible``, naming each unmet one. Repeated until
    nothing changes: a plugin whose dependency cannot load cannot load either."""
    pool = records if pool is None else pool
    changed = True
    while changed:
        changed = False
        for rec in records:
            m = rec.manifest
            if rec.state != "available" or m is None or not m.dependencies:
                continue
            reasons = [r for dep in m.dependencies if (r := _unmet(rec, dep, pool)) is not None]
            if reasons:
                rec.incompatible.extend(reasons)
                rec.state, rec.reason = "incompatible", "; ".join(reasons)
                changed = True
