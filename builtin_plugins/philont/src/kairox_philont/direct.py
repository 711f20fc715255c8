"""``sandbox: "direct"``: the plugin runs in this process."""

from __future__ import annotations

import functools
import hashlib
import inspect
import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from kairox import ToolContext, ToolResult, ToolSpec

from .adapt import PluginTool, activation_of, hook_answer, hook_payload, result_from, result_to_wire
from .context import PhilontContext, load_main

if TYPE_CHECKING:
    from kairox_manifests import Activation, ActivationContext, BundleManifest

__all__ = ["DirectTool", "activate_direct", "module_name_for"]

logger = logging.getLogger(__name__)


def module_name_for(plugin_id: str, main: Any) -> str:
    digest = hashlib.sha256(str(main).encode()).hexdigest()[:10]
    safe = "".join(ch if ch.isalnum() else "_" for ch in plugin_id)
    return f"kairox_philont_plugins.{safe}_{digest}"


async def _call(fn: Callable[..., Any], arg: Any) -> Any:
    if inspect.iscoroutinefunction(fn):
        return await fn(arg)
    value = await anyio.to_thread.run_sync(fn, arg)
    if inspect.isawaitable(value):
        value = await value
    return value


class DirectTool(PluginTool):
    """A tool whose handler runs in this process (sync handlers in a worker thread)."""

    def __init__(self, spec: ToolSpec, handler: Callable[..., Any]) -> None:
        super().__init__(spec)
        self._handler = handler

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        try:
            value = await _call(self._handler, self.checked_arguments(arguments, context))
        except Exception as exc:  # the plugin's error is the tool's error result
            return ToolResult.from_text(f"{type(exc).__name__}: {exc}", is_error=True)
        return result_from(result_to_wire(value))


def _hook(event: str, handler: Callable[..., Any]) -> Callable[..., Any]:
    async def hook(**kwargs: Any) -> Any:
        return hook_answer(event, await _call(handler, hook_payload(event, kwargs)))

    return hook


async def activate_direct(manifest: BundleManifest, context: ActivationContext) -> Activation:
    code = manifest.code
    assert code is not None
    runtime = context.runtime
    env = {name: runtime.env[name] for name in code.requires_env if name in runtime.env}
    ctx = PhilontContext(
        code.tool_prefix,
        manifest.root,
        env,
        name=str(manifest.metadata.get("displayName") or manifest.name),
        version=manifest.version or "",
    )
    module_name = module_name_for(code.tool_prefix, code.main)

    def load() -> Any:
        module = load_main(code.main, module_name)
        register = getattr(module, "register", None)
        if not callable(register):
            raise TypeError(f"{code.main.name} has no register(ctx) function")
        return register

    register = await anyio.to_thread.run_sync(load)
    try:
        result = register(ctx)
        if inspect.isawaitable(result):
            await result
    except BaseException:
        sys.modules.pop(module_name, None)
        raise

    async def close() -> None:
        sys.modules.pop(module_name, None)

    return activation_of(
        context,
        code.tool_prefix,
        [(tool.describe(), functools.partial(DirectTool, handler=tool.handler)) for tool in ctx.tools.values()],
        [(philont_event, functools.partial(_hook, handler=handler)) for philont_event, handler in ctx.hooks],
        close=close,
    )
