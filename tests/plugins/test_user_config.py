"""Claude's ``userConfig``: the manifest field, asking for values (``plugin enable``, ``trust``,
``config``), where they are kept (the user's settings; the keychain for a sensitive one, or
the environment where there is none), their substitution into servers and hooks, and the
components that do not start without them. The plugin is
``tests/fixtures/bundles/claude/issue-tracker``, written from Claude Code's docs."""

from __future__ import annotations

import json
import logging
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import keyring
import pytest
from keyring.backend import KeyringBackend
from keyring.backends import fail
from keyring.errors import PasswordDeleteError
from plugin_helpers import real, write_plugin

from kairox import ApprovalAnswer
from kairox_manifests.errors import ManifestError
from kairox_manifests.formats import ClaudeFormat
from kairox_manifests.loader import loader_of
from kairox_manifests.settings import SettingsStore
from kairox_manifests.userconfig import UserOption
from kairox_testing import Approvals, KairoxHarness, make_plugin

pytestmark = pytest.mark.anyio

BUNDLES = Path(__file__).resolve().parent.parent / "fixtures" / "bundles"
SERVER = Path(__file__).resolve().parent.parent / "fixtures" / "mcp_servers" / "well_behaved.py"
PLUGIN = "issue-tracker"
#: what a user types as their token: it must never be seen again outside the keychain
SECRET = "tok-3f9a1c77-MARKER-do-not-leak"
ENV_VAR = "KAIROX_PLUGIN_ISSUE_TRACKER_API_TOKEN"


@pytest.fixture
def kairox_plugins() -> list[object]:
    import kairox_manifests.hooks
    import kairox_mcp.hooks
    import kairox_stdio.hooks

    return [kairox_manifests.hooks, kairox_mcp.hooks, kairox_stdio.hooks]


class MemoryKeyring(KeyringBackend):
    """A keychain in memory (keyring's public backend API), standing in for the system's."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.entries.pop((service, username), None) is None:
            raise PasswordDeleteError("not found")


@pytest.fixture
def keychain() -> Iterator[MemoryKeyring]:
    before = keyring.get_keyring()
    ring = MemoryKeyring()
    keyring.set_keyring(ring)
    try:
        yield ring
    finally:
        keyring.set_keyring(before)


@pytest.fixture
def no_keychain() -> Iterator[None]:
    """No keychain at all, as on CI: keyring's ``fail`` backend."""
    before = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        yield
    finally:
        keyring.set_keyring(before)


def install(h: KairoxHarness, *, server: bool = False) -> Path:
    """The fixture plugin in the user's plugin folder; ``server``: its MCP server is a real one
    (the test servers' ``well_behaved.py``, whose ``env`` tool answers its environment)."""
    root = h.home / "plugins" / PLUGIN
    shutil.copytree(BUNDLES / "claude" / PLUGIN, root)
    if server:
        config = json.loads((root / ".mcp.json").read_text())
        entry = config["mcpServers"]["tracker"]
        entry["command"] = sys.executable
        entry["args"] = [str(SERVER), "--name", "tracker-${user_config.max_results}"]
        (root / ".mcp.json").write_text(json.dumps(config))
    return real(root)


def settings_doc(h: KairoxHarness) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((h.home / "plugin-settings.json").read_text())
    return data


def remember(h: KairoxHarness, root: Path, keychain: MemoryKeyring, **values: Any) -> None:
    """Values as ``kairox plugin config --set`` keeps them (an async test cannot run the CLI):
    the token in the keychain, the others in the user's settings."""
    token = values.pop("api_token", None)
    if token is not None:
        keychain.set_password(f"kairox:{PLUGIN}", f"api_token@{root}", token)
    if values:
        SettingsStore(h.workspace, h.env).set_user_config(root, PLUGIN, values)


def item_detail(rt: Any, plugin: str, key: str) -> tuple[bool, str]:
    record = loader_of(rt).record(plugin)  # type: ignore[union-attr]
    state = record.items[key]
    return state.loaded, state.detail


# -- the manifest field --------------------------------------------------------------------------


def test_the_fixture_declares_its_options() -> None:
    manifest = ClaudeFormat().probe(BUNDLES / "claude" / PLUGIN)
    assert manifest is not None
    options = {o.key: o for o in manifest.user_config}
    assert list(options) == ["api_endpoint", "api_token", "max_results", "verbose"]
    assert options["api_token"] == UserOption(
        "api_token",
        "string",
        "API token",
        "A personal access token; kept in the system keychain.",
        required=True,
        sensitive=True,
    )
    assert (options["max_results"].default, options["max_results"].min, options["max_results"].max) == (20, 1, 100)
    assert options["verbose"].default is False
    assert not [p for p in manifest.problems if "userConfig" in (p.path or "")]


@pytest.mark.parametrize(
    ("option", "path", "message"),
    [
        ({"type": "string", "title": "T", "secret": True}, "userConfig.k.secret", "unknown key 'secret'"),
        ({"type": "text", "title": "T"}, "userConfig.k.type", "expected one of string, number"),
        ({"type": "number", "title": "T", "default": "many"}, "userConfig.k.default", "expected a number"),
        ({"type": "number", "title": "T", "default": 200, "max": 100}, "userConfig.k.default", "at most 100"),
        ({"type": "string", "title": "T", "min": 1}, "userConfig.k.min", "only a number option has min"),
        ({"type": "string", "title": "T", "sensitive": "yes"}, "userConfig.k.sensitive", "expected true or false"),
        ({"type": "string", "title": "T", "options": ["a"], "default": "b"}, "userConfig.k.default", "one of a"),
    ],
)
def test_a_wrong_option_fails_the_manifest_naming_file_and_field(
    tmp_path: Path, option: dict[str, Any], path: str, message: str
) -> None:
    root = write_plugin(tmp_path / "p", {".claude-plugin/plugin.json": {"name": "p", "userConfig": {"k": option}}})
    with pytest.raises(ManifestError, match=message) as info:
        ClaudeFormat().probe(root)
    assert info.value.path == path
    assert str(info.value.file).endswith("plugin.json")


def test_an_option_key_must_fit_an_environment_variable(tmp_path: Path) -> None:
    root = write_plugin(tmp_path / "p", {".claude-plugin/plugin.json": {"name": "p", "userConfig": {"a-b": {}}}})
    with pytest.raises(ManifestError, match="not an option key"):
        ClaudeFormat().probe(root)


# -- asking and keeping ----------------------------------------------------------------------------


def test_enable_with_set_keeps_the_token_in_the_keychain_and_the_rest_in_the_settings(
    kairox_harness: KairoxHarness, keychain: MemoryKeyring
) -> None:
    root = install(kairox_harness)
    result = kairox_harness.cli(
        "plugin", "enable", PLUGIN, "--set", f"api_token={SECRET}", "--set", "max_results=50", "--no-ask"
    )
    assert result.exit_code == 0, result.output
    assert keychain.entries == {(f"kairox:{PLUGIN}", f"api_token@{root}"): SECRET}
    entry = settings_doc(kairox_harness)["user_config"][str(root)]
    assert entry == {"plugin": PLUGIN, "values": {"max_results": 50}}
    assert SECRET not in result.output


def test_enable_asks_on_a_terminal_with_title_description_and_default(
    kairox_harness: KairoxHarness, keychain: MemoryKeyring
) -> None:
    root = install(kairox_harness)
    # endpoint: Enter keeps the default; token: typed (hidden); results: 500 is out of range, then 30; verbose: yes
    answers = "\n" + SECRET + "\n" + "500\n30\n" + "yes\n"
    result = kairox_harness.cli("plugin", "enable", PLUGIN, "--ask", input=answers)
    assert result.exit_code == 0, result.output
    assert "Tracker URL: Where the tracker's API lives." in result.stderr
    assert "[https://tracker.example.com/api]" in result.stderr
    assert "max_results: expected at most 100" in result.stderr
    assert SECRET not in result.stdout + result.stderr  # hidden input is not echoed
    assert keychain.entries[(f"kairox:{PLUGIN}", f"api_token@{root}")] == SECRET
    assert settings_doc(kairox_harness)["user_config"][str(root)]["values"] == {"max_results": 30, "verbose": True}


def test_enable_without_a_terminal_says_what_is_missing(kairox_harness: KairoxHarness, keychain: MemoryKeyring) -> None:
    install(kairox_harness)
    result = kairox_harness.cli("plugin", "enable", PLUGIN)
    assert result.exit_code == 0, result.output
    assert f"{PLUGIN} needs API token (api_token): kairox plugin config {PLUGIN} --set api_token=VALUE" in (
        result.stderr
    )


def test_config_shows_a_sensitive_value_masked_and_changes_values(
    kairox_harness: KairoxHarness, keychain: MemoryKeyring
) -> None:
    root = install(kairox_harness)
    assert kairox_harness.cli("plugin", "config", PLUGIN, "--set", f"api_token={SECRET}").exit_code == 0
    shown = kairox_harness.cli("plugin", "config", PLUGIN)
    assert shown.exit_code == 0, shown.output
    assert "api_token     string     ******** (keychain)  [required, sensitive]" in shown.stdout
    assert "max_results   number     20 (default)" in shown.stdout
    data = json.loads(kairox_harness.cli("plugin", "config", PLUGIN, "--json").stdout)
    token = next(o for o in data["options"] if o["key"] == "api_token")
    assert (token["set"], token["source"], token["value"]) == (True, "keychain", None)
    changed = kairox_harness.cli("plugin", "config", PLUGIN, "--set", "verbose=true", "--unset", "api_token")
    assert changed.exit_code == 0, changed.output
    assert keychain.entries == {}
    assert "api_token     string     (not set)" in changed.stdout
    assert settings_doc(kairox_harness)["user_config"][str(root)]["values"] == {"verbose": True}
    bad = kairox_harness.cli("plugin", "config", PLUGIN, "--set", "max_results=lots")
    assert bad.exit_code == 1 and "max_results: expected a number" in bad.stderr
    unknown = kairox_harness.cli("plugin", "config", PLUGIN, "--set", "colour=red")
    assert unknown.exit_code == 1 and "issue-tracker has no option 'colour'" in unknown.stderr


def test_without_a_keychain_a_sensitive_value_is_refused_and_read_from_the_environment(
    kairox_harness: KairoxHarness, no_keychain: None
) -> None:
    install(kairox_harness)
    refused = kairox_harness.cli("plugin", "config", PLUGIN, "--set", f"api_token={SECRET}")
    assert refused.exit_code == 1
    assert (
        f"no system keychain is available here, so it is not stored (never in a file); set the environment "
        f"variable {ENV_VAR} instead" in refused.stderr
    )
    assert SECRET not in refused.output
    assert (
        not (kairox_harness.home / "plugin-settings.json").exists()
        or SECRET not in (kairox_harness.home / "plugin-settings.json").read_text()
    )
    kairox_harness.env[ENV_VAR] = SECRET
    data = json.loads(kairox_harness.cli("plugin", "config", PLUGIN, "--json").stdout)
    token = next(o for o in data["options"] if o["key"] == "api_token")
    assert (token["set"], token["source"], token["value"]) == (True, "environment", None)


# -- using the values ---------------------------------------------------------------------------------


async def test_the_server_and_the_hook_get_their_values(kairox_harness: KairoxHarness, keychain: MemoryKeyring) -> None:
    remember(kairox_harness, install(kairox_harness, server=True), keychain, api_token=SECRET)
    async with kairox_harness.open(approver=Approvals(ApprovalAnswer.ALLOW_ONCE)) as rt:
        env = json.loads((await rt.call_tool(f"{PLUGIN}.tracker.env", {})).text)
        async with rt.session() as session:
            context = await session.turn_context("find my issues")
    assert env["TRACKER_TOKEN"] == SECRET
    assert (env["CLAUDE_PLUGIN_OPTION_MAX_RESULTS"], env["CLAUDE_PLUGIN_OPTION_VERBOSE"]) == ("20", "false")
    assert "Issue tracker: https://tracker.example.com/api (token set, up to 20 results)" in context.render()


async def test_without_the_required_token_the_server_does_not_start_and_says_why(
    kairox_harness: KairoxHarness, keychain: MemoryKeyring
) -> None:
    install(kairox_harness, server=True)
    async with kairox_harness.open() as rt:
        assert f"{PLUGIN}.tracker.env" not in rt.tools
        loaded, detail = item_detail(rt, PLUGIN, "mcp_server/tracker")
        async with rt.session() as session:
            context = await session.turn_context("x")
    # the hook does not need the token: it runs, and sees none
    assert "Issue tracker: https://tracker.example.com/api (token missing" in context.render()
    assert loaded is False
    assert (
        f"plugin {PLUGIN}: its mcp server 'tracker' needs user configuration it does not have: "
        "'api_token' (API token) is required and not set" in detail
    )


async def test_a_reference_to_an_undeclared_option_fails_closed(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    write_plugin(
        kairox_harness.home / "plugins" / "loose",
        {
            ".claude-plugin/plugin.json": {"name": "loose"},
            "hooks/hooks.json": {
                "hooks": {"SessionStart": [{"hooks": [{"command": f"touch {marker} ${{user_config.where}}"}]}]}
            },
        },
    )
    async with kairox_harness.open() as rt:
        async with rt.session() as session:
            await session.turn_context("x")
        loaded, detail = item_detail(rt, "loose", "hook/session_start.ran")
    assert not marker.exists()
    assert loaded is False
    assert "references ${user_config.where} and its plugin declares no userConfig" in detail


async def test_a_value_is_never_run_as_shell_code_in_a_hook_command(
    kairox_harness: KairoxHarness, keychain: MemoryKeyring, tmp_path: Path
) -> None:
    marker = tmp_path / "injected"
    endpoint = f'https://x.example/"; touch {marker}; echo "$(touch {marker})`touch {marker}`'
    remember(kairox_harness, install(kairox_harness), keychain, api_endpoint=endpoint)
    async with kairox_harness.open() as rt:
        async with rt.session() as session:
            context = await session.turn_context("x")
    assert not marker.exists()
    assert f"Issue tracker: {endpoint} (token missing" in context.render()  # the value, verbatim


# -- the attack: the token appears nowhere but in the keychain ----------------------------------------


def test_the_token_is_in_no_file_event_log_or_output(
    kairox_harness: KairoxHarness, keychain: MemoryKeyring, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    install(kairox_harness, server=True)
    outputs = [kairox_harness.cli("plugin", "enable", PLUGIN, "--ask", input="\n" + SECRET + "\n\n\n")]
    events: list[Any] = []
    observer = make_plugin("observer", kairox_event=lambda event, runtime: events.append(event))

    async def use_it() -> None:
        async with kairox_harness.open(plugins=[observer]) as rt:
            assert f"{PLUGIN}.tracker.env" in rt.tools  # the server runs, with the token
            async with rt.session() as session:
                await session.turn_context("x")

    anyio.run(use_it)
    for args in (
        ("plugin", "list", "--json"),
        ("plugin", "inspect", PLUGIN, "--json"),
        ("plugin", "config", PLUGIN, "--json"),
        ("plugin", "config", PLUGIN),
        ("status", "--json"),
        ("mcp", "list", "--json"),
    ):
        outputs.append(kairox_harness.cli(*args))
    assert list(keychain.entries.values()) == [SECRET]  # it was stored, and used (above)
    for result in outputs:
        assert result.exit_code == 0, result.output
        assert SECRET not in result.stdout + result.stderr
    assert len(events) > 5
    for event in events:
        assert SECRET not in repr(event)
    assert SECRET not in caplog.text
    for where in (kairox_harness.home, kairox_harness.workspace):
        for path in where.rglob("*"):
            if path.is_file():
                assert SECRET.encode() not in path.read_bytes(), path
