"""Where plugins and skills are installed, and putting one there.

Plugins go to ``$KAIROX_HOME/plugins/NAME`` or ``<workspace>/.kairox/plugins/NAME``,
skills to ``.../skills/NAME``. The files are fetched into a temporary directory
next to the target (a local copy, ``git clone``, ``npm pack``, or one
downloaded file such as a ``SKILL.md``), checked, marked with
``.kairox-catalog.json`` and moved into place with ``os.replace``. Uninstall
removes only directories that carry the marker.

This module knows the directories and the files; asking the policy and reporting
is :mod:`kairox_catalog.install`'s (which imports this one, never the reverse).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

import anyio
import anyio.to_thread

from kairox.files import Root, loads_bounded

from ._paths import NAME_RE, name_problem, require_inside, resolves_inside, subpath_problem
from .fetch import USER_AGENT, is_remote, local_path, read_capped
from .model import CatalogEntry, InstallSource
from .prepare import CommandFailed, run_command
from .progress import Progress
from .sources import kairox_home

if TYPE_CHECKING:
    from kairox import Runtime

__all__ = [
    "MARKER",
    "BundleError",
    "Scope",
    "assemble_plugin",
    "bundle_dir",
    "bundle_target",
    "check_plugin",
    "installed_bundles",
    "merge_manifest",
    "place_bundle",
    "supplement_manifest",
    "supplement_plugin",
]

Scope = Literal["user", "workspace"]

MARKER = ".kairox-catalog.json"
_DIRS = {"plugin": "plugins", "skill": "skills"}
_MAX_DOWNLOAD = 8 * 1024 * 1024


class BundleError(Exception):
    """A bundle could not be fetched, checked or put in place; the message says why."""


def bundle_dir(runtime: Runtime, kind: str, scope: Scope) -> Path:
    """The directory the bundles of ``kind`` (plugin, skill) of ``scope`` are installed in."""
    base = kairox_home(runtime) if scope == "user" else runtime.workspace / ".kairox"
    return base / _DIRS[kind]


def _download(url: str, dest: Path, timeout: float) -> None:
    if not is_remote(url):  # a path or file:// URL: the same cap, and never a device or a FIFO
        try:
            data = read_capped(local_path(url), _MAX_DOWNLOAD)
        except OSError as exc:
            raise OSError(f"cannot read {url}: {exc.strerror or exc}") from None
    else:
        request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data = response.read(_MAX_DOWNLOAD + 1)
        if len(data) > _MAX_DOWNLOAD:
            raise OSError(f"{url} is larger than {_MAX_DOWNLOAD} bytes")
    dest.write_bytes(data)


def _safe_extract(archive: Path, dest: Path) -> None:
    """Extract a tar archive whose members all stay under ``dest``: no absolute or ``..``
    name, no symbolic or hard link, no device or FIFO (only files and directories)."""
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            inside = resolves_inside(dest / member.name, dest) and not os.path.isabs(member.name)
            if not inside or not (member.isfile() or member.isdir()):
                raise OSError(f"refusing archive member {member.name!r} (outside the package, a link or a device)")
        if hasattr(tarfile, "data_filter"):  # Python 3.10.12+, 3.11.4+: the same checks once more
            tar.extractall(dest, filter="data")
        else:  # pragma: no cover - older patch releases
            tar.extractall(dest)


def _copy_tree(src: Path, dest: Path, ignore: tuple[str, ...]) -> None:
    """``shutil.copytree`` of ``src`` that cannot reach outside it.

    Symbolic links are copied as links, and only relative ones that resolve
    inside ``src`` are accepted: a link to ``/etc`` or ``../../secret`` would put
    a file from elsewhere into the installed bundle. Devices, FIFOs and sockets
    are refused (copying a FIFO blocks forever).
    """
    root = Path(os.path.realpath(src))
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in ignore]
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            rel = path.relative_to(root)
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                link = os.readlink(path)
                if os.path.isabs(link) or not resolves_inside(path, root):
                    raise OSError(f"refusing {rel}: a symbolic link to {link!r}, outside what is installed")
            elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise OSError(f"refusing {rel}: not a regular file or directory")
    shutil.copytree(root, dest, symlinks=True, ignore=shutil.ignore_patterns(*ignore))


#: what git may use for the clone of an entry fetched over the network (``GIT_ALLOW_PROTOCOL``:
#: git itself then refuses file://, a local path and ext::, submodules and redirects included)
NETWORK_GIT_PROTOCOLS = "https:http:ssh:git"


async def _fetch(runtime: Runtime, src: InstallSource, work: Path, kind: str, *, network_only: bool = False) -> Path:
    """Put the bundle's files in a directory under ``work``; return it. ``network_only``: the
    entry came from a catalog fetched over the network (:mod:`kairox_catalog.network` checked
    it; this refuses again what would read this machine's files)."""
    env = runtime.env
    out = work / "bundle"
    local = src.type in ("path", "url") and not is_remote(src.path if src.type == "path" else src.url)
    if network_only and local:
        raise OSError(
            f"{src.describe()} is on this machine, and a catalog fetched over the network cannot install from it"
        )
    if src.type == "path":
        if is_remote(src.path):
            raise OSError(
                f"{src.path} is a path inside a remote marketplace; clone the marketplace and add it as a local source"
            )
        path = local_path(src.path)
        if not path.is_absolute():
            path = runtime.workspace / path
        if path.is_dir():
            await anyio.to_thread.run_sync(_copy_tree, path, out, (".git", "node_modules"))
        elif path.is_file():
            out.mkdir()
            shutil.copy2(path, out / ("SKILL.md" if kind == "skill" and path.suffix == ".md" else path.name))
        elif path.exists() or path.is_symlink():
            raise OSError(f"{path} is not a directory or a regular file (a device, pipe or dangling link)")
        else:
            raise OSError(f"{path} does not exist")
        return out
    if src.type == "url":
        out.mkdir()
        filename = "SKILL.md" if kind == "skill" else _download_name(src.url)
        await anyio.to_thread.run_sync(_download, src.url, out / filename, 60.0, abandon_on_cancel=True)
        return out
    if src.type in ("git", "github"):
        url = src.url or f"https://github.com/{src.repo}.git"
        repo = work / "repo"
        argv = ["git", "clone", "--quiet", *([] if _is_sha(src.ref) else ["--depth", "1"])]
        argv += [*(["--branch", src.ref] if src.ref and not _is_sha(src.ref) else []), "--", url, str(repo)]
        git_env = {**env, "GIT_TERMINAL_PROMPT": "0"}
        if network_only:
            git_env["GIT_ALLOW_PROTOCOL"] = NETWORK_GIT_PROTOCOLS
        await run_command(argv, env=git_env, timeout=600)
        if _is_sha(src.ref):
            await run_command(["git", "-C", str(repo), "checkout", "--quiet", src.ref], env=git_env, timeout=120)
        root = (repo / src.path).resolve() if src.path else repo
        if subpath_problem(src.path) or not resolves_inside(root, repo) or not root.is_dir():
            raise OSError(f"{src.path!r} is not a directory in {url}")
        await anyio.to_thread.run_sync(_copy_tree, root, out, (".git",))
        return out
    if src.type == "npm":
        spec = f"{src.package}@{src.version}" if src.version else src.package
        packed = work / "pack"
        packed.mkdir()
        await run_command(["npm", "pack", spec, "--pack-destination", str(packed), "--silent"], env=env, timeout=600)
        archives = list(packed.glob("*.tgz"))
        if not archives:
            raise OSError(f"npm pack {spec} produced no archive")
        extracted = work / "extracted"
        extracted.mkdir()
        _safe_extract(archives[0], extracted)
        (extracted / "package").rename(out)
        return out
    raise OSError(f"unsupported source type {src.type!r}")


def _download_name(url: str) -> str:
    """The file name a downloaded single-file bundle gets: the URL's last segment when it is a valid name."""
    last = urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1]
    return last if NAME_RE.fullmatch(last) else "download"


def _is_sha(ref: str) -> bool:
    return len(ref) == 40 and all(c in "0123456789abcdef" for c in ref.lower())


def _check_bundle(root: Path, name: str) -> str:
    """A skill: a ``SKILL.md`` (or another ``.md`` file) is there. Plugins: :func:`check_plugin`."""
    if (root / "SKILL.md").is_file() or any(root.glob("*.md")):
        return "skill file found"
    raise OSError(f"no SKILL.md (or other .md skill file) in what {name} installs")


#: Claude component fields -> their default folder (a strict: false entry listing a kind
#: installs only what it lists of that kind, so the default folder holds only those)
_COMPONENT_DIRS = {"skills": "skills", "commands": "commands", "agents": "agents", "outputStyles": "output-styles"}
#: the component fields of a Claude manifest (Claude Code's strict mode is about these)
COMPONENT_FIELDS = (*_COMPONENT_DIRS, "hooks", "mcpServers", "lspServers")
_OWN_MANIFESTS = (".claude-plugin", ".codex-plugin", ".kairox-plugin", "plugin.json")
_CLAUDE_MANIFEST = ".claude-plugin/plugin.json"
#: manifests of other formats a strict: false install leaves out (the entry's is the plugin's)
_OTHER_MANIFESTS = (".codex-plugin/plugin.json", ".kairox-plugin/plugin.json", "plugin.json")
_MAX_MANIFEST = 1024 * 1024


def _copy_item(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir() and not src.is_symlink():
        shutil.copytree(src, dest, symlinks=True, dirs_exist_ok=True)
    else:
        shutil.copy2(src, dest, follow_symlinks=False)


def _own_manifest(root: Path) -> dict[str, Any]:
    """The plugin's own ``.claude-plugin/plugin.json`` (``{}`` when it has none); ``OSError``
    naming the file when it is there but not a JSON object."""
    contained = Root(root, label="the plugin")
    if contained.kind(_CLAUDE_MANIFEST) == "missing":
        return {}
    try:
        data = loads_bounded(contained.read_text(_CLAUDE_MANIFEST, max_bytes=_MAX_MANIFEST), json.loads)
    except ValueError as exc:
        raise OSError(f"{_CLAUDE_MANIFEST}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise OSError(f"{_CLAUDE_MANIFEST}: expected a JSON object")
    return data


def merge_manifest(own: dict[str, Any], entry: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The manifest of a plugin a ``strict: false`` entry describes: the plugin's own
    ``.claude-plugin/plugin.json`` (``own``) with the entry's fields over it, and a note for
    every value of ``own`` that is not kept.

    Claude Code: with ``strict: false`` the entry is the plugin's definition, so its fields
    win, except ``version``, where ``plugin.json`` wins. A component kind only ``own``
    declares is kept (the plugin's own ``mcpServers``); one both declare is the entry's
    (Claude Code refuses to load such a plugin; here the entry's replaces the plugin's, said
    in a note). Fields only ``own`` has (``userConfig``, ``dependencies``, ...) are kept."""
    merged = dict(own)
    notes: list[str] = []
    for key, value in entry.items():
        if key not in own or own[key] == value:
            merged[key] = value
        elif key == "version":
            notes.append(
                f"{_CLAUDE_MANIFEST} version {own[key]!r} is kept over the marketplace entry's {value!r} "
                "(Claude Code: plugin.json's version wins)"
            )
        elif key in COMPONENT_FIELDS:
            merged[key] = value
            notes.append(
                f"{_CLAUDE_MANIFEST} {key} is not installed: the strict: false marketplace entry lists its own "
                f"{key}, which replace it"
            )
        else:
            merged[key] = value
            notes.append(f"{_CLAUDE_MANIFEST} {key} {own[key]!r} is replaced by the marketplace entry's {value!r}")
    return merged, notes


def supplement_manifest(own: dict[str, Any], entry: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The manifest of a plugin a strict marketplace entry (Claude Code's default) adds
    components to: the plugin's own ``.claude-plugin/plugin.json`` (``own``) is the authority.

    A field only the entry has is added (the plugin may have no manifest at all, as an
    LSP plugin whose entry carries its ``lspServers``). A component kind both declare is
    both: a list of the plugin's then the entry's (a server of one name in both is the
    plugin's, as the manifest reader keeps the first). Any other field of ``own`` is kept,
    and a different value of the entry's is named in a note."""
    merged = dict(own)
    notes: list[str] = []
    for key, value in entry.items():
        if key not in own:
            merged[key] = value
        elif own[key] == value:
            continue
        elif key in COMPONENT_FIELDS:
            mine = own[key] if isinstance(own[key], list) else [own[key]]
            theirs = value if isinstance(value, list) else [value]
            merged[key] = [*mine, *(v for v in theirs if v not in mine)]
        else:
            notes.append(
                f"the marketplace entry's {key} {value!r} is not installed: {_CLAUDE_MANIFEST} {key} {own[key]!r} "
                "is kept (strict, Claude Code's default: the plugin's manifest is the authority)"
            )
    return merged, notes


def supplement_plugin(root: Path, manifest: dict[str, Any], out: Path) -> tuple[Path, list[str]]:
    """A plugin as a strict marketplace entry adds to it, built in ``out`` from the fetched
    ``root``: every file copied as it is, ``.claude-plugin/plugin.json`` written from the
    plugin's own with the entry's components added (:func:`supplement_manifest`). Raises
    ``OSError`` for a ``plugin.json`` that is not a JSON object or a ``.claude-plugin`` that
    is not a folder of the plugin's own."""
    merged, notes = supplement_manifest(_own_manifest(root), manifest)
    out.mkdir(parents=True)
    for child in sorted(root.iterdir()):
        if child.name != ".git":
            _copy_item(child, out / child.name)
    folder = out / ".claude-plugin"
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise OSError(".claude-plugin: not a folder of the plugin's own")
    folder.mkdir(exist_ok=True)
    (folder / "plugin.json").unlink(missing_ok=True)  # never write through a link the plugin brought
    (folder / "plugin.json").write_text(json.dumps(merged, indent=2) + "\n", encoding="utf-8")
    return out, notes


def assemble_plugin(root: Path, manifest: dict[str, Any], out: Path) -> tuple[Path, list[str]]:
    """A plugin as a ``strict: false`` marketplace entry describes it, built in ``out`` from
    the fetched ``root`` (already checked by :func:`_copy_tree`); the notes say what of the
    plugin's own is not kept.

    Of each component kind the entry lists (``skills``, ``commands``, ``agents``,
    ``outputStyles``) only the listed paths are copied (the rest of that kind's default
    folder is left out); everything else is copied as it is (``.mcp.json``,
    ``hooks/hooks.json`` and ``.lsp.json`` add to what a manifest declares, in Claude Code
    as here). ``.claude-plugin/plugin.json`` is written from the entry merged with the
    plugin's own (:func:`merge_manifest`); the manifests of other formats are left out
    (each named in a note). Raises ``OSError`` naming a listed path that is missing or
    leaves the plugin, or a ``plugin.json`` that is not a JSON object.
    """
    merged, notes = merge_manifest(_own_manifest(root), manifest)
    notes += [
        f"{rel} is not installed: the strict: false marketplace entry makes {_CLAUDE_MANIFEST} the manifest"
        for rel in _OTHER_MANIFESTS
        if Root(root, label="the plugin").kind(rel) != "missing"
    ]
    listed = {field: manifest[field] for field in _COMPONENT_DIRS if field in manifest}
    skipped = {".git", *_OWN_MANIFESTS, *(_COMPONENT_DIRS[f] for f in listed)}
    out.mkdir(parents=True)
    for child in sorted(root.iterdir()):
        if child.name not in skipped:
            _copy_item(child, out / child.name)
    for field, paths in listed.items():
        for rel in paths:
            src = root / rel
            if subpath_problem(rel) or not resolves_inside(src, root):
                raise OSError(f"{field}: {rel!r} is outside the plugin")
            if not (src.exists() or src.is_symlink()):
                raise OSError(f"{field}: {rel!r} does not exist in the plugin")
            clean = Path(os.path.normpath(rel))
            _copy_item(src, out / clean)
    folder = out / ".claude-plugin"
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):  # a listed path put it there
        raise OSError(".claude-plugin: not a folder of the plugin's own")
    folder.mkdir(exist_ok=True)
    (folder / "plugin.json").unlink(missing_ok=True)  # never write through a link the plugin brought
    (folder / "plugin.json").write_text(json.dumps(merged, indent=2) + "\n", encoding="utf-8")
    return out, notes


def check_plugin(runtime: Runtime, root: Path) -> str:
    """What ``kairox plugin inspect`` would find in ``root`` (the same discovery: every
    registered manifest format probes it, through the bundle's contained reader); raises
    ``OSError`` with the reason when that is no loadable plugin."""
    from kairox_manifests import DiscoveryContext, probe

    ctx = DiscoveryContext.from_runtime(runtime)
    if not ctx.formats:
        raise OSError(
            "no plugin manifest format is registered here (kairox-manifests disabled?): nothing would load it"
        )
    manifest, error = probe(root, ctx.formats, reader=ctx.bundle(root))
    prefix = f"{root}{os.sep}"
    if error is not None:  # the paths it names are the staging folder's: say them relative to the plugin
        raise OSError(f"not a loadable plugin: {str(error).replace(prefix, '').replace(str(root), '.')}")
    if manifest is None:
        raise OSError(
            "not a loadable plugin: no manifest format recognises it (no .claude-plugin/, .codex-plugin/, "
            ".kairox-plugin/ manifest nor a plugin's layout)"
        )
    return f"{'+'.join(manifest.all_formats)} plugin {manifest.name}, {len(manifest.contributions)} contributions"


def bundle_target(runtime: Runtime, kind: str, scope: Scope, name: str) -> Path:
    """Where the bundle ``name`` of ``kind`` and ``scope`` goes: ``bundle_dir / name``, checked
    to stay in that directory (and, for a workspace install, that directory in the workspace: a
    cloned repository may carry a ``.kairox/plugins`` symlink). Raises :class:`BundleError`."""
    problem = name_problem(name)
    if problem is not None:
        raise BundleError(f"cannot install {name!r}: {problem}")
    parent = bundle_dir(runtime, kind, scope)
    target = parent / name
    try:
        if scope == "workspace":
            require_inside(parent, runtime.workspace, "the bundle directory")
        require_inside(target, parent, "the install target")
    except OSError as exc:
        raise BundleError(str(exc)) from None
    return target


async def place_bundle(
    runtime: Runtime, progress: Progress, entry: CatalogEntry, scope: Scope, *, notes: list[str]
) -> Path:
    """Fetch ``entry``'s files, check them, mark them and move them to :func:`bundle_target`
    (replacing what is there); return that directory. Raises :class:`BundleError`, and then
    nothing has changed: the files are staged in a hidden folder beside the target (deleted
    whatever happens), a plugin is checked to be one :func:`check_plugin` loads, and a
    bundle it replaces is put back when the move fails. What of the plugin's own was not
    kept (a ``strict: false`` entry's merge) is appended to ``notes``."""
    src = entry.install
    if src is None:
        raise BundleError(f"{entry.name} has no install source")
    target = bundle_target(runtime, entry.kind, scope, entry.name)
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{entry.name}.", dir=parent))
    try:
        async with progress.step(f"Fetching {entry.kind} {entry.name} from {src.describe()}") as step:
            try:
                root = await _fetch(runtime, src, work, entry.kind, network_only=bool(entry.fetched_from))
                if entry.kind == "plugin" and entry.manifest:
                    build = supplement_plugin if entry.supplements else assemble_plugin
                    root, merged = await anyio.to_thread.run_sync(build, root, entry.manifest, work / "assembled")
                    notes.extend(merged)
                if entry.kind == "plugin":
                    step.detail = await anyio.to_thread.run_sync(check_plugin, runtime, root)
                else:
                    step.detail = _check_bundle(root, entry.name)
            except (OSError, CommandFailed, tarfile.TarError) as exc:
                raise BundleError(f"cannot install {entry.name}: {exc}") from None
        marker: dict[str, Any] = {
            "name": entry.name,
            "kind": entry.kind,
            "source": entry.source,
            "from": src.describe(),
            "version": entry.version,
            "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (root / MARKER).unlink(missing_ok=True)  # never write through a link the bundle brought
        (root / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
        bundle_target(runtime, entry.kind, scope, entry.name)  # again: the directories may have changed
        old = work / "old"
        try:
            if target.is_symlink() or target.exists():
                target.rename(old)
            root.rename(target)
        except OSError as exc:
            if (old.is_symlink() or old.exists()) and not (target.is_symlink() or target.exists()):
                old.rename(target)  # the install it was to replace stays
            raise BundleError(f"cannot install {entry.name}: {exc}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def installed_bundles(runtime: Runtime, name: str, scopes: list[Scope]) -> list[tuple[str, Path]]:
    """``(kind, directory)`` of each catalog install of ``name`` in ``scopes``: a directory
    (not a link) directly in a bundle directory that carries the :data:`MARKER`."""
    found: list[tuple[str, Path]] = []
    if name_problem(name) is not None:  # never a catalog install's name: nothing to look for
        return found
    for scope in scopes:
        for kind in _DIRS:
            parent = bundle_dir(runtime, kind, scope)
            target = parent / name
            if target.is_symlink() or not resolves_inside(target, parent) or not (target / MARKER).is_file():
                continue
            found.append((kind, target))
    return found
