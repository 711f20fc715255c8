"""A workspace bundle as an item of workspace trust: what it would run, and a fingerprint of its files.

A bundle's fingerprint covers every file under its root (contents, names and
modes; ``.git`` and ``node_modules`` skipped), so a change to a hook script,
its code or its manifest needs trust again. Files past :data:`MAX_BYTES` in
total count by name, size and mtime only.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from kairox import Declared, describe_entry, shell_line, shown_text

from .model import BundleManifest, Contribution, HookDecl

if TYPE_CHECKING:
    from .discovery import Candidate, DiscoveryContext

__all__ = ["MAX_BYTES", "MAX_FILES", "bundle_digest", "bundle_item", "bundle_key", "candidate_trust"]

#: bytes of file contents hashed per bundle; beyond it, files count by name, size and mtime
MAX_BYTES = 32 * 1024 * 1024
#: files a bundle's fingerprint visits at most
MAX_FILES = 20_000
_SKIP = {".git", "node_modules", "__pycache__"}


def bundle_digest(root: Path, *, within: Path | None = None) -> str:
    """SHA-256 over the bundle's files (sorted relative paths, modes, contents).

    Symlinked directories are followed only when they resolve inside ``within`` (the
    workspace; default: the bundle root): a link pointing elsewhere (``lib -> /``) counts
    by its target text, so a hostile bundle cannot make every command walk the disk.
    At most :data:`MAX_FILES` files are visited; past that the digest says so.
    """
    digest = hashlib.sha256()
    budget = MAX_BYTES
    files = 0
    fence = os.path.realpath(within if within is not None else root)
    seen: set[tuple[int, int]] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):  # loops cut below
        try:
            st = os.stat(dirpath)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in seen:
            dirnames[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        kept = []
        for d in sorted(dirnames):
            if d in _SKIP:
                continue
            sub = os.path.join(dirpath, d)
            if os.path.islink(sub):
                target = os.path.realpath(sub)
                digest.update(
                    f"{Path(sub).relative_to(root).as_posix()}\0->{os.readlink(sub)}\0".encode(
                        "utf-8", "surrogateescape"
                    )
                )
                if not (target == fence or target.startswith(fence.rstrip(os.sep) + os.sep)):
                    continue  # outside the workspace: the link text counts, its tree is not walked
            kept.append(d)
        dirnames[:] = kept
        for name in sorted(filenames):
            files += 1
            if files > MAX_FILES:
                digest.update(b"<more files than counted>")
                return digest.hexdigest()
            path = Path(dirpath, name)
            rel = path.relative_to(root).as_posix()
            try:
                fst = path.lstat()
            except OSError:
                continue
            digest.update(f"{rel}\0{fst.st_mode:o}\0{fst.st_size}\0".encode("utf-8", "surrogateescape"))
            if path.is_symlink():
                digest.update(os.readlink(path).encode("utf-8", "surrogateescape"))
            elif fst.st_size <= budget:
                try:
                    digest.update(path.read_bytes())
                    budget -= fst.st_size
                except OSError:
                    digest.update(b"<unreadable>")
            else:
                digest.update(f"{fst.st_mtime_ns}".encode())
    return digest.hexdigest()


def _hook_command(c: Contribution) -> str:
    decl = c.config
    if isinstance(decl, HookDecl):
        what = shown_text(decl.command) if decl.command else shell_line([str(decl.script)]) if decl.script else ""
        return f"hook {decl.event}: {what}"
    return f"hook {c.name}"


def bundle_key(manifest: BundleManifest, workspace: Path) -> str:
    """The key of a bundle's trust item: its root, relative to the workspace."""
    try:
        rel = Path(os.path.realpath(manifest.root)).relative_to(os.path.realpath(workspace)).as_posix()
    except ValueError:
        rel = str(manifest.root)
    return f"bundle:{rel}"


def bundle_item(manifest: BundleManifest, workspace: Path) -> Declared:
    """The bundle's trust item: key by its root (relative to the workspace), what it runs."""
    root = manifest.root
    commands: list[str] = []
    urls: list[str] = []
    env_names: list[str] = []
    for c in manifest.contributions:
        if c.kind == "hook":
            commands.append(_hook_command(c))
        elif c.kind in ("mcp_server", "lsp_server") and isinstance(c.config, dict):
            cmd, u, names = describe_entry(c.config)
            commands.extend(f"{c.kind.replace('_', ' ')} {c.name}: {line}" for line in cmd)
            urls.extend(u)
            env_names.extend(names)
    if manifest.code is not None:
        code = manifest.code
        commands.append(f"code ({code.runtime}, {code.sandbox}): {shell_line([str(code.main)])}")
        env_names.extend(code.requires_env)
    return Declared(
        key=bundle_key(manifest, workspace),
        kind="bundle",
        name=manifest.name,
        source=str(root),
        digest=bundle_digest(root, within=workspace),
        commands=tuple(commands),
        urls=tuple(urls),
        env_names=tuple(dict.fromkeys(env_names)),
    )


def candidate_trust(ctx: DiscoveryContext, candidate: Candidate) -> tuple[bool, str]:
    """Whether the bundle may load without asking, and if not, why (computed once per candidate).

    A user bundle is trusted. A workspace bundle is trusted when the user's workspace
    trust covers its fingerprint (``kairox trust``, ``kairox plugin trust NAME``), or
    when the user's own config says ``[plugins] workspace_trust = "trust"``.
    """
    if candidate.trusted is not None:
        return candidate.trusted, candidate.trust_reason
    trusted, why = _decide(ctx, candidate)
    candidate.trusted, candidate.trust_reason = trusted, why
    return trusted, why


def _decide(ctx: DiscoveryContext, candidate: Candidate) -> tuple[bool, str]:
    if candidate.scope == "user":
        return True, ""
    policy = ctx.config.workspace_trust
    if policy == "deny" and ctx.source_scope("workspace_trust") == "user":
        return False, 'workspace plugins are not loaded ([plugins] workspace_trust = "deny")'
    if candidate.manifest is None:
        return False, f"workspace plugin {candidate.name} is not trusted"
    if ctx.trust is None:  # no runtime (a bare DiscoveryContext): only the user's config can trust it
        if policy == "trust" and ctx.source_scope("workspace_trust") == "user":
            return True, ""
        return False, f"workspace plugin {candidate.name} is not trusted"
    item = bundle_item(candidate.manifest, ctx.workspace)
    if ctx.trust.check(item).allowed:
        return True, ""
    if policy == "trust" and ctx.source_scope("workspace_trust") == "user":
        ctx.trust.allow(item.key)
        return True, ""
    return False, f"workspace plugin {candidate.name} is {ctx.trust.explain(item.key)}"
