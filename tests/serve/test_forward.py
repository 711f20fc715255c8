"""A backend server's sampling, elicitation and roots requests reach the gateway's client
(server-everything's trigger tools, and an SDK server written here, through ``kairox serve --stdio``
``tests/fixtures/mcp_servers``, through ``kairox serve --stdio`` and ``--http``); kairox's
policy decides first (``mcp.<server>.sampling`` / ``mcp.<server>.elicitation``), asking the
client when it asks. Where the request cannot reach the client (it did not declare the
capability, stateless HTTP) the backend is told why (a 2026-07-28 client answers in
rounds of ``InputRequiredResult``: test_held.py), and the client
is not asked to approve something it would never see."""

from __future__ import annotations

import contextlib
import json
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import peers
import psutil
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from serve_helpers import (
    INIT,
    TOKEN,
    Workspace,
    connect,
    gateway_client,
    serve_http,
    serve_http_up,
    stdio_params,
    with_backend,
    with_script,
)
from test_stdio import text_of

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]


def with_everything(tmp_path: Path) -> Workspace:
    js = peers.everything_server_js()
    return with_backend(tmp_path, "ev", "node", js, "stdio", user_config='"ev.*" = "allow"\n')


class Host:
    """The client's side: approves kairox's questions, answers the backend's."""

    def __init__(
        self,
        backend_action: str = "accept",
        *,
        decision: str = "once",
        content: dict[str, Any] | None = None,
    ) -> None:
        self.approvals: list[str] = []
        self.forms: list[str] = []
        self.samples: list[str] = []
        self.backend_action = backend_action
        self.decision = decision
        self.content: dict[str, Any] = content if content is not None else {"name": "Ada Lovelace", "check": True}

    async def elicit(self, context: Any, params: Any) -> types.ElicitResult:
        if params.message.startswith("kairox:"):
            self.approvals.append(params.message)
            return types.ElicitResult(action="accept", content={"decision": self.decision})
        self.forms.append(params.message)
        if self.backend_action != "accept":
            return types.ElicitResult(action=self.backend_action)  # type: ignore[arg-type]
        return types.ElicitResult(action="accept", content=self.content)

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


#: an SDK server of both revisions whose tools (and prompt ``greeting``) ask the client (the
#: SDK's resolvers: a server-to-client request on the handshake revisions, an
#: ``InputRequiredResult`` on 2026-07-28, whichever kairox-mcp settled with it)
ASKS = textwrap.dedent(
    """
    import json
    from typing import Annotated

    import mcp.types as types
    from mcp.server.elicitation import ElicitationResult
    from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS
    from pydantic import BaseModel

    server = MCPServer("asks")

    class Name(BaseModel):
        name: str

    def question(prompt: str) -> Sample:
        message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
        return Sample([message], max_tokens=20)

    def form(question: str) -> Elicit[Name]:
        return Elicit(question, Name)

    def roots_of() -> ListRoots:
        return ListRoots()

    @server.tool()
    def ask_model(prompt: str, answer: Annotated[types.CreateMessageResult, Resolve(question)]) -> str:
        \"\"\"Ask the client's model.\"\"\"
        content = answer.content
        return f"{answer.model}: {content.text if isinstance(content, types.TextContent) else '?'}"

    @server.tool()
    def ask_user(question: str, answer: Annotated[ElicitationResult[Name], Resolve(form)]) -> str:
        \"\"\"Ask the user a form.\"\"\"
        data = getattr(answer, "data", None)
        return json.dumps({"action": answer.action, "content": data.model_dump() if data else None})

    @server.tool()
    def roots(answer: Annotated[types.ListRootsResult, Resolve(roots_of)]) -> str:
        \"\"\"The client's roots.\"\"\"
        return json.dumps([{"uri": str(r.uri), "name": r.name} for r in answer.roots])

    @server.prompt()
    async def greeting(ctx: Context) -> str | types.InputRequiredResult:
        \"\"\"A greeting, for whom the user says (a prompt whose get asks).\"\"\"
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            answer = (ctx.input_responses or {}).get("who")
            if not isinstance(answer, types.ElicitResult):
                schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
                params = types.ElicitRequestFormParams(message="Who is greeted?", requested_schema=schema)
                return types.InputRequiredResult(input_requests={"who": types.ElicitRequest(params=params)})
            name = (answer.content or {}).get("name") if answer.action == "accept" else None
        else:
            result = await ctx.elicit(message="Who is greeted?", schema=Name)
            name = result.data.name if result.action == "accept" else None
        return f"Greet {name}."

    server.run("stdio")
    """
)


def with_two_backends(tmp_path: Path, rules: str, serve: str = "") -> Workspace:
    """``asks`` and ``asks2``, the same SDK server twice, with the user's policy ``rules``
    (and ``serve`` in the workspace's ``kairox.toml``), trusted."""
    from serve_helpers import make_workspace

    from kairox_testing import trust_workspace

    ws = make_workspace(tmp_path, trusted=False, serve=serve, user_config=rules)
    script = tmp_path / "asks.py"
    script.write_text(ASKS, encoding="utf-8")
    toml = ws.root / "kairox.toml"
    for name in ("asks", "asks2"):
        toml.write_text(
            toml.read_text() + f"\n[mcp_servers.{name}]\ncommand = {sys.executable!r}\nargs = [{str(script)!r}]\n"
        )
    trust_workspace(ws.root, ws.home, env=ws.env())
    return ws


def with_sdk_backend(tmp_path: Path) -> Workspace:
    """The workspace with the SDK server ``asks`` as a backend; your own config allows its
    tools and ``mcp.asks.elicitation``, while ``mcp.asks.sampling`` keeps the policy's
    default (ask)."""
    return with_script(tmp_path, "asks", ASKS, user_config='"asks.*" = "allow"\n"mcp.asks.elicitation" = "allow"\n')


TRANSPORTS = ["stdio", "http"]


#: the pids of the module's shared gateways (``sdk_gateway``, ``sdk_stateless``) and of
#: the backends they started
SHARED_PIDS: set[int] = set()


def shared_sdk_gateway(tmp_path_factory: pytest.TempPathFactory, *args: str) -> Iterator[tuple[Workspace, str]]:
    """One ``kairox serve --http ARGS`` over :func:`with_sdk_backend` for the module's HTTP
    cases (each test is a new client, so a new MCP session: approvals and held calls are per
    session; with ``--stateless`` there is none, and nothing outlives a request); yields
    the workspace and the endpoint URL once the backend is up. Built by the first HTTP case
    that asks (:func:`shared`); its processes, recorded in :data:`SHARED_PIDS`, are no
    test's leftovers (:func:`no_leftovers`)."""
    ws = with_sdk_backend(tmp_path_factory.mktemp("sdk-gateway"))
    with serve_http_up(ws, "asks_ask_model", *args, mode="legacy") as (url, proc):
        gateway = psutil.Process(proc.pid)
        pids = {gateway.pid, *(p.pid for p in gateway.children(recursive=True))}
        SHARED_PIDS.update(pids)
        try:
            yield ws, url
        finally:
            SHARED_PIDS.difference_update(pids)


@pytest.fixture(scope="module")
def sdk_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, str]]:
    """The module's shared ``kairox serve --http`` (:func:`shared_sdk_gateway`)."""
    yield from shared_sdk_gateway(tmp_path_factory)


@pytest.fixture(scope="module")
def sdk_stateless(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, str]]:
    """The module's shared ``kairox serve --http --stateless`` (:func:`shared_sdk_gateway`)."""
    yield from shared_sdk_gateway(tmp_path_factory, "--stateless")


def shared(request: pytest.FixtureRequest, *args: str) -> tuple[Workspace, str]:
    """The workspace and URL of the module's shared gateway: ``sdk_stateless`` with
    ``--stateless``, else ``sdk_gateway``. (Asked for here, not as a test's argument: the
    tests that use one are in :data:`SHARED_GATEWAY`, on one xdist worker.)"""
    assert args in ((), ("--stateless",)), args
    return request.getfixturevalue("sdk_stateless" if args else "sdk_gateway")  # type: ignore[no-any-return]


@pytest.fixture
def no_leftovers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As in tests/conftest.py, except for the processes of the module's shared gateways
    (they live as long as the module). Anything else a test starts, a process the shared
    gateway starts for it included, must be gone."""
    real = peers.live_descendants

    def outside_the_shared_gateway(exclude: set[int] | frozenset[int] = frozenset()) -> list[psutil.Process]:
        return [p for p in real(exclude) if p.pid not in SHARED_PIDS]

    monkeypatch.setattr(peers, "live_descendants", outside_the_shared_gateway)
    with peers.no_leftover_processes():
        yield


#: the HTTP cases over ``sdk_gateway`` or ``sdk_stateless`` run on one xdist worker, so the
#: module starts each once
SHARED_GATEWAY = pytest.mark.xdist_group("tests/serve/test_forward.py::sdk_gateway")
#: :data:`TRANSPORTS` for :func:`sdk_client`
SDK_TRANSPORTS = ["stdio", pytest.param("http", marks=SHARED_GATEWAY)]
#: (transport, gateway args, client mode) of the tests whose backend asks: 2026-07-28 is
#: InputRequiredResult rounds (test_held.py); --stateless as one replica, which the retry reaches
ASKING_CASES = [
    ("stdio", (), "legacy"),
    pytest.param("http", (), "legacy", marks=SHARED_GATEWAY),
    ("stdio", (), "auto"),
    pytest.param("http", (), "auto", marks=SHARED_GATEWAY),
    pytest.param("http", ("--stateless",), "auto", marks=SHARED_GATEWAY),
]


def sdk_workspace(request: pytest.FixtureRequest, tmp_path: Path, transport: str, *args: str) -> Workspace:
    """The workspace :func:`sdk_client` serves: the shared gateway's over HTTP (:func:`shared`,
    ``args``), else a new one."""
    if transport == "http":
        return shared(request, *args)[0]
    return with_sdk_backend(tmp_path)


@contextlib.asynccontextmanager
async def sdk_client(
    request: pytest.FixtureRequest, ws: Workspace, transport: str, *args: str, **kwargs: Any
) -> AsyncIterator[Client]:
    """An SDK ``Client`` (``kwargs``) of a gateway over ``ws`` (:func:`sdk_workspace`): over
    stdio a ``kairox serve --stdio`` of its own (one client per process), over HTTP a new
    session of the module's shared gateway (:func:`shared`, ``args``)."""
    if transport == "http":
        async with connect(shared(request, *args)[1], **kwargs) as client:
            yield client
        return
    async with gateway_client(ws, transport, **kwargs) as client:
        yield client


@pytest.mark.parametrize(("transport", "args", "mode"), ASKING_CASES)
async def test_an_sdk_backend_samples_and_elicits_through_the_gateway(
    request: pytest.FixtureRequest, tmp_path: Path, transport: str, args: tuple[str, ...], mode: str
) -> None:
    host = Host(content={"name": "Ada"})
    ws = sdk_workspace(request, tmp_path, transport, *args)
    async with sdk_client(
        request, ws, transport, *args, mode=mode, sampling_callback=host.sample, elicitation_callback=host.elicit
    ) as client:
        result = await client.call_tool("asks_ask_model", {"prompt": "what is 2+2"})
        assert not result.is_error, text_of(result)
        assert text_of(result) == "test-model: an answer from the gateway's client"
        assert host.samples == ["what is 2+2"]
        # mcp.asks.sampling asks: the client approves it first, told who asks and what
        assert len(host.approvals) == 1 and "mcp.asks.sampling" in host.approvals[0]
        assert "what is 2+2" in host.approvals[0]

        result = await client.call_tool("asks_ask_user", {"question": "Your name?"})
        assert json.loads(text_of(result)) == {"action": "accept", "content": {"name": "Ada"}}
        assert host.forms == ["Your name?"]
        assert len(host.approvals) == 1  # "mcp.asks.elicitation" = "allow": not asked again


@pytest.mark.parametrize(("transport", "args", "mode"), ASKING_CASES)
async def test_a_backend_prompt_that_asks_reaches_the_client(
    request: pytest.FixtureRequest, tmp_path: Path, transport: str, args: tuple[str, ...], mode: str
) -> None:
    """A backend's prompt whose get asks the user: the question reaches the client of the
    ``prompts/get`` as a tool call's does (a request on the handshake's back channel, an
    ``InputRequiredResult`` round on 2026-07-28), and the answer is the backend's."""
    host = Host(content={"name": "Ada"})
    ws = sdk_workspace(request, tmp_path, transport, *args)
    async with sdk_client(request, ws, transport, *args, mode=mode, elicitation_callback=host.elicit) as client:
        got = await client.get_prompt("asks_greeting", {})
    assert [m.content.text for m in got.messages if isinstance(m.content, types.TextContent)] == ["Greet Ada."]
    assert host.forms == ["Who is greeted?"]
    assert host.approvals == []  # "mcp.asks.elicitation" = "allow"


@pytest.mark.parametrize("transport", SDK_TRANSPORTS)
async def test_a_prompt_needing_what_a_modern_client_did_not_declare_is_32021(
    request: pytest.FixtureRequest, tmp_path: Path, transport: str
) -> None:
    """A 2026-07-28 client that declared no elicitation, whose backend prompt asks for it:
    the protocol error -32021 naming ``elicitation``, as for a tool call."""
    ws = sdk_workspace(request, tmp_path, transport)
    async with sdk_client(request, ws, transport, mode="auto") as client:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("asks_greeting", {})
    assert caught.value.error.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY, caught.value.error
    assert "elicitation" in (caught.value.error.data or {}).get("requiredCapabilities", {})


#: the handshake's back channel, and 2026-07-28's InputRequiredResult rounds (test_held.py)
MODES = ["legacy", "auto"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transport", SDK_TRANSPORTS)
async def test_a_declined_approval_keeps_the_request_from_the_client(
    request: pytest.FixtureRequest, tmp_path: Path, transport: str, mode: str
) -> None:
    host = Host(decision="deny")
    ws = sdk_workspace(request, tmp_path, transport)
    async with sdk_client(
        request, ws, transport, mode=mode, sampling_callback=host.sample, elicitation_callback=host.elicit
    ) as client:
        result = await client.call_tool("asks_ask_model", {"prompt": "what is 2+2"})
        assert result.is_error and "declined" in text_of(result), text_of(result)
        assert len(host.approvals) == 1 and host.samples == []


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transport", SDK_TRANSPORTS)
async def test_a_client_without_the_capabilities_is_not_asked(
    request: pytest.FixtureRequest, tmp_path: Path, transport: str, mode: str
) -> None:
    """Handshake era: the backend is told, and the call's error result says why. 2026-07-28:
    the call is the protocol error for it (-32021, naming the capability)."""
    host = Host()
    ws = sdk_workspace(request, tmp_path, transport)
    for tool, arguments, capability, callbacks in [
        ("asks_ask_model", {"prompt": "what is 2+2"}, "sampling", {"elicitation_callback": host.elicit}),
        ("asks_ask_user", {"question": "Your name?"}, "elicitation", {}),
    ]:
        async with sdk_client(request, ws, transport, mode=mode, **callbacks) as client:
            if mode == "legacy":
                result = await client.call_tool(tool, arguments)
                assert result.is_error and f"the client did not declare the {capability} capability" in text_of(result)
            else:
                with pytest.raises(MCPError) as refused:
                    await client.call_tool(tool, arguments)
                assert refused.value.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY, refused.value
                assert refused.value.data == {"requiredCapabilities": {capability: {}}}
    assert host.approvals == [] and host.samples == []  # nothing to approve it could not see


@SHARED_GATEWAY
async def test_no_back_channel_no_request(request: pytest.FixtureRequest) -> None:
    """A handshake-era client over stateless HTTP (no channel back to the client): the
    backend is told why. (A 2026-07-28 client is asked through ``InputRequiredResult``:
    test_held.py.)"""
    host = Host()
    url = shared(request, "--stateless")[1]
    async with connect(url, mode="legacy", sampling_callback=host.sample, elicitation_callback=host.elicit) as client:
        result = await client.call_tool("asks_ask_model", {"prompt": "what is 2+2"})
        assert result.is_error and "stateless HTTP" in text_of(result), text_of(result)
        result = await client.call_tool("asks_ask_user", {"question": "Your name?"})
        assert result.is_error and "stateless HTTP" in text_of(result), text_of(result)
    assert host.approvals == host.samples == host.forms == []


@pytest.mark.parametrize("transport", SDK_TRANSPORTS)
async def test_roots(request: pytest.FixtureRequest, tmp_path: Path, transport: str) -> None:
    """Over stdio the client is on this machine: its roots are the backend's. Over HTTP only
    those inside the gateway's roots are (this one is not: the backend is told none; see
    test_roots.py)."""
    ws = sdk_workspace(request, tmp_path, transport)
    mine = tmp_path / "client-root"
    mine.mkdir()

    async def list_roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult.model_validate({"roots": [{"uri": mine.as_uri(), "name": "mine"}]})

    async with sdk_client(request, ws, transport, mode="legacy", list_roots_callback=list_roots) as client:
        result = await client.call_tool("asks_roots", {})
        assert not result.is_error, text_of(result)
        roots = json.loads(text_of(result))
    if transport == "stdio":
        assert roots == [{"uri": mine.as_uri(), "name": "mine"}]
    else:
        assert roots == []


@SHARED_GATEWAY
async def test_a_modern_client_without_the_capability_gets_http_400(request: pytest.FixtureRequest) -> None:
    """On the wire: a 2026-07-28 ``tools/call`` that declares no sampling, whose backend asks
    for it, is answered with HTTP 400 and JSON-RPC error -32021 naming ``sampling``."""
    import httpx2

    url = shared(request)[1]
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "asks_ask_model", "arguments": {"prompt": "hi"}, "_meta": meta},
    }
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "asks_ask_model",
    }
    async with httpx2.AsyncClient(timeout=60) as http:
        response = await http.post(url, json=body, headers=headers)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == -32021 and error["data"] == {"requiredCapabilities": {"sampling": {}}}, error


async def test_a_request_that_cannot_be_told_apart_is_refused(tmp_path: Path) -> None:
    """Two clients' calls on one handshake-era backend at once: the backend's request names
    no call, so it goes to neither client; the one that came while a single call ran reaches
    its client. (A 2026-07-28 backend's requests come in its answer to one call, so they are
    told apart: test_held.py.)"""
    from kairox_testing import trust_workspace

    ws = with_sdk_backend(tmp_path)
    toml = ws.root / "kairox.toml"
    toml.write_text(toml.read_text() + 'protocol = "2025-11-25"\n')  # the asks server's table is the last
    trust_workspace(ws.root, ws.home, env=ws.env())
    with serve_http(ws, "--token-env", "MCP_TOKEN", env=ws.env(MCP_TOKEN=TOKEN)) as (url, _proc):
        first_asked, second_done = anyio.Event(), anyio.Event()
        first = Host(decision="session")
        second = Host(decision="session")

        async def first_sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
            first_asked.set()
            await second_done.wait()  # the second client's call runs (and asks) meanwhile
            return await first.sample(context, params)

        results: dict[str, str] = {}

        async def one(name: str, host: Host, sample: Any) -> None:
            async with connect(url, mode="legacy", sampling_callback=sample, elicitation_callback=host.elicit) as c:
                result = await c.call_tool("asks_ask_model", {"prompt": f"from {name}"})
                results[name] = text_of(result)

        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "first", first, first_sample)
            with anyio.fail_after(60):
                await first_asked.wait()
            await one("second", second, second.sample)
            second_done.set()
    assert results["first"] == "test-model: an answer from the gateway's client"
    assert "exactly one client's tool call" in results["second"], results["second"]
    assert second.samples == [] and first.samples == ["from first"]


async def test_a_backends_request_goes_to_the_call_on_that_backend(tmp_path: Path) -> None:
    """One client, calls running on two backends (``asks``, then ``asks2``): ``asks``'s
    sampling request travels on the stream of the client's call on ``asks`` (its
    ``related_request_id``), not on the client's latest call, which runs on ``asks2``. Raw
    HTTP shows which POST's stream each request arrives on."""
    import httpx2

    ws = with_two_backends(tmp_path, '"asks.*" = "allow"\n"asks2.*" = "allow"\n')
    headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream"}
    init = {**INIT, "params": {**INIT["params"], "capabilities": {"sampling": {}, "elicitation": {}}}}
    arrived, arrivals = anyio.create_memory_object_stream[tuple[str, dict[str, Any]]](100)

    async def call(http: httpx2.AsyncClient, url: str, name: str, rid: int, tool: str) -> None:
        body = {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": tool, "arguments": {"prompt": f"from {name}"}},
        }
        async with http.stream("POST", url, json=body, headers=headers) as response:
            async for line in response.aiter_lines():
                if line.startswith("data:") and line[5:].strip():
                    await arrived.send((name, json.loads(line[5:])))

    async def next_request(method: str) -> tuple[str, dict[str, Any]]:
        with anyio.fail_after(60):
            async for name, message in arrivals:
                if message.get("method") == method:
                    return name, message
        raise AssertionError("the streams ended")

    async def answer(http: httpx2.AsyncClient, url: str, request: dict[str, Any], result: dict[str, Any]) -> None:
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        assert (await http.post(url, json=reply, headers=headers)).status_code == 202

    with serve_http(ws, "--token-env", "MCP_TOKEN", env=ws.env(MCP_TOKEN=TOKEN)) as (url, _proc):
        async with httpx2.AsyncClient(timeout=60) as http:
            response = await http.post(url, json=init, headers=headers)
            headers["mcp-session-id"] = response.headers["mcp-session-id"]
            headers["mcp-protocol-version"] = "2025-11-25"
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await http.post(url, json=note, headers=headers)).status_code == 202
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, http, url, "A", 2, "asks_ask_model")
                name, approval_a = await next_request("elicitation/create")  # mcp.asks.sampling asks
                assert name == "A" and "mcp.asks.sampling" in approval_a["params"]["message"]
                tg.start_soon(call, http, url, "B", 3, "asks2_ask_model")
                name, approval_b = await next_request("elicitation/create")
                assert name == "B" and "mcp.asks2.sampling" in approval_b["params"]["message"]
                # both calls run, B is the latest; asks (A's backend) now sends its sampling request
                await answer(http, url, approval_a, {"action": "accept", "content": {"decision": "once"}})
                name, sample = await next_request("sampling/createMessage")
                assert name == "A", f"asks's sampling request came on the stream of call {name}"
                assert sample["params"]["messages"][-1]["content"]["text"] == "from A"
                tg.cancel_scope.cancel()
