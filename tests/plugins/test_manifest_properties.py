"""Property tests over generated manifests of every format (kairox_testing.strategies).

- any JSON gives a manifest or a ManifestError naming the file and a field path, never another exception;
- valid generated manifests load, and their normalised form round-trips through JSON;
- no contribution of a loaded manifest points outside the plugin root;
- one wrong-typed known field fails with that field's path.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kairox_manifests.errors import ManifestError
from kairox_manifests.formats import ClaudeFormat, CodexFormat, KairoxFormat
from kairox_manifests.model import BundleManifest
from kairox_manifests.paths import is_inside
from kairox_philont.manifest import PhilontFormat
from kairox_testing.strategies import (
    FORMATS,
    MANIFEST_FILES,
    PHILONT_MAIN,
    escaping_paths,
    invalid_manifests,
    json_documents,
    manifests,
)

FORMAT_OBJECTS = {
    "kairox": KairoxFormat(),
    "codex": CodexFormat(),
    "claude": ClaudeFormat(),
    "philont": PhilontFormat(),
}
PROPS = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
# one strategy object per format, drawn from in every example: a fresh one per draw would be
# built and validated again each time (most of these tests' run time, the same documents)
JSON_DOCUMENTS = {fmt: json_documents(fmt) for fmt in FORMATS}
MANIFESTS = {fmt: manifests(fmt) for fmt in FORMATS}
INVALID_MANIFESTS = {fmt: invalid_manifests(fmt) for fmt in FORMATS}


def each_format(test: Callable[[str, st.DataObject], None]) -> Callable[..., None]:
    """A property of every manifest format: ``test(fmt, data)`` for each of FORMATS, its
    examples drawn from ``data``."""
    return pytest.mark.parametrize("fmt", FORMATS)(PROPS(given(data=st.data())(test)))


@contextmanager
def plugin_dir(fmt: str, document: Any, *, extra: dict[str, str] | None = None) -> Iterator[Path]:
    """A fresh plugin directory holding ``document`` as the format's manifest."""
    base = Path(tempfile.mkdtemp(prefix="kx-prop-"))
    root = base / "plugin"
    try:
        manifest = root / MANIFEST_FILES[fmt]
        manifest.parent.mkdir(parents=True)
        manifest.write_text(json.dumps(document), encoding="utf-8")
        if fmt == "philont":
            (root / PHILONT_MAIN).write_text("def register(ctx):\n    pass\n")
        for rel, text in (extra or {}).items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        yield root
    finally:
        shutil.rmtree(base, ignore_errors=True)


def load(fmt: str, root: Path) -> BundleManifest | None:
    return FORMAT_OBJECTS[fmt].probe(root)


def contribution_paths(m: BundleManifest) -> list[Path]:
    paths = [c.source for c in m.contributions]
    paths += [c.config.script for c in m.by_kind("hook") if c.config.script is not None]
    if m.code is not None:
        paths.append(m.code.main)
    return paths


def assert_inside(m: BundleManifest, root: Path) -> None:
    real_root = Path(os.path.realpath(root))
    for path in contribution_paths(m):
        assert is_inside(Path(os.path.realpath(path)), real_root), f"{path} is outside {real_root}"


@each_format
def test_any_json_gives_a_manifest_or_a_manifest_error(fmt: str, data: st.DataObject) -> None:
    document = data.draw(JSON_DOCUMENTS[fmt])
    with plugin_dir(fmt, document) as root:
        try:
            m = load(fmt, root)
        except ManifestError as exc:
            assert exc.file, "a manifest error names its file"
            assert isinstance(exc.path, str)
            top = exc.path.split(".")[0].split("[")[0]
            # the path starts at a field of the document (or is empty: the document itself is wrong)
            if exc.file == str(root / MANIFEST_FILES[fmt]) and exc.path:
                assert top in document or top.startswith(("name", "main")), exc.path
            for err in exc.errors:
                assert isinstance(err.message, str) and err.message
        else:
            if m is not None:
                assert_inside(m, root)


@each_format
def test_generated_manifests_load_and_round_trip(fmt: str, data: st.DataObject) -> None:
    document = data.draw(MANIFESTS[fmt])
    with plugin_dir(fmt, document) as root:
        m = load(fmt, root)
        assert m is not None
        expected_name = document["id"] if fmt == "philont" else document["name"] or root.name
        assert m.name == expected_name
        assert m.format == fmt
        again = BundleManifest.from_dict(json.loads(json.dumps(m.to_dict())))
        assert again == m
        assert_inside(m, root)
        # loading twice gives the same manifest (no hidden state)
        assert load(fmt, root) == m


@each_format
def test_wrong_type_of_a_known_field_names_that_field(fmt: str, data: st.DataObject) -> None:
    document, path = data.draw(INVALID_MANIFESTS[fmt])
    with plugin_dir(fmt, document) as root:
        with pytest.raises(ManifestError) as info:
            load(fmt, root)
        err = info.value
        assert err.file == str(root / MANIFEST_FILES[fmt])
        assert err.path == path or err.path.startswith((path + ".", path + "[")), (err.path, path)


@PROPS
@given(
    document=manifests("kairox"),
    field=st.sampled_from(["skills", "commands", "agents"]),
    bad=escaping_paths(),
)
def test_escaping_component_paths_never_load(document: dict[str, Any], field: str, bad: str) -> None:
    document = {**document, field: bad}
    with plugin_dir("kairox", document) as root:
        with pytest.raises(ManifestError) as info:
            load("kairox", root)
        assert info.value.path == field


@PROPS
@given(
    document=manifests("claude"), link_target=st.sampled_from(["skills", "commands", "hooks/hooks.json", ".mcp.json"])
)
def test_symlinked_default_locations_out_of_the_root_never_load(document: dict[str, Any], link_target: str) -> None:
    outside = Path(tempfile.mkdtemp(prefix="kx-outside-"))
    try:
        (outside / "skills" / "evil").mkdir(parents=True)
        (outside / "skills" / "evil" / "SKILL.md").write_text("x")
        (outside / "commands").mkdir()
        (outside / "commands" / "evil.md").write_text("x")
        (outside / "hooks.json").write_text(json.dumps({"hooks": {}}))
        (outside / "mcp.json").write_text(json.dumps({"mcpServers": {"evil": {"command": "evil"}}}))
        source = {"skills": "skills", "commands": "commands", "hooks/hooks.json": "hooks.json", ".mcp.json": "mcp.json"}
        document = {k: v for k, v in document.items() if k not in ("skills", "commands", "hooks", "mcpServers")}
        with plugin_dir("claude", document) as root:
            link = root / link_target
            link.parent.mkdir(parents=True, exist_ok=True)
            assume(not link.exists())
            os.symlink(outside / source[link_target], link)
            try:
                m = load("claude", root)
            except ManifestError:
                return  # refusing is fine; loading what is outside is not
            assert m is not None
            assert_inside(m, root)
            assert all(c.name != "evil" for c in m.contributions)
    finally:
        shutil.rmtree(outside, ignore_errors=True)
