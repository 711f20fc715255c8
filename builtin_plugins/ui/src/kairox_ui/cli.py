"""``kairox ui``: serve the dashboard for the workspace until Ctrl-C."""

from __future__ import annotations

import contextlib
import socket
import sys
import webbrowser
from collections.abc import Iterator
from typing import TYPE_CHECKING

import anyio
import click

from kairox_cli import run_with_runtime

from .security import is_loopback, stored_token

if TYPE_CHECKING:
    from kairox import Runtime

__all__ = ["serve", "ui"]


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


def url_host(host: str) -> str:
    """The host part of the printed URL (a wildcard address is shown as this machine's loopback)."""
    name = host.strip("[]")
    if name in ("0.0.0.0", ""):
        return "127.0.0.1"
    if name == "::":
        return "[::1]"
    return f"[{name}]" if ":" in name else name


async def serve(
    rt: Runtime, *, host: str, port: int, token: str, open_browser: bool = False, start: bool = True
) -> None:
    """Serve the dashboard over ``rt`` (and the runtimes it is reopened as) until cancelled."""
    import uvicorn

    from .app import Dashboard, build_app
    from .holder import RuntimeHolder
    from .hub import Approvals, Hub

    approvals = rt.approver if isinstance(rt.approver, Approvals) else Approvals(Hub())
    hub = approvals.hub
    holder = RuntimeHolder(rt, hub, approvals, start=start)
    dash = Dashboard(holder, hub, approvals)
    sock = _bind(host, port)
    actual = sock.getsockname()[1]
    app = build_app(dash, token=token, host=host, port=actual)

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:  # the CLI's own handling shuts the runtime down
            yield

    config = uvicorn.Config(
        app,
        log_config=None,
        log_level="warning",
        access_log=False,
        lifespan="off",
        ws="none",
        http="h11",
        timeout_graceful_shutdown=1,
    )
    server = Server(config)
    url = f"http://{url_host(host)}:{actual}/#token={token}"  # the fragment never reaches a server
    click.echo(url)
    sys.stdout.flush()
    if not is_loopback(host):
        click.echo(f"kairox: listening on {host}:{actual}; anyone with the URL can use it", err=True)
    if open_browser:
        await anyio.to_thread.run_sync(webbrowser.open, url)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(holder.run)
            await server.serve(sockets=[sock])
            tg.cancel_scope.cancel()
    finally:
        dash.closed.set()
        holder.stop()
        sock.close()


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="Port (0: any free one).")
@click.option("--no-browser", is_flag=True, help="Do not open a browser; just print the URL.")
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a --host other than this machine's loopback (the token is still required on every request).",
)
@click.pass_context
def ui(ctx: click.Context, host: str, port: int, no_browser: bool, allow_remote: bool) -> None:
    """Serve the dashboard: servers, marketplace, skills, plugins, tools and the event trace.

    The first line printed is the URL with its access token (after the #, which the browser
    never sends to any server); open it in a browser.
    It listens on 127.0.0.1 unless told otherwise (--host with --allow-remote).
    """
    from .hub import Approvals, Hub

    if not is_loopback(host) and not allow_remote:
        raise click.UsageError(
            f"--host {host} is reachable from other machines; pass --allow-remote to serve there "
            "(the access token is still required)"
        )
    approvals = Approvals(Hub())

    async def go(rt: Runtime) -> None:
        from kairox.ext import user_home

        token = stored_token(rt.home or user_home(rt.env))
        await serve(rt, host=host, port=port, token=token, open_browser=not no_browser)

    run_with_runtime(ctx, go, start=False, approver=approvals, warn_config=False)
