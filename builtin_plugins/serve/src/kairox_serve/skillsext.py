"""The skills extension (``io.modelcontextprotocol/skills``, SEP-2640) on the gateway: the
exposed skills as skill entries, beside (not instead of) the prompts and ``skill://``
resources the gateway serves them as.

- ``capabilities.extensions["io.modelcontextprotocol/skills"] = {}`` (with ``resources``,
  which the extension requires: the gateway declares it only when ``[serve] resources`` is on);
  the SDK gives it to 2026-07-28 clients (the revision the extension is written against).
- ``skills/list``: one page of entries ``{uri, frontmatter, resources}``: the ``SKILL.md``'s
  URI, its YAML frontmatter as JSON (as the file has it), and every file of the skill with
  its SHA-256 digest and size, read through the skill's contained reader when asked.
- ``skills/get``: the entry of one ``SKILL.md`` URI; any other URI is ``-32602``.

A skill's URI is ``skill://<name>/SKILL.md``, or ``skill://<namespace>/<name>/SKILL.md`` for a
plugin's (or an MCP server's) ``<namespace>:<name>``: the last segment is the name, as the
extension requires. A single-file skill (``pr-review.md``) is served as its ``SKILL.md``. A
skill the extension cannot describe is left out of the listing, still a prompt: one whose name
breaks the Agent Skills rule, that has no file (a session's, an MCP server's), whose file
has no ``name`` and ``description`` of its own or YAML that is not plain JSON, or over the
extension's limits (512 files, 16 MiB).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import ConfigDict

from kairox.ext import SkillDef, split_frontmatter
from kairox.files import Refused, Root

from .convert import MAX_RESOURCE_BYTES, skill_files
from .exposure import Exposure

__all__ = ["EXTENSION", "SkillsExtension"]

logger = logging.getLogger(__name__)

EXTENSION = "io.modelcontextprotocol/skills"
#: the extension's per-skill limits
MAX_FILES = 512
MAX_TOTAL_BYTES = 16 * 1024 * 1024
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_NAME_MAX = 64
#: a namespace as the URI's authority: an RFC 3986 reg-name of unreserved characters
_AUTHORITY = re.compile(r"[A-Za-z0-9._~-]{1,64}")
_SKILL_MD = "SKILL.md"


class _GetParams(types.RequestParams):
    model_config = ConfigDict(extra="allow")
    uri: str


def root_of(skill: SkillDef) -> str | None:
    """``skill://[<namespace>/]<name>``, or ``None`` when the names break the rules."""
    name = skill.frontmatter.name
    if len(name) > _NAME_MAX or not _NAME.fullmatch(name):
        return None
    if skill.namespace is None:
        return f"skill://{name}"
    if not _AUTHORITY.fullmatch(skill.namespace):
        return None
    return f"skill://{skill.namespace}/{name}"


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def entry_of(skill: SkillDef) -> dict[str, Any] | None:
    """The skill's entry, read now (see the module for the skills that have none)."""
    root = root_of(skill)
    files = skill_files(skill)
    if root is None or not files:
        return None
    own_path = files[0][1]
    reader = skill.contained if skill.contained is not None else Root(skill.root or own_path.parent, label="skill")
    from kairox_skills import safe_load_bounded  # installed: SkillsExtension.available()

    resources: list[dict[str, Any]] = []
    total = 0
    frontmatter: Any = None
    for rel, path in files[: MAX_FILES + 1]:
        if len(resources) == MAX_FILES:
            logger.info("skill %s has more than %d files: not in skills/list", skill.name, MAX_FILES)
            return None
        try:
            data = reader.read_bytes(path, max_bytes=MAX_RESOURCE_BYTES)
        except (Refused, OSError) as exc:
            logger.info("skill %s: %s not read for skills/list: %s", skill.name, rel, exc)
            return None
        total += len(data)
        if total > MAX_TOTAL_BYTES:
            return None
        own = path == own_path
        resources.append({"uri": f"{root}/{_SKILL_MD if own else rel}", "digest": _digest(data), "size": len(data)})
        if own:
            try:
                fm_text, _body = split_frontmatter(data.decode("utf-8"))
                frontmatter = safe_load_bounded(fm_text) if fm_text is not None else None
                json.dumps(frontmatter, allow_nan=False)
            except Exception as exc:  # undecodable, unclosed, yaml's errors, not JSON (a date)
                logger.info("skill %s: its frontmatter is not plain JSON: %s", skill.name, exc)
                return None
    if not isinstance(frontmatter, dict) or frontmatter.get("name") != skill.frontmatter.name:
        return None
    if not isinstance(frontmatter.get("description"), str) or not frontmatter["description"].strip():
        return None
    return {"uri": f"{root}/{_SKILL_MD}", "frontmatter": frontmatter, "resources": resources}


class SkillsExtension:
    """``skills/list`` and ``skills/get`` over what :class:`~kairox_serve.exposure.Exposure`
    exposes, and the extension's URIs for ``resources/read`` (:meth:`locate`)."""

    def __init__(
        self, exposure: Exposure, may_see: Callable[[ServerRequestContext[Any, Any], str], bool] | None = None
    ) -> None:
        self.exposure = exposure
        #: whether the request's principal may see the skill of that name (``[serve.principals]``)
        self.may_see = may_see or (lambda _ctx, _name: True)

    @staticmethod
    def available() -> bool:
        """Whether kairox-skills (its bounded YAML reads a skill's frontmatter) is installed."""
        import importlib.util

        return importlib.util.find_spec("kairox_skills") is not None

    def install(self, server: Server[Any]) -> None:
        server.extensions[EXTENSION] = {}
        server.add_request_handler("skills/list", types.PaginatedRequestParams, self._list)
        server.add_request_handler("skills/get", _GetParams, self._get)

    def locate(self, uri: str) -> tuple[str, str] | None:
        """``(skill name, its file's path in the skill)`` of a URI of this extension's form
        (``SKILL.md`` is a single-file skill's own file), else ``None``."""
        best: tuple[str, SkillDef] | None = None
        for skill in self.exposure.skills():
            root = root_of(skill)
            # the longest root: skill://acme/deploy/... is acme:deploy's, not a file of acme
            if root is not None and uri.startswith(root + "/") and (best is None or len(root) > len(best[0])):
                best = (root, skill)
        if best is None:
            return None
        root, skill = best
        relative, path = uri[len(root) + 1 :], skill.path
        if path is None:
            return None
        return skill.name, path.name if relative == _SKILL_MD else relative

    def _entries(self, skills: list[SkillDef]) -> list[dict[str, Any]]:
        return [e for e in map(entry_of, skills) if e is not None]

    async def _list(self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams) -> dict[str, Any]:
        skills = [s for s in self.exposure.skills() if self.may_see(ctx, s.name)]
        entries = await anyio.to_thread.run_sync(self._entries, skills)
        return {"skills": entries, "ttlMs": 0, "cacheScope": "private"}

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: _GetParams) -> dict[str, Any]:
        located = self.locate(params.uri) if params.uri.endswith("/" + _SKILL_MD) else None
        skill = self.exposure.skill(located[0]) if located is not None and self.may_see(ctx, located[0]) else None
        entry = await anyio.to_thread.run_sync(entry_of, skill) if skill is not None else None
        if entry is None or entry["uri"] != params.uri:
            raise MCPError(code=types.INVALID_PARAMS, message=f"No skill is served at {params.uri}")
        return {"skill": entry, "ttlMs": 0, "cacheScope": "private"}
