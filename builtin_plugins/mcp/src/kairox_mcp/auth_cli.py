"""``kairox mcp login NAME`` and ``kairox mcp logout NAME``: OAuth for HTTP MCP servers.

Registered under ``kairox mcp`` (``mcp.add_command(login)``, ``mcp.add_command(logout)``).
Neither prints a token, a code or a client secret: only the authorization URL (which
carries none) and the token file's path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from kairox.ext import terminal_safe as safe
from kairox_cli import echo_json, run_with_runtime, want_json

from .auth import LOGIN_TIMEOUT, TokenFile, login_command, token_path
from .manager import manager_of

if TYPE_CHECKING:
    from kairox import Runtime

__all__ = ["login", "logout"]


def _definition(rt: Runtime, server: str) -> Any:
    manager = manager_of(rt)
    definition = manager.definitions.get(server)
    if definition is not None:
        return definition
    held = manager.unavailable.get(server)
    if held is not None:
        raise click.ClickException(f"MCP server {server} is {held.state.value}: {held.reason}")
    configured = ", ".join(sorted(manager.definitions)) or "none"
    raise click.ClickException(f"no MCP server named {server!r} (configured: {configured})")


def _open_browser(url: str) -> bool:
    import webbrowser

    try:
        return webbrowser.open(url)
    except Exception:  # pragma: no cover - no browser on this machine: the URL is printed
        return False


@click.command("login")
@click.argument("server")
@click.option("--no-browser", is_flag=True, help="Do not open a browser; print the URL to open.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=LOGIN_TIMEOUT,
    show_default=True,
    help="Seconds to wait for the browser to come back.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_context
def login(ctx: click.Context, server: str, no_browser: bool, timeout: float, as_json: bool) -> None:
    """Authorize kairox with SERVER's OAuth authorization server (HTTP servers).

    Runs the authorization code flow with PKCE: registers a client (or uses the entry's
    `oauth.client_id`), opens the authorization URL in a browser (or prints it), waits for
    the redirect on 127.0.0.1, and stores the tokens under $KAIROX_HOME/mcp-oauth/ (0600).
    The tokens are refreshed automatically; `kairox mcp logout SERVER` deletes them.
    """
    from .auth import LoginFailed, TokenFileError
    from .auth import login as run_login

    def show(url: str) -> None:
        click.echo(f"Open this URL to authorize {safe(server)}:\n  {safe(url)}", err=True)

    async def go(rt: Runtime) -> dict[str, Any]:
        definition = _definition(rt, server)
        config = definition.config
        if not config.url:
            raise click.ClickException(f"MCP server {server} is a {config.type} server: only HTTP servers log in")
        try:
            path = await run_login(
                server,
                config,
                rt.env,
                show_url=show,
                open_browser=None if no_browser else _open_browser,
                timeout=timeout,
            )
        except (LoginFailed, TokenFileError) as exc:
            raise click.ClickException(f"login to {server} failed: {exc}") from None
        return {"server": server, "logged_in": True, "token_file": str(path)}

    data = run_with_runtime(ctx, go, start=False)
    if want_json(ctx, as_json):
        echo_json(data)
    else:
        click.echo(f"Logged in to {safe(server)}; tokens stored in {safe(data['token_file'])}")


@click.command("logout")
@click.argument("server")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_context
def logout(ctx: click.Context, server: str, as_json: bool) -> None:
    """Delete SERVER's stored OAuth tokens (and its client registration).

    Works for any name, configured or not (a removed server's tokens can be deleted too).
    """

    async def go(rt: Runtime) -> dict[str, Any]:
        path = token_path(server, rt.env)
        removed = TokenFile(path).delete()
        return {"server": server, "removed": removed, "token_file": str(path)}

    data = run_with_runtime(ctx, go, start=False)
    if want_json(ctx, as_json):
        echo_json(data)
    elif data["removed"]:
        click.echo(f"Logged out of {safe(server)}: deleted {safe(data['token_file'])}")
    else:
        click.echo(
            f"No stored tokens for {safe(server)} ({safe(data['token_file'])}); `{login_command(server)}` logs in"
        )
