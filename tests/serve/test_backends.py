"""The gateway forwards its backends' prompts, resources, resource templates and completions
(``kairox serve --stdio`` as a real process, the conformance fixture as its backend ``test``),
namespaced as their tools are, and withholds everything of a backend one of whose tools is
denied; :func:`~kairox_serve.backends.match_template` on its own."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import mcp_types as types
import peers
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client
from mcp.shared.exceptions import MCPError
from serve_helpers import Workspace, gateway_client, kairox_env, make_workspace

from kairox_serve.backends import match_template

FIXTURE = peers.FIXTURE_SERVERS / "conformance.py"


def workspace(tmp_path: Path, *, serve: str = "", user_config: str = "") -> Workspace:
    """The gateway's test workspace with one more backend, ``test``: the conformance fixture,
    its tools and prompts named ``test.<name>`` (exported ``test_<name>``)."""
    from kairox_testing import trust_workspace

    ws = make_workspace(tmp_path, trusted=False, user_config=user_config)
    toml = ws.root / "kairox.toml"
    toml.write_text(
        toml.read_text()
        + f"\n[mcp_servers.test]\ncommand = {sys.executable!r}\nargs = [{str(FIXTURE)!r}, '--prefix', 'test']\n"
        + (f"\n[serve]\n{serve}" if serve else "")
    )
    trust_workspace(ws.root, ws.home, env=kairox_env(ws.home))
    return ws


async def backend_up(client: Client, tool: str) -> None:
    """Wait until the gateway lists ``tool`` (its backend is ready)."""
    with anyio.fail_after(60):
        while tool not in {t.name for t in (await client.list_tools()).tools}:  # noqa: ASYNC110 - another process
            await anyio.sleep(0.1)


@pytest.mark.anyio
async def test_prompts_resources_and_completions_of_a_backend(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    async with gateway_client(ws, "stdio", mode="legacy") as client:
        await backend_up(client, "test_simple_text")
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        assert {"greet", "test_simple_prompt", "test_prompt_with_arguments"} <= prompts.keys()  # beside the skill
        assert [a.name for a in prompts["test_prompt_with_arguments"].arguments or []] == ["arg1", "arg2"]
        got = await client.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
        assert isinstance(got.messages[0].content, types.TextContent)
        assert got.messages[0].content.text == "Prompt with arguments: arg1='a', arg2='b'"
        image = await client.get_prompt("test_prompt_with_image", {})
        assert isinstance(image.messages[0].content, types.ImageContent)
        with pytest.raises(MCPError, match="Unknown prompt: simple_prompt"):
            await client.get_prompt("simple_prompt", {})  # only under its namespaced name

        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        assert {"skill://greet/SKILL.md", "test://static-text", "test://static-binary"} <= uris
        text = (await client.read_resource("test://static-text")).contents[0]
        assert isinstance(text, types.TextResourceContents)
        assert text.text == "This is the content of the static text resource."
        blob = (await client.read_resource("test://static-binary")).contents[0]
        assert isinstance(blob, types.BlobResourceContents) and blob.mime_type == "image/png"
        templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        assert templates == ["test://template/{id}/data"]
        data = (await client.read_resource("test://template/42/data")).contents[0]
        assert isinstance(data, types.TextResourceContents) and '"id": "42"' in data.text
        # a URI no backend lists or matches is not found (the handshake revision's code), its URI in data
        with pytest.raises(MCPError) as missing:
            await client.read_resource("test://template/1/2/data")
        assert missing.value.code == -32002 and missing.value.data == {"uri": "test://template/1/2/data"}

        done = await client.complete(
            types.PromptReference(name="test_prompt_with_arguments"), {"name": "arg1", "value": "x"}
        )
        assert done.completion.values == []
        with pytest.raises(MCPError, match="Unknown prompt"):
            await client.complete(types.PromptReference(name="nope"), {"name": "a", "value": ""})


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("serve", "user_config"),
    [
        ('deny_tools = ["test_error_handling"]\n', ""),  # [serve] denies one of its tools
        ("", '"test.error_handling" = "deny"\n'),  # the policy denies one of its tools
    ],
    ids=["deny_tools", "policy"],
)
async def test_a_denied_tool_withholds_its_backends_prompts_and_resources(
    tmp_path: Path, serve: str, user_config: str
) -> None:
    """Attack: a client that may not call ``test_error_handling`` asks the same backend for a
    prompt or a resource instead (the process that serves the denied tool would answer)."""
    ws = workspace(tmp_path, serve=serve, user_config=user_config)
    async with gateway_client(ws, "stdio", mode="legacy") as client:
        await backend_up(client, "test_simple_text")
        assert [p.name for p in (await client.list_prompts()).prompts] == ["greet"]
        assert not [r for r in (await client.list_resources()).resources if str(r.uri).startswith("test://")]
        assert (await client.list_resource_templates()).resource_templates == []
        with pytest.raises(MCPError, match="Unknown prompt"):
            await client.get_prompt("test_simple_prompt", {})
        with pytest.raises(MCPError, match="Resource not found"):
            await client.read_resource("test://static-text")


@pytest.mark.anyio
async def test_serve_globs_pick_backend_prompts_by_namespaced_name(tmp_path: Path) -> None:
    ws = workspace(tmp_path, serve='tools = ["wb_*", "test.simple*", "test.static_text"]\n')
    async with gateway_client(ws, "stdio", mode="legacy") as client:
        await backend_up(client, "test_simple_text")
        assert [p.name for p in (await client.list_prompts()).prompts] == ["greet", "test_simple_prompt"]
        uris = [str(r.uri) for r in (await client.list_resources()).resources if not str(r.uri).startswith("skill:")]
        assert uris == ["test://static-text"]
        with pytest.raises(MCPError, match="Resource not found"):
            await client.read_resource("test://static-binary")
        with pytest.raises(MCPError, match="Resource not found"):
            await client.read_resource("test://template/1/data")  # the template is not exposed


@pytest.mark.parametrize(
    ("template", "uri", "matched"),
    [
        ("test://template/{id}/data", "test://template/123/data", True),
        ("test://template/{id}/data", "test://template/1/2/data", False),  # a simple value has no "/"
        ("test://template/{id}/data", "test://template/123/data/x", False),
        ("test://template/{id}", "test://template/", True),  # an empty value
        ("file:///{+path}", "file:///a/b/c.txt", True),  # reserved expansion: "/" allowed
        ("a://{x}-{y}", "a://1-2", True),
        ("a://{x}{y}", "a://12", True),
        ("a://static", "a://static", True),
        ("a://static", "a://other", False),
        ("a://{x}/b", "z://1/b", False),
    ],
)
def test_match_template(template: str, uri: str, matched: bool) -> None:
    assert match_template(template, uri) is matched


@given(st.text(alphabet="ab{}/x+", max_size=30), st.text(alphabet="ab/x", max_size=60))
def test_match_template_never_fails_on_outside_input(template: str, uri: str) -> None:
    assert match_template(template, uri) in (True, False)
    assert match_template(template, "x" * 5000) is False  # over the bound: not matched


@pytest.mark.anyio
async def test_principal_rules_narrow_a_backends_prompts_and_resources(tmp_path: Path) -> None:
    """Over stdio the principal is ``local``: a rule for it hides a backend's prompt, resource
    and template (by namespaced name) from every route, as ``deny_tools`` would."""
    rule = '\n[[serve.principals.rules]]\nsubjects = ["local"]\ndeny_tools = ["test.static_binary", "test.simple_prompt", "test.template"]\n'
    ws = workspace(tmp_path, user_config=rule)
    async with gateway_client(ws, "stdio", mode="legacy") as client:
        await backend_up(client, "test_simple_text")
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert "test_prompt_with_arguments" in prompts and "test_simple_prompt" not in prompts
        with pytest.raises(MCPError, match="Unknown prompt"):
            await client.get_prompt("test_simple_prompt", {})
        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        assert "test://static-text" in uris and "test://static-binary" not in uris
        assert (await client.list_resource_templates()).resource_templates == []
        with pytest.raises(MCPError, match="Resource not found"):
            await client.read_resource("test://static-binary")
        with pytest.raises(MCPError, match="Resource not found"):
            await client.read_resource("test://template/1/data")
        assert (await client.read_resource("test://static-text")).contents
