"""Installing and uninstalling plugin directories, through the policy engine.

``install`` copies a plugin directory into the user (``$KAIROX_HOME/plugins``)
or workspace (``.kairox/plugins``) plugin directory. The copy is a write the
runtime authorizes like any tool call (``Runtime.authorize`` with a synthetic
``plugins.install`` write tool whose target is the destination): a destination
outside the writable roots asks the approver, a denial stops it. The copy goes to a temporary
sibling first and is renamed into place, so a half-copied plugin is never
loaded. Installing into the workspace records the user's trust in what was
installed (the bundle's fingerprint in ``$KAIROX_HOME/trust.json``, as
``kairox plugin trust NAME`` does): installing it is the user's own act.
Uninstalling it forgets that trust.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import attrs

from kairox import Capability, Domain, ToolSpec
from kairox.ext import TrustStore, user_home

from .discovery import probe, sorted_formats
from .errors import ManifestError
from .model import BundleManifest
from .paths import bundle_root
from .trust import bundle_item

if TYPE_CHECKING:
    from kairox import Approver, Runtime

__all__ = ["INSTALL_SPEC", "UNINSTALL_SPEC", "InstallResult", "install_bundle", "bundle_dir", "uninstall_bundle"]

logger = logging.getLogger(__name__)

INSTALL_SPEC = ToolSpec(
    id="plugins.install",
    description="Copy a plugin into a plugin directory",
    domain=Domain.LOCAL,
    capability=Capability.WRITE,
    path_arguments=("destination",),
    provider="plugins",
)
UNINSTALL_SPEC = attrs.evolve(INSTALL_SPEC, id="plugins.uninstall", description="Remove an installed plugin")
IGNORED = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", ".DS_Store")


@attrs.frozen
class InstallResult:
    name: str
    path: Path
    scope: str
    replaced: bool = False
    format: str = ""


def bundle_dir(runtime: Runtime, scope: str) -> Path:
    if scope == "user":
        return (runtime.home or user_home(runtime.env)) / "plugins"
    if scope == "workspace":
        return runtime.workspace / ".kairox" / "plugins"
    raise ValueError(f"unknown scope {scope!r}; expected user or workspace")


def read_bundle(runtime: Runtime, source: Path) -> BundleManifest:
    """The manifest of the plugin at ``source``, read inside its folder (a file of it that leads
    outside is refused); :class:`ManifestError` when it is not a (valid) plugin."""
    if not source.is_dir():
        raise ManifestError("not a directory", file=str(source))
    reader = bundle_root(source, also=runtime.readable_roots)
    manifest, error = probe(source, sorted_formats(runtime.manifest_formats), reader=reader)
    if error is not None:
        raise error
    if manifest is None:
        raise ManifestError(
            "not a plugin: no .kairox-plugin/, .codex-plugin/ or .claude-plugin/ manifest, "
            "no Agent Plugins or Philont plugin.json and no Claude default layout",
            file=str(source),
        )
    return manifest


def _copy_into_place(runtime: Runtime, source: Path, dest: Path, exists: bool) -> None:
    """Copy to a hidden staging directory next to ``dest``, check it, rename it into place."""
    parent = dest.parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".install-{dest.name}-", dir=str(parent)))
    try:
        shutil.copytree(source, staging / "plugin", symlinks=True, ignore=IGNORED)
        read_bundle(runtime, staging / "plugin")  # the copy must still be a valid plugin
        old: Path | None = None
        if exists:
            old = staging / "previous"
            os.replace(dest, old)
        try:
            os.replace(staging / "plugin", dest)
        except OSError:
            if old is not None:
                os.replace(old, dest)
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


async def install_bundle(
    runtime: Runtime, source: Path, *, scope: str = "user", approver: Approver | None = None, force: bool = False
) -> InstallResult:
    """Copy the plugin at ``source`` into the scope's plugin directory (``<dir>/<plugin name>``).

    Raises :class:`ManifestError` (not a valid plugin), :class:`~kairox.PolicyDenied`
    (the policy or the user refused) or ``FileExistsError`` (installed already, no ``force``).
    """

    def prepare() -> tuple[BundleManifest, Path, Path, bool]:
        real = Path(os.path.realpath(source))
        manifest = read_bundle(runtime, real)
        dest = bundle_dir(runtime, scope) / manifest.name
        if Path(os.path.realpath(dest)) == real:
            raise ManifestError("the plugin is already in place", file=str(real))
        return manifest, real, dest, dest.exists() or dest.is_symlink()

    manifest, real_source, dest, exists = await anyio.to_thread.run_sync(prepare)
    await runtime.authorize(INSTALL_SPEC, {"destination": str(dest)}, approver=approver)
    if exists and not force:
        raise FileExistsError(f"{dest} exists (plugin {manifest.name} is installed); use --force to replace it")
    await anyio.to_thread.run_sync(_copy_into_place, runtime, real_source, dest, exists)
    if scope == "workspace":
        await anyio.to_thread.run_sync(_trust_installed, runtime, dest)
    return InstallResult(manifest.name, dest, scope, replaced=exists, format=manifest.format)


def find_installed(runtime: Runtime, name: str, scope: str) -> Path | None:
    """The directory of the plugin ``name`` in the scope's plugin directory, looked at as
    discovery does (the workspace's inside the workspace, the user's inside itself): a
    folder that leads outside is not one."""
    parent = bundle_dir(runtime, scope)
    outer = runtime.workspace_root if scope == "workspace" else runtime.contained(parent, label=str(parent))
    if outer.is_dir(parent / name):
        return parent / name
    if not outer.is_dir(parent):
        return None
    formats = sorted_formats(runtime.manifest_formats)
    for entry in outer.entries(parent):
        if entry.kind == "dir" and entry.real is not None and not entry.refused and not entry.name.startswith("."):
            manifest, _ = probe(entry.path, formats, reader=bundle_root(entry.real, also=runtime.readable_roots))
            if manifest is not None and manifest.name == name:
                return entry.path
    return None


async def uninstall_bundle(
    runtime: Runtime, name: str, *, scope: str = "user", approver: Approver | None = None
) -> Path:
    target = await anyio.to_thread.run_sync(find_installed, runtime, name, scope)
    if target is None:
        raise FileNotFoundError(f"no plugin {name!r} is installed in {bundle_dir(runtime, scope)}")
    await runtime.authorize(UNINSTALL_SPEC, {"destination": str(target)}, approver=approver)

    def remove() -> None:
        if scope == "workspace":
            with contextlib.suppress(OSError, ManifestError):
                key = bundle_item(read_bundle(runtime, target), runtime.workspace).key
                _trust_store(runtime).revoke(runtime.workspace, [key])
        if target.is_symlink():
            target.unlink()
        else:
            shutil.rmtree(target)

    await anyio.to_thread.run_sync(remove)
    return target


def _trust_store(runtime: Runtime) -> TrustStore:
    return TrustStore(runtime.home or user_home(runtime.env))


def _trust_installed(runtime: Runtime, dest: Path) -> None:
    """Record the user's trust in the bundle just installed into the workspace, as it is now
    (its fingerprint is of the installed files); the workspace's other items are untouched."""
    item = bundle_item(read_bundle(runtime, dest), runtime.workspace)
    _trust_store(runtime).trust(runtime.workspace, [item], replace=False)
