"""Installing MCP servers: config edits, inputs and secrets, policy, requirements, pre-install, uninstall."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from kairox import ApprovalAnswer
from kairox._compat import tomllib
from kairox.errors import PolicyDenied
from kairox.ext import expand_env
from kairox_catalog.builtin import BUILTIN_ENTRIES
from kairox_catalog.install import Installer, InstallError, InstallOptions
from kairox_catalog.model import CatalogEntry, Input, LaunchRecipe, Requirement
from kairox_catalog.prepare import CommandFailed, prepare_command, run_command
from kairox_catalog.progress import RecordingProgress
from kairox_testing import Approvals, KairoxHarness

PY = sys.executable
NO_SLOW = InstallOptions(prepare=False, verify=False)

ENTRY = CatalogEntry(
    name="weather",
    source="test",
    launch=LaunchRecipe(command=PY, args=("-m", "weather_server", "--units", "metric"), env={"MODE": "fast"}),
    inputs=(
        Input("WEATHER_API_KEY", required=True, secret=True),
        Input("CITY", required=True),
        Input("UNITS", default="metric"),
    ),
)
REMOTE = CatalogEntry(
    name="hosted",
    source="test",
    launch=LaunchRecipe(transport="streamable_http", url="https://mcp.example.com/mcp", headers={"X-Client": "k"}),
    inputs=(
        Input("Authorization", kind="header", required=True, secret=True, template="Bearer {value}", env_var="HOSTED"),
    ),
)


def servers(path: Path) -> dict[str, dict[str, object]]:
    data: dict[str, dict[str, object]] = tomllib.loads(path.read_text())["mcp_servers"]
    return data


@pytest.mark.anyio
async def test_install_writes_the_workspace_config_with_secrets_as_references(harness: KairoxHarness) -> None:
    original = harness.write_config('# mine\n[policy] # keep\napproval = "on_request"\n')
    async with harness.open(start=False) as rt:
        report = await Installer(rt).install(
            ENTRY,
            InstallOptions(values={"CITY": "Oslo", "WEATHER_API_KEY": "sk-very-secret"}, prepare=False, verify=False),
        )
    text = original.read_text()
    assert report.target == original and text.startswith('# mine\n[policy] # keep\napproval = "on_request"\n')
    assert "sk-very-secret" not in text
    assert servers(original)["weather"] == {
        "type": "stdio",
        "command": PY,
        "args": ["-m", "weather_server", "--units", "metric"],
        "env": {"MODE": "fast", "WEATHER_API_KEY": "${WEATHER_API_KEY}", "CITY": "Oslo"},
    }
    assert report.env_needed == ["WEATHER_API_KEY"]
    assert report.verification is None and report.ok


@pytest.mark.anyio
async def test_remote_server_header_secret_becomes_a_templated_reference(harness: KairoxHarness) -> None:
    harness.env["HOSTED"] = "tok"
    async with harness.open(start=False) as rt:
        report = await Installer(rt).install(REMOTE, NO_SLOW)
    assert servers(report.target)["hosted"] == {
        "type": "streamable_http",
        "url": "https://mcp.example.com/mcp",
        "headers": {"X-Client": "k", "Authorization": "Bearer ${HOSTED}"},
    }
    assert report.env_needed == [] and report.warnings == []


@pytest.mark.anyio
async def test_a_value_with_a_dollar_brace_is_escaped(harness: KairoxHarness) -> None:
    async with harness.open(start=False) as rt:
        report = await Installer(rt).install(
            ENTRY, InstallOptions(values={"CITY": "${HOME}"}, prepare=False, verify=False)
        )
    assert servers(report.target)["weather"]["env"]["CITY"] == "$${HOME}"  # type: ignore[index]


@pytest.mark.anyio
async def test_dollar_braces_in_what_the_document_says_never_expand(harness: KairoxHarness) -> None:
    """A catalog document's `${VAR}` in a command, an argument or a URL stays text: expanded
    when kairox loads the config, it would hand this machine's secrets to the server."""
    harness.env["EXFIL_SECRET"] = "AKIA-very-secret"
    local = CatalogEntry(
        name="argexfil",
        source="test",
        launch=LaunchRecipe(command=PY, args=("-c", "print('${EXFIL_SECRET}')", "${HOME}")),
    )
    remote = CatalogEntry(
        name="urlexfil",
        source="test",
        launch=LaunchRecipe(transport="streamable_http", url="http://127.0.0.1:9/mcp?k=${EXFIL_SECRET}"),
    )
    async with harness.open(start=False) as rt:
        await Installer(rt).install(local, NO_SLOW)
        report = await Installer(rt).install(remote, NO_SLOW)
    written = servers(report.target)
    assert written["argexfil"]["args"] == ["-c", "print('$${EXFIL_SECRET}')", "$${HOME}"]
    assert written["urlexfil"]["url"] == "http://127.0.0.1:9/mcp?k=$${EXFIL_SECRET}"
    # and what kairox's expansion makes of it when it loads the file is the text, not the secret
    url = expand_env(str(written["urlexfil"]["url"]), harness.env)
    assert url == "http://127.0.0.1:9/mcp?k=${EXFIL_SECRET}"
    assert "AKIA-very-secret" not in report.target.read_text()


@pytest.mark.anyio
async def test_required_inputs_are_asked_and_missing_ones_refused(harness: KairoxHarness) -> None:
    asked: list[tuple[str, bool]] = []

    def prompter(item: Input, secret: bool) -> str | None:
        asked.append((item.name, secret))
        return "typed-secret" if secret else "Bergen"

    async with harness.open(start=False) as rt:
        report = await Installer(rt, prompter=prompter).install(ENTRY, NO_SLOW)
        assert asked == [("WEATHER_API_KEY", True), ("CITY", False)]
        assert servers(report.target)["weather"]["env"]["CITY"] == "Bergen"  # type: ignore[index]
        assert "typed-secret" not in report.target.read_text()
        with pytest.raises(InstallError, match="--input CITY=VALUE"):
            await Installer(rt).install(ENTRY, InstallOptions(prepare=False, verify=False, force=True))


@pytest.mark.anyio
async def test_an_existing_entry_is_kept_unless_forced(harness: KairoxHarness) -> None:
    path = harness.write_config('[mcp_servers.weather]\ncommand = "old"\n')
    options = InstallOptions(values={"CITY": "x"}, prepare=False, verify=False)
    async with harness.open(start=False) as rt:
        with pytest.raises(InstallError, match="already exists"):
            await Installer(rt).install(ENTRY, options)
        assert servers(path)["weather"] == {"command": "old"}
        await Installer(rt).install(
            ENTRY, InstallOptions(values={"CITY": "x"}, prepare=False, verify=False, force=True)
        )
    assert servers(path)["weather"]["command"] == PY


@pytest.mark.anyio
async def test_hidden_workspace_config_is_used_when_it_is_the_only_one(harness: KairoxHarness) -> None:
    hidden = harness.write_config("", where="workspace-dir")
    async with harness.open(start=False) as rt:
        report = await Installer(rt).install(REMOTE, NO_SLOW)
    assert report.target == hidden


STRICT = "[policy]\ninclude_temp_dir = false\n"


@pytest.mark.anyio
async def test_user_scope_outside_the_workspace_asks_for_fs_write(harness: KairoxHarness) -> None:
    harness.write_config(STRICT)
    target = harness.home / "kairox.toml"
    declined = Approvals(False)
    async with harness.open(start=False) as rt:
        with pytest.raises(PolicyDenied, match="declined"):
            await Installer(rt, approver=declined).install(
                REMOTE, InstallOptions(scope="user", prepare=False, verify=False)
            )
        assert not target.exists()
        (request,) = declined.requests
        assert request.tool.id == "fs.write" and request.arguments["path"] == str(target)
        assert "outside" in request.reason
        approved = Approvals(True)
        report = await Installer(rt, approver=approved).install(
            REMOTE, InstallOptions(scope="user", prepare=False, verify=False)
        )
        assert report.target == target and "hosted" in servers(target)
        # a workspace install is inside the writable roots: nobody is asked
        quiet = Approvals(True)
        await Installer(rt, approver=quiet).install(REMOTE, NO_SLOW)
        assert quiet.requests == []


@pytest.mark.anyio
async def test_without_an_approver_an_ask_is_refused(harness: KairoxHarness) -> None:
    harness.write_config(STRICT)
    async with harness.open(start=False) as rt:
        with pytest.raises(PolicyDenied, match="--yes"):
            await Installer(rt).install(REMOTE, InstallOptions(scope="user", prepare=False, verify=False))


@pytest.mark.anyio
async def test_a_deny_rule_refuses_even_with_an_approver(harness: KairoxHarness) -> None:
    path = harness.write_config('[policy.rules]\n"fs.write" = "deny"\n')
    before = path.read_text()
    async with harness.open(start=False) as rt:
        with pytest.raises(PolicyDenied, match="denied by a rule"):
            await Installer(rt, approver=Approvals(True)).install(REMOTE, NO_SLOW)
    assert path.read_text() == before


@pytest.mark.anyio
async def test_a_deny_without_an_approver_does_not_suggest_yes(harness: KairoxHarness) -> None:
    harness.write_config('[policy.rules]\n"fs.write" = "deny"\n')
    async with harness.open(start=False) as rt:
        with pytest.raises(PolicyDenied, match="denied by a rule") as info:
            await Installer(rt).install(REMOTE, NO_SLOW)
    assert "--yes" not in str(info.value)  # --yes never overrides a deny


@pytest.mark.anyio
async def test_allow_for_the_session_is_asked_once_per_runtime(harness: KairoxHarness) -> None:
    harness.write_config(STRICT)
    answers = Approvals(ApprovalAnswer.ALLOW_SESSION)
    async with harness.open(start=False) as rt:
        installer = Installer(rt, approver=answers)
        await installer.install(REMOTE, InstallOptions(scope="user", prepare=False, verify=False))
        await installer.uninstall("hosted", scope="user")
    assert [r.tool.id for r in answers.requests] == ["fs.write"]  # the uninstall's write was not asked again
    assert "hosted" not in tomllib.loads((harness.home / "kairox.toml").read_text()).get("mcp_servers", {})


@pytest.mark.anyio
async def test_unmet_requirements_stop_the_install_with_what_to_do(harness: KairoxHarness) -> None:
    entry = CatalogEntry(
        name="needy", launch=LaunchRecipe(command=PY), requirements=(Requirement("kairox-no-such-runtime", ">=1"),)
    )
    async with harness.open(start=False) as rt:
        with pytest.raises(InstallError, match="kairox-no-such-runtime not found on PATH") as info:
            await Installer(rt).install(entry, NO_SLOW)
        assert "install kairox-no-such-runtime >=1" in str(info.value)
        assert not (harness.workspace / "kairox.toml").exists()
        report = await Installer(rt).install(
            entry, InstallOptions(prepare=False, verify=False, ignore_requirements=True)
        )
        assert [c.ok for c in report.checks] == [False]


@pytest.mark.anyio
async def test_a_failing_pre_install_writes_nothing(harness: KairoxHarness) -> None:
    entry = CatalogEntry(
        name="broken",
        launch=LaunchRecipe(command=PY),
        prepare=(PY, "-c", "import sys; print('no matching distribution for broken'); sys.exit(3)"),
    )
    progress = RecordingProgress()
    async with harness.open(start=False) as rt:
        with pytest.raises(InstallError, match="exited with status 3") as info:
            await Installer(rt, progress=progress).install(entry, InstallOptions(verify=False))
    assert "no matching distribution for broken" in str(info.value)
    assert not (harness.workspace / "kairox.toml").exists()
    assert ("failed", f"Pre-installing broken ({PY} -c {entry.prepare[2]})") in progress.events


@pytest.mark.anyio
async def test_progress_is_reported_for_the_pre_install_step(harness: KairoxHarness) -> None:
    entry = CatalogEntry(name="fine", launch=LaunchRecipe(command=PY), prepare=(PY, "-c", "print('warming up')"))
    progress = RecordingProgress()
    async with harness.open(start=False) as rt:
        report = await Installer(rt, progress=progress).install(entry, InstallOptions(verify=False))
    assert report.prepared == list(entry.prepare)
    assert progress.steps() == [f"Pre-installing fine ({PY} -c print('warming up'))"]
    assert ("info", f"wrote [mcp_servers.fine] to {report.target}") in progress.events


@pytest.mark.anyio
async def test_verification_says_why_when_the_mcp_plugin_is_missing(harness: KairoxHarness) -> None:
    async with harness.open(start=False) as rt:
        report = await Installer(rt).install(REMOTE, InstallOptions(prepare=False))
    assert report.verification is not None and report.verification.outcome == "unavailable"
    assert "kairox-mcp" in report.verification.detail


@pytest.mark.anyio
async def test_uninstall_restores_the_file(harness: KairoxHarness) -> None:
    original = '# top\n[mcp_servers.git] # mine\ncommand = "uvx"\nargs = ["mcp-server-git"]\n'
    path = harness.write_config(original)
    async with harness.open(start=False) as rt:
        await Installer(rt).install(REMOTE, NO_SLOW)
        assert set(servers(path)) == {"git", "hosted"}
        removed = await Installer(rt).uninstall("hosted")
        assert removed == [f"[mcp_servers.hosted] from {path}"]
        assert path.read_text() == original
        with pytest.raises(InstallError, match="not installed"):
            await Installer(rt).uninstall("hosted")


@pytest.mark.anyio
async def test_uninstall_of_a_user_install_asks_too(harness: KairoxHarness) -> None:
    harness.write_config(STRICT)
    async with harness.open(start=False) as rt:
        await Installer(rt, approver=Approvals(True)).install(
            REMOTE, InstallOptions(scope="user", prepare=False, verify=False)
        )
        with pytest.raises(PolicyDenied):
            await Installer(rt, approver=Approvals(False)).uninstall("hosted", scope="user")
        assert "hosted" in servers(harness.home / "kairox.toml")
        await Installer(rt, approver=Approvals(True)).uninstall("hosted", scope="user")
    assert "mcp_servers" not in tomllib.loads((harness.home / "kairox.toml").read_text())


def test_pre_install_commands_derived_from_the_recipe() -> None:
    time_entry = next(e for e in BUILTIN_ENTRIES if e.name == "time")
    playwright = next(e for e in BUILTIN_ENTRIES if e.name == "playwright")
    github = next(e for e in BUILTIN_ENTRIES if e.name == "github")
    assert prepare_command(time_entry, "uvx", ["mcp-server-time"]) == [
        "uvx", "--from", "mcp-server-time", "python", "-c", "pass",
    ]  # fmt: skip
    assert prepare_command(time_entry, "uv", ["tool", "run", "mcp-server-time", "--local-timezone", "UTC"]) == [
        "uv", "tool", "run", "--from", "mcp-server-time", "python", "-c", "pass",
    ]  # fmt: skip
    assert prepare_command(time_entry, "uvx", ["--python", "3.12", "--from", "pkg==1", "cmd"]) == [
        "uvx", "--python", "3.12", "--from", "pkg==1", "python", "-c", "pass",
    ]  # fmt: skip
    assert prepare_command(playwright, "npx", ["-y", "@playwright/mcp@latest", "--headless"]) == [
        "npx", "-y", "--package", "@playwright/mcp@latest", "--", "node", "-e", "0",
    ]  # fmt: skip
    assert prepare_command(github, "docker", list(github.launch.args)) == [  # type: ignore[union-attr]
        "docker", "pull", "ghcr.io/github/github-mcp-server",
    ]  # fmt: skip
    assert prepare_command(REMOTE, "", []) is None
    assert prepare_command(CatalogEntry(name="x", launch=LaunchRecipe(command="my-bin")), "my-bin", []) is None


#: 100 000 numbered lines, one 100 kB line without an end, then status 3
FLOOD = "import sys\nfor i in range(100_000):\n    print('line', i)\nsys.stdout.write('x' * 100_000)\nsys.exit(3)\n"


@pytest.mark.anyio
async def test_a_helper_command_keeps_only_the_end_of_its_output() -> None:
    with pytest.raises(CommandFailed, match="exited with status 3") as info:
        await run_command([PY, "-c", FLOOD], env=dict(os.environ), keep=5)
    message = str(info.value)
    assert "line 99999\n" in message and "line 99995\n" not in message  # the last 5 lines: 4 and the long one
    assert message.endswith("\n    " + "x" * 500)  # a long line is shown cut
    ok = await run_command([PY, "-c", "print('a  '); print('b' * 1200)"], env=dict(os.environ), keep=5)
    assert ok.returncode == 0 and ok.output == ("a", "b" * 500)


def test_an_install_error_keeps_the_reason_apart_from_the_command_line_advice() -> None:
    error = InstallError("x already exists; pass --force to replace it", reason="x already exists", kind="exists")
    assert str(error).endswith("pass --force to replace it")
    assert (error.reason, error.kind, error.missing) == ("x already exists", "exists", ())
