"""The catalog's data model: entries, their requirements, launch recipes and inputs.

Every source (built-in list, kairox JSON manifest, MCP registry ``server.json``,
Claude ``marketplace.json``) produces :class:`CatalogEntry` objects. A source
document is outside input: one bad entry becomes an :class:`EntryError` and the
others still load.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from ._paths import local_path_problem, name_problem, subpath_problem

__all__ = [
    "KINDS",
    "CatalogEntry",
    "EntryError",
    "Input",
    "InstallSource",
    "Kind",
    "LaunchRecipe",
    "Requirement",
    "SourceResult",
    "Transport",
    "entry_errors",
    "entry_to_dict",
]

Kind = Literal["mcp-server", "plugin", "skill"]
KINDS: tuple[str, ...] = ("mcp-server", "plugin", "skill")
Transport = Literal["stdio", "sse", "streamable_http"]


@attrs.frozen
class Requirement:
    """A runtime the entry needs on this machine.

    ``runtime`` is ``node``, ``uv``, ``python``, ``docker``, ``git``, ``npm`` or
    any binary name; ``version`` a comma-separated spec (``">=18"``,
    ``">=3.10,<4"``), empty for any version.
    """

    runtime: str
    version: str = ""

    def __str__(self) -> str:
        return f"{self.runtime} {self.version}".strip()


@attrs.frozen
class Input:
    """A value the user supplies at install time.

    ``kind="env"``: an environment variable of the server (``name`` is the
    variable). ``kind="header"``: an HTTP header of a remote server (``name``
    is the header). For both the value is ``template`` with ``{value}``
    replaced (e.g. ``"Bearer {value}"``) when there is a template, and when
    secret it is read from ``env_var`` at start. ``kind="arg"``: the value
    replaces ``{name}`` in the launch arguments; ``kind="url"``: ``{name}`` in
    the remote URL. A secret is never written to a file: the config gets
    ``${VAR}`` instead.
    """

    name: str
    kind: Literal["env", "header", "arg", "url"] = "env"
    description: str = ""
    required: bool = False
    secret: bool = False
    default: str | None = None
    template: str = ""
    env_var: str = ""

    @property
    def variable(self) -> str:
        """The environment variable a secret is read from."""
        if self.env_var:
            return self.env_var
        if self.kind == "env":
            return self.name
        return "".join(c if c.isalnum() else "_" for c in self.name).upper()

    @property
    def placeholder(self) -> str:
        """What an ``arg`` or ``url`` input replaces: ``{name}``."""
        return "{" + self.name + "}"


@attrs.frozen
class LaunchRecipe:
    """How to start an MCP server: a command (stdio) or a URL (sse, streamable_http)."""

    transport: Transport = "stdio"
    command: str = ""
    args: tuple[str, ...] = ()
    url: str = ""
    env: dict[str, str] = attrs.field(factory=dict)
    headers: dict[str, str] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        if self.transport == "stdio" and not self.command:
            raise ValueError("a stdio launch recipe needs a command")
        if self.transport != "stdio" and not self.url:
            raise ValueError(f"a {self.transport} launch recipe needs a url")

    def command_line(self) -> str:
        if self.transport != "stdio":
            return f"{self.transport} {self.url}"
        return " ".join([self.command, *self.args])


@attrs.frozen
class InstallSource:
    """Where a plugin or skill is fetched from.

    ``type``: ``path`` (a local directory or file; relative to the catalog
    document), ``git`` (``url``, optional ``ref`` and ``path`` inside the
    repository), ``github`` (``repo`` = ``owner/name``), ``url`` (a single file,
    e.g. a ``SKILL.md``), ``npm`` (``package``, ``version``).
    """

    type: Literal["path", "git", "github", "url", "npm"]
    path: str = ""
    url: str = ""
    repo: str = ""
    ref: str = ""
    package: str = ""
    version: str = ""

    def problems(self) -> list[tuple[str, str]]:
        """``(field, reason)`` for each value that could not be used safely on disk
        (see :mod:`kairox_catalog._paths`); empty when the source is fine."""
        out: list[tuple[str, str]] = []
        if self.type == "path":
            problem = local_path_problem(self.path) if self.path.strip() else "a path source needs a path"
        else:
            problem = subpath_problem(self.path)  # inside the repository / package
        if problem is not None:
            out.append(("path", problem))
        for field in ("url", "repo", "package"):  # positional arguments of git clone / npm pack
            value = getattr(self, field)
            if value.startswith("-"):
                out.append((field, f"{value[:40]!r} starts with '-' (it would be read as an option)"))
        return out

    def describe(self) -> str:
        if self.type == "path":
            return self.path
        if self.type == "github":
            return f"github:{self.repo}" + (f"@{self.ref}" if self.ref else "")
        if self.type == "npm":
            return f"npm:{self.package}" + (f"@{self.version}" if self.version else "")
        where = self.url + (f"#{self.ref}" if self.ref else "")
        return where + (f" ({self.path})" if self.path else "")


@attrs.frozen
class CatalogEntry:
    """One installable thing.

    ``name`` is the key it installs under (``[mcp_servers.NAME]``, the plugin or
    skill directory); ``source`` names the catalog source it came from (filled
    in by the catalog). ``launch`` is set for MCP servers, ``install`` for
    plugins and skills. ``prepare`` is an optional command that pre-installs
    the packages (derived from the recipe when empty). ``manifest`` is set for a
    marketplace plugin whose entry is its manifest (``strict: false``) or adds components
    to it.
    """

    name: str
    kind: Kind = "mcp-server"
    title: str = ""
    description: str = ""
    version: str = ""
    requirements: tuple[Requirement, ...] = ()
    install_hint: str = ""
    launch: LaunchRecipe | None = None
    install: InstallSource | None = None
    inputs: tuple[Input, ...] = ()
    prepare: tuple[str, ...] = ()
    homepage: str = ""
    repository: str = ""
    tags: tuple[str, ...] = ()
    source: str = ""
    notes: tuple[str, ...] = ()
    #: plugins: the Claude plugin manifest the marketplace entry itself is (``strict: false``):
    #: what is installed is what it lists (see :func:`kairox_catalog.bundles.assemble_plugin`);
    #: with ``strict`` (the default) the components it adds to the plugin's own manifest
    #: (:func:`kairox_catalog.bundles.supplement_plugin`), empty when it adds none
    manifest: dict[str, Any] = attrs.field(factory=dict)
    #: plugins: ``manifest`` only adds components to the plugin's own manifest (a Claude
    #: marketplace entry without ``strict: false``), rather than being its definition
    supplements: bool = False
    #: the URL (credentials redacted) of the document fetched over the network this entry
    #: came from; empty for a local document or a source in code. Such an entry installs only
    #: from the network and never reads this machine's environment (:mod:`kairox_catalog.network`)
    fetched_from: str = ""
    #: why the entry cannot be installed though it is listed (a registry template whose
    #: launch still holds ``<<Version>>``); empty when it can
    unavailable: str = ""
    #: icon URLs the catalog gives (MCP ``icons[].src`` of a ``server.json``): ``https:`` or
    #: ``data:image/...`` only; shown by a page as it sees fit, never fetched by kairox
    icons: tuple[str, ...] = ()

    def __attrs_post_init__(self) -> None:
        if not self.name or not self.name.strip():
            raise ValueError("an entry needs a non-empty name")
        if self.kind == "mcp-server" and self.launch is None:
            raise ValueError("an mcp-server entry needs a launch recipe")
        if self.kind != "mcp-server" and self.install is None:
            raise ValueError(f"a {self.kind} entry needs an install source")

    def problems(self) -> list[tuple[str, str]]:
        """``(field, reason)`` for each value that would become an unsafe path: the name
        (a directory and a TOML key) and the install source's paths. Sources check every
        entry with this when they load it; the installer checks its targets again."""
        out: list[tuple[str, str]] = []
        problem = name_problem(self.name)
        if problem is not None:
            out.append(("name", problem))
        if self.install is not None:
            out.extend((f"install.{field}", reason) for field, reason in self.install.problems())
        return out

    @property
    def key(self) -> str:
        """``source:name``, unique across sources."""
        return f"{self.source}:{self.name}" if self.source else self.name


@attrs.frozen
class EntryError:
    """A malformed entry that was skipped: where it was and why."""

    source: str
    where: str  # e.g. "servers[3]" or "plugins[0].source"
    reason: str
    name: str = ""

    def __str__(self) -> str:
        # a name with NUL, a newline, an escape sequence, ... is shown quoted, never raw
        name = self.name if len(self.name) <= 80 else self.name[:77] + "..."
        shown = name if name.isprintable() else repr(name)
        label = f"{self.where} ({shown})" if self.name else self.where
        return f"{self.source}: {label}: {self.reason}"


def entry_errors(entry: CatalogEntry, source: str, where: str) -> list[EntryError]:
    """One :class:`EntryError` per :meth:`CatalogEntry.problems` of the entry found at ``where``."""
    return [
        EntryError(source, f"{where}.{field}" if where else field, reason, entry.name[:80])
        for field, reason in entry.problems()
    ]


@attrs.frozen
class SourceResult:
    """What loading one source gave: entries, skipped entries, and warnings (stale cache, ...)."""

    entries: tuple[CatalogEntry, ...] = ()
    errors: tuple[EntryError, ...] = ()
    warnings: tuple[str, ...] = ()


def _drop_empty(_attr: attrs.Attribute[Any], value: Any) -> bool:
    return value not in (None, "", (), [], {})


def entry_to_dict(entry: CatalogEntry) -> dict[str, Any]:
    """A JSON-ready dict (empty fields left out); round-trips through the kairox manifest format."""
    data: dict[str, Any] = attrs.asdict(entry, filter=_drop_empty)
    return data
