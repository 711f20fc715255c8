"""What the conformance suite checks over streamable HTTP, checked here over every transport
(issue 40, item 5): kairox's MCP client against the conformance fixture
(tests/fixtures/mcp_servers/conformance.py, a real SDK server in its own process) over
stdio, the legacy HTTP+SSE transport and streamable HTTP, on the handshake revision and,
where the transport has it, on 2026-07-28. Content of every kind, an error result,
progress, sampling, elicitation and the schema's defaults for what the host left out."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp.types as types
import peers
import pytest
from mcp.client.session import ClientRequestContext
from mcp_helpers import open_runtime

from kairox import ApprovalAnswer, ApprovalRequest, ImageContent, ResourceContent

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

#: (transport, protocol): stdio and streamable HTTP on both revisions, SSE on the handshake one
CASES = [
    ("stdio", "2025-11-25"),
    ("stdio", "auto"),
    ("sse", "2025-11-25"),
    ("streamable_http", "2025-11-25"),
    ("streamable_http", "auto"),
]


@contextlib.contextmanager
def fixture_entry(transport: str, protocol: str) -> Iterator[dict[str, Any]]:
    command, *args = peers.fixture_server("conformance")
    if transport == "stdio":
        yield {"command": command, "args": args, "protocol": protocol}
        return
    port = peers.free_port()
    flag, path = ("--sse", "/sse") if transport == "sse" else ("--http", "/mcp")
    with peers.http_peer([command, *args, flag, str(port)], port, path) as url:
        yield {"type": transport, "url": url, "protocol": protocol}


def yes(request: ApprovalRequest) -> ApprovalAnswer:
    return ApprovalAnswer.ALLOW_ONCE


class Host:
    """The host's model and user: a stub answer for sampling, and a form a user filled in
    part (``response`` only): what the schema gives defaults for is left out."""

    def __init__(self) -> None:
        self.sampled: list[str] = []
        self.asked: list[str] = []

    async def sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        content = params.messages[-1].content
        self.sampled.append(content.text if isinstance(content, types.TextContent) else "?")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="a stub answer"), model="stub"
        )

    async def elicitation(self, context: ClientRequestContext, params: Any) -> types.ElicitResult:
        self.asked.append(params.message)
        typed = {"response": "typed"} if "response" in params.requested_schema.get("properties", {}) else {}
        return types.ElicitResult(action="accept", content=typed)


@pytest.mark.parametrize(("transport", "protocol"), CASES, ids=[f"{t}-{p}" for t, p in CASES])
async def test_the_fixture_s_tools_over_every_transport(tmp_path: Path, transport: str, protocol: str) -> None:
    host = Host()
    progress: list[float] = []
    with fixture_entry(transport, protocol) as entry:
        async with open_runtime(
            tmp_path,
            {"c": entry},
            sampling_callback=host.sampling,
            elicitation_callback=host.elicitation,
            approver=yes,
        ) as rt:

            async def call(tool: str, args: dict[str, Any] | None = None, **kw: Any) -> Any:
                return await rt.call_tool(f"c.{tool}", args or {}, approver=yes, timeout=30, **kw)

            assert (await call("test_simple_text")).text == "This is a simple text response for testing."
            [image] = (await call("test_image_content")).content
            assert isinstance(image, ImageContent) and image.mime_type == "image/png"
            [audio] = (await call("test_audio_content")).content
            assert audio.type == "audio" and audio.mime_type == "audio/wav"
            [embedded] = (await call("test_embedded_resource")).content
            assert isinstance(embedded, ResourceContent) and embedded.uri == "test://embedded-resource"
            mixed = (await call("test_multiple_content_types")).content
            assert [block.type for block in mixed] == ["text", "image", "resource"]
            failed = await call("test_error_handling")
            assert failed.is_error and failed.text == "Error executing tool test_error_handling"

            def on_progress(done: float, total: float | None, message: str | None) -> None:
                progress.append(done)

            assert (await call("test_tool_with_progress", progress=on_progress)).text == "Progress reported"

            sampled = await call("test_sampling", {"prompt": "What is 2+2?"})
            assert sampled.text == "LLM response: a stub answer" and host.sampled == ["What is 2+2?"]
            elicited = await call("test_elicitation", {"message": "Your name?"})
            assert elicited.text == 'User response: action=accept, content={"response":"typed"}'
            # the user typed nothing: kairox gives the server the schema's defaults
            defaults = await call("test_elicitation_sep1034_defaults")
            content = json.loads(defaults.text.split("content=", 1)[1])
            assert content == {"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": True}
    assert progress == [0, 50, 100]
