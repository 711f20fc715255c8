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
