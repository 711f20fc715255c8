"""A document nested 5,000 or 100,000 levels deep (or 500: parsed, then walked recursively)
is refused by every parser of outside input with an error naming the file, never a traceback.

Each parser reads through ``kairox.files.loads_bounded`` (or ``read_document``, or the
bounded YAML loader): the parser's own ``RecursionError`` and anything deeper than
``kairox.files.MAX_DOCUMENT_DEPTH`` after parsing are one ``ValueError`` saying so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kairox.errors import ConfigError
from kairox.files import MAX_DOCUMENT_DEPTH, check_depth, loads_bounded, read_document
from kairox_testing import KairoxHarness

DEPTHS = [500, 5_000, 100_000]


def deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def deep_toml(depth: int) -> str:
    return "deep = " + "[" * depth + "]" * depth + "\n"


@pytest.mark.parametrize("depth", DEPTHS)
def test_loads_bounded_refuses_any_depth_past_the_bound(depth: int) -> None:
    from kairox._compat import tomllib

    for text, loads in ((deep_json(depth), json.loads), (deep_toml(depth), tomllib.loads)):
        with pytest.raises(ValueError, match=f"nested deeper than {MAX_DOCUMENT_DEPTH} levels"):
            loads_bounded(text, loads)


def test_check_depth_counts_nested_collections() -> None:
    at_bound = json.loads(deep_json(MAX_DOCUMENT_DEPTH))
    check_depth(at_bound)
    with pytest.raises(ValueError):
        check_depth([at_bound])
    check_depth({"a": [1, {"b": "c"}]}, max_depth=3)
    with pytest.raises(ValueError):
        check_depth({"a": [1, {"b": ["c"]}]}, max_depth=3)


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("kind", ["JSON", "TOML"])
def test_read_document_names_the_file(tmp_path: Path, depth: int, kind: str) -> None:
    from kairox._compat import tomllib

    path = tmp_path / ("doc.json" if kind == "JSON" else "doc.toml")
    path.write_text(deep_json(depth) if kind == "JSON" else deep_toml(depth), encoding="utf-8")
    errors: list[ConfigError] = []
    assert read_document(path, errors, json.loads if kind == "JSON" else tomllib.loads, kind) is None
    [error] = errors
    assert str(path) in str(error) and "nested deeper than" in str(error)


def test_read_document_refuses_a_file_past_its_size_bound(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text('{"a": "' + "x" * 2000 + '"}', encoding="utf-8")
    errors: list[ConfigError] = []
    assert read_document(path, errors, json.loads, "JSON", max_bytes=1000) is None
    assert str(path) in str(errors[0]) and "larger than 1,000 bytes" in str(errors[0])


def _deep_catalog(depth: int) -> str:
    entry = {"name": "deep", "description": "x", "launch": {"command": "echo", "args": []}}
    text = json.dumps({"entries": [{**entry, "manifest": {"a": "HOLE"}}]})
    return text.replace('"HOLE"', deep_json(depth))


@pytest.mark.parametrize("depth", DEPTHS)
def test_catalog_list_json_answers_with_an_error_naming_the_document(
    kairox_harness: KairoxHarness, tmp_path: Path, depth: int
) -> None:
    """At 500 levels the document parsed, and ``attrs.asdict`` raised RecursionError out of
    ``kairox catalog list --json`` (a traceback, exit 1)."""
    doc = tmp_path / "deep-catalog.json"
    doc.write_text(_deep_catalog(depth), encoding="utf-8")
    kairox_harness.write_config(
        f'[catalog]\nbuiltin = false\n[[catalog.sources]]\nname = "deep"\nurl = {json.dumps(str(doc))}\n',
        where="user",
    )
    result = kairox_harness.cli("catalog", "list", "--json", load_entrypoints=True)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["entries"] == []
    [error] = data["errors"]
    assert str(doc) in error and "nested deeper than" in error


@pytest.mark.parametrize("depth", DEPTHS)
def test_manifest_settings_hook_answer_lsp_and_skill_settings_refuse_depth(tmp_path: Path, depth: int) -> None:
    from kairox.ext import SkillError
    from kairox_lsp._config import load_lsp_json
    from kairox_manifests._schema import read_json
    from kairox_manifests.errors import ManifestError
    from kairox_manifests.hookscripts import parse_answer
    from kairox_skills._settings import SettingsFile

    deep = tmp_path / "deep.json"
    deep.write_text(deep_json(depth), encoding="utf-8")

    with pytest.raises(ManifestError) as manifest:
        read_json(deep)
    assert str(deep) in str(manifest.value) and "nested deeper than" in str(manifest.value)

    servers, errors = load_lsp_json(deep)
    assert servers == {} and str(deep) in str(errors[0]) and "nested deeper than" in str(errors[0])

    with pytest.raises(SkillError) as skill:
        SettingsFile(deep).read()
    assert str(deep) in str(skill.value) and "nested deeper than" in str(skill.value)

    with pytest.raises(ValueError, match="expected a JSON object"):
        parse_answer(deep_json(depth), text_is_context=False)  # a hook's stdout: no file to name


@pytest.mark.parametrize("depth", DEPTHS)
def test_bundle_settings_file_refuses_depth_with_a_warning(
    tmp_path: Path, depth: int, caplog: pytest.LogCaptureFixture
) -> None:
    from kairox_manifests.settings import SettingsStore

    store = SettingsStore(workspace=tmp_path, env={"KAIROX_HOME": str(tmp_path / "home")})
    path = store.file("workspace")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(deep_json(depth), encoding="utf-8")
    with caplog.at_level("WARNING"):
        assert store.read("workspace") == {}
    assert str(path) in caplog.text and "nested deeper than" in caplog.text


@pytest.mark.parametrize("depth", DEPTHS)
def test_frontmatter_yaml_refuses_depth_naming_the_file(tmp_path: Path, depth: int) -> None:
    from kairox.ext import SkillError
    from kairox_skills._format import load_yaml

    text = "name: deep\nextra: " + "[" * depth + "]" * depth + "\n"
    with pytest.raises(SkillError) as info:
        load_yaml(text, file="skills/deep/SKILL.md")
    assert "skills/deep/SKILL.md" in str(info.value)
