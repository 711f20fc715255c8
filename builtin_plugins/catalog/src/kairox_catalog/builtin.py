"""The built-in catalog: a curated list of real, published MCP servers.

Available with no network. Package names were checked against their registries
(``npm view NAME version``, ``pip index versions NAME``) when the list was
written; the recipes are the ones each project documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .model import CatalogEntry, Input, LaunchRecipe, Requirement, SourceResult

if TYPE_CHECKING:
    from kairox import Runtime

__all__ = ["BUILTIN_ENTRIES", "BuiltinSource"]

_REFERENCE = "https://github.com/modelcontextprotocol/servers"
_NODE = Requirement("node", ">=18")
_UV = Requirement("uv")


def _uvx(
    name: str,
    package: str,
    title: str,
    description: str,
    tags: Sequence[str],
    *,
    requirements: Sequence[Requirement] = (),
) -> CatalogEntry:
    return CatalogEntry(
        name=name,
        title=title,
        description=description,
        requirements=(_UV, *requirements),
        install_hint=f"uv tool install {package}  (or let uvx fetch it on first start)",
        launch=LaunchRecipe(command="uvx", args=(package,)),
        homepage=f"{_REFERENCE}/tree/main/src/{name}",
        repository=_REFERENCE,
        tags=tuple(tags),
    )


def _npx(
    name: str,
    package: str,
    title: str,
    description: str,
    tags: Sequence[str],
    *,
    node: str = ">=18",
    args: Sequence[str] = (),
    inputs: Sequence[Input] = (),
    homepage: str = "",
    repository: str = _REFERENCE,
    notes: Sequence[str] = (),
) -> CatalogEntry:
    bare = package.rsplit("@", 1)[0] if package.count("@") > 1 else package
    return CatalogEntry(
        name=name,
        title=title,
        description=description,
        requirements=(Requirement("node", node),),
        install_hint=f"npm install -g {bare}  (or let npx fetch it on first start)",
        launch=LaunchRecipe(command="npx", args=("-y", package, *args)),
        inputs=tuple(inputs),
        homepage=homepage or f"{_REFERENCE}/tree/main/src/{name}",
        repository=repository,
        tags=tuple(tags),
        notes=tuple(notes),
    )


_GITHUB_TOKEN = "GITHUB_PERSONAL_ACCESS_TOKEN"

BUILTIN_ENTRIES: tuple[CatalogEntry, ...] = (
    _uvx(
        "time",
        "mcp-server-time",
        "Time",
        "Current time and conversions between IANA time zones.",
        ["time", "timezone", "clock", "date", "reference"],
    ),
    _uvx(
        "git",
        "mcp-server-git",
        "Git",
        "Read, search and change Git repositories: status, diff, log, commit, branches.",
        ["git", "vcs", "version control", "diff", "commit", "reference"],
        requirements=(Requirement("git"),),
    ),
    _uvx(
        "fetch",
        "mcp-server-fetch",
        "Fetch",
        "Fetch web pages and convert them to markdown for the model.",
        ["web", "http", "fetch", "markdown", "browser", "reference"],
    ),
    _npx(
        "everything",
        "@modelcontextprotocol/server-everything",
        "Everything (reference test server)",
        "Exercises every MCP feature: tools, resources, prompts, sampling, progress. For testing clients.",
        ["test", "demo", "reference", "prompts", "resources"],
    ),
    _npx(
        "filesystem",
        "@modelcontextprotocol/server-filesystem",
        "Filesystem",
        "Read, write, move and search files inside the allowed directories (here: the workspace).",
        ["files", "filesystem", "fs", "read", "write", "search", "reference"],
        node=">=20",
        args=(".",),
    ),
    _npx(
        "memory",
        "@modelcontextprotocol/server-memory",
        "Memory (knowledge graph)",
        "Persistent memory as a local knowledge graph of entities, relations and observations.",
        ["memory", "knowledge graph", "persistence", "reference"],
        inputs=(
            Input(
                "MEMORY_FILE_PATH",
                description="where the graph is stored (JSON lines); default: next to the package",
            ),
        ),
    ),
    _npx(
        "sequential-thinking",
        "@modelcontextprotocol/server-sequential-thinking",
        "Sequential thinking",
        "Structured, revisable step-by-step reasoning as a tool.",
        ["thinking", "reasoning", "planning", "reference"],
        inputs=(Input("DISABLE_THOUGHT_LOGGING", description="set to true to stop logging thoughts to stderr"),),
    ),
    _npx(
        "playwright",
        "@playwright/mcp@latest",
        "Playwright browser",
        "Drive a real browser through Playwright: navigate, click, type, read accessibility snapshots.",
        ["browser", "web", "automation", "playwright", "screenshot", "testing"],
        homepage="https://github.com/microsoft/playwright-mcp",
        repository="https://github.com/microsoft/playwright-mcp",
        notes=("downloads a browser on first use (npx playwright install chrome if it is missing)",),
    ),
    CatalogEntry(
        name="github",
        title="GitHub",
        description="GitHub's official server: repositories, issues, pull requests, actions, code search.",
        requirements=(Requirement("docker"),),
        install_hint="docker pull ghcr.io/github/github-mcp-server",
        launch=LaunchRecipe(
            command="docker",
            args=("run", "-i", "--rm", "-e", _GITHUB_TOKEN, "ghcr.io/github/github-mcp-server"),
        ),
        prepare=("docker", "pull", "ghcr.io/github/github-mcp-server"),
        inputs=(Input(_GITHUB_TOKEN, description="a GitHub personal access token", required=True, secret=True),),
        homepage="https://github.com/github/github-mcp-server",
        repository="https://github.com/github/github-mcp-server",
        tags=("github", "git", "issues", "pull requests", "code review", "ci"),
    ),
    CatalogEntry(
        name="github-remote",
        title="GitHub (remote, hosted by GitHub)",
        description="GitHub's hosted MCP endpoint over streamable HTTP; nothing runs locally.",
        launch=LaunchRecipe(transport="streamable_http", url="https://api.githubcopilot.com/mcp/"),
        inputs=(
            Input(
                "Authorization",
                kind="header",
                description="a GitHub personal access token, sent as a bearer token",
                required=True,
                secret=True,
                template="Bearer {value}",
                env_var=_GITHUB_TOKEN,
            ),
        ),
        homepage="https://github.com/github/github-mcp-server",
        repository="https://github.com/github/github-mcp-server",
        tags=("github", "remote", "issues", "pull requests", "http"),
    ),
)


class BuiltinSource:
    """The curated list above; never touches the network."""

    name = "builtin"
    description = "curated MCP servers (offline)"

    async def load(self, runtime: Runtime | None = None, *, refresh: bool = False) -> SourceResult:
        return SourceResult(entries=BUILTIN_ENTRIES)

    async def entries(self, runtime: Runtime) -> Sequence[CatalogEntry]:
        return BUILTIN_ENTRIES
