"""MCP registry ``server.json``: runtime and package arguments, placeholders as inputs, remote URL
variables, runtime hints, the older ``registry_name: docker``, and several versions of one server.

Each fixture in ``tests/fixtures/catalog/registry/`` was written for these tests from the
registry's ``server.schema.json`` (one feature each)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairox_catalog._reader import EntryProblem
from kairox_catalog.documents import parse_document
from kairox_catalog.install import Installer, InstallError, _collect_inputs, _no_prompt, server_values
from kairox_catalog.model import CatalogEntry
from kairox_catalog.registry import server_to_entry, version_key
from kairox_testing import KairoxHarness

FIXTURES = Path(__file__).parent.parent / "fixtures" / "catalog" / "registry"


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def entry_of(name: str) -> CatalogEntry:
    result = parse_document(load(name), source="reg")
    assert result.errors == ()
    (entry,) = result.entries
    return entry


def table(entry: CatalogEntry, values: dict[str, str], environ: dict[str, str] | None = None) -> dict[str, Any]:
    env = {"PATH": "/usr/bin:/bin", **(environ or {})}
    return server_values(entry, _collect_inputs(entry, values, env, _no_prompt), env)


def test_oci_runtime_arguments_are_read_per_the_schema() -> None:
    entry = entry_of("oci_runtime_arguments.json")
    assert entry.launch is not None
    # switches are flags alone (false: left out), -e NAME={var} becomes the server's environment,
    # the image the arguments name is used once, with its tag; a named default is its value
    assert entry.launch.command_line() == (
        "docker run -i --rm -e HUB_ACCESS_TOKEN ghcr.io/example/hub-mcp:2.4.0 --toolsets all"
    )
    (token,) = entry.inputs
    assert (token.name, token.kind, token.required, token.secret) == ("HUB_ACCESS_TOKEN", "env", True, True)
    assert token.description == "An access token"
    assert any("--log-file" in n for n in entry.notes)  # optional, no value: left to the user
    values = table(entry, {})
    assert values["env"] == {"HUB_ACCESS_TOKEN": "${HUB_ACCESS_TOKEN}"}  # the secret never in argv nor a file
    assert values["args"].count("ghcr.io/example/hub-mcp:2.4.0") == 1
    assert "true" not in values["args"] and "{token}" not in " ".join(values["args"])


def test_a_positional_value_hint_and_placeholders_become_inputs() -> None:
    entry = entry_of("positional_value_hint.json")
    assert entry.launch is not None
    assert entry.launch.args == ("-y", "@example/files-mcp@0.9.1", "{root_dir}", "--mode", "{mode}")
    assert entry.launch.env == {"FILES_LOG_LEVEL": "info"}  # a fixed value is not an input
    by_name = {i.name: i for i in entry.inputs}
    assert set(by_name) == {"FILES_AUTH", "root_dir", "mode"}
    assert (by_name["root_dir"].kind, by_name["root_dir"].required) == ("arg", True)
    assert by_name["root_dir"].description == "The directory to serve"
    assert (by_name["mode"].kind, by_name["mode"].default, by_name["mode"].required) == ("arg", "read", False)
    auth = by_name["FILES_AUTH"]
    assert (auth.kind, auth.secret, auth.required, auth.template) == ("env", True, True, "Bearer {value}")
    assert any("root_dir" in n and "repeated" in n for n in entry.notes)
    values = table(entry, {"root_dir": "/srv/data", "mode": "write"})
    assert values["args"] == ["-y", "@example/files-mcp@0.9.1", "/srv/data", "--mode", "write"]
    assert values["env"] == {"FILES_LOG_LEVEL": "info", "FILES_AUTH": "Bearer ${FILES_AUTH}"}
    assert table(entry, {"root_dir": "/srv"})["args"][-1] == "read"  # the variable's default


def test_remote_url_variables_are_inputs_with_defaults() -> None:
    entry = entry_of("remote_url_variables.json")
    assert entry.launch is not None and entry.launch.transport == "streamable_http"
    by_name = {i.name: i for i in entry.inputs}
    assert (by_name["tenant"].kind, by_name["tenant"].required) == ("url", True)
    assert (by_name["region"].kind, by_name["region"].default, by_name["region"].required) == ("url", "eu", False)
    auth = by_name["Authorization"]
    assert (auth.kind, auth.secret, auth.template, auth.variable) == ("header", True, "Bearer {value}", "KEY")
    values = table(entry, {"tenant": "acme"})
    assert values["url"] == "https://acme.eu.example.com/mcp"
    assert values["headers"] == {"Authorization": "Bearer ${KEY}"}
    assert table(entry, {"tenant": "acme", "region": "us"})["url"] == "https://acme.us.example.com/mcp"


def test_a_runtime_hint_that_cannot_launch_the_package_falls_back_with_a_note() -> None:
    entry = entry_of("runtime_hint_python.json")
    assert entry.launch is not None
    assert entry.launch.command_line() == "uvx example-pyhint-mcp@3.1.0"
    assert [r.runtime for r in entry.requirements] == ["uv"]
    assert any("'python'" in n for n in entry.notes)


def test_the_older_registry_name_docker() -> None:
    entry = entry_of("older_registry_name_docker.json")
    assert entry.launch is not None
    assert entry.launch.command_line() == "docker run -i --rm -e LEGACY_KEY example/legacy-mcp:0.2.0"
    assert entry.prepare == ("docker", "pull", "example/legacy-mcp:0.2.0")


def test_the_newest_version_of_a_server_wins() -> None:
    result = parse_document(load("several_versions.json"), source="reg")
    assert [(e.name, e.version, e.description) for e in result.entries] == [
        ("tables", "1.7.3", "newer"),
        ("charts", "1.10.0", "ten"),
    ]
    reasons = sorted(e.reason for e in result.errors)
    assert reasons == [
        "version 1.7.2 superseded by 1.7.3",
        "version 1.7.3-beta.1: superseded by version 1.7.3",
        "version 1.9.4: superseded by version 1.10.0",
    ]


# -- properties ------------------------------------------------------------------------------

_scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=12))
_word = st.sampled_from(["run", "-i", "--rm", "-e", "--port", "img", "{token}", "A={token}", "true", "false", "x"])
_argument = st.fixed_dictionaries(
    {},
    optional={
        "type": st.one_of(st.sampled_from(["named", "positional"]), _scalar),
        "name": st.one_of(_word, _scalar),
        "value": st.one_of(_word, _scalar),
        "default": st.one_of(_word, _scalar),
        "valueHint": st.one_of(_word, _scalar),
        "format": st.one_of(st.sampled_from(["boolean", "string"]), _scalar),
        "isRequired": st.one_of(st.booleans(), _scalar),
        "isRepeated": st.one_of(st.booleans(), _scalar),
        "variables": st.one_of(
            _scalar,
            st.dictionaries(
                st.sampled_from(["token", "x"]),
                st.one_of(
                    _scalar,
                    st.dictionaries(
                        st.sampled_from(["isSecret", "isRequired", "default", "description"]), _scalar, max_size=3
                    ),
                ),
                max_size=2,
            ),
        ),
    },
)
_package = st.fixed_dictionaries(
    {
        "registryType": st.sampled_from(["oci", "npm", "pypi", "nuget", "docker", "mcpb"]),
        "identifier": st.sampled_from(["img", "ghcr.io/a/b", "ghcr.io/a/b:${VERSION}", "pkg"]),
    },
    optional={
        "version": st.one_of(st.sampled_from(["1.0.0", "${VERSION}", "latest"]), _scalar),
        "runtimeHint": st.one_of(st.sampled_from(["npx", "uvx", "python", "docker", "podman"]), _scalar),
        "runtimeArguments": st.one_of(st.lists(st.one_of(_argument, _scalar), max_size=6), _scalar),
        "packageArguments": st.one_of(st.lists(st.one_of(_argument, _scalar), max_size=4), _scalar),
        "environmentVariables": st.lists(
            st.fixed_dictionaries({"name": st.sampled_from(["A", "B"])}, optional={"value": _word}), max_size=2
        ),
    },
)


@settings(max_examples=300, deadline=None)
@given(_package)
def test_any_package_is_an_entry_or_an_entry_problem(pkg: dict[str, Any]) -> None:
    doc = {"name": "io.example/p", "description": "d", "packages": [pkg]}
    try:
        entry = server_to_entry(doc, "server")
    except EntryProblem:
        return
    assert entry.launch is not None
    args = entry.launch.args
    if entry.launch.command in ("docker", "podman"):
        images = [a for a in args if a.startswith(("img", "ghcr.io/a/b"))]
        assert len(images) <= 1 or len(set(images)) > 1  # the package's image is never added twice
        assert "${VERSION}" not in " ".join(args)
    names = {i.name for i in entry.inputs}
    assert len(names) == len(entry.inputs)  # one input per name
    for i in entry.inputs:
        if i.kind == "arg":
            assert any(i.placeholder in a for a in args)


_version = st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30))


@given(_version, _version)
def test_version_order_is_semver(a: tuple[int, int, int], b: tuple[int, int, int]) -> None:
    va, vb = ".".join(map(str, a)), ".".join(map(str, b))
    assert (version_key(va) < version_key(vb)) == (a < b)
    assert version_key(f"{va}-rc.1") < version_key(va)
    assert version_key("not a version") < version_key(va)


@given(st.text(max_size=20))
def test_any_version_text_has_a_comparable_key(text: str) -> None:
    key = version_key(text)
    keys = sorted([key, version_key("1.0.0"), version_key("2.0.0-rc.1"), version_key("junk")])  # never raises
    assert len(keys) == 4
    if key[0] == 0:  # not a version: below every version
        assert key < version_key("0.0.0-a")


def test_optional_named_arguments_without_a_value_are_left_out_with_a_note() -> None:
    entry = entry_of("optional_named_arguments.json")
    assert entry.launch is not None
    assert entry.launch.args == ("-y", "@example/options-mcp@1.2.0", "--stdio", "--port", "7070")
    for flag in ("--read-only", "--verbose", "--no-telemetry"):
        assert any(flag in n and "optional" in n for n in entry.notes), flag
    assert entry.unavailable == ""


@pytest.mark.anyio
async def test_a_template_whose_launch_holds_placeholders_is_listed_but_not_installable(
    kairox_harness: KairoxHarness,
) -> None:
    entry = entry_of("unfilled_template.json")
    assert "<<Version>>" in entry.unavailable and "a template" in entry.unavailable
    async with kairox_harness.open() as rt:
        with pytest.raises(InstallError, match="a template, not a published server"):
            await Installer(rt).install(entry)
    assert not (kairox_harness.workspace / "kairox.toml").exists()
