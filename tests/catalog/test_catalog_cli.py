"""``kairox catalog ...`` through the real CLI (click runner over a temporary workspace)."""

from __future__ import annotations

import json

from catalog_server import CatalogServer

from kairox._compat import tomllib
from kairox_testing import KairoxHarness

REG = {
    "servers": [
        {
            "server": {
                "name": "io.github.acme/tickets",
                "description": "Ticket tracker",
                "packages": [{"registryType": "pypi", "identifier": "acme-tickets-mcp", "version": "1.0"}],
            }
        },
        {"server": {"name": "io.github.acme/broken", "packages": "not a list"}},
    ]
}


def config_with(url: str) -> str:
    return f'[[catalog.sources]]\nname = "acme"\nurl = "{url}"\nkind = "mcp-registry"\n'


def test_list_json_offline_has_the_builtin_servers(harness: KairoxHarness) -> None:
    result = harness.cli("catalog", "list", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    names = [e["name"] for e in data["entries"]]
    for expected in ("git", "time", "fetch", "everything", "filesystem", "memory", "sequential-thinking", "playwright"):
        assert expected in names
    time_entry = next(e for e in data["entries"] if e["name"] == "time")
    assert time_entry["launch"]["command"] == "uvx" and time_entry["launch"]["args"] == ["mcp-server-time"]
    assert time_entry["source"] == "builtin"


def test_remote_source_list_search_and_sources(harness: KairoxHarness, catalog_server: CatalogServer) -> None:
    url = catalog_server.serve("/registry.json", REG)
    harness.write_config(config_with(url))
    harness.trust()  # a workspace's catalog sources are fetched only once it is trusted
    listed = harness.cli("catalog", "list", "--source", "acme")
    assert listed.exit_code == 0, listed.output
    assert listed.stdout.splitlines()[0].startswith("tickets ")
    assert f"==> Fetching catalog acme ({url}) ..." in listed.stderr
    assert "done in" in listed.stderr and "1 entries, 1 skipped, downloaded" in listed.stderr
    assert "1 catalog entries were skipped" in listed.stderr

    found = harness.cli("catalog", "search", "ticket", "--json")
    assert [r["name"] for r in json.loads(found.stdout)["results"]] == ["tickets"]
    assert "from cache" in found.stderr  # within the TTL: no second download
    assert len(catalog_server.hits("/registry.json")) == 1

    sources = harness.cli("catalog", "sources", "--json")
    data = json.loads(sources.stdout)
    assert [(s["name"], s["entries"], s["skipped"]) for s in data["sources"]] == [("builtin", 10, 0), ("acme", 1, 1)]
    (skipped,) = data["skipped"]
    assert skipped["where"] == "servers[1].packages" and skipped["reason"] == "expected a list, got 'not a list'"

    text = harness.cli("catalog", "sources", "--refresh")
    assert "skipped acme: servers[1].packages (io.github.acme/broken): expected a list" in text.stdout
    assert catalog_server.hits("/registry.json")[-1].status == 304


def test_unreachable_source_still_lists_the_others(harness: KairoxHarness, catalog_server: CatalogServer) -> None:
    harness.write_config(config_with(catalog_server.url("/missing.json")))
    harness.trust()  # a workspace's catalog sources are fetched only once it is trusted
    result = harness.cli("catalog", "list")
    assert result.exit_code == 0
    assert "time" in result.stdout
    assert "failed" in result.stderr and "HTTP 404" in result.stderr


def test_show_checks_requirements_and_suggests_names(harness: KairoxHarness) -> None:
    shown = harness.cli("catalog", "show", "github")
    assert shown.exit_code == 0
    assert (
        "launch:   docker run -i --rm -e GITHUB_PERSONAL_ACCESS_TOKEN ghcr.io/github/github-mcp-server" in shown.stdout
    )
    assert "GITHUB_PERSONAL_ACCESS_TOKEN (required, secret)" in shown.stdout
    assert "requirements on this machine:" in shown.stdout
    data = json.loads(harness.cli("catalog", "show", "time", "--json").stdout)
    assert data["checks"][0]["requirement"] == "uv"
    missing = harness.cli("catalog", "show", "tme")
    assert missing.exit_code != 0 and "did you mean time" in missing.stderr


def test_search_without_results_exits_1(harness: KairoxHarness) -> None:
    result = harness.cli("catalog", "search", "zzzz-nothing")
    assert result.exit_code == 1 and "nothing matches" in result.stdout


def test_install_and_uninstall_a_remote_server_without_a_terminal(harness: KairoxHarness) -> None:
    path = harness.write_config("# workspace config\n")
    result = harness.cli("catalog", "install", "github-remote", "--no-verify", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["env_needed"] == ["GITHUB_PERSONAL_ACCESS_TOKEN"]
    written = tomllib.loads(path.read_text())["mcp_servers"]["github-remote"]
    assert written["headers"] == {"Authorization": "Bearer ${GITHUB_PERSONAL_ACCESS_TOKEN}"}
    again = harness.cli("catalog", "install", "github-remote", "--no-verify")
    assert again.exit_code == 1 and "already exists" in again.stderr
    removed = harness.cli("catalog", "uninstall", "github-remote")
    assert removed.exit_code == 0 and "removed [mcp_servers.github-remote]" in removed.stdout
    assert path.read_text() == "# workspace config\n"


def test_user_scope_install_needs_yes_when_not_interactive(harness: KairoxHarness) -> None:
    harness.write_config("[policy]\ninclude_temp_dir = false\n")
    refused = harness.cli("catalog", "install", "github-remote", "--scope", "user", "--no-verify")
    assert refused.exit_code == 1 and "pass --yes" in refused.stderr
    assert not (harness.home / "kairox.toml").exists()
    done = harness.cli("catalog", "install", "github-remote", "--scope", "user", "--no-verify", "--yes")
    assert done.exit_code == 0, done.output
    assert "github-remote" in tomllib.loads((harness.home / "kairox.toml").read_text())["mcp_servers"]


def test_bad_input_flag(harness: KairoxHarness) -> None:
    result = harness.cli("catalog", "install", "time", "--input", "novalue")
    assert result.exit_code == 2 and "NAME=VALUE" in result.stderr
