"""An example host: an MCP server asks kairox's client to sample the model and to ask the
user, and this host answers with a stub model and a canned form answer.

Run it from the repository: ``uv run python docs/examples/mcp_host.py``. It starts its own
MCP server (this file with ``--server``: an SDK ``MCPServer`` over stdio) in a temporary
workspace, calls the server's tools through ``kairox.Runtime`` and prints what happened.
The callbacks have the MCP SDK's own signatures: the same functions work with
``mcp.ClientSession(read, write, sampling_callback=..., elicitation_callback=...)``.
"""

import json
import sys
import tempfile
from pathlib import Path


def serve() -> None:
    """The MCP server: ``haiku`` asks the client's model, ``sign_up`` asks the user."""
    import mcp.types as types
    from mcp.server.mcpserver import Context, MCPServer

    server = MCPServer("poet")

    @server.tool()
    async def haiku(topic: str, ctx: Context) -> str:
        """A haiku about ``topic``, written by the client's model."""
        result = await ctx.session.create_message(
            [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=f"A haiku about {topic}"))],
            max_tokens=60,
            related_request_id=ctx.request_id,
        )
        text = result.content.text if isinstance(result.content, types.TextContent) else "?"
        return f"{text}\n  -- {result.model}"

    @server.tool()
    async def sign_up(ctx: Context) -> str:
        """Ask the user for a name and whether to subscribe."""
        schema = {
            "type": "object",
            "properties": {"name": {"type": "string"}, "subscribe": {"type": "boolean"}},
            "required": ["name"],
        }
        answer = await ctx.session.elicit_form("Sign up for the poetry letter", schema, ctx.request_id)
        return json.dumps({"action": answer.action, "content": answer.content})

    server.run("stdio")


async def host(workspace: Path, home: Path) -> None:
    import mcp.types as types
    from mcp.client.session import ClientRequestContext

    import kairox

    async def stub_model(
        context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        """A sampling callback (mcp.client.session.SamplingFnT): a stub instead of a real model."""
        prompt = params.messages[-1].content
        asked = prompt.text if isinstance(prompt, types.TextContent) else ""
        poem = f"{asked.split()[-1]} at dawn / the stub model has no words / it answers anyway"
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=poem), model="stub-model-1"
        )

    async def form(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        """An elicitation callback (ElicitationFnT): a real host shows params.message and a form."""
        if isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"name": "Ada", "subscribe": True})

    def approver(request: kairox.ApprovalRequest) -> kairox.ApprovalAnswer:
        """Every ask of the policy: the tool calls, and the server's sampling and elicitation."""
        print(f"approve? {request.tool.id}: {request.reason} -> yes, for this session")
        return kairox.ApprovalAnswer.ALLOW_SESSION

    async with kairox.Runtime.open(
        workspace,
        home=home,
        trusted=True,  # this example vouches for the workspace it wrote
        sampling_callback=stub_model,
        elicitation_callback=form,
    ) as rt:
        async with rt.session(approver=approver) as session:
            print((await session.call_tool("poet.haiku", {"topic": "autumn"})).text)
            print((await session.call_tool("poet.sign_up")).text)


def main() -> None:
    """A temporary workspace whose kairox.toml declares the server, and the host in it."""
    import anyio

    with tempfile.TemporaryDirectory() as tmp:
        workspace, home = Path(tmp, "ws"), Path(tmp, "home")
        workspace.mkdir()
        home.mkdir()
        # protocol = "2025-11-25": serve() asks with ctx.session.create_message / elicit_form,
        # requests over the handshake's back channel, which 2026-07-28 does not have (there a
        # tool asks through the SDK's Resolve(...) and kairox answers with the same callbacks)
        (workspace / "kairox.toml").write_text(
            f'[mcp_servers.poet]\ncommand = {json.dumps(sys.executable)}\nargs = {json.dumps([__file__, "--server"])}\nprotocol = "2025-11-25"\n'
        )
        anyio.run(host, workspace, home)


if __name__ == "__main__":
    if "--server" in sys.argv:
        serve()
    else:
        main()
