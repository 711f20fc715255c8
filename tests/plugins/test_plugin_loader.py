"""The plugins provider: discovery priorities, isolation, trust, settings, compatibility, permissions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from plugin_helpers import write_plugin

from kairox import Allow, ApprovalAnswer, Ask, Deny, PolicyDenied, ServerState
from kairox.ext import TrustStore
from kairox_manifests.events import BundleLoaded, BundleNotLoaded
from kairox_manifests.install import read_bundle
from kairox_manifests.loader import BundleLoader, loader_of
from kairox_manifests.settings import SettingsStore
from kairox_manifests.trust import bundle_item
from kairox_testing import Approvals, EventLog, KairoxHarness

pytestmark = pytest.mark.anyio

GUARD = "import json, sys\np = json.load(sys.stdin)\nif p['arguments'].get('x') == 'no':\n    print(json.dumps({'decision': 'block', 'reason': 'said no'}))\n"


def user_dir(h: KairoxHarness) -> Path:
    return h.home / "plugins"


def ws_dir(h: KairoxHarness) -> Path:
    return h.workspace / ".kairox" / "plugins"


def settings(h: KairoxHarness) -> SettingsStore:
    return SettingsStore(h.workspace, h.env)


def guard_plugin(root: Path, name: str = "guard") -> Path:
    """A plugin whose ``pre_tool_call`` hook script blocks a call with ``x == "no"``."""
    hooks = [{"event": "pre_tool_call", "script": "./g.py"}]
    return write_plugin(root, {".kairox-plugin/plugin.json": {"name": name, "hooks": hooks}, "g.py": GUARD})


def philont_plugin(root: Path, plugin_id: str, body: str, **manifest: Any) -> Path:
    return write_plugin(root, {"plugin.json": {"id": plugin_id, "main": "main.py", **manifest}, "main.py": body})


TOOLS = """
def register(ctx):
    ctx.register_tool("echo", lambda a: a.get("x", ""), description="echo", domain="local", capability="read")
    ctx.register_tool("save", lambda a: "saved", description="write", domain="local", capability="write")
"""


def loader(rt: Any) -> BundleLoader:
    found = loader_of(rt)
    assert found is not None
    return found


def states(rt: Any) -> dict[str, tuple[str, str]]:
    return {v.name + "@" + v.scope: (v.state, v.reason) for v in loader(rt).views()}


async def test_one_broken_plugin_never_affects_the_others(kairox_harness: KairoxHarness) -> None:
    write_plugin(user_dir(kairox_harness) / "bad", {".kairox-plugin/plugin.json": {"name": "bad", "hooks": 3}})
    philont_plugin(user_dir(kairox_harness) / "crashy", "crashy", "def register(ctx):\n    raise RuntimeError('no')\n")
    philont_plugin(user_dir(kairox_harness) / "good", "good", TOOLS)
    async with kairox_harness.open() as rt:
        st = states(rt)
        assert st["good@user"] == ("loaded", "")
        assert st["bad@user"][0] == "failed" and "hooks: expected a list" in st["bad@user"][1]
        assert st["crashy@user"] == ("failed", "RuntimeError: no")
        assert "good.echo" in rt.tools and not any(t.id.startswith("crashy.") for t in rt.tools.specs())
        servers = {s.name: s for s in rt.status().servers if s.kind == "plugin"}
        assert servers["bad"].state is ServerState.FAILED and servers["good"].state is ServerState.READY
        assert not rt.status().ok
        assert (await rt.call_tool("good.echo", {"x": "hi"})).text == "hi"


async def test_workspace_plugin_shadows_a_user_plugin_of_the_same_name(kairox_harness: KairoxHarness) -> None:
    write_plugin(
        user_dir(kairox_harness) / "same", {".claude-plugin/plugin.json": {"name": "same", "version": "1.0.0"}}
    )
    ws = write_plugin(
        ws_dir(kairox_harness) / "same", {".kairox-plugin/plugin.json": {"name": "same", "version": "2.0.0"}}
    )
    # untrusted, the workspace copy never shadows the user's: the user's loads, the copy is ignored
    async with kairox_harness.open() as rt:
        views = {v.scope: v for v in loader(rt).views()}
    assert views["user"].state == "loaded" and views["user"].version == "1.0.0"
    assert views["workspace"].state == "shadowed"
    assert views["workspace"].reason.startswith("ignored: an untrusted copy; the trusted same from ")
    # trusted, it wins (priority 100 over 50)
    kairox_harness.trust()
    async with kairox_harness.open() as rt:
        views = {v.scope: v for v in loader(rt).views()}
    assert views["workspace"].state == "loaded" and views["workspace"].version == "2.0.0"
    assert views["user"].state == "shadowed" and str(ws) in views["user"].reason


def repo_hooks(h: KairoxHarness) -> Path:
    return guard_plugin(ws_dir(h) / "repo-hooks", "repo-hooks")


async def test_untrusted_workspace_plugin_is_not_loaded_and_the_approver_is_not_asked(
    kairox_harness: KairoxHarness,
) -> None:
    repo_hooks(kairox_harness)
    approvals = Approvals(ApprovalAnswer.ALLOW_ONCE)  # trust is not an approval: a yes here loads nothing
    async with kairox_harness.open(approver=approvals) as rt:
        state, reason = states(rt)["repo-hooks@workspace"]
        assert len(rt.hooks) == 0
    assert state == "untrusted" and approvals.requests == []
    assert reason.startswith("workspace plugin repo-hooks is untrusted: run `kairox trust ")
    assert reason.endswith("to trust the workspace")


async def test_untrusted_workspace_plugin_loads_once_trusted_and_not_after_a_change(
    kairox_harness: KairoxHarness,
) -> None:
    root = repo_hooks(kairox_harness)
    store = TrustStore(kairox_harness.home)

    async def trust_bundle() -> None:  # what `kairox plugin trust repo-hooks` records (see test_plugin_cli.py)
        async with kairox_harness.open(start=False) as rt:
            item = bundle_item(read_bundle(rt, root), rt.workspace)
        assert item.key == "bundle:.kairox/plugins/repo-hooks"
        store.trust(kairox_harness.workspace, [item], replace=False)

    await trust_bundle()
    approvals = Approvals(ApprovalAnswer.DENY)
    async with kairox_harness.open(approver=approvals) as rt:
        assert states(rt)["repo-hooks@workspace"] == ("loaded", "")
        assert len(rt.hooks.for_event("pre_tool_call")) == 1
    assert approvals.requests == []  # no plugins.load prompt any more
    # a change to its files needs trust again (the fingerprint covers every file)
    (root / "g.py").write_text(GUARD + "# changed\n")
    async with kairox_harness.open() as rt:
        state, reason = states(rt)["repo-hooks@workspace"]
        assert len(rt.hooks) == 0
    assert state == "untrusted" and "changed since trusted: run `kairox trust " in reason
    assert reason.endswith("to trust the workspace again")
    await trust_bundle()
    async with kairox_harness.open() as rt:
        assert states(rt)["repo-hooks@workspace"] == ("loaded", "")
    assert store.revoke(kairox_harness.workspace, ["bundle:.kairox/plugins/repo-hooks"])
    async with kairox_harness.open() as rt:
        assert states(rt)["repo-hooks@workspace"][0] == "untrusted"


async def test_workspace_trust_setting_counts_only_from_the_user_config(kairox_harness: KairoxHarness) -> None:
    write_plugin(ws_dir(kairox_harness) / "w", {".kairox-plugin/plugin.json": {"name": "w"}})
    kairox_harness.write_config('[plugins]\nworkspace_trust = "trust"\n', where="workspace")
    async with kairox_harness.open() as rt:
        assert states(rt)["w@workspace"][0] == "untrusted"
    (kairox_harness.workspace / "kairox.toml").unlink()
    kairox_harness.write_config('[plugins]\nworkspace_trust = "trust"\n', where="user")
    async with kairox_harness.open() as rt:
        assert states(rt)["w@workspace"][0] == "loaded"


async def test_workspace_trust_deny_does_not_ask(kairox_harness: KairoxHarness) -> None:
    write_plugin(ws_dir(kairox_harness) / "w", {".kairox-plugin/plugin.json": {"name": "w"}})
    kairox_harness.write_config('[plugins]\nworkspace_trust = "deny"\n', where="user")
    approvals = Approvals(True)
    async with kairox_harness.open(approver=approvals) as rt:
        state, reason = states(rt)["w@workspace"]
    assert state == "untrusted" and "deny" in reason and approvals.requests == []


async def test_disabled_plugins_and_contributions_do_not_load(kairox_harness: KairoxHarness) -> None:
    hooks = [
        {"event": "pre_tool_call", "script": "./g.py"},
        {"event": "pre_turn", "script": "./ctx.sh"},
    ]
    write_plugin(
        user_dir(kairox_harness) / "two-hooks",
        {".kairox-plugin/plugin.json": {"name": "two-hooks", "hooks": hooks}, "g.py": GUARD, "ctx.sh": "echo hi"},
    )
    write_plugin(
        user_dir(kairox_harness) / "off",
        {".kairox-plugin/plugin.json": {"name": "off", "hooks": hooks[:1]}, "g.py": GUARD},
    )
    write_plugin(
        user_dir(kairox_harness) / "lazy", {".claude-plugin/plugin.json": {"name": "lazy", "defaultEnabled": False}}
    )
    settings(kairox_harness).set_enabled("user", "off", False)
    settings(kairox_harness).set_enabled("user", "two-hooks", False, "hook/pre_tool_call.g")
    async with kairox_harness.open() as rt:
        st = states(rt)
        assert st["off@user"][0] == "disabled"
        assert st["lazy@user"][0] == "disabled" and "defaultEnabled" in st["lazy@user"][1]
        assert st["two-hooks@user"][0] == "loaded"
        assert [h.source for h in rt.hooks.for_event("pre_turn")] == ["plugin:two-hooks"]
        assert rt.hooks.for_event("pre_tool_call") == []
        view = next(v for v in loader(rt).views() if v.name == "two-hooks")
        flags = {(i.kind, i.name): (i.enabled, i.loaded) for i in view.inventory}
        assert flags == {("hook", "pre_tool_call.g"): (False, False), ("hook", "pre_turn.ctx"): (True, True)}
    kairox_harness.write_config('[plugins]\ndisabled = ["two-hooks:pre_turn.ctx"]\n', where="user")
    settings(kairox_harness).set_enabled("user", "lazy", True)
    async with kairox_harness.open() as rt:
        assert rt.hooks.for_event("pre_turn") == []
        assert states(rt)["lazy@user"][0] == "loaded"


async def test_incompatible_plugin_says_why(kairox_harness: KairoxHarness) -> None:
    write_plugin(
        user_dir(kairox_harness) / "needs",
        {
            ".kairox-plugin/plugin.json": {
                "name": "needs",
                "compatibility": {"requires": ["definitely-not-installed-tool"], "kairoxVersion": ">=99"},
            }
        },
    )
    async with kairox_harness.open() as rt:
        state, reason = states(rt)["needs@user"]
    assert state == "incompatible"
    assert "needs kairox >=99" in reason and "definitely-not-installed-tool, which is not on PATH" in reason


async def test_events_for_loaded_and_not_loaded(kairox_harness: KairoxHarness) -> None:
    philont_plugin(user_dir(kairox_harness) / "good", "good", TOOLS)
    write_plugin(
        user_dir(kairox_harness) / "off", {".claude-plugin/plugin.json": {"name": "off", "defaultEnabled": False}}
    )
    log = EventLog()
    async with kairox_harness.open(plugins=[_event_recorder(log)]):
        pass
    [loaded] = log.of(BundleLoaded)
    assert loaded.plugin == "good" and set(loaded.contributions) == {"tool/echo", "tool/save"}
    [not_loaded] = log.of(BundleNotLoaded)
    assert (not_loaded.plugin, not_loaded.state) == ("off", "disabled")


def _event_recorder(log: EventLog) -> object:
    from kairox_testing import make_plugin

    return make_plugin("recorder", kairox_event=lambda event: log.events.append(event))


async def test_permissions_narrow_the_policy_for_plugin_tools(kairox_harness: KairoxHarness) -> None:
    philont_plugin(
        user_dir(kairox_harness) / "narrow",
        "narrow",
        TOOLS,
        permissions={"sandboxPolicy": "read_only", "tools": ["narrow.echo", "narrow.save"]},
    )
    philont_plugin(user_dir(kairox_harness) / "listed", "listed", TOOLS, permissions={"tools": ["listed.echo"]})
    async with kairox_harness.open() as rt:
        save = rt.tools.get_spec("narrow.save")
        assert save.permissions is not None and save.permissions.sandbox is not None
        assert isinstance(rt.policy.decide(rt.tools.get_spec("narrow.echo"), {}), Allow)
        assert isinstance(rt.policy.decide(save, {"path": "in-workspace.txt"}), Ask)
        assert isinstance(rt.policy.decide(rt.tools.get_spec("listed.save"), {}), Deny)
        with pytest.raises(PolicyDenied):
            await rt.call_tool("listed.save", {})
        with pytest.raises(PolicyDenied, match="approval"):
            await rt.call_tool("narrow.save", {"path": "x.txt"})


async def test_hook_scripts_fire_through_the_runtime(kairox_harness: KairoxHarness) -> None:
    guard_plugin(user_dir(kairox_harness) / "guard")
    philont_plugin(user_dir(kairox_harness) / "good", "good", TOOLS)
    async with kairox_harness.open() as rt:
        assert (await rt.call_tool("good.echo", {"x": "yes"})).text == "yes"
        with pytest.raises(PolicyDenied, match="said no"):
            await rt.call_tool("good.echo", {"x": "no"})


async def test_configured_paths_and_settings_override(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    collection = tmp_path / "collection"
    write_plugin(collection / "a", {".claude-plugin/plugin.json": {"name": "a"}})
    write_plugin(collection / "b", {".codex-plugin/plugin.json": {"name": "b"}})
    single = write_plugin(tmp_path / "single", {".kairox-plugin/plugin.json": {"name": "single"}})
    dev = write_plugin(tmp_path / "dev-checkout", {".kairox-plugin/plugin.json": {"name": "a", "version": "9.9.9"}})
    kairox_harness.write_config(f'[plugins]\npaths = ["{collection}", "{single}"]\n', where="user")
    settings(kairox_harness).update("user", lambda d: d["plugins"].setdefault("a", {}).update(path=str(dev)))
    async with kairox_harness.open() as rt:
        views = loader(rt).views()
    by_root = {v.root: v for v in views}
    assert by_root[str(dev)].state == "loaded" and by_root[str(dev)].version == "9.9.9"
    assert by_root[str(collection / "a")].state == "shadowed"
    assert by_root[str(collection / "b")].state == "loaded"
    assert by_root[str(single)].state == "loaded"


async def test_workspace_configured_path_is_a_workspace_plugin(kairox_harness: KairoxHarness) -> None:
    write_plugin(kairox_harness.workspace / "tools" / "local", {".kairox-plugin/plugin.json": {"name": "local"}})
    kairox_harness.write_config('[plugins]\npaths = ["tools"]\n', where="workspace")
    async with kairox_harness.open() as rt:
        state, _ = states(rt)["local@workspace"]
    assert state == "untrusted"


async def test_plugins_off_entirely(kairox_harness: KairoxHarness) -> None:
    philont_plugin(user_dir(kairox_harness) / "good", "good", TOOLS)
    kairox_harness.write_config("[plugins]\nenabled = false\n", where="user")
    async with kairox_harness.open() as rt:
        assert loader(rt).views() == [] and "good.echo" not in rt.tools


async def test_unload_takes_everything_back(kairox_harness: KairoxHarness) -> None:
    guard_plugin(user_dir(kairox_harness) / "guard")
    philont_plugin(user_dir(kairox_harness) / "good", "good", TOOLS)
    async with kairox_harness.open() as rt:
        assert await loader(rt).unload("guard") and await loader(rt).unload("good")
        assert len(rt.hooks) == 0 and "good.echo" not in rt.tools
        assert not await loader(rt).unload("good")
        assert states(rt)["good@user"] == ("disabled", "unloaded")


async def test_tool_id_clash_fails_the_plugin_and_rolls_back(kairox_harness: KairoxHarness) -> None:
    from kairox_testing import InMemoryToolProvider

    memory = InMemoryToolProvider("memory")
    memory.add_function(lambda: "mine", "clash.echo", domain="local", capability="read")
    philont_plugin(user_dir(kairox_harness) / "clash", "clash", TOOLS)
    async with kairox_harness.open(plugins=[memory.plugin()]) as rt:
        state, reason = states(rt)["clash@user"]
        assert state == "failed" and "registered twice" in reason
        assert "clash.save" not in rt.tools
        assert (await rt.call_tool("clash.echo", {})).text == "mine"
