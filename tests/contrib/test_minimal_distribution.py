"""contrib/kairox-minimal: a runtime built from only kairox + kairox-tools + kairox-skills works,
a config that needs a missing plugin is an error naming its distribution (never a traceback),
and as a distribution (issue 18, item 4) it chooses the plugin set and default config even
where more plugin packages are installed next to it.

Builds real, separate virtual environments with ``uv`` from the wheels of this repository.
"""

from __future__ import annotations

import json

import pytest

from contrib.conftest import MINIMAL

pytestmark = pytest.mark.slow


def test_only_the_chosen_plugins_are_installed(venv) -> None:
    dists = json.loads(
        venv.python(
            "import json; from importlib.metadata import distributions; "
            "print(json.dumps(sorted(d.metadata['Name'] for d in distributions())))"
        )
    )
    assert [d for d in dists if d.startswith("kairox")] == [
        "kairox",
        "kairox-cli",
        "kairox-minimal",
        "kairox-process",
        "kairox-skills",
        "kairox-tools",
    ]
    assert venv.python("import importlib.util as u; print(u.find_spec('mcp') is None)") == "True"


def test_plugins_and_status(venv) -> None:
    plugins = venv.run("kairox", "plugins", "--json")
    assert plugins.returncode == 0, plugins.stderr
    data = json.loads(plugins.stdout)
    assert sorted((p["name"], p["distribution"]) for p in data["plugins"]) == [
        ("skills", "kairox-skills"),
        ("tools", "kairox-tools"),
    ]
    assert data["failures"] == []
    assert data["distribution"] == {
        "name": "minimal",
        "package": "kairox-minimal",
        "version": "0.1.0",
        "plugins": ["kairox-tools", "kairox-skills"],
    }
    status = venv.run("kairox", "status", "--json")
    assert status.returncode == 0, status.stdout + status.stderr
    assert json.loads(status.stdout)["ok"] is True


def test_tools_list_and_call(venv) -> None:
    (venv.workspace / "hello.txt").write_text("hello from the minimal distribution\n")
    listed = venv.run("kairox", "tools", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    ids = {t["id"]: t for t in json.loads(listed.stdout)["tools"]}
    assert {"fs.read", "fs.write", "fs.list", "shell.exec", "search.grep"} <= set(ids)
    assert ids["fs.read"]["provider"] != "kairox"
    called = venv.run("kairox", "tools", "call", "fs.read", "--args", '{"path": "hello.txt"}')
    assert called.returncode == 0, called.stderr
    assert "hello from the minimal distribution" in called.stdout


@pytest.mark.parametrize(
    ("config", "distribution"),
    [
        ('[mcp_servers.search]\ntype = "sse"\nurl = "https://example.com/mcp"\n', "kairox-mcp"),
        ('[lsp_servers.rust]\ncommand = "rust-analyzer"\n', "kairox-lsp"),
        ('[dap_servers.py]\ncommand = "python"\n', "kairox-dap"),
        ("[catalog]\nsources = []\n", "kairox-catalog"),
        ('[instructions]\ntext = "Run the tests."\n', "kairox-agents"),
    ],
)
def test_config_needing_a_missing_plugin_names_the_distribution(venv, config: str, distribution: str) -> None:
    (venv.workspace / "kairox.toml").write_text(config)
    status, shown, listed = (venv.run("kairox", *args) for args in (("status",), ("config", "show"), ("tools", "list")))
    for out in (status, shown, listed):
        assert "Traceback" not in out.stdout + out.stderr, out.stderr
    assert status.returncode == 1
    assert f"is provided by {distribution}, which is not installed (pip install {distribution})" in status.stdout
    data = json.loads(venv.run("kairox", "status", "--json").stdout)
    assert any(distribution in e for e in data["config_errors"])
    assert shown.returncode == 0 and distribution in shown.stderr


def test_its_default_config_is_the_lowest_layer(venv) -> None:
    shown = json.loads(venv.run("kairox", "config", "show", "--json").stdout)
    approval = shown["sections"]["policy"]["approval"]
    assert (approval["value"], approval["source"]) == ("untrusted", "<distribution minimal (kairox-minimal)>")
    (venv.home / "kairox.toml").write_text('[policy]\napproval = "on_request"\n')
    try:
        shown = json.loads(venv.run("kairox", "config", "show", "--json").stdout)
        # [policy] shows each layer, lowest first: the user's own file comes after (and wins;
        # tests/kernel/test_distributions.py checks the merged value)
        layers = [(row["value"], row["source"]) for row in shown["sections"]["policy"].values()]
        assert layers == [
            ("untrusted", "<distribution minimal (kairox-minimal)>"),
            ("on_request", str(venv.home / "kairox.toml")),
        ]
    finally:
        (venv.home / "kairox.toml").unlink()


def test_plugin_packages_installed_next_to_it_are_not_loaded(make_venv) -> None:
    """As when kairox-mcp comes into the environment as another package's dependency."""
    plus = make_venv("minimal-plus", *MINIMAL, "kairox-mcp", "kairox-stdio")
    data = json.loads(plus.run("kairox", "plugins", "--json").stdout)
    assert sorted(p["name"] for p in data["plugins"]) == ["skills", "tools"]
    left_out = {n["distribution"]: n["why"] for n in data["not_loaded"]}
    assert left_out == {
        "kairox-mcp": "not in the plugin set of distribution 'minimal' (kairox-minimal)",
        "kairox-stdio": "not in the plugin set of distribution 'minimal' (kairox-minimal)",
    }
    (plus.workspace / "kairox.toml").write_text('[mcp_servers.time]\ncommand = "mcp-server-time"\n')
    status = plus.run("kairox", "status")
    assert status.returncode == 1
    assert (
        'config section "mcp_servers" is provided by kairox-mcp, which is installed but not loaded: '
        "not in the plugin set of distribution 'minimal' (kairox-minimal)"
    ) in status.stdout
    # the user can still choose every installed plugin package
    everything = json.loads(plus.run("kairox", "plugins", "--json", env={"KAIROX_DISTRIBUTION": "none"}).stdout)
    assert {"mcp", "stdio", "tools", "skills"} <= {p["name"] for p in everything["plugins"]}
