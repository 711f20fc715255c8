"""The client the MCP conformance suite drives: ``python client.py {kairox,sdk} URL``.

``conformance client --command "python client.py kairox"`` starts a mock server for one
scenario, appends its URL to the command and names the scenario in
``$MCP_CONFORMANCE_SCENARIO`` (``$MCP_CONFORMANCE_CONTEXT``: what it also gives, such as a
pre-registered client; ``$MCP_CONFORMANCE_PROTOCOL_VERSION``: the revision it speaks). The
suite then judges what the client did on the wire.

- ``kairox``: what a user's agent does with kairox: a ``Runtime`` whose one
  ``[mcp_servers.c]`` entry is the mock's URL (streamable HTTP), host callbacks for sampling,
  elicitation and roots, ``Runtime.call_tool`` for calls; for ``auth/*`` scenarios first the
  login of ``kairox mcp login`` (:func:`kairox_mcp.auth.login`), with an HTTP client as the
  browser, then the runtime on the stored tokens.
- ``sdk``: the same steps with the raw SDK's ``mcp.Client`` (the reference: which failures
  the SDK shares).

Each scenario does what the suite's description of it asks of a client (list the tools,
call the ones it names). The handshake revisions (2025-11-25) get the handshake only
(``protocol = "2025-11-25"``; the SDK's ``mode="legacy"``), 2026-07-28 the default ``auto``:
the suite requires a client to run the lifecycle of the revision it is asked to run.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
import mcp_types as types

SCENARIO = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
REVISION = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "")
CONTEXT: dict[str, Any] = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
HANDSHAKE_ERA = bool(REVISION) and REVISION <= "2025-11-25"
TIMEOUT = 20.0


# -- host callbacks (the SDK's signatures: kairox takes the same) ----------------------------


async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="stub answer"), model="conformance-stub"
    )


async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    """Accept with what a user would type: the fields without a default (a field with one is
    left blank, for the client to fill in: SEP-1034, which the suite checks of kairox)."""
    if isinstance(params, types.ElicitRequestURLParams):
        return types.ElicitResult(action="decline")
    content: dict[str, Any] = {}
    for name, prop in params.requested_schema.get("properties", {}).items():
        if "default" in prop:
            continue
        if prop.get("type") == "boolean":
            content[name] = True
        elif prop.get("type") == "string":
            content[name] = "conformance"
    return types.ElicitResult(action="accept", content=content)


async def roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[])


def stub_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments that satisfy a tool's required properties."""
    by_type = {"string": "x", "integer": 0, "number": 0, "boolean": False, "object": {}, "array": []}
    props = schema.get("properties", {})
    return {name: by_type.get(props.get(name, {}).get("type"), "x") for name in schema.get("required", [])}


def calls_for_scenario(tools: dict[str, dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The ``(tool, arguments)`` calls the scenario expects, given the listed tools and their schemas."""
    fixed = {
        "tools_call": [("add_numbers", {"a": 5, "b": 3})],
        "request-metadata": [("add_numbers", {"a": 5, "b": 3})],
        "http-standard-headers": [("add_numbers", {"a": 5, "b": 3})],
        "sse-retry": [("test_reconnection", {})],
        "elicitation-sep1034-client-defaults": [("test_client_elicitation_defaults", {})],
        "sep-2322-client-request-state": [
            (name, {}) for name in ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state")
        ]
        + [("test_mrtr_no_result_type", {})],
        "initialize": [],
        "json-schema-ref-no-deref": [],
    }
    if SCENARIO in fixed:
        return fixed[SCENARIO]
    if SCENARIO == "http-custom-headers":
        return [(c["name"], c.get("arguments") or {}) for c in CONTEXT.get("toolCalls", []) if c["name"] in tools]
    if SCENARIO == "http-invalid-tool-headers":
        return [(name, stub_arguments(schema)) for name, schema in tools.items()]
    if SCENARIO.startswith("auth/") and tools:  # the first tool, as the suite's own clients do
        return [(next(iter(tools)), {})]
    return []


# -- the browser of an OAuth login --------------------------------------------------------


async def follow(url: str) -> None:
    """GET the authorization URL; follow the authorization server's redirect to the client's
    loopback listener (the suite's authorization servers approve at once)."""
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        response = await http.get(url, follow_redirects=False)
        location = response.headers.get("location")
        if response.status_code not in (301, 302, 303, 307, 308) or not location:
            print(f"authorization URL answered {response.status_code}, not a redirect", file=sys.stderr)
            return
        await http.get(location)


# -- kairox ------------------------------------------------------------------------------------

#: the client ID metadata document's URL the suite's authorization servers accept
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
#: logins after the first when a call says "needs authorization" (kairox bounds step-up itself)
MAX_LOGINS = 3


async def authorization_server(url: str) -> str:
    """The first authorization server the MCP server's protected resource metadata names (what
    a user configuring a machine client looks up once: kairox sends its credentials there only)."""
    parts = urlparse(url)
    prm = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        servers: list[str] = (await http.get(prm)).json()["authorization_servers"]
    return servers[0]


async def ready(server: Any) -> None:
    """Until the server is connected again (the runtime notices the new token file)."""
    with anyio.move_on_after(TIMEOUT):
        while server.state != "ready":  # noqa: ASYNC110 - the state of another task's server
            await anyio.sleep(0.1)


async def run_kairox(url: str) -> None:
    import kairox
    from kairox_mcp import McpServerConfig, manager_of
    from kairox_mcp.auth import LoginFailed, login, login_command
    from kairox_mcp.config import OAuthSettings

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "KAIROX_HOME": str(root / "home")}
        entry: dict[str, Any] = {
            "type": "streamable_http",
            "url": url,
            "protocol": "2025-11-25" if HANDSHAKE_ERA else "auto",
            # the user's own config: the suite's requests are answered without asking, and its
            # tools are calls the user allowed
            "sampling": "allow",
            "elicitation": "allow",
            "domain": "local",
            "capability": "read",
            "startup_timeout": TIMEOUT,
            "tool_timeout": TIMEOUT,
        }
        if SCENARIO.startswith("auth/client-credentials"):
            # machine to machine (SEP-1046): the user configures the client, its credentials
            # and the authorization server they belong to (looked up as a user would)
            entry["oauth"] = {
                "grant": "client_credentials",
                "client_id": CONTEXT["client_id"],
                "issuer": await authorization_server(url),
            }
            if CONTEXT.get("private_key_pem"):
                key = root / "home" / "keys" / "client.pem"
                key.parent.mkdir(parents=True)
                key.write_text(CONTEXT["private_key_pem"])
                entry["oauth"]["token_endpoint_auth_method"] = "private_key_jwt"
                entry["oauth"]["private_key_file"] = "keys/client.pem"
                entry["oauth"]["signing_algorithm"] = CONTEXT.get("signing_algorithm", "ES256")
            else:
                env["CONFORMANCE_CLIENT_SECRET"] = CONTEXT["client_secret"]
                entry["oauth"]["client_secret_env"] = "CONFORMANCE_CLIENT_SECRET"
        elif SCENARIO == "auth/enterprise-managed-authorization":
            # SEP-990: the user's single sign-on left an ID token in the environment; the
            # identity provider and the MCP server's authorization server are configured
            env["CONFORMANCE_CLIENT_SECRET"] = CONTEXT["client_secret"]
            env["CONFORMANCE_ID_TOKEN"] = CONTEXT["idp_id_token"]
            entry["oauth"] = {
                "grant": "identity_assertion",
                "client_id": CONTEXT["client_id"],
                "client_secret_env": "CONFORMANCE_CLIENT_SECRET",
                "issuer": await authorization_server(url),
                "idp_token_endpoint": CONTEXT["idp_token_endpoint"],
                "idp_client_id": CONTEXT["idp_client_id"],
                "id_token_env": "CONFORMANCE_ID_TOKEN",
            }
        elif CONTEXT.get("client_id"):  # a client registered beforehand (auth/pre-registration)
            entry["oauth"] = {"client_id": CONTEXT["client_id"]}
            if CONTEXT.get("client_secret"):
                env["CONFORMANCE_CLIENT_SECRET"] = CONTEXT["client_secret"]
                entry["oauth"]["client_secret_env"] = "CONFORMANCE_CLIENT_SECRET"
        elif SCENARIO.startswith("auth/"):  # the client ID metadata document the suite knows
            entry["oauth"] = {"client_metadata_url": CLIENT_METADATA_URL}
        oauth = OAuthSettings(**entry["oauth"]) if "oauth" in entry else None
        config = McpServerConfig(type="streamable_http", url=url, oauth=oauth, protocol=entry["protocol"])

        async def log_in() -> bool:
            """``kairox mcp login c``, with an HTTP client as the browser."""

            def browser(auth_url: str) -> bool:
                tg.start_soon(follow, auth_url)
                return True

            try:
                async with anyio.create_task_group() as tg:
                    await login("c", config, env, show_url=lambda _u: None, open_browser=browser, timeout=TIMEOUT)
            except LoginFailed as exc:
                print(f"login failed: {exc}", file=sys.stderr)
                return False
            return True

        if SCENARIO.startswith("auth/"):
            await log_in()
        docs = [(str(root / "home" / "kairox.toml"), {"mcp_servers": {"c": entry}})]
        async with kairox.Runtime.open(
            root / "ws",
            config_documents=docs,
            config_files=[],
            env=env,
            sampling_callback=sample,
            elicitation_callback=elicit,
            list_roots_callback=roots,
        ) as rt:
            server = manager_of(rt).server("c")
            print(f"server c: {server.state}: {server.detail}", file=sys.stderr)
            if server.state == "needs_authorization" and await log_in():
                await ready(server)
                print(f"server c: {server.state}: {server.detail}", file=sys.stderr)
            specs = {spec.id.split(".", 1)[1]: json.loads(json.dumps(spec.input_schema)) for spec in server.tool_specs}
            for name, arguments in calls_for_scenario(specs):
                # what a user does when a call says "needs authorization": log in, call again
                for _attempt in range(MAX_LOGINS + 1):
                    try:
                        result = await rt.call_tool(f"c.{name}", arguments)
                        print(f"{name}: {result}", file=sys.stderr)
                        break
                    except Exception as exc:  # the suite judges the wire; a failed call is logged
                        print(f"{name} failed: {exc}", file=sys.stderr)
                        if login_command("c") not in str(exc) or not await log_in():
                            break
                    await ready(server)

            if SCENARIO.startswith("sep-2640-"):
                await use_skills(rt, server)


async def use_skills(rt: Any, server: Any) -> None:
    """The skills extension (SEP-2640), as an agent uses it: the server's listing is in the
    registry (nothing read); in a ``verify`` scenario the agent activates the one skill and,
    when that worked, goes on to read the files its SKILL.md points to. The suite fails a
    client that reads a supporting file after being served a SKILL.md that fails verification."""
    with anyio.move_on_after(TIMEOUT):
        while not any(s.source == "mcp" for s in rt.skills.all_found()):  # noqa: ASYNC110 - the runtime's task lists
            await anyio.sleep(0.05)
    print(
        f"skills: {[s.name for s in rt.skills.skills()]}; errors: {[str(e) for e in rt.skills.errors]}", file=sys.stderr
    )
    if "verify" not in SCENARIO:
        return
    from kairox_mcp import manager_of

    skill = rt.skills.get("c:pdf-processing")
    async with rt.session() as session:
        try:
            await session.activate_skill("c:pdf-processing")
        except Exception as exc:  # the suite judges the wire: a refusal is logged
            print(f"activation refused: {exc}", file=sys.stderr)
            return
    for uri, _digest, _size in skill.loader.entry.files:
        if uri != skill.loader.entry.uri:
            await manager_of(rt).read_resource(server.name, uri)


# -- the SDK -----------------------------------------------------------------------------------


async def run_sdk(url: str) -> None:
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
    from pydantic import AnyUrl

    mode = "legacy" if HANDSHAKE_ERA else "auto"
    target: Any = url
    if SCENARIO.startswith("auth/"):

        class Memory:
            tokens: OAuthToken | None = None
            info: OAuthClientInformationFull | None = None

            async def get_tokens(self) -> OAuthToken | None:
                return self.tokens

            async def set_tokens(self, tokens: OAuthToken) -> None:
                self.tokens = tokens

            async def get_client_info(self) -> OAuthClientInformationFull | None:
                return self.info

            async def set_client_info(self, info: OAuthClientInformationFull) -> None:
                self.info = info

        storage = Memory()
        redirect = "http://localhost:3000/callback"
        if CONTEXT.get("client_id"):
            storage.info = OAuthClientInformationFull(
                client_id=CONTEXT["client_id"],
                client_secret=CONTEXT.get("client_secret"),
                redirect_uris=[AnyUrl(redirect)],
                token_endpoint_auth_method="client_secret_basic" if CONTEXT.get("client_secret") else "none",
            )
        got: dict[str, str | None] = {}

        async def on_redirect(auth_url: str) -> None:
            async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
                location = (await http.get(auth_url)).headers.get("location", "")
            query = parse_qs(urlparse(location).query)
            got.update({k: query[k][0] if k in query else None for k in ("code", "state", "iss")})

        async def on_callback() -> AuthorizationCodeResult:
            return AuthorizationCodeResult(code=got["code"] or "", state=got["state"], iss=got["iss"])

        provider = OAuthClientProvider(
            server_url=url,
            client_metadata=OAuthClientMetadata(
                client_name="conformance-client",
                redirect_uris=[AnyUrl(redirect)],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
            ),
            storage=storage,
            redirect_handler=on_redirect,
            callback_handler=on_callback,
            client_metadata_url="https://conformance-test.local/client-metadata.json",
        )
        target = streamable_http_client(url=url, http_client=httpx2.AsyncClient(auth=provider, timeout=TIMEOUT))
    async with Client(
        target, mode=mode, sampling_callback=sample, elicitation_callback=elicit, list_roots_callback=roots
    ) as client:
        listed = await client.list_tools()
        tools = {tool.name: dict(tool.input_schema) for tool in listed.tools}
        for name, arguments in calls_for_scenario(tools):
            try:
                result = await client.call_tool(name, arguments)
                print(f"{name}: {result}", file=sys.stderr)
            except Exception as exc:
                print(f"{name} failed: {exc}", file=sys.stderr)


def main() -> None:
    which, url = sys.argv[1], sys.argv[-1]
    anyio.run(run_kairox if which == "kairox" else run_sdk, url)


if __name__ == "__main__":
    main()
