"""``Runtime.open`` as a host reads it: every keyword in its signature (no ``**kwargs`` to
guess at), config given as data, and the start-up observable through ``on_event``."""

from __future__ import annotations

import inspect

import pytest

from kairox import Event, ProviderReady, ProviderStarting, Runtime
from kairox_testing import InMemoryToolProvider, KairoxHarness

pytestmark = pytest.mark.anyio


def test_every_keyword_is_in_the_signature() -> None:
    parameters = inspect.signature(Runtime.open).parameters
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    assert {"trusted", "config_documents", "approver", "home", "env", "on_event"} <= set(parameters)
    for name in ("trusted", "config_documents", "approver", "home", "env", "on_event", "config_files"):
        assert f"``{name}``" in (Runtime.open.__doc__ or ""), name  # each is documented


async def test_start_up_events_reach_on_event(kairox_harness: KairoxHarness) -> None:
    seen: list[Event] = []
    provider = InMemoryToolProvider("memory")
    async with kairox_harness.open(plugins=[provider.plugin()], on_event=seen.append) as rt:
        assert rt.status().providers
    kinds = [(type(e).__name__, getattr(e, "provider", "")) for e in seen]
    assert ("ProviderStarting", "memory") in kinds and ("ProviderReady", "memory") in kinds
    assert kinds.index(("ProviderStarting", "memory")) < kinds.index(("ProviderReady", "memory"))
    assert any(isinstance(e, ProviderReady) for e in seen) and any(isinstance(e, ProviderStarting) for e in seen)


async def test_config_documents_are_user_config_given_as_data(kairox_harness: KairoxHarness) -> None:
    table = {"policy": {"rules": {"memory.*": "deny"}}}
    async with kairox_harness.open(config_documents=[("embedded: host.toml", table)]) as rt:
        assert rt.config.section("policy").rules == {"memory.*": "deny"}
        assert rt.config.source_of("policy", "rules") == "embedded: host.toml"
    table["policy"]["rules"]["x"] = "allow"  # the runtime kept its own copy
