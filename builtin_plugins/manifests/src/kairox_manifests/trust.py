"""A workspace bundle as an item of workspace trust: what it would run, and a fingerprint of its files.

A bundle's fingerprint covers its whole folder, read through :class:`kairox.files.Root`:
every file's name, mode and contents, every folder, nothing skipped, and the workspace
files its servers and hook commands name outside it. A link out of the workspace counts
by where it leads; a device or pipe by what it is. A bundle the fingerprint cannot cover
whole (more than :data:`MAX_FILES` entries, :data:`MAX_BYTES` of contents, folders nested
deeper than :data:`MAX_DEPTH`, a folder or file that cannot be read) is *refused*: it
cannot be trusted until that changes, and is never trusted in part.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kairox.ext import (
    WHOLE_ENVIRONMENT,
    WHOLE_ENVIRONMENT_NOTE,
    Declared,
    fingerprint,
    redact_url,
    shell_line,
    shown_text,
)
from kairox.files import Entry, Limits, Refused, Root

from .model import BundleManifest, Contribution, HookDecl

if TYPE_CHECKING:
    from .discovery import Candidate, DiscoveryContext

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_FILES",
    "bundle_digest",
    "bundle_fingerprint",
    "bundle_item",
    "bundle_key",
    "candidate_trust",
]

#: bytes of file contents a bundle's fingerprint reads in all; a bundle holding more is refused
MAX_BYTES = 64 * 1024 * 1024
#: files and folders a bundle's fingerprint visits; a bundle with more is refused
MAX_FILES = 20_000
#: folder levels below the bundle's root; a bundle nested deeper is refused
MAX_DEPTH = 64
_CHUNK = 1024 * 1024


def _refused_entry_recorded(reader: Root, entry: Entry) -> bool:
    """Whether a refused entry of a walk is something the fingerprint records (a link out
    of the workspace, a dangling link, a device or pipe) rather than something it could not
    look into (a folder that cannot be listed, the walk's own stop), which refuses the bundle."""
    if entry.depth == 0:  # the walk stopped (too many entries) or the root cannot be listed
        return False
    if entry.kind == "other":
        return True
    try:
        if not os.path.islink(entry.path):
            return False
        return entry.kind == "missing" or not reader.contains(os.path.realpath(entry.path))
    except (OSError, ValueError):
        return False


def bundle_fingerprint(root: Path, *, within: Path | None = None) -> tuple[str, str]:
    """``(digest, refused)``: a SHA-256 over the bundle's whole folder, and why it cannot
    cover it whole ("" when it can).

    The folder is walked through :class:`kairox.files.Root`: links are followed when they
    lead inside ``within`` (the workspace; default: the bundle root), and one leading
    elsewhere counts by the reason naming where it leads, so a hostile bundle cannot make
    every command walk the disk (``lib -> /``). Every entry counts by its path; each file by
    its mode and contents.
    """
    reader = Root(
        root,
        label="the workspace" if within is not None else "the bundle",
        limits=Limits(max_bytes=MAX_BYTES, max_depth=MAX_DEPTH, max_entries=MAX_FILES),
        also=(within,) if within is not None else (),
    )
    digest = hashlib.sha256()
    left = MAX_BYTES

    def refused(why: str) -> tuple[str, str]:
        digest.update(f"refused\0{why}".encode("utf-8", "surrogateescape"))
        return digest.hexdigest(), f"bundle {root}: {why}: its fingerprint cannot cover it whole"

    try:
        for entry in reader.walk("."):
            rel = entry.path.relative_to(reader.path).as_posix()
            if entry.refused:
                if not _refused_entry_recorded(reader, entry):
                    return refused(f"{rel}: {entry.refused}")
                digest.update(f"R\0{rel}\0{entry.refused}\0".encode("utf-8", "surrogateescape"))
            elif entry.kind == "dir":
                if entry.depth > MAX_DEPTH:
                    return refused(f"{rel}: folders nested deeper than {MAX_DEPTH} levels")
                digest.update(f"D\0{rel}\0".encode("utf-8", "surrogateescape"))
            elif entry.kind == "file":
                with reader.open(entry) as fh:
                    mode = os.fstat(fh.fileno()).st_mode
                    digest.update(f"F\0{rel}\0{mode:o}\0".encode("utf-8", "surrogateescape"))
                    while chunk := fh.read(_CHUNK):
                        left -= len(chunk)
                        if left < 0:
                            return refused(f"its files hold more than {MAX_BYTES} bytes")
                        digest.update(chunk)
                digest.update(b"\0")
            else:
                digest.update(f"O\0{rel}\0{entry.kind}\0".encode("utf-8", "surrogateescape"))
    except Refused as exc:
        return refused(f"{exc.file}: {exc.reason}")
    except (OSError, ValueError) as exc:
        return refused(f"cannot be read ({type(exc).__name__}: {exc})")
    return digest.hexdigest(), ""


def bundle_digest(root: Path, *, within: Path | None = None) -> str:
    """The digest of :func:`bundle_fingerprint` (a refused bundle's says why it was refused)."""
    return bundle_fingerprint(root, within=within)[0]


#: what a hook's environment sets to the bundle's root, and to the workspace
_ROOT_VARIABLES = ("KAIROX_PLUGIN_ROOT", "CLAUDE_PLUGIN_ROOT", "PLUGIN_ROOT")
_WORKSPACE_VARIABLES = ("KAIROX_WORKSPACE", "CLAUDE_PROJECT_DIR")


def _hook_command(c: Contribution) -> str:
    decl = c.config
    if isinstance(decl, HookDecl) and decl.handler == "http":
        target = decl.target or {}
        # header names only: a value may be a literal credential (the variables are in env_names)
        names = ", ".join(shown_text(str(k)) for k in target.get("headers") or {})
        return f"hook {decl.event}: POST {shown_text(redact_url(str(target.get('url', ''))))}" + (
            f" (headers: {names})" if names else ""
        )
    if isinstance(decl, HookDecl) and decl.handler == "mcp_tool":
        target = decl.target or {}
        call = f"{target.get('server', '')}.{target.get('tool', '')}"
        return f"hook {decl.event}: calls {shown_text(call)} {shown_text(json.dumps(target.get('input') or {}))}"
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


def bundle_item(manifest: BundleManifest, workspace: Path, *, env: Mapping[str, str] | None = None) -> Declared:
    """The bundle's trust item: key by its root (relative to the workspace), what it runs, and
    a fingerprint of its whole folder and of the workspace files outside it that its servers
    and hook commands name (as they will be when they run: ``${VAR}`` from ``env``, default
    ``os.environ``). Refused when the fingerprint cannot cover all of that."""
    env = os.environ if env is None else env
    root = manifest.root
    commands: list[str] = []
    urls: list[str] = []
    env_names: list[str] = []
    secrets: list[tuple[str, str]] = []
    prefixes: list[str] = []
    settings: list[str] = []
    notes: list[str] = []
    outside: dict[str, str] = {}
    digest, refused = bundle_fingerprint(root, within=workspace)
    try:
        own = Path(os.path.realpath(root)).relative_to(os.path.realpath(workspace)).as_posix() + "/"
    except ValueError:
        own = None
    hook_env: Mapping[str, str] = {
        **env,
        **dict.fromkeys(_ROOT_VARIABLES, str(root)),
        **dict.fromkeys(_WORKSPACE_VARIABLES, str(workspace)),
    }
    for c in manifest.contributions:
        raw: Mapping[str, Any]
        where: Mapping[str, str]
        if c.kind == "hook":
            commands.append(_hook_command(c))
            if isinstance(c.config, HookDecl) and c.config.handler == "http":
                # it contacts this URL, sending the variables it lists
                target = c.config.target or {}
                urls.append(str(target.get("url", "")))
                env_names.extend(str(n) for n in target.get("allowedEnvVars") or [])
                continue
            if isinstance(c.config, HookDecl) and c.config.handler == "mcp_tool":
                continue  # a tool call through the policy: it runs no process and reads no variable
            # hook scripts run with kairox's whole environment, as Claude Code runs them
            env_names.append(f"{WHOLE_ENVIRONMENT}: hook scripts")
            notes.append(f"its hook scripts: each {WHOLE_ENVIRONMENT_NOTE}")
            if not (isinstance(c.config, HookDecl) and c.config.command):
                continue  # a script: inside the bundle (the manifest's paths may not leave it)
            # a hook command runs through `sh -c` with these variables set: the files it names
            raw, where = {"command": "sh", "args": ["-c", c.config.command]}, hook_env
        elif c.kind in ("mcp_server", "lsp_server") and isinstance(c.config, dict):
            raw, where = c.config, env
            prefix = raw.get("tool_prefix")
            prefixes.append(prefix if isinstance(prefix, str) and prefix.strip() else f"{manifest.name}.{c.name}")
        else:
            continue
        sub = Declared.entry(f"{c.kind}:{c.name}", c.kind, c.name, str(c.source), raw, workspace=workspace, env=where)
        what = f"{c.kind.replace('_', ' ')} {c.name}"
        if c.kind != "hook":
            commands.extend(f"{what}: {line}" for line in sub.commands)
            urls.extend(sub.urls)
            env_names.extend(sub.env_names)
            secrets.extend(sub.secrets)
            settings.extend(f"{what}: {line}" for line in sub.env)
            notes.extend(f"{what}: {note}" for note in sub.notes)
            if c.kind == "lsp_server":  # a language server gets kairox's whole environment
                env_names.append(f"{WHOLE_ENVIRONMENT}: {what}")
                notes.append(f"{what} {WHOLE_ENVIRONMENT_NOTE}")
        refused = refused or sub.refused
        # the bundle's own files are in its digest already; the rest of the workspace they name is added
        outside.update((p, d) for p, d in sub.files.items() if own is None or not (p + "/").startswith(own))
    if manifest.code is not None:
        code = manifest.code
        commands.append(f"code ({code.runtime}, {code.sandbox}): {shell_line([str(code.main)])}")
        env_names.extend(code.requires_env)
        if code.sandbox != "worker":  # it runs in kairox's own process (or its shared host)
            env_names.append(f"{WHOLE_ENVIRONMENT}: its code")
            notes.append(f"its code {WHOLE_ENVIRONMENT_NOTE}")
    return Declared(
        key=bundle_key(manifest, workspace),
        kind="bundle",
        name=manifest.name,
        source=str(root),
        digest=fingerprint([digest, outside]) if outside else digest,
        commands=tuple(commands),
        urls=tuple(urls),
        env_names=tuple(dict.fromkeys(env_names)),
        notes=tuple(dict.fromkeys(notes)),
        refused=refused,
        secrets=tuple(dict.fromkeys(secrets)),
        tool_prefixes=tuple(dict.fromkeys(prefixes)),
        files=outside,
        env=tuple(dict.fromkeys(settings)),
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
    # honoured from the user's own files only: a workspace's value never replaces the user's
    if ctx.runtime_config is not None:
        policy, mine = ctx.user_values.get("workspace_trust", "ask"), True
    else:  # a bare context: the structured config is all there is
        policy, mine = ctx.config.workspace_trust, ctx.source_scope("workspace_trust") == "user"
    if policy == "deny" and mine:
        return False, 'workspace plugins are not loaded ([plugins] workspace_trust = "deny")'
    if candidate.manifest is None:
        return False, f"workspace plugin {candidate.name} is not trusted"
    if ctx.trust is None:  # no runtime (a bare DiscoveryContext): only the user's config can trust it
        if policy == "trust" and mine:
            return True, ""
        return False, f"workspace plugin {candidate.name} is not trusted"
    item = bundle_item(candidate.manifest, ctx.workspace, env=ctx.env)
    if ctx.trust.check(item).allowed:
        return True, ""
    if policy == "trust" and mine:
        ctx.trust.allow(item.key)
        return True, ""
    return False, f"workspace plugin {candidate.name} is {ctx.trust.explain(item.key)}"
