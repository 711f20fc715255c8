"""JavaScript Philont plugins: run unchanged by Node (``js/host.mjs``, shipped with this package).

``sandbox: "worker"`` plugins get a Node process each, with the environment
filtered to ``requiresEnv``; ``direct`` ones share one Node process per runtime
(started with the first of them, closed with the last), which sees the agent's
environment as a direct Python plugin does.
"""

from __future__ import annotations

import shutil
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from .config import philont_config
from .supervisor import HostProcess
from .worker import activate_hosted, start_host, worker_env

if TYPE_CHECKING:
    from kairox import Runtime
    from kairox_manifests import Activation, ActivationContext, BundleManifest

__all__ = ["HOST_SCRIPT", "JS_SUFFIXES", "activate_javascript", "find_node"]

HOST_SCRIPT = Path(__file__).resolve().parent / "js" / "host.mjs"
JS_SUFFIXES = (".js", ".mjs", ".cjs")


def find_node(runtime: Runtime) -> str:
    """The ``node`` to run (``[philont] node``, looked up on the runtime's ``PATH``)."""
    command = philont_config(runtime.config).node
    found = shutil.which(command, path=runtime.env.get("PATH"))
    if found is None:
        raise RuntimeError(
            f"JavaScript plugins need Node.js: {command!r} was not found on PATH "
            '(install node, or set [philont] node = "/path/to/node")'
        )
    return found


class _Shared:
    """The shared Node process of one runtime and the plugins loaded into it."""

    def __init__(self) -> None:
        self.lock = anyio.Lock()
        self.host: HostProcess | None = None
        self.users: set[str] = set()


_shared: weakref.WeakKeyDictionary[Runtime, _Shared] = weakref.WeakKeyDictionary()


async def _shared_host(runtime: Runtime, node: str, plugin: str) -> tuple[HostProcess, _Shared]:
    shared = _shared.setdefault(runtime, _Shared())
    async with shared.lock:
        if shared.host is None or shared.host.done:
            shared.host = await start_host(
                "node (direct JavaScript plugins)",
                "philont-node",
                [node, str(HOST_SCRIPT)],
                dict(runtime.env),
                runtime.workspace,
                runtime,
            )
        shared.users.add(plugin)
        return shared.host, shared


async def activate_javascript(manifest: BundleManifest, context: ActivationContext) -> Activation:
    code = manifest.code
    assert code is not None
    runtime = context.runtime
    node = find_node(runtime)
    plugin = code.tool_prefix
    if code.sandbox == "worker":
        host = await start_host(
            f"{plugin} (worker)",
            "philont-worker",
            [node, str(HOST_SCRIPT)],
            worker_env(runtime.env, code.requires_env, manifest.root, python=False),
            manifest.root,
            runtime,
        )
        return await activate_hosted(manifest, context, host, close=host.close, status_name=host.name)

    shared_host, shared = await _shared_host(runtime, node, plugin)

    async def close() -> None:
        with anyio.CancelScope(shield=True):
            async with shared.lock:
                shared.users.discard(plugin)
                await shared_host.unload(plugin)
                if not shared.users and shared.host is shared_host:
                    shared.host = None
                    await shared_host.close()

    return await activate_hosted(manifest, context, shared_host, close=close, status_name=f"{plugin} (node)")
