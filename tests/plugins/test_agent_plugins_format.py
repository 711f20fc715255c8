"""Agent Plugins 1.0.0 (agentplugins/agent-plugins-spec, spec/1.0.0.md) read as the specification says:
the closed root plugin.json, skills/, mcp.json, extensions, ${PLUGIN_ROOT}/${PLUGIN_DATA}, the
failure boundaries, and how its plugin.json is told from Philont's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from plugin_helpers import real, write_plugin

from kairox_manifests.discovery import probe
from kairox_manifests.errors import ManifestError
from kairox_manifests.formats import AgentPluginsFormat, ClaudeFormat
from kairox_manifests.formats.agent_plugins import PLUGIN_SCHEMA
from kairox_manifests.formats.agent_plugins_mcp import MCP_SCHEMA
from kairox_manifests.model import BundleManifest
from kairox_manifests.plugindata import plugin_data_dir
from kairox_philont.manifest import PhilontFormat

BUNDLES = Path(__file__).resolve().parent.parent / "fixtures" / "bundles" / "agent-plugins"
FMT = AgentPluginsFormat()


def load(root: Path, home: Path | None = None) -> BundleManifest:
    m = FMT.probe(root, home=home)
    assert m is not None
    return m


def plugin(root: Path, manifest: dict[str, Any] | None = None, files: dict[str, Any] | None = None) -> Path:
    """A plugin folder: ``plugin.json`` (``manifest`` over a minimal one) and ``files``."""
    doc = {"$schema": PLUGIN_SCHEMA, "name": "p", **(manifest or {})}
    return write_plugin(root, {"plugin.json": doc, **(files or {})})


def servers(**entries: Any) -> dict[str, Any]:
    return {"$schema": MCP_SCHEMA, "mcpServers": entries}


def errors(m: BundleManifest) -> dict[str, str]:
    return {p.path: p.message for p in m.problems if p.severity == "error"}


# -- the fixture plugins ----------------------------------------------------------------------


def test_a_full_plugin(tmp_path: Path) -> None:
    root = BUNDLES / "devtools"
    m = load(root, home=tmp_path)
    assert (m.name, m.format, m.version, m.homepage) == (
        "devtools",
        "agent-plugins",
        "0.3.1",
        "https://example.org/devtools",
    )
    assert m.publisher is not None and m.publisher.email == "fixtures@example.org"
    assert [c.key for c in m.contributions] == ["skill/release-checklist", "skill/summarize", "mcp_server/probe"]
    assert m.problems == ()
    assert m.metadata["extensions"] == {
        "com.example.client": {"panel": "left", "hooks": "./com.example.client/hooks/hooks.json"},
        "org.example.other": {"experimental": True},
    }
    assert (m.metadata["license"], m.metadata["keywords"]) == ("Apache-2.0", ["summaries", "release"])
    data = plugin_data_dir("devtools", root, tmp_path)
    assert m.metadata["pluginData"] == str(data) and data.parent == tmp_path / "plugin-data"
    assert not data.exists()  # reading a plugin makes nothing
    probe_server = m.contribution("mcp_server/probe")
    assert probe_server is not None
    r = str(real(root))
    assert probe_server.config == {
        "type": "stdio",
        "command": f"{r}/bin/serve",  # ./ resolved against the root, never expanded
        "args": ["--config", f"{r}/server/config.json", f"--cache={data}/cache", "$${HOME}", "${PLUGIN_ROOT"],
        "env": {
            "DATA_DIR": f"{data}/db",
            # every exact ${PLUGIN_ROOT} is replaced (its "$" stays); ${NOT_EXPANDED} is literal, written $${...}
            "GREETING": f"${r} stays $${{NOT_EXPANDED}}",
            "PLUGIN_ROOT": r,
            "PLUGIN_DATA": str(data),
        },
        "cwd": str(data),
    }


def test_the_same_plugin_elsewhere_gets_another_data_folder(tmp_path: Path) -> None:
    copy = shutil.copytree(BUNDLES / "devtools", tmp_path / "copy" / "devtools")
    assert load(copy, tmp_path).metadata["pluginData"] != load(BUNDLES / "devtools", tmp_path).metadata["pluginData"]
    assert load(copy, tmp_path).metadata["pluginData"] == load(copy, tmp_path).metadata["pluginData"]


def test_failing_components_are_reported_and_the_rest_loads() -> None:
    m = load(BUNDLES / "partly-broken")
    # the skill registry refuses no-frontmatter later (tests/plugins/test_agent_plugins_runtime.py)
    assert [c.key for c in m.contributions] == ["skill/lint", "skill/no-frontmatter", "mcp_server/good"]
    assert errors(m) == {
        "mcpServers.sets-root.env.PLUGIN_ROOT": "PLUGIN_ROOT is set by the client; a server may not set it; server not loaded",
        "mcpServers.climbs-out.command": "'../bin/server' is neither a bare executable name nor a path starting with ./ "
        "(inside the plugin); server not loaded",
        "mcpServers.shell-line.command": "'npx -y some-server' is not one executable (a bare name; arguments go in "
        "args); server not loaded",
        "mcpServers.cwd-escape.cwd": "'${PLUGIN_ROOT}/../elsewhere': outside the plugin root; not read; server not loaded",
        "mcpServers.plain-http.url": "plain http is allowed only to localhost or a loopback address, not "
        "'mcp.example.com'; use https; server not loaded",
        "mcpServers.mixed-variant.command": "not a field of a sse server; server not loaded",
        "mcpServers.websocket.type": "expected one of stdio, streamable-http, sse, got 'ws'; server not loaded",
    }
    assert {p.file for p in m.problems if p.severity == "error"} == {str(BUNDLES / "partly-broken" / "mcp.json")}
    [unknown] = [p for p in m.problems if p.severity == "warning"]
    assert (unknown.path, unknown.file) == ("commands", str(BUNDLES / "partly-broken" / "plugin.json"))
    assert "unknown field (ignored)" in unknown.message


# -- the manifest (section 5) -----------------------------------------------------------------


def test_unknown_root_fields_are_reported_and_ignored(tmp_path: Path) -> None:
    m = load(plugin(tmp_path / "p", {"mcpServers": {"x": {"command": "evil"}}, "skills": "./elsewhere", "id": "p"}))
    assert sorted(p.path for p in m.problems) == ["id", "mcpServers", "skills"]
    assert all(p.severity == "warning" for p in m.problems)
    assert m.contributions == ()  # no semantics for an unknown field: no inline servers, no skills path


def test_a_non_object_extensions_is_reported_and_ignored(tmp_path: Path) -> None:
    m = load(plugin(tmp_path / "p", {"extensions": ["com.example.client"]}, {"skills/a/SKILL.md": "x"}))
    [p] = m.problems
    assert p.path == "extensions" and p.severity == "warning"
    assert "extensions" not in m.metadata


def test_an_extension_value_must_be_an_object_but_its_contents_are_never_read(tmp_path: Path) -> None:
    deep: Any = {"x": [1, {"y": None, "z": "${PLUGIN_ROOT}"}], "$schema": 5}
    m = load(plugin(tmp_path / "a", {"extensions": {"com.example.client": deep, "notreversedomain": {}}}))
    assert m.metadata["extensions"]["com.example.client"] == deep  # kept as written, nothing expanded
    [p] = m.problems
    assert p.path == "extensions.notreversedomain" and "reverse-domain" in p.message
    with pytest.raises(ManifestError) as exc:
        load(plugin(tmp_path / "b", {"extensions": {"com.example.client": True}}))
    assert exc.value.path == "extensions['com.example.client']"


@pytest.mark.parametrize(
    ("manifest", "path", "message"),
    [
        ({"name": "My-Plugin"}, "name", "lowercase"),
        ({"name": "-start"}, "name", "start and end"),
        ({"name": "has--double"}, "name", "'--'"),
        ({"name": "too.many..dots"}, "name", "'..'"),
        ({"name": ""}, "name", "1 to 64"),
        ({"name": "a" * 65}, "name", "1 to 64"),
        ({"name": 7}, "name", "expected a string"),
        ({"version": 1.2}, "version", "expected a string"),
        ({"description": None}, "description", "expected a string"),
        ({"homepage": ["x"]}, "homepage", "expected a string"),
        ({"author": "Ann <ann@example.org>"}, "author", "expected an object"),
        ({"author": {"name": "Ann", "twitter": "@ann"}}, "author.twitter", "not a field of author"),
        ({"author": {"name": 3}}, "author.name", "expected a string"),
        ({"keywords": "a, b"}, "keywords", "expected a list"),
        ({"keywords": ["a", 2]}, "keywords[1]", "expected a string"),
    ],
)
def test_any_other_violation_refuses_the_plugin(
    tmp_path: Path, manifest: dict[str, Any], path: str, message: str
) -> None:
    root = plugin(tmp_path / "p", manifest, files={"skills/a/SKILL.md": "---\nname: a\ndescription: d\n---\n"})
    with pytest.raises(ManifestError) as exc:
        FMT.probe(root)
    assert (exc.value.file, exc.value.path) == (str(root / "plugin.json"), path)
    assert message in exc.value.message


def test_required_fields(tmp_path: Path) -> None:
    root = write_plugin(tmp_path / "p", {"plugin.json": {"$schema": PLUGIN_SCHEMA}})
    with pytest.raises(ManifestError) as exc:
        FMT.probe(root)
    assert (exc.value.path, exc.value.message) == ("name", "required field is missing")


def test_names_the_specification_allows() -> None:
    for name in ("my-plugin", "acme.tools", "lint3r", "a", "a" * 64):
        assert (
            FMT.parse(Path("/nonexistent"), {"$schema": PLUGIN_SCHEMA, "name": name}, Path("/x/plugin.json")).name
            == name
        )


def test_a_schema_that_is_not_a_string_is_not_this_formats_file(tmp_path: Path) -> None:
    root = plugin(tmp_path / "p", {"$schema": 5})
    assert FMT.probe(root) is None  # probe: not an Agent Plugins document
    with pytest.raises(ManifestError) as exc:  # read as one all the same: refused, naming $schema
        FMT.parse(root, json.loads((root / "plugin.json").read_text()), root / "plugin.json")
    assert exc.value.path == "$schema" and PLUGIN_SCHEMA in exc.value.message


def test_another_agent_plugins_version_is_refused(tmp_path: Path) -> None:
    root = plugin(tmp_path / "p", {"$schema": "https://agent-plugins.org/schemas/2.0.0/plugin.schema.json"})
    with pytest.raises(ManifestError) as exc:
        FMT.probe(root)
    assert exc.value.path == "$schema" and "another version" in exc.value.message


def test_metadata_is_validated_only_by_type(tmp_path: Path) -> None:
    weird = {"version": "not semver", "homepage": "not a url", "license": "my own", "author": {"email": "nope"}}
    m = load(plugin(tmp_path / "p", weird))
    assert m.version == "not semver" and m.problems == ()


# -- which plugin.json is whose ----------------------------------------------------------------


def test_philont_and_agent_plugins_tell_their_plugin_json_apart(tmp_path: Path) -> None:
    """The rule: an Agent Plugins $schema makes it Agent Plugins'; else an `id` makes it Philont's;
    else neither reads it. Never both: an Agent Plugins manifest's `main` is never run as code."""
    ap = plugin(tmp_path / "ap", {"id": "ap", "main": "index.js"}, {"index.js": "process.exit(1)"})
    philont = write_plugin(tmp_path / "ph", {"plugin.json": {"id": "ph"}, "index.js": "module.exports = {}"})
    other = write_plugin(tmp_path / "other", {"plugin.json": {"name": "other", "version": "1"}})
    foreign = write_plugin(
        tmp_path / "foreign", {"plugin.json": {"$schema": "https://json.schemastore.org/x", "name": "f"}}
    )
    formats = [FMT, PhilontFormat()]
    m, err = probe(ap, formats)
    assert err is None and m is not None and (m.all_formats, m.code) == (("agent-plugins",), None)
    assert PhilontFormat().probe(ap) is None
    m, err = probe(philont, formats)
    assert err is None and m is not None and m.all_formats == ("philont",)
    assert FMT.probe(philont) is None
    assert probe(other, formats) == (None, None)
    assert probe(foreign, formats) == (None, None)


def test_with_a_claude_manifest_the_agent_plugins_core_fields_win(tmp_path: Path) -> None:
    root = plugin(
        tmp_path / "p",
        {"name": "shared", "version": "2.0.0"},
        {
            ".claude-plugin/plugin.json": {"name": "shared", "version": "1.0.0"},
            "commands/deploy.md": "Deploy.",
            "skills/s/SKILL.md": "---\nname: s\ndescription: d\n---\n",
        },
    )
    m, err = probe(root, [FMT, ClaudeFormat()])
    assert err is None and m is not None
    assert (m.format, m.all_formats, m.version) == ("agent-plugins", ("agent-plugins", "claude"), "2.0.0")
    # the same skill folder reached by both is one skill; Claude adds its command
    assert sorted(c.key for c in m.contributions) == ["command/deploy", "skill/s"]
    [conflict] = m.problems
    assert conflict.kind == "manifest-conflict" and conflict.path == "version"


# -- skills (section 7.1) ------------------------------------------------------------------------


def test_skills_are_immediate_folders_with_a_skill_md(tmp_path: Path) -> None:
    root = plugin(
        tmp_path / "p",
        files={
            "skills/one/SKILL.md": "x",
            "skills/group/two/SKILL.md": "nested: not searched",
            "skills/loose.md": "a file, not a folder",
            "skills/SKILL.md": "skills/ itself is not a skill",
        },
    )
    (root / "skills" / "folder-named" / "SKILL.md").mkdir(parents=True)
    m = load(root)
    assert [c.key for c in m.contributions] == ["skill/one"]
    [p] = m.problems
    assert p.file == str(real(root) / "skills" / "folder-named" / "SKILL.md") and p.severity == "error"


def test_skills_that_is_not_a_folder_is_that_component_types_failure(tmp_path: Path) -> None:
    root = plugin(
        tmp_path / "p", files={"skills": "a file", "mcp.json": servers(s={"type": "stdio", "command": "srv"})}
    )
    m = load(root)
    assert [c.key for c in m.contributions] == ["mcp_server/s"]
    [p] = m.problems
    assert p.severity == "error" and "skills is not a folder" in p.message


# -- mcp.json (section 7.2) -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        ("not json", ""),
        ([], ""),
        ({"mcpServers": {}}, "$schema"),
        ({"$schema": "https://agent-plugins.org/schemas/1.1.0/mcp.schema.json", "mcpServers": {}}, "$schema"),
        ({"$schema": MCP_SCHEMA}, "mcpServers"),
        ({"$schema": MCP_SCHEMA, "mcpServers": []}, "mcpServers"),
        ({"$schema": MCP_SCHEMA, "mcpServers": {}, "servers": {}}, "servers"),
    ],
)
def test_a_bad_mcp_json_disables_mcp_and_the_rest_loads(tmp_path: Path, doc: Any, path: str) -> None:
    root = plugin(tmp_path / "p", files={"skills/a/SKILL.md": "x", "mcp.json": doc})
    m = load(root)
    assert [c.key for c in m.contributions] == ["skill/a"]
    [p] = m.problems
    assert (p.severity, p.file, p.path) == ("error", str(root / "mcp.json"), path)
    assert p.message.endswith("the plugin's MCP servers are not loaded")


def test_an_empty_mcp_servers_is_valid(tmp_path: Path) -> None:
    m = load(plugin(tmp_path / "p", files={"mcp.json": servers()}))
    assert m.contributions == () and m.problems == () and "pluginData" not in m.metadata


def test_remote_servers(tmp_path: Path) -> None:
    entries = {
        "api": {"type": "streamable-http", "url": "https://deploy.example.com/mcp", "headers": {"X-Tenant": "t ${A}"}},
        "events": {"type": "sse", "url": "https://legacy.example.com/sse"},
        "local": {"type": "streamable-http", "url": "http://localhost:8080/mcp"},
        "dotted": {"type": "streamable-http", "url": "http://localhost.:8080/mcp"},
        "loop4": {"type": "streamable-http", "url": "http://127.0.0.2/mcp"},
        "loop6": {"type": "streamable-http", "url": "http://[::1]:9/mcp"},
        "userinfo": {"type": "streamable-http", "url": "https://u:p@deploy.example.com/mcp"},
        "fragment": {"type": "streamable-http", "url": "https://deploy.example.com/mcp#x"},
        "relative": {"type": "streamable-http", "url": "/mcp"},
        "ftp": {"type": "sse", "url": "ftp://example.com/sse"},
        "lan": {"type": "sse", "url": "http://192.168.1.4/sse"},
        "twice": {"type": "sse", "url": "https://e.example.com", "headers": {"X-A": "1", "x-a": "2"}},
        "bad-name": {"type": "sse", "url": "https://e.example.com", "headers": {"X A": "1"}},
        "bad-value": {"type": "sse", "url": "https://e.example.com", "headers": {"X-A": "1\r\nX-B: 2"}},
        "stdio-field": {"type": "streamable-http", "url": "https://e.example.com", "env": {}},
    }
    m = load(plugin(tmp_path / "p", files={"mcp.json": servers(**entries)}))
    assert [c.name for c in m.contributions] == ["api", "events", "local", "dotted", "loop4", "loop6"]
    api = m.contribution("mcp_server/api")
    assert api is not None
    assert api.config == {
        "type": "streamable_http",
        "url": "https://deploy.example.com/mcp",
        "headers": {"X-Tenant": "t $${A}"},  # never expanded
    }
    assert sorted(errors(m)) == [
        "mcpServers.bad-name.headers['X A']",
        "mcpServers.bad-value.headers.X-A",
        "mcpServers.fragment.url",
        "mcpServers.ftp.url",
        "mcpServers.lan.url",
        "mcpServers.relative.url",
        "mcpServers.stdio-field.env",
        "mcpServers.twice.headers.x-a",
        "mcpServers.userinfo.url",
    ]
    assert "pluginData" not in m.metadata  # no subprocess: no data folder


def test_stdio_defaults_and_command_forms(tmp_path: Path) -> None:
    entries = {
        "bare": {"type": "stdio", "command": "npx", "args": ["-y", "pkg"]},
        "bundled": {"type": "stdio", "command": "./bin/server", "cwd": "./data"},
        "no-dot": {"type": "stdio", "command": "bin/server"},
        "absolute": {"type": "stdio", "command": "/usr/bin/env"},
        "placeholder": {"type": "stdio", "command": "${PLUGIN_ROOT}/bin/server"},
        "no-command": {"type": "stdio"},
        "empty-env": {"type": "stdio", "command": "srv", "env": {"TOKEN": ""}},
        "cwd-bare": {"type": "stdio", "command": "srv", "cwd": "data"},
        "cwd-data-escape": {"type": "stdio", "command": "srv", "cwd": "${PLUGIN_DATA}/../x"},
        "data-in-env": {"type": "stdio", "command": "srv", "env": {"PLUGIN_DATA": "x"}},
        "args-not-list": {"type": "stdio", "command": "srv", "args": "a b"},
    }
    root = plugin(tmp_path / "p", files={"mcp.json": servers(**entries), "bin/server": "#!/bin/sh\n", "data/.keep": ""})
    m = load(root, home=tmp_path / "home")
    r = real(root)
    bare, bundled = m.contribution("mcp_server/bare"), m.contribution("mcp_server/bundled")
    assert bare is not None and bundled is not None
    assert (bare.config["command"], bare.config["cwd"]) == ("npx", str(r))  # §7.2.1: the root by default
    assert (bundled.config["command"], bundled.config["cwd"]) == (str(r / "bin" / "server"), str(r / "data"))
    assert sorted(errors(m)) == [
        "mcpServers.absolute.command",
        "mcpServers.args-not-list.args",
        "mcpServers.cwd-bare.cwd",
        "mcpServers.cwd-data-escape.cwd",
        "mcpServers.data-in-env.env.PLUGIN_DATA",
        "mcpServers.empty-env.env.TOKEN",
        "mcpServers.no-command.command",
        "mcpServers.no-dot.command",
        "mcpServers.placeholder.command",
    ]


# -- containment (section 4.1): each written as the attack ---------------------------------------


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    write_plugin(outside, {"stolen/SKILL.md": "---\nname: stolen\ndescription: not the plugin's\n---\n"})
    (outside / "run.sh").write_text("#!/bin/sh\ntouch marker\n")
    (outside / "run.sh").chmod(0o755)
    (outside / "mcp.json").write_text(json.dumps(servers(s={"type": "stdio", "command": "srv"})))
    return outside


def test_a_dotdot_command_is_refused(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    root = plugin(tmp_path / "p", files={"mcp.json": servers(s={"type": "stdio", "command": "./../outside/run.sh"})})
    m = load(root)
    assert m.by_kind("mcp_server") == []
    assert "outside the plugin root" in errors(m)["mcpServers.s.command"]
    assert outside.exists()


def test_a_command_linked_out_of_the_root_is_refused(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    root = plugin(tmp_path / "p", files={"mcp.json": servers(s={"type": "stdio", "command": "./bin/run.sh"})})
    (root / "bin").mkdir()
    (root / "bin" / "run.sh").symlink_to(outside / "run.sh")
    m = load(root)
    assert m.by_kind("mcp_server") == []
    assert f"leads to {outside / 'run.sh'}" in errors(m)["mcpServers.s.command"]


def test_a_skill_folder_linked_out_of_the_root_is_skipped(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    root = plugin(tmp_path / "p", files={"skills/own/SKILL.md": "---\nname: own\ndescription: d\n---\n"})
    (root / "skills" / "stolen").symlink_to(outside / "stolen")
    m = load(root)
    assert [c.key for c in m.contributions] == ["skill/own"]
    [p] = m.problems
    assert (p.kind, p.component, p.file) == ("refused", "skill", str(real(root) / "skills" / "stolen"))


def test_a_skill_md_linked_out_of_the_root_is_skipped(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    root = plugin(tmp_path / "p")
    (root / "skills" / "stolen").mkdir(parents=True)
    (root / "skills" / "stolen" / "SKILL.md").symlink_to(outside / "stolen" / "SKILL.md")
    m = load(root)
    assert m.contributions == ()
    [p] = m.problems
    assert (p.kind, p.component) == ("refused", "skill")


def test_fixed_locations_linked_out_of_the_root_invalidate_their_component_type(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    root = plugin(tmp_path / "p")
    (root / "skills").symlink_to(outside)
    (root / "mcp.json").symlink_to(outside / "mcp.json")
    m = load(root)
    assert m.contributions == ()
    assert sorted((p.kind, p.component) for p in m.problems) == [("refused", "mcp_server"), ("refused", "skill")]


def test_a_plugin_json_linked_out_of_the_root_refuses_the_plugin(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_plugin(outside, {"plugin.json": {"$schema": PLUGIN_SCHEMA, "name": "p"}})
    root = tmp_path / "p"
    root.mkdir()
    (root / "plugin.json").symlink_to(outside / "plugin.json")
    with pytest.raises(ManifestError) as exc:
        FMT.probe(root)
    assert exc.value.file == str(root / "plugin.json") and "outside" in exc.value.message


@pytest.mark.parametrize("cwd", ["${PLUGIN_ROOT}/../outside", "./../outside", "./link", "${PLUGIN_ROOT}/link"])
def test_a_cwd_outside_the_root_is_refused(tmp_path: Path, cwd: str) -> None:
    _outside(tmp_path)
    root = plugin(tmp_path / "p", files={"mcp.json": servers(s={"type": "stdio", "command": "srv", "cwd": cwd})})
    (root / "link").symlink_to(tmp_path / "outside")
    m = load(root)
    assert m.by_kind("mcp_server") == []
    assert "outside the plugin root" in errors(m)["mcpServers.s.cwd"]


def test_a_data_cwd_linked_out_of_the_data_folder_is_refused(tmp_path: Path) -> None:
    _outside(tmp_path)
    home = tmp_path / "home"
    root = plugin(
        tmp_path / "p", files={"mcp.json": servers(s={"type": "stdio", "command": "srv", "cwd": "${PLUGIN_DATA}/x"})}
    )
    data = plugin_data_dir("p", root, home)
    data.mkdir(parents=True)
    (data / "x").symlink_to(tmp_path / "outside")  # left there by an earlier run of the plugin's server
    m = load(root, home)
    assert m.by_kind("mcp_server") == []
    assert "outside the plugin's data folder" in errors(m)["mcpServers.s.cwd"]
