"""The ``ctx`` a Philont plugin's ``register(ctx)`` receives.

Standard library only: the worker host imports it in a process whose
environment holds nothing but the plugin's ``requiresEnv``.

    def register(ctx):
        @ctx.register_tool("forecast", description="Weather for a city",
                           parameters={"type": "object", "properties": {"city": {"type": "string"}}})
        def forecast(args):
            return f"sunny in {args['city']}"

        ctx.register_hook("pre_tool_call", lambda payload: None)

Philont's camelCase names work too: ``ctx.registerTool({"name": ..., "description": ...,
"parameters": ..., "execute": fn})`` and ``ctx.registerHook(event, fn)``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["HOOK_EVENTS", "PhilontContext", "RegisteredTool", "load_main", "schema_of"]

#: Philont hook names -> kairox lifecycle events
HOOK_EVENTS = {
    "pre_tool_call": "pre_tool_call",
    "post_tool_call": "post_tool_call",
    "on_session_start": "session_start",
    "on_session_end": "session_end",
}
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
_DOMAINS = ("local", "network", "system")
_CAPABILITIES = ("read", "write", "execute")


@dataclasses.dataclass(eq=False)
class RegisteredTool:
    """A tool ``register(ctx)`` registered: its handler and how it is described to kairox."""

    name: str
    handler: Callable[..., Any]
    description: str
    parameters: dict[str, Any]
    domain: str | None
    capability: str | None

    def describe(self) -> dict[str, Any]:
        """Everything but the handler, as the worker host sends it."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "handler"}


def schema_of(value: Any) -> dict[str, Any]:
    """A tool's parameters as a top-level object schema (Philont's normalisation)."""
    if not isinstance(value, dict) or not value:
        return {"type": "object", "properties": {}}
    if value.get("type") == "object" or "properties" in value:
        return {"type": "object", **value}
    return {"type": "object", "properties": value}


class PhilontContext:
    """What ``register(ctx)`` may call. Tools and hooks are collected, not registered
    directly: kairox decides (settings, permissions) what reaches the runtime."""

    def __init__(
        self,
        plugin_id: str,
        plugin_dir: Path,
        env: Mapping[str, str],
        *,
        name: str = "",
        version: str = "",
        logger: logging.Logger | None = None,
    ) -> None:
        self.id = plugin_id
        self.name = name or plugin_id
        self.version = version
        self.plugin_dir = plugin_dir
        #: the values of the plugin's ``requiresEnv`` variables
        self.env = dict(env)
        self.log = logger or logging.getLogger(f"kairox_philont.plugin.{plugin_id}")
        self.tools: dict[str, RegisteredTool] = {}
        self.hooks: list[tuple[str, Callable[..., Any]]] = []

    def register_tool(
        self,
        name: str | Mapping[str, Any],
        handler: Callable[..., Any] | None = None,
        *,
        description: str = "",
        parameters: dict[str, Any] | None = None,
        domain: str | None = None,
        capability: str | None = None,
    ) -> Any:
        """Register a tool (``<plugin id>.<name>`` in kairox). Usable as a decorator."""
        if isinstance(name, Mapping):
            spec = dict(name)
            handler = spec.get("execute") or spec.get("handler") or handler
            return self.register_tool(
                str(spec.get("name", "")),
                handler,
                description=str(spec.get("description", "")),
                parameters=spec.get("parameters") or spec.get("inputSchema") or spec.get("input_schema"),
                domain=spec.get("domain"),
                capability=spec.get("capability"),
            )
        if handler is None:

            def decorator(fn: Callable[..., Any]) -> Callable[..., Any]:
                self.register_tool(
                    name, fn, description=description, parameters=parameters, domain=domain, capability=capability
                )
                return fn

            return decorator
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise ValueError(f"tool name {name!r} must be 1-64 characters of A-Z a-z 0-9 _ -")
        if name in self.tools:
            raise ValueError(f"tool {name!r} is registered twice")
        if not callable(handler):
            raise TypeError(f"the handler of tool {name!r} is not callable")
        if domain is not None and domain not in _DOMAINS:
            raise ValueError(f"tool {name!r}: domain must be one of {', '.join(_DOMAINS)}")
        if capability is not None and capability not in _CAPABILITIES:
            raise ValueError(f"tool {name!r}: capability must be one of {', '.join(_CAPABILITIES)}")
        self.tools[name] = RegisteredTool(
            name, handler, description or (handler.__doc__ or "").strip(), schema_of(parameters), domain, capability
        )
        return handler

    def register_hook(self, event: str, handler: Callable[..., Any]) -> None:
        if event not in HOOK_EVENTS:
            raise ValueError(f"unknown hook {event!r}; expected one of {', '.join(HOOK_EVENTS)}")
        if not callable(handler):
            raise TypeError(f"the {event} hook is not callable")
        self.hooks.append((event, handler))

    # Philont's spelling
    registerTool = register_tool
    registerHook = register_hook


def load_main(main: Path, module_name: str) -> ModuleType:
    """Import the plugin's entry file (a ``.py`` file or a package's ``__init__.py``)."""
    is_package = main.name == "__init__.py"
    spec = importlib.util.spec_from_file_location(
        module_name, main, submodule_search_locations=[str(main.parent)] if is_package else None
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {main}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module
