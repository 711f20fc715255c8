"""Installing and uninstalling catalog entries.

An MCP server install: check the requirements, collect the inputs (a secret
becomes an environment reference ``${VAR}`` and never reaches the file), ask
the policy engine about writing the target ``kairox.toml`` (``fs.write``: a
user-scope install under ``$KAIROX_HOME`` outside the workspace asks), pre-install
the packages, write ``[mcp_servers.NAME]`` keeping the rest of the file and its
comments (tomlkit; read, changed and replaced atomically under the file's lock, so
parallel installs keep each other's tables), then start the server once to
see it reach Ready. Plugins and skills go to their directories the same way
(:mod:`kairox_catalog.bundles` knows the directories and the files).

Every write is asked about through :meth:`kairox.Runtime.authorize`, the one
approval flow, as a call of :data:`WRITE_SPEC`.
"""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread
import attrs

from kairox import ApprovalAnswer, ApprovalRequest
from kairox.errors import PolicyDenied
from kairox.ext import file_write_spec, workspace_config_files

from ._paths import name_problem
from .bundles import BundleError, Scope, bundle_target, installed_bundles, place_bundle
from .model import CatalogEntry, Input
from .network import network_problems, secret_variable
from .prepare import CommandFailed, prepare_command, run_command
from .progress import NullProgress, Progress
from .requirements import RequirementCheck, check_entry, resolve_command
from .sources import kairox_home
from .tomledit import TomlEditError, edit_document, read_document, remove_server, server_names, set_server
from .verify import Verification, verify_server, verify_values

if TYPE_CHECKING:
    from tomlkit.toml_document import TOMLDocument

    from kairox import Approver, Runtime

__all__ = [
    "WRITE_SPEC",
    "InstallError",
    "InstallOptions",
    "InstallReport",
    "Installer",
    "Prompter",
    "Scope",
    "authorize_write",
    "config_target",
    "server_values",
]

logger = logging.getLogger(__name__)

#: the write the policy engine is asked about (as the built-in file-write tool)
WRITE_SPEC = file_write_spec("write a file (kairox catalog install/uninstall)", provider="catalog")


class InstallError(Exception):
    """The install could not be done; the message says why and what to do on the command line.

    ``reason`` is the why alone, for a front end that offers its own remedy for ``kind``:
    ``"exists"`` (replace what is there), ``"requirements"`` (install what this machine
    lacks), ``"inputs"`` (``missing`` names the inputs to give); ``""`` for anything else."""

    def __init__(self, message: str, *, reason: str | None = None, kind: str = "", missing: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.reason = message if reason is None else reason
        self.kind = kind
        self.missing = tuple(missing)


#: ``prompter(input, secret)`` returns the user's value, or ``None`` when nobody can be asked
Prompter = Callable[[Input, bool], "str | None"]


@attrs.frozen
class InstallOptions:
    scope: Scope = "workspace"
    values: Mapping[str, str] = attrs.field(factory=dict)
    prepare: bool = True
    verify: bool = True
    force: bool = False
    ignore_requirements: bool = False
    prepare_timeout: float = 900.0
    verify_timeout: float = 180.0
    #: verify before writing, and write nothing when the server does not reach Ready (the
    #: dashboard's install: "installed" means it runs); the CLI writes, then verifies
    verify_before_writing: bool = False


@attrs.define
class InstallReport:
    entry: CatalogEntry
    scope: Scope
    target: Path
    checks: list[RequirementCheck] = attrs.field(factory=list)
    written: dict[str, Any] = attrs.field(factory=dict)
    prepared: list[str] = attrs.field(factory=list)
    env_needed: list[str] = attrs.field(factory=list)
    verification: Verification | None = None
    warnings: list[str] = attrs.field(factory=list)

    @property
    def ok(self) -> bool:
        return self.verification is None or self.verification.outcome == "ready"

    def to_dict(self) -> dict[str, Any]:
        v = self.verification
        return {
            "name": self.entry.name,
            "source": self.entry.source,
            "kind": self.entry.kind,
            "scope": self.scope,
            "target": str(self.target),
            "requirements": [
                {"requirement": str(c.requirement), "ok": c.ok, "detail": c.describe()} for c in self.checks
            ],
            "written": self.written,
            "prepared": self.prepared,
            "env_needed": self.env_needed,
            "verification": attrs.asdict(v) if v is not None else None,
            "warnings": self.warnings,
            "ok": self.ok,
        }


def config_target(runtime: Runtime, scope: Scope) -> Path:
    """The ``kairox.toml`` an install of this scope edits."""
    if scope == "user":
        return kairox_home(runtime) / "kairox.toml"
    workspace: Path = runtime.workspace
    files: list[Path] = workspace_config_files(workspace)
    hidden, plain = files
    return hidden if hidden.exists() and not plain.exists() else plain


async def authorize_write(runtime: Runtime, path: Path, approver: Approver | None, purpose: str) -> None:
    """Ask about writing ``path`` (:meth:`Runtime.authorize` of :data:`WRITE_SPEC`; on *ask*, the
    approver, else the runtime's). Raises :class:`PolicyDenied`; when the policy asks and nobody
    can be asked, the message says how to approve from the command line."""
    arguments = {"path": str(path), "purpose": purpose}
    asked: list[ApprovalRequest] = []

    def nobody(request: ApprovalRequest) -> ApprovalAnswer:  # stands in when nobody can be asked
        asked.append(request)
        return ApprovalAnswer.DENY

    try:
        await runtime.authorize(WRITE_SPEC, arguments, approver=approver or runtime.approver or nobody)
    except PolicyDenied:
        if not asked:  # the policy denied, or a real approver declined
            raise
        raise PolicyDenied(
            f"writing {path} needs approval ({asked[0].reason}) and nobody can be asked here; pass --yes to approve",
            tool=WRITE_SPEC.id,
        ) from None


async def _edit(target: Path, change: Callable[[TOMLDocument], bool]) -> bool:
    """:func:`edit_document` in a worker thread (it waits for the file's lock); whether it changed."""
    try:
        changed: bool = await anyio.to_thread.run_sync(edit_document, target, change)
    except TomlEditError as exc:
        raise InstallError(str(exc)) from None
    return changed


def _exists(reason: str) -> InstallError:
    return InstallError(f"{reason}; pass --force to replace it", reason=reason, kind="exists")


def _escape(value: str) -> str:
    return value.replace("${", "$${")


def _no_prompt(_input: Input, _secret: bool) -> str | None:
    return None


@attrs.define
class _Inputs:
    env: dict[str, str] = attrs.field(factory=dict)
    headers: dict[str, str] = attrs.field(factory=dict)
    #: ``{name}`` -> value for the launch arguments (``arg``) and the URL (``url``)
    args: dict[str, str] = attrs.field(factory=dict)
    url: dict[str, str] = attrs.field(factory=dict)
    secrets: dict[str, str] = attrs.field(factory=dict)  # for the verification run only
    env_needed: list[str] = attrs.field(factory=list)


def _collect_inputs(
    entry: CatalogEntry, values: Mapping[str, str], environ: Mapping[str, str], prompter: Prompter
) -> _Inputs:
    out = _Inputs()
    missing: list[str] = []
    for item in entry.inputs:
        if item.secret:
            var = secret_variable(entry, item.variable)  # a remote entry's own, never one it names
            reference = "${" + var + "}"
            given = values.get(item.name) or values.get(var)
            if given is None and not environ.get(var) and item.required:
                given = prompter(attrs.evolve(item, env_var=var), True)  # the prompt names the variable read
            if given:
                out.secrets[var] = given
            if not environ.get(var):
                out.env_needed.append(var)
            _put(out, item, reference)
            continue
        value = values.get(item.name)
        if value is None and item.required:
            value = prompter(item, False)
            if value is None:
                value = item.default
        if value is None:
            if item.required:
                missing.append(item.name)
            elif item.kind in ("arg", "url"):  # a placeholder is never left as "{name}": its default, or empty
                _put(out, item, _escape(item.default) if item.default is not None else "")
            continue
        _put(out, item, _escape(value))
    if missing:
        flags = " ".join(f"--input {m}=VALUE" for m in missing)
        needs = f"{entry.name} needs {', '.join(missing)}"
        raise InstallError(f"{needs}; pass {flags}", reason=needs, kind="inputs", missing=missing)
    return out


def _put(out: _Inputs, item: Input, text: str) -> None:
    """Where an input's value goes: the server's environment, a header, the arguments or the URL.
    The template is the document's text, escaped like the rest of it; ``text`` is already
    escaped (or the installer's own ``${VAR}`` of a secret, which stays live)."""
    value = _escape(item.template).replace("{value}", text) if item.template else text
    if item.kind == "env":
        out.env[item.name] = value
    elif item.kind == "header":
        out.headers[item.name] = value
    elif item.kind == "arg":
        out.args[item.placeholder] = value
    else:
        out.url[item.placeholder] = value


def _fill(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each ``{name}`` of ``values`` replaced, in one pass (a value is never read again)."""
    if not values:
        return text
    pattern = re.compile("|".join(re.escape(k) for k in sorted(values, key=len, reverse=True)))
    return pattern.sub(lambda m: values[m.group(0)], text)


def server_values(entry: CatalogEntry, inputs: _Inputs, environ: Mapping[str, str]) -> dict[str, Any]:
    """The ``[mcp_servers.NAME]`` table for ``entry`` as it will run on this machine."""
    launch = entry.launch
    if launch is None:
        raise InstallError(f"{entry.name} is a {entry.kind}, not an MCP server")
    values: dict[str, Any] = {"type": launch.transport}
    # what the catalog document says is escaped (`$${`): a `${VAR}` in it would expand to this
    # machine's environment when kairox loads the config and reach the server (an argument,
    # a URL's query); only the installer's own `${VAR}` for a secret input stays live
    if launch.transport == "stdio":
        command, args = resolve_command(launch.command, launch.args, environ)
        values["command"] = _escape(command)
        values["args"] = [_fill(_escape(a), inputs.args) for a in args]
        env = {**{k: _escape(v) for k, v in launch.env.items()}, **inputs.env}
        if env:
            values["env"] = env
    else:
        values["url"] = _fill(_escape(launch.url), inputs.url)
        headers = {**{k: _escape(v) for k, v in launch.headers.items()}, **inputs.headers}
        if headers:
            values["headers"] = headers
    return values


class Installer:
    """Installs entries for one runtime (its workspace, home, policy and approver)."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        progress: Progress | None = None,
        prompter: Prompter | None = None,
        approver: Approver | None = None,
    ) -> None:
        self.runtime = runtime
        self.progress = progress or NullProgress()
        self.prompter = prompter or _no_prompt
        self.approver = approver

    async def check(self, entry: CatalogEntry) -> list[RequirementCheck]:
        return await check_entry(entry, self.runtime.env)

    async def install(self, entry: CatalogEntry, options: InstallOptions | None = None) -> InstallReport:
        options = options or InstallOptions()
        problem = name_problem(entry.name)  # sources check this too; an entry may be built in code
        if problem is not None:
            raise InstallError(f"cannot install {entry.name!r}: {problem}")
        if entry.unavailable:
            raise InstallError(f"cannot install {entry.name} from {entry.source or 'code'}: {entry.unavailable}")
        if entry.fetched_from:  # the document's reader checked this too; an entry may be built in code
            refused = network_problems(entry)
            if refused:
                field, reason = refused[0]
                raise InstallError(
                    f"catalog {entry.source or '?'} was fetched over the network ({entry.fetched_from}), so its "
                    f"entry {entry.name} installs only from the network: {field}: {reason}"
                )
        if entry.kind != "mcp-server":
            return await self._install_bundle(entry, options)
        env = self.runtime.env
        target = config_target(self.runtime, options.scope)
        report = InstallReport(entry=entry, scope=options.scope, target=target)
        report.checks = await self.check(entry)
        self._require(entry, report.checks, options)
        try:
            doc = read_document(target)
            if entry.name in server_names(doc) and not options.force:
                raise _exists(f"[mcp_servers.{entry.name}] already exists in {target}")
        except TomlEditError as exc:
            raise InstallError(str(exc)) from None
        inputs = _collect_inputs(entry, options.values, env, self.prompter)
        values = server_values(entry, inputs, env)
        report.env_needed = inputs.env_needed
        await authorize_write(self.runtime, target, self.approver, f"install MCP server {entry.name}")
        if options.prepare:
            await self._prepare(entry, values, report, options)
        if options.verify and options.verify_before_writing:
            verify_env = {**env, **inputs.secrets}
            report.verification = await self._verify(entry, values, target, verify_env, options)
            if report.verification.outcome != "ready":
                self.progress.info(f"nothing was written to {target}")
                return report
        comment = f"installed by kairox catalog from {entry.source or 'code'}"

        def add(doc: TOMLDocument) -> bool:  # under the lock: the file as it is now, not as it was read above
            if entry.name in server_names(doc) and not options.force:
                raise _exists(f"[mcp_servers.{entry.name}] already exists in {target}")
            set_server(doc, entry.name, values, comment=comment)
            return True

        await _edit(target, add)
        report.written = values
        self.progress.info(f"wrote [mcp_servers.{entry.name}] to {target}")
        for var in inputs.env_needed:
            if var not in inputs.secrets:
                report.warnings.append(
                    f"set {var} in the environment before starting kairox (it is read as ${{{var}}})"
                )
        if options.verify and not options.verify_before_writing:
            report.verification = await self._verify(entry, None, target, {**env, **inputs.secrets}, options)
        return report

    async def _verify(
        self,
        entry: CatalogEntry,
        values: Mapping[str, Any] | None,
        target: Path,
        env: Mapping[str, str],
        options: InstallOptions,
    ) -> Verification:
        """Start the server once: from ``values`` (not written yet), else from ``target``."""
        async with self.progress.step(f"Starting {entry.name} once to verify it reaches Ready") as step:
            if values is None:
                v = await verify_server(self.runtime, entry.name, target, env=env, timeout=options.verify_timeout)
            else:
                timeout = options.verify_timeout
                v = await verify_values(self.runtime, entry.name, values, target, env=env, timeout=timeout)
            step.ok = v.outcome == "ready"
            step.detail = f"ready, {v.tools} tools" if step.ok else f"{v.outcome}: {v.detail}"
        return v

    async def _install_bundle(self, entry: CatalogEntry, options: InstallOptions) -> InstallReport:
        """A plugin or a skill: into its directory (:mod:`kairox_catalog.bundles`)."""
        if entry.install is None:
            raise InstallError(f"{entry.name} has no install source")
        try:
            target = bundle_target(self.runtime, entry.kind, options.scope, entry.name)
        except BundleError as exc:
            raise InstallError(str(exc)) from None
        report = InstallReport(entry=entry, scope=options.scope, target=target)
        report.checks = await self.check(entry)
        self._require(entry, report.checks, options)
        if target.exists() and not options.force:
            raise _exists(f"{target} already exists")
        await authorize_write(self.runtime, target, self.approver, f"install {entry.kind} {entry.name}")
        try:
            await place_bundle(self.runtime, self.progress, entry, options.scope, notes=report.warnings)
        except BundleError as exc:
            raise InstallError(str(exc)) from None
        report.written = {"directory": str(target)}
        self.progress.info(f"installed {entry.kind} {entry.name} into {target}")
        return report

    def _require(self, entry: CatalogEntry, checks: list[RequirementCheck], options: InstallOptions) -> None:
        unmet = [c for c in checks if not c.ok]
        if not unmet or options.ignore_requirements:
            return
        lines = "\n".join(f"  - {c.describe()}" for c in unmet)
        reason = f"{entry.name} needs what this machine does not have:\n{lines}"
        raise InstallError(
            f"{reason}\ninstall it and run the command again (or pass --ignore-requirements)",
            reason=reason,
            kind="requirements",
        )

    async def _prepare(
        self, entry: CatalogEntry, values: Mapping[str, Any], report: InstallReport, options: InstallOptions
    ) -> None:
        argv = prepare_command(entry, values.get("command", ""), values.get("args", ()))
        if argv is None:
            return
        async with self.progress.step(f"Pre-installing {entry.name} ({' '.join(argv)})"):
            try:
                await run_command(
                    argv, env=self.runtime.env, cwd=self.runtime.workspace, timeout=options.prepare_timeout
                )
            except CommandFailed as exc:
                raise InstallError(f"pre-installing {entry.name} failed: {exc}") from None
        report.prepared = argv

    async def uninstall(self, name: str, *, scope: Scope | None = None) -> list[str]:
        """Remove ``name`` (an MCP server entry, an installed plugin or skill); what was removed."""
        removed: list[str] = []
        scopes: list[Scope] = [scope] if scope else ["workspace", "user"]
        for sc in scopes:
            target = config_target(self.runtime, sc)
            try:
                doc = read_document(target)
            except TomlEditError as exc:
                raise InstallError(str(exc)) from None
            if name in server_names(doc):
                await authorize_write(self.runtime, target, self.approver, f"uninstall MCP server {name}")
                if await _edit(target, lambda doc: remove_server(doc, name)):
                    removed.append(f"[mcp_servers.{name}] from {target}")
        for kind, directory in installed_bundles(self.runtime, name, scopes):
            await authorize_write(self.runtime, directory, self.approver, f"uninstall {kind} {name}")
            await anyio.to_thread.run_sync(shutil.rmtree, directory)
            removed.append(f"{kind} {directory}")
        if not removed:
            where = " or ".join(str(config_target(self.runtime, s)) for s in scopes)
            raise InstallError(f"{name} is not installed (looked in {where} and the plugin and skill directories)")
        return removed
