"""A backend server's sampling and elicitation requests reach the gateway's client
(server-everything's trigger tools, through ``kairox serve --stdio``); kairox's policy asks
the client first (``mcp.ev.sampling`` / ``mcp.ev.elicitation``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types as types
import peers
import pytest
from mcp import Client
from serve_helpers import Workspace, make_workspace, stdio_params
from test_stdio import text_of

from kairox.testing import trust_workspace

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]


def with_everything(tmp_path: Path) -> Workspace:
    js = peers.everything_server_js()
    ws = make_workspace(tmp_path, user_config='"ev.*" = "allow"\n')
    toml = ws.root / "kairox.toml"
    toml.write_text(toml.read_text() + f'\n[mcp_servers.ev]\ncommand = "node"\nargs = ["{js}", "stdio"]\n')
    trust_workspace(ws.root, ws.home, env=ws.env())
    return ws


class Host:
    """The client's side: approves kairox's questions, answers the backend's."""

    def __init__(self, backend_action: str = "accept") -> None:
        self.approvals: list[str] = []
        self.forms: list[str] = []
        self.samples: list[str] = []
        self.backend_action = backend_action

    async def elicit(self, context: Any, params: Any) -> types.ElicitResult:
        if params.message.startswith("kairox:"):
            self.approvals.append(params.message)
            return types.ElicitResult(action="accept", content={"decision": "once"})
        self.forms.append(params.message)
        if self.backend_action != "accept":
            return types.ElicitResult(action=self.backend_action)  # type: ignore[arg-type]
        return types.ElicitResult(action="accept", content={"name": "Ada Lovelace", "check": True})

    async def sample(self, context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        content = params.messages[-1].content
        self.samples.append(content.text if isinstance(content, types.TextContent) else "")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="an answer from the gateway's client"), model="test-model"
        )


async def test_backend_elicitation_and_sampling_are_forwarded(tmp_path: Path) -> None:
    ws = with_everything(tmp_path)
    host = Host()
    async with Client(
        stdio_params(ws),  # type: ignore[arg-type]
        mode="legacy",
        elicitation_callback=host.elicit,
        sampling_callback=host.sample,
    ) as client:
        result = await client.call_tool("ev_trigger-elicitation-request", {})
        assert not result.is_error, text_of(result)
        assert "User provided the requested information" in text_of(result) and "Ada Lovelace" in text_of(result)
        assert host.forms == ["Please provide inputs for the following fields:"]
        assert len(host.approvals) == 1 and "mcp.ev.elicitation" in host.approvals[0]

        result = await client.call_tool("ev_trigger-sampling-request", {"prompt": "what is 2+2", "maxTokens": 20})
        assert not result.is_error, text_of(result)
        assert "an answer from the gateway's client" in text_of(result)
        assert host.samples and "what is 2+2" in host.samples[0]
        assert len(host.approvals) == 2 and "mcp.ev.sampling" in host.approvals[1]


async def test_a_client_without_sampling_gets_no_request(tmp_path: Path) -> None:
    ws = with_everything(tmp_path)
    host = Host(backend_action="decline")
    async with Client(stdio_params(ws), mode="legacy", elicitation_callback=host.elicit) as client:  # type: ignore[arg-type]
        result = await client.call_tool("ev_trigger-sampling-request", {"prompt": "hi", "maxTokens": 5})
        assert "the client did not declare the sampling capability" in text_of(result)
        assert host.samples == []
        result = await client.call_tool("ev_trigger-elicitation-request", {})
        assert "declined" in text_of(result)
