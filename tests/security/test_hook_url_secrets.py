"""An ``http`` hook's URL in its failure: a secret query value or password in it is redacted.

The attack on the user's own plugin: its hook URL carries a token (``?access_token=``, a
password), the endpoint is down, and the failure goes to the event bus and the logs.
"""

from __future__ import annotations

import json
import socket

import anyio
from security_helpers import Clone

from kairox_manifests.events import BundleHookFailed
from kairox_testing import InMemoryToolProvider

TOKEN = "tok-hook-4d2a9c71-leak"
PASSWORD = "pw-hook-8b1e03f5-leak"


def test_an_http_hooks_failure_names_its_url_without_its_secrets(clone: Clone) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://alice:{PASSWORD}@127.0.0.1:{port}/hook?access_token={TOKEN}"
    root = clone.home / "plugins" / "webguard"
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "webguard"}))
    (root / "hooks").mkdir()
    hooks = {"hooks": {"PreToolUse": [{"matcher": "memory\\..*", "hooks": [{"type": "http", "url": url}]}]}}
    (root / "hooks" / "hooks.json").write_text(json.dumps(hooks))
    provider = InMemoryToolProvider("memory")
    provider.add_function(lambda: "ran", "memory.run", domain="local", capability="read")
    failed: list[BundleHookFailed] = []

    async def call() -> str:
        async with clone.harness.open(plugins=[provider.plugin()], load_entrypoints=True) as rt:
            rt.events.subscribe(failed.append, BundleHookFailed)
            return (await rt.call_tool("memory.run", {})).text or ""

    assert anyio.run(call) == "ran"  # a failing hook that is not a guard: the call goes on
    (event,) = failed
    assert f"127.0.0.1:{port}/hook" in event.error, event.error
    assert TOKEN not in repr(event) and PASSWORD not in repr(event)
