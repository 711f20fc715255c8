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

__all__ = ["registry_items", "server_to_entry", "version_key"]

_OFFICIAL_META = "io.modelcontextprotocol.registry/official"
_TEMPLATE_VAR = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

#: registry type -> (default runtime command, requirement)
_RUNTIMES: dict[str, tuple[str, Requirement]] = {
    "npm": ("npx", Requirement("node", ">=18")),
    "pypi": ("uvx", Requirement("uv")),
    "oci": ("docker", Requirement("docker")),
    "nuget": ("dnx", Requirement("dotnet", ">=10")),
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
    unreplaced = _unreplaced(launch)
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
        unavailable=f"a template, not a published server: {unreplaced}" if unreplaced else "",
        icons=icon_sources(doc.data.get("icons")),
    )


#: icons of an entry kept, and the longest ``src`` kept (a ``data:`` URL holds the image)
MAX_ICONS = 4
MAX_ICON_SRC = 65_536


def icon_sources(icons: Any) -> tuple[str, ...]:
    """The ``src`` of each MCP icon (``[{"src", "mimeType", "sizes", "theme"}]``) that is an
    ``https:`` URL or a ``data:image/`` URL, at most :data:`MAX_ICONS`; anything else is
    left out (an icon is decoration: a bad one does not cost the entry)."""
    if not isinstance(icons, list):
        return ()
    out: list[str] = []
    for icon in icons[:32]:
        src = icon.get("src") if isinstance(icon, dict) else None
        if not isinstance(src, str) or len(src) > MAX_ICON_SRC:
            continue
        if src.startswith("https://") or src.startswith("data:image/"):
            out.append(src)
        if len(out) == MAX_ICONS:
            break
    return tuple(out)


#: what a template file's author fills in before publishing (``<<Version>>``, ``$VERSION``,
#: ``${VERSION}``): a launch that still holds one cannot start. Each alternative is one bounded
#: run, so a search over remote text is linear.
_UNREPLACED = re.compile(r"<<[^<>\n]{1,64}>>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")


def _unreplaced(launch: LaunchRecipe) -> str:
    """The first placeholder left in ``launch`` and where (``args[2]: <<Version>>``), or "".
    The registry's own ``{name}`` templates are inputs, not placeholders."""
    fields = [("command", launch.command), ("url", launch.url)]
    fields += [(f"args[{i}]", a) for i, a in enumerate(launch.args)]
    fields += [(f"env.{k}", v) for k, v in launch.env.items()]
    fields += [(f"headers.{k}", v) for k, v in launch.headers.items()]
    for field, value in fields:
        found = _UNREPLACED.search(value)
        if found is not None:
            return f"{field} holds {found.group(0)[:70]!r}"
    return ""


_REGISTRY_ALIASES = {"docker": "oci", "npmjs": "npm", "python": "pypi"}
#: runtime hints each registry type can honour -> (command, requirement); others fall back with a note
_HINTS: dict[str, dict[str, tuple[str, Requirement]]] = {
    "npm": {
        "npx": ("npx", Requirement("node", ">=18")),
        "node": ("npx", Requirement("node", ">=18")),
        "bunx": ("bunx", Requirement("bun")),
    },
    "pypi": {"uvx": ("uvx", Requirement("uv")), "uv": ("uvx", Requirement("uv"))},
    "oci": {"docker": ("docker", Requirement("docker")), "podman": ("podman", Requirement("podman"))},
    "nuget": {"dnx": ("dnx", Requirement("dotnet", ">=10")), "dotnet": ("dnx", Requirement("dotnet", ">=10"))},
}
_ENV_FLAGS = ("-e", "--env")
_DIGITS = re.compile(r"[0-9]+")


class _Args:
    """The arguments of one package, and the inputs and notes they need."""

    def __init__(self, notes: list[str]) -> None:
        self.notes = notes
        self.inputs: dict[str, Input] = {}
        self.env: dict[str, str] = {}

    def placeholder_inputs(self, arg: Obj, value: str, kind: str = "arg") -> None:
        """An input per ``{name}`` in ``value`` (described by the argument's ``variables``)."""
        variables = arg.obj("variables")
        for var in dict.fromkeys(_TEMPLATE_VAR.findall(value)):
            spec = variables.obj(var) if variables is not None else None
            self.add(var, spec, kind=kind, required_default=True)

    def add(self, name: str, spec: Obj | None, *, kind: str, required_default: bool, description: str = "") -> None:
        if name in self.inputs:
            return
        secret = spec.flag("isSecret", "is_secret") if spec else False
        self.inputs[name] = Input(
            name=name,
            kind=kind,  # type: ignore[arg-type]
            description=(spec.text("description") if spec else "") or description,
            required=spec.flag("isRequired", "is_required", default=required_default and not spec.has("default"))
            if spec
            else required_default,
            secret=secret,
            default=spec.opt_text("default") if spec else None,
            env_var=name.upper() if secret else "",
        )

    def build(self, items: list[Obj], *, docker: bool = False) -> list[str]:
        out: list[str] = []
        for arg in items:
            out.extend(self._one(arg, docker))
        return out

    def _one(self, arg: Obj, docker: bool) -> list[str]:
        kind = arg.text("type", default="positional")
        value = arg.opt_text("value")
        if value is None:
            value = arg.opt_text("default")
        hint = arg.text("valueHint", "value_hint")
        required = arg.flag("isRequired", "is_required")
        if arg.flag("isRepeated", "is_repeated"):
            label = arg.text("name") if kind == "named" else hint or "value"
            self.notes.append(f"the argument {label} may be repeated: add more to args after installing")
        if kind == "named":
            flag = arg.text("name", required=True)
            fmt = arg.text("format")
            if fmt == "boolean" or (not fmt and value in ("true", "false")):  # a switch: the flag alone
                if value is None and not required:
                    self.notes.append(f"optional switch {flag}: add it to args after installing")
                    return []
                return [] if value == "false" else [flag]
            if value is None:
                if not (hint or arg.has("variables")):
                    if required:
                        return [flag]  # nothing to fill in: the flag alone
                    # optional and valueless: the registry lists what the server accepts, not
                    # what to pass (a server.json may list dozens of these)
                    self.notes.append(f"optional argument {flag}: add it to args after installing")
                    return []
                var = _input_name(hint or flag)
                if not required:
                    self.notes.append(f"optional argument {flag} <{var}>: add it to args after installing")
                    return []
                self.add(var, None, kind="arg", required_default=True, description=arg.text("description"))
                return [flag, "{" + var + "}"]
            if docker and flag in _ENV_FLAGS:
                env = _env_assignment(value)
                if env is not None:  # -e NAME={var}: the value goes in the server's environment, not argv
                    name, var = env
                    variables = arg.obj("variables")
                    self.add(name, variables.obj(var) if variables else None, kind="env", required_default=required)
                    return [flag, name]
            self.placeholder_inputs(arg, value)
            return [flag, value]
        if value is None:
            if not hint:
                if required:
                    self.notes.append("needs a positional argument: add it to args after installing")
                return []
            var = _input_name(hint)
            if not required:
                self.notes.append(f"optional argument <{var}>: add it to args after installing")
                return []
            self.add(var, None, kind="arg", required_default=True, description=arg.text("description"))
            return ["{" + var + "}"]
        self.placeholder_inputs(arg, value)
        return [value]


#: ``NAME={var}`` (a registry argument's value, remote data). Only ever ``fullmatch``-ed: one
#: start, and each name run ends at a character outside it (``=``, ``}``), so what a failed
#: try gives back is tried against one fixed character: linear in the value.
_ENV_VALUE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _env_assignment(value: str) -> tuple[str, str] | None:
    m = _ENV_VALUE.fullmatch(value)
    return (m.group(1), m.group(2)) if m else None


def _input_name(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_")
    return name or "value"


def _image(identifier: str, version: str, notes: list[str]) -> str:
    """The image to run: ``identifier`` tagged with ``version`` (a ``${VERSION}`` template in a
    repository's own ``server.json`` is replaced, or dropped when no version is known)."""
    concrete = version if version and "${" not in version and version != "latest" else ""
    if "${VERSION}" in identifier:
        if concrete:
            return identifier.replace("${VERSION}", concrete)
        notes.append("the image version is a template (${VERSION}); the latest image runs")
        return identifier.replace(":${VERSION}", "").replace("${VERSION}", "latest")
    if concrete and ":" not in identifier.rsplit("/", 1)[-1] and "@" not in identifier:
        return f"{identifier}:{concrete}"
    return identifier


def _untagged(image: str) -> str:
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return image.split("@", 1)[0]
    return image[: image.rindex(":")] if ":" in last else image


def _package(
    pkg: Obj, notes: list[str]
) -> tuple[LaunchRecipe, tuple[Input, ...], tuple[Requirement, ...], str, tuple[str, ...]]:
    raw = pkg.text("registryType", "registry_type", "registry_name", required=True).lower()
    registry = _REGISTRY_ALIASES.get(raw, raw)
    identifier = pkg.text("identifier", "name", required=True)
    version = pkg.opt_text("version") or ""
    transport = pkg.obj("transport")
    kind = transport.text("type", default="stdio") if transport else pkg.text("transport_type", default="stdio")
    if kind != "stdio":
        raise EntryProblem(pkg.path("transport"), f"package transport {kind!r} is not launchable (only stdio)")
    if registry not in _RUNTIMES:
        raise EntryProblem(pkg.path("registryType"), f"registry type {raw!r} is not supported")
    command, requirement = _RUNTIMES[registry]
    hint_cmd = pkg.text("runtimeHint", "runtime_hint")
    if hint_cmd:
        known = _HINTS[registry].get(hint_cmd)
        if known is not None:
            command, requirement = known
        else:
            notes.append(f"runtime hint {hint_cmd!r} cannot launch a {registry} package; {command} runs it")
    args_of = _Args(notes)
    env_inputs = [_env_input(o, args_of) for o in pkg.objects("environmentVariables", "environment_variables")]
    docker = registry == "oci"
    runtime_args = args_of.build(pkg.objects("runtimeArguments", "runtime_arguments"), docker=docker)
    package_args = args_of.build(pkg.objects("packageArguments", "package_arguments"))
    unique: dict[str, Input] = {}
    for item in (*(i for i in env_inputs if i is not None), *args_of.inputs.values()):
        unique.setdefault(item.name, item)  # --input NAME=VALUE names one input: the first declared
    inputs = tuple(unique.values())
    prepare: tuple[str, ...] = ()
    if registry == "npm":
        spec = f"{identifier}@{version}" if version and version != "latest" else identifier
        lead = ("-y",) if command == "npx" else ()
        args = (*lead, *runtime_args, spec, *package_args)
        hint = f"npm install -g {spec}"
    elif registry == "pypi":
        spec = f"{identifier}@{version}" if version and version != "latest" else identifier
        args = (*runtime_args, spec, *package_args)
        hint = f"uv tool install {identifier}" + (f"=={version}" if version and version != "latest" else "")
    elif registry == "oci":
        image = _image(identifier, version, notes)
        run = list(runtime_args)
        bare = _untagged(image)
        named_image = [i for i, a in enumerate(run) if a in (image, bare, identifier)]
        for i in named_image:  # the runtime arguments name the image themselves: once, with its tag
            run[i] = image
        if not run or run[0] != "run":
            run = ["run", *(f for f in ("-i", "--rm") if f not in run), *run]
        declared = {run[i + 1] for i in range(len(run) - 1) if run[i] in _ENV_FLAGS}
        env_flags = [flag for i in inputs if i.kind == "env" and i.name not in declared for flag in ("-e", i.name)]
        env_flags += [f for name in args_of.env if name not in declared for f in ("-e", name)]
        if named_image:
            at = named_image[0]
            args = (*run[:at], *env_flags, *run[at:], *package_args)
        else:
            args = (*run, *env_flags, image, *package_args)
        prepare = (command, "pull", image)
        hint = f"{command} pull {image}"
    else:  # nuget
        spec = f"{identifier}@{version}" if version else identifier
        args = (*runtime_args, spec, "--yes", *package_args)
        hint = f"dotnet tool install -g {identifier}"
    launch = LaunchRecipe(command=command, args=tuple(args), env=dict(args_of.env))
    return launch, inputs, (requirement,), hint, prepare


def _env_input(var: Obj, args: _Args) -> Input | None:
    """An environment variable: an input, or a fixed value (``value`` with no placeholder)."""
    name = var.text("name", required=True)
    value = var.opt_text("value")
    variables = _TEMPLATE_VAR.findall(value) if value else []
    if value is not None and not variables:
        args.env[name] = value
        return None
    template, description, secret = "", var.text("description"), var.flag("isSecret", "is_secret")
    required, default = var.flag("isRequired", "is_required"), var.opt_text("default")
    if value is not None and len(set(variables)) == 1:
        template = value.replace("{" + variables[0] + "}", "{value}")
        spec = var.obj("variables")
        inner = spec.obj(variables[0]) if spec else None
        if inner is not None:
            secret = secret or inner.flag("isSecret", "is_secret")
            required = required or inner.flag("isRequired", "is_required")
            description = description or inner.text("description")
            default = inner.opt_text("default") if default is None else default
    return Input(
        name=name, description=description, required=required, secret=secret, default=default, template=template
    )


def _remote(remote: Obj) -> tuple[LaunchRecipe, tuple[Input, ...]]:
    kind = remote.text("type", "transport_type", required=True)
    transport = _TRANSPORTS.get(kind)
    if transport is None or transport == "stdio":
        raise EntryProblem(remote.path("type"), f"remote type {kind!r} is not supported")
    url = remote.text("url", required=True)
    fixed: dict[str, str] = {}
    inputs: list[Input] = []
    url_inputs = _Args([])
    variables = remote.obj("variables")
    for var in dict.fromkeys(_TEMPLATE_VAR.findall(url)):
        url_inputs.add(var, variables.obj(var) if variables else None, kind="url", required_default=True)
    for header in remote.objects("headers"):
        name = header.text("name", required=True)
        value = header.opt_text("value") or ""
        secret = header.flag("isSecret", "is_secret")
        names = _TEMPLATE_VAR.findall(value)
        if value and not names and not secret:
            fixed[name] = value
            continue
        template, env_var = "", ""
        inner = header.obj("variables")
        spec = inner.obj(names[0]) if inner is not None and len(set(names)) == 1 else None
        if len(set(names)) == 1:
            template = value.replace("{" + names[0] + "}", "{value}")
            env_var = names[0].upper()
            if spec is not None:
                secret = secret or spec.flag("isSecret", "is_secret")
        inputs.append(
            Input(
                name=name,
                kind="header",
                description=header.text("description") or (spec.text("description") if spec else ""),
                required=header.flag("isRequired", "is_required")
                or (spec.flag("isRequired", "is_required") if spec else False),
                secret=secret,
                default=header.opt_text("default"),
                template=template,
                env_var=env_var,
            )
        )
    inputs.extend(url_inputs.inputs.values())
    return LaunchRecipe(transport=transport, url=url, headers=fixed), tuple(inputs)  # type: ignore[arg-type]


def version_key(version: str) -> tuple[Any, ...]:
    """A sort key for versions: semver order (``1.10.0`` > ``1.9.2``; a release above its
    pre-releases); anything that is not a version sorts below every version."""
    text = version.strip().lstrip("vV")
    core, _, pre = text.partition("-")
    core = core.split("+", 1)[0]
    parts = core.split(".")
    if not all(_DIGITS.fullmatch(p) for p in parts):
        return (0,)
    numbers = tuple(int(p) for p in parts) + (0,) * max(0, 3 - len(parts))
    pre_key: tuple[Any, ...] = (1,)
    if pre:
        idents = pre.split("+", 1)[0].split(".")
        pre_key = (0, *((0, int(p), "") if _DIGITS.fullmatch(p) else (1, 0, p) for p in idents))
    return (1, numbers, pre_key)
