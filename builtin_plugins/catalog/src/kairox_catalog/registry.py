"""MCP registry documents (``server.json`` and registry API responses) -> catalog entries.

Accepts the current camelCase fields (``registryType``, ``environmentVariables``,
``isRequired``, ``runtimeHint``) and the older snake_case ones
(``registry_type`` / ``registry_name``, ``environment_variables``,
``is_required``, ``runtime_hint``, ``name`` for ``identifier``). A registry
API response (``{"servers": [{"server": {...}, "_meta": {...}}]}``), a list of
``server.json`` documents, or one ``server.json`` are all read.
"""

from __future__ import annotations

import re
from typing import Any

from ._reader import EntryProblem, Obj, safe_name
from .model import CatalogEntry, Input, LaunchRecipe, Requirement

__all__ = ["registry_items", "server_to_entry"]

_OFFICIAL_META = "io.modelcontextprotocol.registry/official"
_TEMPLATE_VAR = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

#: registry type -> (default runtime command, requirement)
_RUNTIMES: dict[str, tuple[str, Requirement]] = {
    "npm": ("npx", Requirement("node", ">=18")),
    "pypi": ("uvx", Requirement("uv")),
    "oci": ("docker", Requirement("docker")),
    "nuget": ("dnx", Requirement("dotnet", ">=10")),
}
_HINT_REQUIREMENTS: dict[str, Requirement] = {
    "npx": Requirement("node", ">=18"),
    "node": Requirement("node", ">=18"),
    "uvx": Requirement("uv"),
    "uv": Requirement("uv"),
    "python": Requirement("python", ">=3.10"),
    "docker": Requirement("docker"),
    "podman": Requirement("podman"),
    "dnx": Requirement("dotnet", ">=10"),
}
_TRANSPORTS = {
    "stdio": "stdio",
    "sse": "sse",
    "streamable-http": "streamable_http",
    "streamable_http": "streamable_http",
}


def registry_items(data: Any) -> list[tuple[str, Any, Any]]:
    """``(where, server document, _meta)`` for each server in a registry document."""
    if isinstance(data, list):
        return [(f"[{i}]", *_unwrap(item)) for i, item in enumerate(data)]
    if isinstance(data, dict) and isinstance(data.get("servers"), list):
        return [(f"servers[{i}]", *_unwrap(item)) for i, item in enumerate(data["servers"])]
    return [("server", data, None)]


def _unwrap(item: Any) -> tuple[Any, Any]:
    if isinstance(item, dict) and isinstance(item.get("server"), dict):
        return item["server"], item.get("_meta")
    if isinstance(item, dict):
        return item, item.get("_meta")
    return item, None


def skip_reason(meta: Any) -> str | None:
    """Why a registry listing item is not offered (deleted, or not the latest version)."""
    if not isinstance(meta, dict):
        return None
    official = meta.get(_OFFICIAL_META)
    if not isinstance(official, dict):
        return None
    if official.get("status") == "deleted":
        return "deleted from the registry"
    if official.get("isLatest") is False or official.get("is_latest") is False:
        return "superseded by a newer version"
    return None


def server_to_entry(data: Any, where: str) -> CatalogEntry:
    """One ``server.json`` as a catalog entry; raises :class:`EntryProblem` when unusable."""
    doc = Obj(data, where)
    qualified = doc.text("name", required=True)
    name = safe_name(qualified.rsplit("/", 1)[-1])
    if not name:
        raise EntryProblem(doc.path("name"), f"no usable name in {qualified!r}")
    notes: list[str] = []
    launch: LaunchRecipe | None = None
    inputs: tuple[Input, ...] = ()
    requirements: tuple[Requirement, ...] = ()
    hint = ""
    prepare: tuple[str, ...] = ()
    problems: list[str] = []
    for pkg in doc.objects("packages"):
        try:
            launch, inputs, requirements, hint, prepare = _package(pkg, notes)
            break
        except EntryProblem as exc:
            problems.append(str(exc))
    if launch is None:
        for remote in doc.objects("remotes"):
            try:
                launch, inputs = _remote(remote)
                hint = "nothing to install: the server runs remotely"
                break
            except EntryProblem as exc:
                problems.append(str(exc))
    if launch is None:
        reason = "no package or remote that kairox can launch"
        raise EntryProblem(where, f"{reason} ({'; '.join(problems)})" if problems else reason)
    version = doc.opt_text("version") or ""
    return CatalogEntry(
        name=name,
        title=doc.text("title") or qualified,
        description=doc.text("description"),
        version=version,
        requirements=requirements,
        install_hint=hint,
        launch=launch,
        inputs=inputs,
        prepare=prepare,
        homepage=doc.link("websiteUrl", "website_url"),
        repository=doc.link("repository"),
        tags=(qualified,),
        notes=tuple(notes),
    )


def _package(
    pkg: Obj, notes: list[str]
) -> tuple[LaunchRecipe, tuple[Input, ...], tuple[Requirement, ...], str, tuple[str, ...]]:
    registry = pkg.text("registryType", "registry_type", "registry_name", required=True).lower()
    identifier = pkg.text("identifier", "name", required=True)
    version = pkg.opt_text("version") or ""
    transport = pkg.obj("transport")
    kind = transport.text("type", default="stdio") if transport else pkg.text("transport_type", default="stdio")
    if kind != "stdio":
        raise EntryProblem(pkg.path("transport"), f"package transport {kind!r} is not launchable (only stdio)")
    if registry not in _RUNTIMES:
        raise EntryProblem(pkg.path("registryType"), f"registry type {registry!r} is not supported")
    command, requirement = _RUNTIMES[registry]
    hint_cmd = pkg.text("runtimeHint", "runtime_hint")
    if hint_cmd:
        command = hint_cmd
        requirement = _HINT_REQUIREMENTS.get(hint_cmd, Requirement(hint_cmd))
    inputs = tuple(_env_input(o) for o in pkg.objects("environmentVariables", "environment_variables"))
    runtime_args = _arguments(pkg.objects("runtimeArguments", "runtime_arguments"), notes)
    package_args = _arguments(pkg.objects("packageArguments", "package_arguments"), notes)
    prepare: tuple[str, ...] = ()
    if registry == "npm" or command in ("npx", "node"):
        spec = f"{identifier}@{version}" if version and version != "latest" else identifier
        args = ("-y", *runtime_args, spec, *package_args) if command == "npx" else (*runtime_args, spec, *package_args)
        hint = f"npm install -g {spec}"
    elif registry == "pypi":
        spec = f"{identifier}@{version}" if version else identifier
        args = (*runtime_args, spec, *package_args)
        hint = f"uv tool install {identifier}" + (f"=={version}" if version else "")
    elif registry == "oci":
        image = f"{identifier}:{version}" if version and ":" not in identifier.rsplit("/", 1)[-1] else identifier
        env_flags = [flag for i in inputs for flag in ("-e", i.name)]
        run = list(runtime_args) or ["run", "-i", "--rm"]
        args = (*run, *env_flags, image, *package_args)
        prepare = (command, "pull", image)
        hint = f"{command} pull {image}"
    else:  # nuget
        spec = f"{identifier}@{version}" if version else identifier
        args = (*runtime_args, spec, "--yes", *package_args)
        hint = f"dotnet tool install -g {identifier}"
    return LaunchRecipe(command=command, args=tuple(args)), inputs, (requirement,), hint, prepare


def _arguments(items: list[Obj], notes: list[str]) -> list[str]:
    out: list[str] = []
    for arg in items:
        kind = arg.text("type", default="positional")
        value = arg.opt_text("value") or arg.opt_text("default") or ""
        if kind == "named":
            flag = arg.text("name", required=True)
            out.extend([flag, value] if value else [flag])
        elif value:
            out.append(value)
        elif arg.flag("isRequired", "is_required"):
            hint = arg.text("valueHint", "value_hint") or arg.text("name") or "value"
            notes.append(f"needs the argument <{hint}>: add it to args after installing")
    return out


def _env_input(var: Obj) -> Input:
    return Input(
        name=var.text("name", required=True),
        description=var.text("description"),
        required=var.flag("isRequired", "is_required"),
        secret=var.flag("isSecret", "is_secret"),
        default=var.opt_text("default"),
    )


def _remote(remote: Obj) -> tuple[LaunchRecipe, tuple[Input, ...]]:
    kind = remote.text("type", "transport_type", required=True)
    transport = _TRANSPORTS.get(kind)
    if transport is None or transport == "stdio":
        raise EntryProblem(remote.path("type"), f"remote type {kind!r} is not supported")
    url = remote.text("url", required=True)
    fixed: dict[str, str] = {}
    inputs: list[Input] = []
    for header in remote.objects("headers"):
        name = header.text("name", required=True)
        value = header.opt_text("value") or ""
        secret = header.flag("isSecret", "is_secret")
        variables = _TEMPLATE_VAR.findall(value)
        if value and not variables and not secret:
            fixed[name] = value
            continue
        template, env_var = "", ""
        if len(variables) == 1:
            template = value.replace("{" + variables[0] + "}", "{value}")
            env_var = variables[0].upper()
        inputs.append(
            Input(
                name=name,
                kind="header",
                description=header.text("description"),
                required=header.flag("isRequired", "is_required"),
                secret=secret,
                default=header.opt_text("default"),
                template=template,
                env_var=env_var,
            )
        )
    return LaunchRecipe(transport=transport, url=url, headers=fixed), tuple(inputs)  # type: ignore[arg-type]
