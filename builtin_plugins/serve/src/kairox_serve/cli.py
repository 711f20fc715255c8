"""``kairox serve``: the workspace as one MCP server, over stdio or streamable HTTP."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import click

from kairox_cli import run_with_runtime

if TYPE_CHECKING:
    import socket

    from kairox import Runtime

__all__ = ["serve"]


@click.command()
@click.option("--stdio", "mode", flag_value="stdio", default=True, help="Serve on stdin/stdout (the default).")
@click.option("--http", "mode", flag_value="http", help="Serve streamable HTTP at http://HOST:PORT/mcp.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (--http).")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="Port (--http).")
@click.option(
    "--token-env",
    metavar="NAME",
    default=None,
    help="Require Authorization: Bearer <the value of the variable NAME> (--http; needed off loopback).",
)
@click.option("--stateless", is_flag=True, help="Keep no per-connection state, for replicas (--http).")
@click.option(
    "--allow-origin", "allow_origins", multiple=True, metavar="ORIGIN", help="Also allow this browser Origin (--http)."
)
@click.pass_context
def serve(
    ctx: click.Context,
    mode: str,
    host: str,
    port: int,
    token_env: str | None,
    stateless: bool,
    allow_origins: tuple[str, ...],
) -> None:
    """Serve the workspace's tools, skills and skill files as one MCP server.

    Every tools/call goes through the workspace's policy; a call the policy asks
    about is put to the client (elicitation) or refused. Only a trusted workspace
    is served (`kairox trust`).
    """
    from kairox import KairoxError

    from .runtime import start_served

    if mode == "stdio":
        if token_env or stateless or allow_origins:
            raise click.UsageError("--token-env, --stateless and --allow-origin apply to --http")
        from .stdio import claim_stdio, serve_stdio

        if os.isatty(0):  # a person at a terminal, not an MCP host: say what this waits for
            click.echo(
                "kairox serve: serving MCP (JSON-RPC) on stdin/stdout, for an MCP host that starts this "
                "command; to try it, see docs/serve.md (the MCP Inspector), or serve --http. Ctrl-C stops.",
                err=True,
            )
        # first: what the runtime's plugins print while it opens must not reach the wire
        with claim_stdio() as wire:

            async def go_stdio(rt: Runtime) -> None:
                await start_served(rt)
                await serve_stdio(rt, wire)

            run_with_runtime(ctx, go_stdio, start=False)
        return

    from .http import InsecureBind, settings_from

    try:
        settings = settings_from(
            host=host,
            port=port,
            token_env=token_env,
            env=os.environ,
            stateless=stateless,
            allowed_origins=allow_origins,
        )
    except InsecureBind as exc:
        raise click.UsageError(str(exc)) from None

    async def go_http(rt: Runtime) -> None:
        from .http import check_bind
        from .runtime import serve_config

        # before anything starts; [serve.auth] (in the config) may serve a wider address
        check_bind(settings, serve_config(rt))
        _check_listen(settings.host, settings.port)  # before the workspace's servers start
        await start_served(rt)
        await _serve_http(rt, settings)

    try:
        run_with_runtime(ctx, go_http, start=False)
    except KairoxError as exc:  # pragma: no cover - run_with_runtime turns these into CommandFailed
        raise click.ClickException(str(exc)) from None


def _check_listen(host: str, port: int) -> None:
    """Raise a :class:`~kairox.KairoxError` when ``host:port`` cannot be bound now (a port in use, an
    address this machine does not have), as uvicorn would bind it (``SO_REUSEADDR``)."""
    import socket

    from kairox import KairoxError

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
    except OSError as exc:
        raise KairoxError(
            f"kairox serve cannot listen on {host}:{port}: {exc.strerror or exc}; pass another --port "
            "(or stop what listens there), or a --host address of this machine"
        ) from None


async def _serve_http(rt: Runtime, settings: object) -> None:
    import anyio
    import uvicorn

    from .frontdoor import GuardedHttp, ensure_descriptors
    from .http import MCP_PATH, GatewayApp, HttpSettings
    from .runtime import serve_config

    assert isinstance(settings, HttpSettings)
    limits = serve_config(rt)
    ensure_descriptors(limits.max_connections)

    @contextlib.asynccontextmanager
    async def given() -> AsyncIterator[Runtime]:
        yield rt

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:  # the CLI's own handling stops the runtime
            yield

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            app.closing = True  # /readyz: 503 from here on, so a load balancer sends no more
            if app.gateway is not None:  # a listen stream is a request that never ends by itself
                app.gateway.end_subscriptions()
            await super().shutdown(sockets)

    app = GatewayApp(settings, given)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        lifespan="on",
        log_level="warning",
        access_log=False,  # a log record per request is a cost on every call
        timeout_graceful_shutdown=5,
        # uvicorn's protocol with [serve]'s read deadlines and connection limit (kairox_serve.frontdoor)
        http=GuardedHttp,
        ws="none",  # the gateway serves no WebSocket: an upgrade would leave the guarded protocol
        backlog=limits.max_connections,
    )
    server = Server(config)
    shown = f"[{settings.host}]" if ":" in settings.host else settings.host
    if limits.auth is not None:
        auth = f", tokens of {limits.auth.issuer}"
    elif settings.token_env:
        auth = f", token from ${settings.token_env}"
    else:
        auth = ", no token: loopback only"
    mode = ", stateless" if settings.stateless else ""
    if limits.state is not None:
        from kairox.ext import redact_url

        mode += f", shared state in {redact_url(limits.state.redis)}"  # the URL's password hidden
    click.echo(f"kairox serve: http://{shown}:{settings.port}{MCP_PATH}{auth}{mode}", err=True)
    if not settings.token_env and limits.auth is None:
        click.echo(
            "kairox serve: warning: without --token-env any process on this machine, any other user's too, "
            "can call this workspace's tools through the gateway (and answer its approvals as a client); "
            "use --token-env on a machine you share",
            err=True,
        )
    try:
        await server.serve()
    except SystemExit:  # uvicorn's answer to a failed bind (the port taken since the check)
        if server.started:
            raise
    finally:
        if server.started and not server.should_exit:
            server.should_exit = True
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                await server.shutdown()
    if not server.started:
        from kairox import KairoxError

        raise KairoxError(
            f"kairox serve: the HTTP server on {settings.host}:{settings.port} did not start (why is above)"
        )
