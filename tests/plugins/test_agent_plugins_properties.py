"""Properties of the Agent Plugins 1.0.0 reader, each from a rule of spec/1.0.0.md:

- any JSON plugin.json is a manifest, not this format's, or a ManifestError naming plugin.json
  and (for an object) a field of it; never another exception (§5.2, §5.3);
- unknown top-level fields are each reported (a warning naming the field) and change nothing
  else (§5.2: report and ignore, no semantics);
- any mcp.json (and any server entry) never fails the plugin: it gives servers or errors
  naming mcp.json, and the skills load all the same (§7.2.2, §11.3);
- a working directory, whatever ${PLUGIN_ROOT} / ${PLUGIN_DATA} / ``..`` / links it is
  written with, is inside the plugin root or its data folder, or the entry is refused (§4.1,
  §7.2.1); ./ commands likewise stay inside the root;
- expansion is one pass over exactly the two placeholders (§9.2), and what kairox then does
  with the server table (its own ${VAR} expansion) gives back the expanded text exactly;
- a name is accepted exactly when the official schema's pattern accepts it (§5.5).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from kairox.ext import expand_env
from kairox_manifests.errors import ManifestError
from kairox_manifests.formats import AgentPluginsFormat
from kairox_manifests.formats.agent_plugins import MANIFEST_FIELDS, PLUGIN_SCHEMA, plugin_name_problem
from kairox_manifests.formats.agent_plugins_mcp import MCP_SCHEMA
from kairox_manifests.model import BundleManifest
from kairox_manifests.paths import is_inside
from kairox_manifests.plugindata import expand_placeholders, literal
from kairox_testing.strategies import json_values

PROPS = settings(suppress_health_check=[HealthCheck.too_slow], max_examples=80, deadline=None)
FMT = AgentPluginsFormat()
#: the pattern of ``name`` in the official schemas/1.0.0/plugin.schema.json
SCHEMA_NAME = re.compile(r"^(?!.*(?:--|\.\.))[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?$")

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
_SCHEMAS = st.sampled_from(
    [PLUGIN_SCHEMA, "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json", MCP_SCHEMA, "x"]
)
#: text rich in what placeholders and kairox's ${VAR} references are made of
_DOLLARS = st.lists(
    st.sampled_from([*"${}:-_aZ1/. ", "${PLUGIN_ROOT}", "${PLUGIN_DATA}", "${A}", "$${"]), max_size=14
).map("".join)


@contextmanager
def plugin_dir(files: dict[str, Any]) -> Iterator[tuple[Path, Path]]:
    """A fresh ``(plugin root, kairox home)`` with ``files`` (``*.json``: any JSON value, else text) in the root;
    ``link`` in the root leads to a folder outside it."""
    base = Path(tempfile.mkdtemp(prefix="kx-ap-"))
    root = base / "plugin"
    try:
        for rel, content in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps(content) if rel.endswith(".json") else content
            path.write_text(text, encoding="utf-8")
        root.mkdir(exist_ok=True)
        (base / "outside").mkdir()
        (root / "link").symlink_to(base / "outside")
        yield root, base / "home"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def manifest_documents() -> st.SearchStrategy[Any]:
    keys = st.one_of(st.sampled_from(MANIFEST_FIELDS), _TEXT)
    objects = st.dictionaries(keys, st.one_of(json_values(), _SCHEMAS), max_size=8)
    with_schema = st.builds(lambda d, s: {**d, "$schema": s}, objects, _SCHEMAS)
    return st.one_of(objects, with_schema, with_schema, json_values())


def server_entries() -> st.SearchStrategy[Any]:
    known = st.sampled_from(["type", "command", "args", "env", "cwd", "url", "headers"])
    values = st.one_of(
        json_values(max_leaves=4),
        st.sampled_from(["stdio", "streamable-http", "sse", "./bin/x", "npx", "https://e.example.com/mcp"]),
        _DOLLARS,
        st.lists(_DOLLARS, max_size=3),
        st.dictionaries(st.sampled_from(["A", "PLUGIN_ROOT", "X-A", "x-a"]), _DOLLARS, max_size=3),
    )
    return st.one_of(st.dictionaries(known, values, max_size=5), json_values(max_leaves=4))


SKILL = "---\nname: s\ndescription: a skill\n---\n"


@PROPS
@given(document=manifest_documents())
def test_any_json_is_a_manifest_not_ours_or_an_error_naming_file_and_field(document: Any) -> None:
    with plugin_dir({"plugin.json": document}) as (root, home):
        try:
            m = FMT.probe(root, home=home)
        except ManifestError as exc:
            assert exc.file == str(root / "plugin.json")
            assert isinstance(document, dict) and exc.path, "an object's error names its field"
            top = exc.path.split(".")[0].split("[")[0]
            assert top in document or top in ("$schema", "name"), exc.path
        else:
            if m is not None:
                assert isinstance(document, dict) and document.get("$schema") == PLUGIN_SCHEMA
                assert plugin_name_problem(m.name) == ""


@PROPS
@given(
    extra=st.dictionaries(_TEXT.filter(lambda k: k not in MANIFEST_FIELDS), json_values(max_leaves=4), max_size=5),
)
def test_unknown_root_fields_are_reported_and_change_nothing_else(extra: dict[str, Any]) -> None:
    base = {"$schema": PLUGIN_SCHEMA, "name": "p", "version": "1.0.0"}
    files = {
        "skills/s/SKILL.md": SKILL,
        "mcp.json": {"$schema": MCP_SCHEMA, "mcpServers": {"x": {"type": "stdio", "command": "srv"}}},
    }
    with plugin_dir({"plugin.json": base, **files}) as (root, home):
        plain = FMT.probe(root, home=home)
        (root / "plugin.json").write_text(json.dumps({**base, **extra}))
        more = FMT.probe(root, home=home)
    assert plain is not None and more is not None
    assert len(more.problems) == len(extra)
    assert all(p.severity == "warning" and p.file == str(root / "plugin.json") for p in more.problems)
    assert {p.path for p in more.problems} == {_field(k) for k in extra}
    assert more.contributions == plain.contributions and more.metadata == plain.metadata
    assert (more.name, more.version) == (plain.name, plain.version)


def _field(key: str) -> str:
    from kairox_manifests._schema import join

    return join("", key)


@PROPS
@given(
    document=st.one_of(
        st.builds(
            lambda s: {"$schema": MCP_SCHEMA, "mcpServers": s}, st.dictionaries(_TEXT, server_entries(), max_size=4)
        ),
        st.dictionaries(st.sampled_from(["$schema", "mcpServers", "servers"]), st.one_of(json_values(), _SCHEMAS)),
        json_values(),
    )
)
def test_any_mcp_json_costs_only_the_servers(document: Any) -> None:
    files = {"plugin.json": {"$schema": PLUGIN_SCHEMA, "name": "p"}, "skills/s/SKILL.md": SKILL, "mcp.json": document}
    with plugin_dir(files) as (root, home):
        m = FMT.probe(root, home=home)
        assert m is not None
        assert m.contribution("skill/s") is not None
        for p in m.problems:
            assert (p.severity, p.file) == ("error", str(root / "mcp.json"))
        for server in m.by_kind("mcp_server"):
            _assert_contained(server.config, root, m)


def _assert_contained(table: dict[str, Any], root: Path, m: BundleManifest) -> None:
    real_root = Path(os.path.realpath(root))
    if table["type"] != "stdio":
        return
    data = Path(os.path.realpath(m.metadata["pluginData"]))
    cwd = Path(os.path.realpath(expand_env(table["cwd"], {})))
    assert is_inside(cwd, real_root) or is_inside(cwd, data), cwd
    command = expand_env(table["command"], {})
    if "/" in command:
        assert is_inside(Path(os.path.realpath(command)), real_root), command
    assert expand_env(table["env"]["PLUGIN_ROOT"], {}) == str(real_root)


_PATH_PARTS = st.sampled_from(["a", "b", "..", ".", "link", "${PLUGIN_ROOT}", "${PLUGIN_DATA}", "", "x y"])


@settings(PROPS, max_examples=300)
@given(
    head=st.sampled_from(
        ["./", "${PLUGIN_ROOT}", "${PLUGIN_ROOT}/", "${PLUGIN_DATA}", "${PLUGIN_DATA}/", "", "/", "../"]
    ),
    parts=st.lists(_PATH_PARTS, max_size=5),
    command=st.one_of(st.just("srv"), st.lists(_PATH_PARTS, min_size=1, max_size=4).map(lambda p: "./" + "/".join(p))),
)
@example(head="${PLUGIN_DATA}/", parts=[".."], command="srv")
@example(head="${PLUGIN_ROOT}/", parts=["link"], command="srv")
@example(head="./", parts=["a", "..", "..", "b"], command="./link")
def test_expansion_never_leaves_the_root_or_the_data_folder(head: str, parts: list[str], command: str) -> None:
    cwd = head + "/".join(parts)
    entry = {"type": "stdio", "command": command, "cwd": cwd}
    files = {
        "plugin.json": {"$schema": PLUGIN_SCHEMA, "name": "p"},
        "mcp.json": {"$schema": MCP_SCHEMA, "mcpServers": {"s": entry}},
    }
    with plugin_dir(files) as (root, home):
        (root / "a" / "b").mkdir(parents=True)
        m = FMT.probe(root, home=home)
        assert m is not None
        server = m.contribution("mcp_server/s")
        if server is None:
            [problem] = m.problems
            assert problem.path.startswith("mcpServers.s.") and problem.severity == "error"
        else:
            _assert_contained(server.config, root, m)


def _reference_expansion(text: str, values: dict[str, str]) -> str:
    """§9.2 written the slow, obvious way: cut the text at each exact placeholder, left to right."""
    out, i = [], 0
    while i < len(text):
        for name in ("PLUGIN_ROOT", "PLUGIN_DATA"):
            token = "${" + name + "}"
            if text.startswith(token, i):
                out.append(values[name])
                i += len(token)
                break
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


@PROPS
@given(text=_DOLLARS, root=_DOLLARS, data=_DOLLARS)
def test_expansion_is_one_pass_over_exactly_the_two_placeholders(text: str, root: str, data: str) -> None:
    values = {"PLUGIN_ROOT": root, "PLUGIN_DATA": data}
    expanded = expand_placeholders(text, values)
    assert expanded == _reference_expansion(text, values)  # values holding placeholders are not read again
    if "${PLUGIN_ROOT}" not in text and "${PLUGIN_DATA}" not in text:
        assert expanded == text  # any other ${...} stays literal


@PROPS
@given(text=st.one_of(_DOLLARS, _TEXT))
def test_kairox_gives_back_what_literal_wrote(text: str) -> None:
    # an empty environment: a reference kairox would expand raises (unset), so none is left
    assert expand_env(literal(text), {}) == text


@PROPS
@given(name=st.one_of(st.text("abz09.-A_", max_size=70), st.text(max_size=8)))
def test_names_follow_the_schema_pattern(name: str) -> None:
    assume(len(name) <= 70)
    by_schema = 1 <= len(name) <= 64 and SCHEMA_NAME.match(name) is not None and "\n" not in name
    assert (plugin_name_problem(name) == "") == by_schema, name
