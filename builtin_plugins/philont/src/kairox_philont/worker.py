"""Plugins that run in a host process: ``sandbox: "worker"`` (Python or JavaScript) and
``direct`` JavaScript plugins (in the one shared Node process).

A worker's environment holds only the plugin's ``requiresEnv`` variables plus a
minimal base (``PATH``, locale, temp dir), so a plugin never sees the agent's
other secrets. Each host runs in its own process group, supervised
(:class:`~kairox_philont.supervisor.HostProcess`): its stderr goes to a bounded
buffer (never the terminal); if it dies, the calls waiting on it fail at once with
the exit status and the stderr tail, and it is restarted with backoff.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kairox import ToolContext, ToolError, ToolResult, ToolSpec

from .adapt import PluginTool, activation_of, bounded_stack, hook_answer, hook_payload, result_from
from .config import philont_config
from .context import HOOK_EVENTS
from .direct import module_name_for
from .protocol import MAX_LINE
from .supervisor import HostProcess, Limits

if TYPE_CHECKING:
    from kairox import Runtime
    from kairox_manifests import Activation, ActivationContext, BundleManifest

__all__ = [
    "BASE_ENV",
    "HostTool",
    "activate_hosted",
    "activate_worker",
    "limits_for",
    "plugin_spec",
    "worker_env",
]

logger = logging.getLogger(__name__)

#: variables a worker inherits besides its plugin's requiresEnv
BASE_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT")


def worker_env(
    parent: Mapping[str, str], requires: tuple[str, ...], root: Path, *, python: bool = True
) -> dict[str, str]:
    env = {k: parent[k] for k in BASE_ENV if k in parent}
    env.update({k: parent[k] for k in requires if k in parent})
    env["KAIROX_PLUGIN_ROOT"] = str(root)
    if python:
        env["PYTHONUNBUFFERED"] = "1"
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        # the host module must be importable whatever PYTHONPATH the agent had
        env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    return env


def limits_for(runtime: Runtime) -> Limits:
    config = philont_config(runtime.config)
    return Limits(
        startup_timeout=config.startup_timeout,
        max_restarts=config.max_restarts,
        restart_backoff=config.restart_backoff,
        max_line=MAX_LINE,
    )


async def start_host(
    name: str, kind: str, command: Sequence[str], env: dict[str, str], cwd: Path, runtime: Runtime
) -> HostProcess:
    """A :class:`HostProcess` running ``command`` (followed by the host's settings: its line
    limit) under the runtime's limits, started; closed again when the start fails."""
    limits = limits_for(runtime)
    host = HostProcess(name, kind, [*command, json.dumps({"max_line": limits.max_line})], env, cwd, runtime, limits)
    try:
        await host.start()
    except BaseException:
        await host.close()
        raise
    return host


def plugin_spec(manifest: BundleManifest, env: Mapping[str, str]) -> dict[str, Any]:
    """The ``load`` request's ``plugin``: what a host needs to run the plugin's ``register(ctx)``."""
    code = manifest.code
    assert code is not None
    return {
        "id": code.tool_prefix,
        "root": str(manifest.root),
        "main": str(code.main),
        "module": module_name_for(code.tool_prefix, code.main),
        "name": str(manifest.metadata.get("displayName") or manifest.name),
        "version": manifest.version or "",
        "env": {name: env[name] for name in code.requires_env if name in env},
    }


class HostTool(PluginTool):
    """A tool whose handler runs in a host process."""

    def __init__(self, spec: ToolSpec, host: HostProcess, plugin: str, name: str) -> None:
        super().__init__(spec)
        self._host = host
        self._plugin = plugin
        self._name = name

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        arguments = json.loads(json.dumps(self.checked_arguments(arguments, context), default=str))  # as policy checked
        answer = await self._host.request(self._plugin, {"op": "tool", "name": self._name, "arguments": arguments})
        if "error" in answer:
            raise ToolError(f"{self._spec.id}: {answer['error']}")
        result = answer.get("result")
        return result_from(result if isinstance(result, dict) else {})


def _host_hook(host: HostProcess, plugin: str, event: str, index: int) -> Callable[..., Awaitable[Any]]:
    async def hook(**kwargs: Any) -> Any:
        answer = await host.request(plugin, {"op": "hook", "index": index, "payload": hook_payload(event, kwargs)})
        if "error" in answer:
            stack = bounded_stack(answer.get("stack"))
            raise RuntimeError(str(answer["error"]) + (f"\n{stack}" if stack else ""))
        return hook_answer(event, answer.get("value"))

    return hook


async def activate_hosted(
    manifest: BundleManifest,
    context: ActivationContext,
    host: HostProcess,
    *,
    close: Callable[[], Awaitable[None]],
    status_name: str,
) -> Activation:
    """Load the plugin into ``host`` (running) and return its tools and hooks; ``close``
    undoes it. A failed ``register(ctx)`` raises with the plugin's stack (and calls ``close``)."""
    code = manifest.code
    assert code is not None
    plugin = code.tool_prefix
    try:
        ready = await host.load(plugin, plugin_spec(manifest, context.runtime.env))
    except BaseException:
        await close()
        raise
    tools = [
        (described, functools.partial(HostTool, host=host, plugin=plugin, name=described["name"]))
        for described in ready.get("tools", [])
        if isinstance(described, dict) and isinstance(described.get("name"), str)
    ]
    hooks = [
        (philont_event, functools.partial(_host_hook, host, plugin, index=index))
        for index, philont_event in enumerate(ready.get("hooks", []))
        if philont_event in HOOK_EVENTS
    ]
    return activation_of(
        context, plugin, tools, hooks, close=close, status=lambda: [host.status(plugin, name=status_name)]
    )


async def activate_worker(manifest: BundleManifest, context: ActivationContext) -> Activation:
    """A Python ``sandbox: "worker"`` plugin: its own ``python -m kairox_philont._worker_host``."""
    code = manifest.code
    assert code is not None
    runtime = context.runtime
    host = await start_host(
        f"{code.tool_prefix} (worker)",
        "philont-worker",
        [sys.executable, "-m", "kairox_philont._worker_host"],
        worker_env(runtime.env, code.requires_env, manifest.root),
        manifest.root,
        runtime,
    )
    return await activate_hosted(manifest, context, host, close=host.close, status_name=host.name)
