"""The gateway offers the workspace's skills through the skills extension (SEP-2640,
``io.modelcontextprotocol/skills``) as well as prompts: an SDK client over streamable HTTP
(a real ``kairox serve --http``) declares the extension, sees it declared, lists the skills,
gets one, and reads each ``SKILL.md`` whose bytes match the listed digest, size and frontmatter.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

import mcp_types as types
import pytest
import yaml
from mcp.client.extension import advertise
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter
from serve_helpers import SKILL, gateway_client, make_workspace

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

EXTENSION = "io.modelcontextprotocol/skills"
RAW: Any = TypeAdapter(dict[str, Any])


class ListParams(types.RequestParams):
    cursor: str | None = None


class ListSkills(types.Request[ListParams, Literal["skills/list"]]):
    method: Literal["skills/list"] = "skills/list"
    params: ListParams


class GetParams(types.RequestParams):
    uri: str


class GetSkill(types.Request[GetParams, Literal["skills/get"]]):
    method: Literal["skills/get"] = "skills/get"
    params: GetParams


def frontmatter_of(text: str) -> Any:
    return yaml.safe_load(text.split("---\n")[1])


async def test_a_client_reads_the_workspace_skills_through_the_extension(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    skills = ws.root / ".kairox" / "skills"
    review = "---\nname: pr-review\ndescription: Review a change\nlicense: MIT\n---\nReview it.\n"
    (skills / "pr-review.md").write_text(review, encoding="utf-8")
    # a name the Agent Skills rule refuses: still a prompt, not an entry
    (skills / "Odd_Name.md").write_text("---\nname: Odd_Name\ndescription: odd\n---\nodd\n", encoding="utf-8")
    async with gateway_client(ws, "http", extensions=[advertise(EXTENSION)]) as client:
        declared = client.server_capabilities.extensions or {}
        assert declared.get(EXTENSION) == {} and client.server_capabilities.resources is not None
        page = await client.session.send_request(ListSkills(params=ListParams()), RAW)
        entries = {e["uri"]: e for e in page["skills"]}
        assert sorted(entries) == ["skill://greet/SKILL.md", "skill://pr-review/SKILL.md"]
        assert "nextCursor" not in page and page["ttlMs"] == 0 and page["resultType"] == "complete"
        greet = entries["skill://greet/SKILL.md"]
        assert greet["frontmatter"] == frontmatter_of(SKILL)
        files = {r["uri"]: r for r in greet["resources"]}
        assert sorted(files) == ["skill://greet/SKILL.md", "skill://greet/references/notes.md"]
        for uri, listed in [
            *files.items(),
            *((r["uri"], r) for r in entries["skill://pr-review/SKILL.md"]["resources"]),
        ]:
            read = await client.read_resource(uri)
            data = read.contents[0].text.encode()  # type: ignore[union-attr]
            assert (len(data), "sha256:" + hashlib.sha256(data).hexdigest()) == (listed["size"], listed["digest"])
        read = await client.read_resource("skill://pr-review/SKILL.md")
        assert read.contents[0].text == review  # type: ignore[union-attr]
        assert entries["skill://pr-review/SKILL.md"]["frontmatter"] == frontmatter_of(review)

        got = await client.session.send_request(GetSkill(params=GetParams(uri="skill://greet/SKILL.md")), RAW)
        assert got["skill"] == greet and "nextCursor" not in got
        with pytest.raises(MCPError) as unknown:
            await client.session.send_request(GetSkill(params=GetParams(uri="skill://nope/SKILL.md")), RAW)
        assert unknown.value.code == types.INVALID_PARAMS

        # as well as, not instead of, the prompts
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert {"greet", "pr-review", "Odd_Name"} <= prompts
