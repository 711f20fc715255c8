"""The starlette app: the pages (one HTML shell and plain ES modules), the JSON API and
the server-sent event stream, behind :class:`~kairox_ui.security.Guard`."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from kairox import KairoxError
from kairox_cli import config_secrets, mask_secrets

from .actions import (
    ActionError,
    Marketplace,
    add_session_skill,
    call_tool,
    override_path,
    plugin_config,
    remove_session_skill,
    render_skill,
    server_action,
    set_plugin_config,
    set_plugin_enabled,
    set_skill_enabled,
    trust_bundle,
    trust_workspace,
)
from .apps import FRAME_PREFIX, Apps, app_call, open_app
from .forms import (
    FormError,
    parse_answer,
    parse_install,
    parse_json_object,
    parse_path_override,
    parse_plugin_config,
    parse_plugin_toggle,
    parse_server_action,
    parse_session_skill,
    parse_skill_arguments,
    parse_skill_toggle,
    parse_tool_call,
    parse_uninstall,
)
from .holder import RuntimeHolder
from .hub import Approvals, Hub
from .security import Guard
from .views import (
    all_skills,
    plugins_view,
    skill_view,
    skills_view,
    status_view,
    tools_view,
)

__all__ = ["PAGES", "Dashboard", "build_app"]

logger = logging.getLogger(__name__)

#: path -> page name (the shell's ``data-page``)
PAGES = {
    "/": "status",
    "/marketplace": "marketplace",
    "/skills": "skills",
    "/plugins": "plugins",
    "/tools": "tools",
    "/events": "trace",
}
#: page name -> its title and heading (a screen reader says which view a tab shows)
TITLES = {
    "status": "Status",
    "marketplace": "Marketplace",
    "skills": "Skills",
    "plugins": "Plugins",
    "tools": "Tools",
    "trace": "Trace",
}
#: seconds between keep-alive comments on the event stream
KEEPALIVE = 15.0

SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]

#: the answer to a frame ticket used already: nothing to run, not to be framed
FRAME_GONE_HEADERS = {
    "content-security-policy": "default-src 'none'; frame-ancestors 'none'; sandbox",
    "cache-control": "no-store",
    "referrer-policy": "no-referrer",
}

Handler = Callable[[Request], Awaitable[Any]]


class Dashboard:
    """The state behind the routes."""

    def __init__(self, holder: RuntimeHolder, hub: Hub, approvals: Approvals) -> None:
        self.holder = holder
        self.hub = hub
        self.approvals = approvals
        self.market = Marketplace(holder, hub)
        self.apps = Apps()
        self.closed = anyio.Event()
        holder.snapshot = status_view

    @property
    def rt(self) -> Any:
        return self.holder.rt

    @property
    def session_id(self) -> str | None:
        """The id of the dashboard's session in the current runtime."""
        session = self.holder.session
        return session.id if session is not None else None


def _shell(page: str) -> str:
    html = resources.files("kairox_ui").joinpath("static").joinpath("index.html").read_text(encoding="utf-8")
    title = TITLES[page]
    html = html.replace("<title>kairox</title>", f"<title>{title} - kairox</title>", 1)
    html = html.replace('<h1 id="title">kairox</h1>', f'<h1 id="title">{title}</h1>', 1)
    return html.replace('data-page=""', f'data-page="{page}"', 1)


def _json(handler: Handler, secrets: Callable[[], list[str]]) -> Callable[[Request], Awaitable[Response]]:
    """A handler's dict as JSON; a bad body is 400 naming the field, an :class:`ActionError` its status.

    An error's text is kairox's prose (a file, a field, what was expected) that may quote a
    config value: the config's secret values (``secrets()``) are masked wherever they occur,
    as the status API masks them; pattern redaction would garble the prose
    (``CLOCK_API_KEY: environment variable ...`` read as a key and its value)."""

    async def endpoint(request: Request) -> Response:
        try:
            data = await handler(request)
        except FormError as exc:
            return JSONResponse({"error": exc.message, "field": exc.field}, status_code=400)
        except ActionError as exc:
            return JSONResponse({"error": mask_secrets(str(exc), secrets())}, status_code=exc.status)
        except (KairoxError, OSError) as exc:  # a settings file that cannot be written, a runtime refusal
            logger.info("%s %s failed: %s", request.method, request.url.path, exc)
            return JSONResponse({"error": mask_secrets(str(exc), secrets())}, status_code=400)
        if isinstance(data, Response):
            return data
        return JSONResponse(data)

    return endpoint


async def _body(request: Request) -> dict[str, Any]:
    return parse_json_object(await request.body())


def _name(data: dict[str, Any]) -> str:
    name = data.get("name")
    if not isinstance(name, str) or not name or len(name) > 512:
        raise FormError("name", "is required (a tool name)")
    return name


def build_app(dash: Dashboard, *, token: str, host: str, port: int) -> Guard:
    """The ASGI app ``kairox ui`` serves."""
    holder, hub = dash.holder, dash.hub

    def reopening(result: Any) -> Any:
        """``result`` of a change the runtime is reopened for (what it loads changed)."""
        holder.reload()
        return result

    async def page(request: Request) -> Response:
        return HTMLResponse(_shell(PAGES[request.url.path]), headers={"cache-control": "no-store"})

    async def status(request: Request) -> Any:
        return status_view(holder)

    async def stream(request: Request) -> Response:
        async def events() -> Any:
            async with hub.client() as messages:
                yield f"event: status\ndata: {_dumps(status_view(holder))}\n\n"
                for question in dash.approvals.questions():
                    yield f"event: approval\ndata: {_dumps(question)}\n\n"
                while not dash.closed.is_set():
                    with anyio.move_on_after(KEEPALIVE) as idle:
                        name, text = await messages.receive()
                    if idle.cancelled_caught:
                        yield ": keep-alive\n\n"
                        continue
                    yield f"event: {name}\ndata: {text}\n\n"

        return StreamingResponse(
            events(), media_type="text/event-stream", headers={"cache-control": "no-store", "x-accel-buffering": "no"}
        )

    async def trace(request: Request) -> Any:
        return {"events": list(hub.recent), "dropped": hub.dropped}

    async def approvals(request: Request) -> Any:
        return {"questions": dash.approvals.questions()}

    async def answer(request: Request) -> Any:
        reply = parse_answer(await _body(request))
        if not dash.approvals.answer(request.path_params["id"], reply):
            raise ActionError("no such question (answered already, or timed out)", 404)
        return {"ok": True}

    async def server(request: Request) -> Any:
        kind = parse_server_action(await _body(request))
        result = await server_action(dash.rt, request.path_params["name"], request.path_params["action"], kind)
        holder.touch()
        return result

    async def trust(request: Request) -> Any:
        await _body(request)
        return reopening(trust_workspace(dash.rt))

    async def reload(request: Request) -> Any:
        await _body(request)
        holder.reload()
        return {"ok": True}

    async def skills(request: Request) -> Any:
        return skills_view(dash.rt, dash.session_id)

    async def skill(request: Request) -> Any:
        name = request.path_params["name"]
        found = next((s for s in all_skills(dash.rt, dash.session_id) if s.name == name), None)
        if found is None:
            raise ActionError(f"no skill named {name!r}", 404)
        return skill_view(dash.rt.skills, found, full=True, session_id=dash.session_id)

    async def skill_enabled(request: Request) -> Any:
        scope, enabled = parse_skill_toggle(await _body(request))
        result = set_skill_enabled(dash.rt, request.path_params["name"], scope, enabled, dash.session_id)
        holder.touch()
        return result

    async def skill_render(request: Request) -> Any:
        arguments = parse_skill_arguments(await _body(request))
        return render_skill(dash.rt, request.path_params["name"], arguments, dash.session_id)

    async def session_skill_add(request: Request) -> Any:
        return add_session_skill(dash.rt, holder.session, parse_session_skill(await _body(request)))

    async def session_skill_remove(request: Request) -> Any:
        await _body(request)
        return remove_session_skill(dash.rt, holder.session, request.path_params["name"])

    async def plugins(request: Request) -> Any:
        return plugins_view(dash.rt)

    async def plugin_enabled(request: Request) -> Any:
        scope, enabled, contribution = parse_plugin_toggle(await _body(request))
        return reopening(set_plugin_enabled(dash.rt, request.path_params["name"], scope, enabled, contribution))

    async def plugin_path(request: Request) -> Any:
        scope, path = parse_path_override(await _body(request))
        return reopening(override_path(dash.rt, request.path_params["name"], scope, path))

    async def plugin_config_get(request: Request) -> Any:
        return plugin_config(dash.rt, request.path_params["name"])

    async def plugin_config_set(request: Request) -> Any:
        values, unset = parse_plugin_config(await _body(request))
        return reopening(set_plugin_config(dash.rt, request.path_params["name"], values, unset))

    async def plugin_trust(request: Request) -> Any:
        await _body(request)
        return reopening({"message": trust_bundle(dash.rt, request.path_params["name"])})

    async def tools(request: Request) -> Any:
        return tools_view(dash.rt)

    async def tool_call(request: Request) -> Any:
        data = await _body(request)
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise FormError("name", "is required")
        spec = next((s for s in dash.rt.tools.specs() if name in (s.id, s.exported_name)), None)
        arguments = parse_tool_call(data, dict(spec.input_schema) if spec is not None else None)
        # the arguments as called: an MCP App of the tool gets them (ui/notifications/tool-input)
        return {**await call_tool(dash.rt, name, arguments, holder.session), "arguments": arguments}

    async def app_open(request: Request) -> Any:
        return await open_app(dash.rt, dash.apps, _name(await _body(request)))

    async def app_tool_call(request: Request) -> Any:
        data = await _body(request)
        arguments = data.get("arguments", {})
        if not isinstance(arguments, dict):
            raise FormError("arguments", "expected an object")
        name = _name(data)
        return await app_call(dash.rt, dash.apps, request.path_params["app"], name, arguments, holder.session)

    async def app_frame(request: Request) -> Response:
        frame = dash.apps.take_frame(request.path_params["ticket"])
        if frame is None:
            return Response("this app frame was loaded already or has expired\n", 404, headers=FRAME_GONE_HEADERS)
        headers = {
            "content-security-policy": frame.csp,
            "cache-control": "no-store",
            "x-content-type-options": "nosniff",
            "referrer-policy": "no-referrer",
        }
        return Response(frame.html, media_type="text/html; charset=utf-8", headers=headers)

    async def market_search(request: Request) -> Any:
        q = request.query_params.get("q", "")[:500]
        kind = request.query_params.get("kind") or None
        refresh = request.query_params.get("refresh") == "1"
        return await dash.market.search(q, kind, refresh=refresh)

    async def market_entry(request: Request) -> Any:
        return await dash.market.detail(request.query_params.get("key", ""))

    async def market_install(request: Request) -> Any:
        job = dash.market.start_install(parse_install(await _body(request)))
        return {"job": job}

    async def market_job(request: Request) -> Any:
        job = dash.market.jobs.get(request.path_params["job"])
        if job is None:
            raise ActionError("no such install job", 404)
        return {"job": job.job, "log": job.log}

    async def market_uninstall(request: Request) -> Any:
        name, scope = parse_uninstall(await _body(request))
        return await dash.market.uninstall(name, scope)

    def secrets() -> list[str]:
        return config_secrets(dash.rt)

    def _json_route(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        return _json(handler, secrets)

    static = resources.files("kairox_ui").joinpath("static")
    routes = [
        *[Route(path, page, methods=["GET"]) for path in PAGES],
        Route("/api/status", _json_route(status), methods=["GET"]),
        Route("/api/stream", stream, methods=["GET"]),
        Route("/api/events", _json_route(trace), methods=["GET"]),
        Route("/api/approvals", _json_route(approvals), methods=["GET"]),
        Route("/api/approvals/{id}", _json_route(answer), methods=["POST"]),
        Route("/api/servers/{name}/{action}", _json_route(server), methods=["POST"]),
        Route("/api/trust", _json_route(trust), methods=["POST"]),
        Route("/api/reload", _json_route(reload), methods=["POST"]),
        Route("/api/skills", _json_route(skills), methods=["GET"]),
        Route("/api/skills/{name:path}/enabled", _json_route(skill_enabled), methods=["POST"]),
        Route("/api/skills/{name:path}/render", _json_route(skill_render), methods=["POST"]),
        Route("/api/skills/{name:path}", _json_route(skill), methods=["GET"]),
        Route("/api/session/skills", _json_route(session_skill_add), methods=["POST"]),
        Route("/api/session/skills/{name:path}/remove", _json_route(session_skill_remove), methods=["POST"]),
        Route("/api/plugins", _json_route(plugins), methods=["GET"]),
        Route("/api/plugins/{name}/enabled", _json_route(plugin_enabled), methods=["POST"]),
        Route("/api/plugins/{name}/path", _json_route(plugin_path), methods=["POST"]),
        Route("/api/plugins/{name}/trust", _json_route(plugin_trust), methods=["POST"]),
        Route("/api/plugins/{name}/config", _json_route(plugin_config_get), methods=["GET"]),
        Route("/api/plugins/{name}/config", _json_route(plugin_config_set), methods=["POST"]),
        Route("/api/tools", _json_route(tools), methods=["GET"]),
        Route("/api/tools/call", _json_route(tool_call), methods=["POST"]),
        Route("/api/apps/open", _json_route(app_open), methods=["POST"]),
        Route("/api/apps/{app}/call", _json_route(app_tool_call), methods=["POST"]),
        Route(FRAME_PREFIX + "{ticket}", app_frame, methods=["GET"]),
        Route("/api/marketplace/search", _json_route(market_search), methods=["GET"]),
        Route("/api/marketplace/entry", _json_route(market_entry), methods=["GET"]),
        Route("/api/marketplace/install", _json_route(market_install), methods=["POST"]),
        Route("/api/marketplace/jobs/{job}", _json_route(market_job), methods=["GET"]),
        Route("/api/marketplace/uninstall", _json_route(market_uninstall), methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=str(static)), name="static"),
    ]
    app = Starlette(routes=routes)
    return Guard(_with_headers(app), token=token, host=host, port=port, pages=PAGES)


def _dumps(data: Any) -> str:
    import json

    return json.dumps(data, ensure_ascii=False, default=str)


def _with_headers(app: Any) -> Any:
    """Every response gets the security headers (a strict CSP: only the dashboard's own files),
    except an MCP App's frame, which carries the app's own (:mod:`kairox_ui.apps`)."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and scope.get("path", "").startswith(FRAME_PREFIX):
            await app(scope, receive, send)
            return

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        await app(scope, receive, sending)

    return wrapped
