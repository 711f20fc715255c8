"""Hypothesis properties of the Claude manifest's newer fields, as their parsers are given
them (outside input: any JSON value): ``userConfig`` and ``dependencies`` each give their
model or a :class:`ManifestError` naming the file and a field under it, never anything else;
what is accepted round-trips, and a version range accepted is one semver can read."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kairox_manifests import ManifestError, Problem
from kairox_manifests.dependencies import parse_dependencies, version_matches
from kairox_manifests.userconfig import UserConfigError, check_value, parse_user_config

FILE = "/plugins/kit/.claude-plugin/plugin.json"
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
KEYS = st.sampled_from(["type", "title", "description", "required", "default", "sensitive", "multiple", "min", "max"])
TYPES = st.sampled_from(["string", "number", "boolean", "directory", "file", "color"])
OPTION = st.dictionaries(KEYS, JSON, max_size=6) | st.fixed_dictionaries(
    {"type": TYPES, "title": st.text(max_size=10)}, optional={"default": JSON, "required": JSON, "sensitive": JSON}
)
USER_CONFIG = JSON | st.dictionaries(st.text(min_size=1, max_size=10), OPTION, max_size=4)
VERSION = st.from_regex(r"\A(\^|~|>=|<)?[0-9]{1,2}\.[0-9]{1,2}\.[0-9]{1,2}\Z")
DEPENDENCY = (
    JSON
    | st.text(max_size=12)
    | st.fixed_dictionaries({"name": st.text(max_size=10)}, optional={"version": VERSION | JSON})
)
DEPENDENCIES = JSON | st.lists(DEPENDENCY, max_size=4)


@settings(max_examples=300)
@given(USER_CONFIG)
def test_any_user_config_is_options_or_an_error_naming_a_field(value: Any) -> None:
    problems: list[Problem] = []
    try:
        options = parse_user_config(value, file=FILE, problems=problems)
    except ManifestError as exc:
        assert exc.file == FILE and exc.path.startswith("userConfig"), (exc.file, exc.path)
        return
    assert all(p.path.startswith("userConfig") for p in problems)
    for option in options:
        assert option.key and option.type in ("string", "number", "boolean", "directory", "file")
        if option.default is not None:  # a default the manifest gives is a value its option accepts
            try:
                check_value(option, option.default, check_paths=False)
            except UserConfigError as exc:
                raise AssertionError(f"{option.key}: default {option.default!r} refused: {exc}") from None


@settings(max_examples=300)
@given(DEPENDENCIES)
def test_any_dependencies_are_requirements_or_an_error_naming_a_field(value: Any) -> None:
    try:
        dependencies = parse_dependencies(value, file=FILE)
    except ManifestError as exc:
        assert exc.file == FILE and exc.path.startswith("dependencies"), (exc.file, exc.path)
        return
    for dep in dependencies:
        assert dep.name
        if dep.version:
            version_matches("1.2.3", dep.version)  # a range accepted is one semver reads (no raise)
