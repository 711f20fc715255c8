"""Distributions (issue 18, item 4): a package declares its plugin set and default config
through the ``kairox.distributions`` entry-point group, and in that environment the plugin
host, ``Runtime.open()`` and the CLI load exactly that set. Fake installed distributions are
real ``.dist-info`` directories on ``sys.path`` (``fake_site``), read by importlib.metadata."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox import Distribution, Runtime
from kairox.ext import build_plugin_host, missing_feature_message

FakeSite = Any  # tests/kernel/conftest.py's fake_site fixture

ACME = """
from kairox import Distribution
DISTRIBUTION = Distribution(
    "acme",
    plugins=("tools", "kairox-skills"),
    config={"policy": {"approval": "untrusted"}},
    description="tools and skills, asking for everything",
)
"""


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")}
    return {**env, "KAIROX_HOME": str(tmp_path / "home"), "HOME": str(tmp_path), **extra}


def add_acme(site: FakeSite, name: str = "acme", source: str = ACME, module: str = "acme_kairox") -> None:
    site.add(
        f"{name}-kairox",
        entry_points={name: f"{module}:DISTRIBUTION"},
        modules={module: source},
        group="kairox.distributions",
    )


def loaded(host: object) -> set[str]:
    return {p.name for p in host.plugins()}  # type: ignore[attr-defined]


def test_the_distribution_chooses_the_plugin_set(fake_site: FakeSite, tmp_path: Path) -> None:
    add_acme(fake_site)
    host = build_plugin_host(env=env_for(tmp_path))
    assert loaded(host) == {"tools", "skills"}
    assert host.failures == []
    assert host.distribution.distribution is not None and host.distribution.package == "acme-kairox"
    dist, why = host.not_loaded["mcp"]
    assert dist == "kairox-mcp" and why == "not in the plugin set of distribution 'acme' (acme-kairox)"
    # what a config asking for a left-out feature is told
    message = missing_feature_message("config section", "mcp_servers")
    assert message is not None and "installed but not loaded: not in the plugin set" in message


OWN = (
    ACME
    + """
from kairox import hookimpl

@hookimpl
def kairox_session_start(session):
    session.state["acme"] = "its own hook ran"
"""
)


@pytest.mark.anyio
async def test_the_distributions_own_package_is_in_its_plugin_set(fake_site: FakeSite, tmp_path: Path) -> None:
    """A distribution that ships its own skills, hooks or tools (a ``kairox`` entry point of
    its own package) need not list itself in ``plugins``."""
    fake_site.add(
        "acme-kairox",
        entry_points={"acme": "acme_kairox"},
        more_groups={"kairox.distributions": {"acme": "acme_kairox:DISTRIBUTION"}},
        modules={"acme_kairox": OWN},
    )
    env = env_for(tmp_path)
    host = build_plugin_host(env=env)
    assert loaded(host) == {"tools", "skills", "acme"}, host.not_loaded.get("acme")
    assert host.failures == []
    (tmp_path / "ws").mkdir()
    async with Runtime.open(tmp_path / "ws", host=host, env=env, home=tmp_path / "home", start=False) as rt:
        async with rt.session() as session:
            assert session.state["acme"] == "its own hook ran"


def test_env_variables_narrow_the_set_and_say_why(fake_site: FakeSite, tmp_path: Path) -> None:
    add_acme(fake_site)
    host = build_plugin_host(env=env_for(tmp_path, KAIROX_DISABLE_PLUGINS="skills"))
    assert loaded(host) == {"tools"}
    assert host.not_loaded["skills"] == ("kairox-skills", "listed in KAIROX_DISABLE_PLUGINS")
    # KAIROX_LOAD_PLUGINS cannot add a plugin the distribution does not ship
    host = build_plugin_host(env=env_for(tmp_path, KAIROX_LOAD_PLUGINS="tools,mcp"))
    assert loaded(host) == {"tools"}
    assert "not in the plugin set" in host.not_loaded["mcp"][1]


EXTRA = """
import attrs
from kairox import ConfigSection, hookimpl

@attrs.define
class Extra:
    colour: str = "red"

@hookimpl
def kairox_register_config_sections(registrar):
    registrar.add(ConfigSection("acme_extra", Extra))
"""


@pytest.mark.anyio
async def test_an_unknown_section_names_the_installed_packages_left_out(fake_site: FakeSite, tmp_path: Path) -> None:
    """A third-party package no table knows, installed but outside the distribution's plugin
    set: a config using its section is told that package is installed and why it is not loaded."""
    add_acme(fake_site)
    fake_site.add("acme-extra", entry_points={"acme_extra": "acme_extra_kairox"}, modules={"acme_extra_kairox": EXTRA})
    env = env_for(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "kairox.toml").write_text('[acme_extra]\ncolour = "blue"\n')
    async with Runtime.open(
        ws, host=build_plugin_host(env=env), env=env, home=tmp_path / "home", start=False, trusted=True
    ) as rt:
        errors = [e for e in rt.config.errors if e.path == "acme_extra"]
        assert len(errors) == 1, rt.config.errors
        assert errors[0].message.startswith("unknown section [acme_extra]; ")
        assert (
            "installed plugin packages not loaded here (one may own it): acme-extra (which is installed but "
            "not loaded: not in the plugin set of distribution 'acme' (acme-kairox))"
        ) in errors[0].message


@pytest.mark.anyio
async def test_runtime_open_gets_the_default_config_below_the_users(fake_site: FakeSite, tmp_path: Path) -> None:
    add_acme(fake_site)
    env = env_for(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    async with Runtime.open(ws, host=build_plugin_host(env=env), env=env, home=home, start=False) as rt:
        assert rt.config.section("policy").approval.value == "untrusted"
        assert rt.config.provenance[("policy", "approval")] == "<distribution acme (acme-kairox)>"
        assert loaded(rt.host) == {"tools", "skills"}
    (home / "kairox.toml").write_text('[policy]\napproval = "on_request"\n')
    async with Runtime.open(ws, host=build_plugin_host(env=env), env=env, home=home, start=False) as rt:
        assert rt.config.section("policy").approval.value == "on_request"  # the user's file wins


FLOORED = """
from kairox import Distribution
DISTRIBUTION = Distribution(
    "acme",
    plugins=("tools", "kairox-skills"),
    policy_floor={"approval": "untrusted", "sandbox": "workspace_write", "rules": {"fs.write": "ask"}},
)
"""


@pytest.mark.anyio
async def test_a_users_config_cannot_loosen_the_policy_floor(fake_site: FakeSite, tmp_path: Path) -> None:
    """The attack: the user's own kairox.toml turns everything off. Under the distribution's
    floor a command still asks first, and the would-be command never runs."""
    from kairox.errors import PolicyDenied
    from kairox_testing import Approvals

    add_acme(fake_site, source=FLOORED)
    env = env_for(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    (home / "kairox.toml").write_text(
        '[policy]\napproval = "never"\nsandbox = "danger_full_access"\n\n[policy.rules]\n"fs.write" = "allow"\n'
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = tmp_path / "ran"
    async with Runtime.open(ws, host=build_plugin_host(env=env), env=env, home=home) as rt:
        policy = rt.config.section("policy")
        assert (policy.approval.value, policy.sandbox.value) == ("untrusted", "workspace_write")
        refused = {(n.file, n.key): n.reason for n in rt.config.not_applied}
        user_file = str(home / "kairox.toml")
        assert set(refused) == {(user_file, "approval"), (user_file, "sandbox"), (user_file, 'rules["fs.write"]')}
        floor = "<distribution acme (acme-kairox) policy floor>"
        assert refused[(user_file, "approval")] == (
            f"below the policy floor of {floor}: its approval policy is untrusted, and only a stricter one applies over it"
        )
        no = Approvals(False)
        with pytest.raises(PolicyDenied):
            await rt.call_tool("shell.exec", {"command": f"touch {marker}"}, approver=no)
        assert [r.tool.id for r in no.requests] == ["shell.exec"]
        with pytest.raises(PolicyDenied):
            await rt.call_tool("fs.write", {"path": "x.txt", "content": "x"}, approver=no)
        assert [r.tool.id for r in no.requests] == ["shell.exec", "fs.write"]
        assert "the distribution's policy floor asks" in no.requests[1].reason
    assert not marker.exists() and not (ws / "x.txt").exists()
    # a stricter user value applies over the floor
    (home / "kairox.toml").write_text('[policy]\nsandbox = "read_only"\n')
    async with Runtime.open(ws, host=build_plugin_host(env=env), env=env, home=home, start=False) as rt:
        policy = rt.config.section("policy")
        assert (policy.approval.value, policy.sandbox.value) == ("untrusted", "read_only")
        assert rt.config.not_applied == []


def test_config_show_marks_the_value_in_effect_and_where_it_came_from(fake_site: FakeSite, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kairox_cli import build_cli

    add_acme(fake_site, source=FLOORED)
    env = env_for(tmp_path)
    (tmp_path / "home").mkdir()
    user_file = tmp_path / "home" / "kairox.toml"
    user_file.write_text('[policy]\napproval = "never"\nsandbox = "read_only"\n')
    ws = tmp_path / "ws"
    ws.mkdir()
    out = CliRunner().invoke(
        build_cli(build_plugin_host(env=env)), ["--workspace", str(ws), "--json", "config", "show"], env=env
    )
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)["sections"]["policy"]
    floor = "<distribution acme (acme-kairox) policy floor>"
    shown = {k: (r["value"], r["source"], r.get("in_effect"), bool(r["not_applied"])) for k, r in rows.items()}
    assert shown["approval"] == ("untrusted", floor, True, False)
    assert shown[f"approval ({user_file})"] == ("never", str(user_file), False, True)
    assert shown["sandbox"] == ("workspace_write", floor, False, False)
    assert shown[f"sandbox ({user_file})"] == ("read_only", str(user_file), True, False)
    assert "below the policy floor" in rows[f"approval ({user_file})"]["not_applied"]
    text = CliRunner().invoke(
        build_cli(build_plugin_host(env=env)), ["--workspace", str(ws), "config", "show"], env=env
    )
    lines = text.stdout.splitlines()
    assert f'  approval = "untrusted"    # {floor}  (in effect)' in lines
    assert any(
        line.startswith(f'  approval ({user_file}) = "never"    # {user_file}  (not applied: below') for line in lines
    )


@pytest.mark.parametrize(
    ("floor", "error"),
    [
        (
            {"writable_roots": ["/"]},
            "policy_floor may set approval, sandbox, include_temp_dir, rules; not writable_roots",
        ),
        ({"approval": "sometimes"}, "policy_floor approval must be one of untrusted, on_request"),
        ({"rules": {"*": "allow"}}, "rules must be a table of tool patterns to 'ask' or 'deny'"),
        ({"include_temp_dir": "no"}, "include_temp_dir must be true or false"),
        ("untrusted", "policy_floor must be a table"),
    ],
)
def test_a_floor_that_does_not_hold_fails_the_distribution(
    fake_site: FakeSite, tmp_path: Path, floor: object, error: str
) -> None:
    add_acme(
        fake_site,
        source=FLOORED.replace(
            'policy_floor={"approval": "untrusted", "sandbox": "workspace_write", "rules": {"fs.write": "ask"}}',
            f"policy_floor={floor!r}",
        ),
    )
    host = build_plugin_host(env=env_for(tmp_path))
    assert loaded(host) == set()  # closed: a floor that guards nothing is no floor
    [failure] = host.failures
    assert failure.stage == "distribution" and error in failure.error, failure.error


def test_a_name_in_the_set_that_is_not_installed_is_a_failure(fake_site: FakeSite, tmp_path: Path) -> None:
    add_acme(fake_site, source=ACME.replace('"kairox-skills"', '"kairox-skills", "kairox-typo"'))
    host = build_plugin_host(env=env_for(tmp_path))
    assert loaded(host) == {"tools", "skills"}
    [failure] = host.failures
    assert (failure.plugin, failure.stage, failure.distribution) == ("kairox-typo", "distribution", "acme-kairox")
    assert "lists plugin package 'kairox-typo', which is not installed" in failure.error


def test_several_distributions_fail_closed_until_one_is_chosen(fake_site: FakeSite, tmp_path: Path) -> None:
    add_acme(fake_site)
    add_acme(
        fake_site,
        "beta",
        ACME.replace('"acme"', '"beta"').replace('"tools", "kairox-skills"', '"kairox-skills",'),
        "beta_kairox",
    )
    host = build_plugin_host(env=env_for(tmp_path))
    assert loaded(host) == set()  # nothing loads: either one's defaults may be what keeps the policy strict
    [failure] = host.failures
    assert "several kairox distributions are installed (acme (acme-kairox), beta (beta-kairox))" in failure.error
    assert loaded(build_plugin_host(env=env_for(tmp_path, KAIROX_DISTRIBUTION="beta"))) == {"skills"}
    everything = build_plugin_host(env=env_for(tmp_path, KAIROX_DISTRIBUTION="none"))
    assert {"tools", "skills", "mcp", "stdio"} <= loaded(everything)
    wrong = build_plugin_host(env=env_for(tmp_path, KAIROX_DISTRIBUTION="gamma"))
    assert loaded(wrong) == set()
    assert "KAIROX_DISTRIBUTION='gamma' names no installed distribution (acme, beta)" in wrong.failures[0].error


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("raise ImportError('no such thing')\n", "ImportError: no such thing"),
        ("DISTRIBUTION = {'plugins': ['tools']}\n", "is a dict, not a kairox.Distribution"),
        (
            "from kairox import Distribution\nDISTRIBUTION = lambda: Distribution('x', plugins='tools')\n",
            "TypeError: plugins must be a list",
        ),
    ],
)
def test_a_broken_distribution_fails_closed(fake_site: FakeSite, tmp_path: Path, source: str, error: str) -> None:
    add_acme(fake_site, source=source)
    host = build_plugin_host(env=env_for(tmp_path))
    assert loaded(host) == set()
    [failure] = host.failures
    assert failure.stage == "distribution" and error in failure.error, failure.error
    assert "no plugin package loads until the distribution problem is fixed" in host.not_loaded["tools"][1]


def test_the_cli_shows_the_distribution_and_what_it_left_out(fake_site: FakeSite, tmp_path: Path) -> None:
    add_acme(fake_site)
    env = env_for(tmp_path, PYTHONPATH=os.pathsep.join([str(fake_site.root), os.environ.get("PYTHONPATH", "")]))
    kairox = str(Path(sys.executable).parent / "kairox")
    out = subprocess.run([kairox, "--json", "plugins"], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert {p["name"] for p in data["plugins"]} == {"tools", "skills"}
    assert data["distribution"] == {
        "name": "acme",
        "package": "acme-kairox",
        "version": "1.0",
        "plugins": ["tools", "kairox-skills"],
    }
    assert all(set(n) == {"plugin", "distribution", "why"} for n in data["not_loaded"])  # as docs/cli.md says
    left_out = {n["plugin"]: n["why"] for n in data["not_loaded"]}
    assert left_out["mcp"] == "not in the plugin set of distribution 'acme' (acme-kairox)"
    text = subprocess.run([kairox, "status"], capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path)
    assert "plugin packages: 2 loaded, 0 failed" in text.stdout and "(distribution acme, acme-kairox)" in text.stdout


def test_a_command_left_out_by_the_distribution_says_which_package_and_why(fake_site: FakeSite, tmp_path: Path) -> None:
    """`kairox plugin ...` where kairox-manifests is installed but not in the plugin set: not
    click's bare "No such command 'plugin'. Did you mean 'plugins'?"."""
    from click.testing import CliRunner

    from kairox_cli import build_cli

    add_acme(fake_site)
    env = env_for(tmp_path)
    out = CliRunner().invoke(build_cli(build_plugin_host(env=env)), ["plugin", "list"], env=env)
    assert out.exit_code == 2
    assert (
        "No such command 'plugin': command \"plugin\" is provided by kairox-manifests, which is installed but "
        "not loaded: not in the plugin set of distribution 'acme' (acme-kairox)."
    ) in out.output, out.output
    # a third party's command (no table knows it): the packages left out are named
    out = CliRunner().invoke(build_cli(build_plugin_host(env=env)), ["example"], env=env)
    assert out.exit_code == 2
    assert "No such command 'example'." in out.output
    assert "Installed plugin packages that are not loaded (one may provide it): " in out.output
    assert "kairox-example (not in the plugin set of distribution 'acme' (acme-kairox))" in out.output
    # a typo where every package loads is click's own message
    out = CliRunner().invoke(build_cli(build_plugin_host(env={**env, "KAIROX_DISTRIBUTION": "none"})), ["plugn"])
    assert out.exit_code == 2 and "No such command 'plugn'" in out.output and "not loaded" not in out.output


def test_a_command_whose_package_is_not_installed_says_so(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kairox_cli import build_cli

    out = CliRunner().invoke(build_cli(build_plugin_host(load_entrypoints=False, env=env_for(tmp_path))), ["serve"])
    assert out.exit_code == 2
    assert 'command "serve" is provided by kairox-serve, which is not installed (pip install kairox-serve)' in (
        out.output
    )


names = st.lists(st.one_of(st.text(max_size=8), st.integers(), st.none()), max_size=4)
tables = st.dictionaries(st.text(max_size=6), st.one_of(st.dictionaries(st.text(max_size=4), st.integers()), st.text()))


@given(names, tables)
def test_a_distribution_takes_lists_of_names_and_tables_of_sections_or_says_which(
    plugins: list[object], config: dict[str, object]
) -> None:
    try:
        dist = Distribution("d", plugins=plugins, config=config)  # type: ignore[arg-type]
    except TypeError as exc:
        assert "plugins must be" in str(exc) or "config must be" in str(exc)
        return
    assert all(isinstance(p, str) and p == p.strip() and p for p in dist.plugins)
    assert all(isinstance(v, dict) for v in dist.config.values())


approvals = st.sampled_from(["untrusted", "on_request", "on_failure", "never"])
sandboxes = st.sampled_from(["read_only", "workspace_write", "danger_full_access"])
actions = st.sampled_from(["allow", "ask", "deny"])


@given(
    st.fixed_dictionaries(
        {}, optional={"approval": approvals, "sandbox": sandboxes, "include_temp_dir": st.just(False)}
    ),
    st.lists(
        st.fixed_dictionaries(
            {}, optional={"approval": approvals, "sandbox": sandboxes, "include_temp_dir": st.booleans()}
        ),
        max_size=3,
    ),
    st.sampled_from(["ask", "deny"]),
    st.lists(actions, max_size=2),
)
def test_no_users_files_merge_below_the_floor(
    floor: dict[str, object], users: list[dict[str, object]], floor_action: str, user_actions: list[str]
) -> None:
    from kairox._policy import PolicyEngine
    from kairox._policy_merge import merge_policy
    from kairox._types import APPROVAL_STRICTNESS, SANDBOX_STRICTNESS, ApprovalPolicy, SandboxPolicy
    from kairox.ext import ConfigLayer

    floor = {**floor, "rules": {"fs.*": floor_action}}
    layers = [ConfigLayer("<floor>", "floor", True, floor)]
    layers += [ConfigLayer(f"user{i}", "user", True, u) for i, u in enumerate(users)]
    layers += [ConfigLayer("user-rules", "user", True, {"rules": {"fs.write": a}}) for a in user_actions]
    merged, _not_applied, errors = merge_policy(layers)
    assert errors == []
    if "approval" in floor:
        assert APPROVAL_STRICTNESS.index(merged.approval) <= APPROVAL_STRICTNESS.index(
            ApprovalPolicy(floor["approval"])
        )
    if "sandbox" in floor:
        assert SANDBOX_STRICTNESS.index(merged.sandbox) <= SANDBOX_STRICTNESS.index(SandboxPolicy(floor["sandbox"]))
    if floor.get("include_temp_dir") is False:
        assert merged.include_temp_dir is False
    rule = PolicyEngine.build(merged, Path.cwd()).rule_for("fs.write")
    assert rule == "deny" or (rule == "ask" and floor_action == "ask")
