"""kairox._convert.structure: outside documents into attrs classes, errors with field paths."""

from __future__ import annotations

import enum
from typing import Any, Literal

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox import ConfigError
from kairox._convert import describe_value, errors_from, structure


class Color(str, enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.frozen
class Author:
    name: str
    email: str | None = None


@attrs.frozen
class Manifest:
    name: str
    version: str = "0"
    authors: list[Author] = attrs.field(factory=list)
    tags: tuple[str, ...] = ()
    meta: dict[str, Any] = attrs.field(factory=dict)
    scores: dict[str, float] = attrs.field(factory=dict)
    color: Color = Color.RED
    level: Literal[1, 2, 3] = 1
    strict: bool = False


def test_structures_nested_documents() -> None:
    doc = {
        "name": "demo",
        "authors": [{"name": "Ada"}, {"name": "Bob", "email": "b@x"}],
        "tags": ["a", "b"],
        "meta": {"anything": [1, {"goes": True}]},
        "scores": {"x": 1, "y": 2.5},
        "color": "blue",
        "level": 2,
    }
    m = structure(doc, Manifest)
    assert m.authors == [Author("Ada"), Author("Bob", "b@x")]
    assert m.tags == ("a", "b") and m.color is Color.BLUE and m.level == 2
    assert m.scores == {"x": 1.0, "y": 2.5} and isinstance(m.scores["x"], float)


def test_all_errors_are_collected_with_paths() -> None:
    doc = {
        "name": 1,
        "authors": [{"name": "ok"}, {"nam": "typo"}],
        "tags": "a",
        "color": "green",
        "level": True,
        "strict": "yes",
        "bogus": 1,
    }
    with pytest.raises(ConfigError) as info:
        structure(doc, Manifest, path="plugin", file="plugin.json")
    errors = info.value.errors
    assert info.value is errors[0]
    found = {(e.file, e.path, e.message) for e in errors}
    assert found == {
        ("plugin.json", "plugin.name", "expected a string, got 1"),
        ("plugin.json", "plugin.authors[1].nam", "unknown key; did you mean 'name'?"),
        ("plugin.json", "plugin.authors[1].name", "required key is missing"),
        ("plugin.json", "plugin.tags", "expected a list, got 'a'"),
        ("plugin.json", "plugin.color", "expected one of 'red', 'blue', got 'green'"),
        ("plugin.json", "plugin.level", "expected one of 1, 2, 3, got True"),
        ("plugin.json", "plugin.strict", "expected a boolean (true or false), got 'yes'"),
        (
            "plugin.json",
            "plugin.bogus",
            "unknown key; valid keys: name, version, authors, tags, meta, scores, color, level, strict",
        ),
    }


@pytest.mark.parametrize(
    ("value", "cls", "message"),
    [
        (3, str, "expected a string, got 3"),
        ("3", int, "expected an integer, got '3'"),
        (True, int, "expected an integer, got True"),
        ("x", float, "expected a number, got 'x'"),
        (1, bool, "expected a boolean (true or false), got 1"),
        ([], Manifest, "expected a table, got a list"),
        ({}, list[str], "expected a list, got a table"),
        ("s", dict[str, str], "expected a table, got 's'"),
    ],
)
def test_top_level_mismatch(value: Any, cls: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        structure(value, cls, path="doc")
    assert (info.value.path, info.value.message) == ("doc", message)


def test_describe_value_is_short() -> None:
    assert describe_value("x" * 100).endswith("...") and len(describe_value("x" * 100)) == 40
    assert describe_value({"a": 1}) == "a table"


def test_a_single_error_lists_itself() -> None:
    alone = ConfigError("nope", file="f", path="a")
    assert alone.errors == [alone]
    with pytest.raises(ConfigError) as info:
        structure({"name": 1}, Manifest, path="plugin")
    assert info.value.errors == [info.value] and info.value.path == "plugin.name"


def test_errors_from_plain_exception() -> None:
    [err] = errors_from(ValueError("nope"), path="a.b", file="f")
    assert (err.file, err.path, err.message) == ("f", "a.b", "nope")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=15,
)
MANIFESTISH = st.fixed_dictionaries(
    {},
    optional={
        "name": JSON,
        "authors": st.lists(
            st.dictionaries(st.sampled_from(["name", "email", "x"]), JSON, max_size=3) | JSON, max_size=3
        ),
        "tags": JSON,
        "color": st.sampled_from(["red", "blue", "green"]) | JSON,
        "level": st.sampled_from([1, 2, 3, 4]) | JSON,
        "meta": JSON,
        "scores": st.dictionaries(st.text(max_size=3), JSON, max_size=3) | JSON,
    },
)


@given(doc=MANIFESTISH | JSON)
def test_any_json_gives_an_object_or_config_errors(doc: Any) -> None:
    try:
        result = structure(doc, Manifest, path="m", file="m.json")
    except ConfigError as exc:
        for err in exc.errors:
            assert isinstance(err, ConfigError)
            assert err.file == "m.json" and err.path.startswith("m")
    else:
        assert isinstance(result, Manifest)


def test_an_attrs_validator_s_refusal_names_the_field_and_the_value() -> None:
    """attrs runs validators in ``__init__``, where cattrs cannot say which field failed."""
    import attrs as _attrs

    def positive(instance: object, attribute: object, value: float) -> None:
        if value <= 0:
            raise ValueError("must be greater than 0")

    @_attrs.frozen
    class Section:
        name: str = ""
        timeout: float = _attrs.field(default=1.0, validator=positive)
        api_token: float = _attrs.field(default=1.0, validator=positive)

    with pytest.raises(ConfigError) as info:
        structure({"name": "a", "timeout": -2}, Section, path="net", file="k.toml")
    assert str(info.value) == "k.toml: net.timeout: must be greater than 0 (got -2.0)"
    with pytest.raises(ConfigError) as info:
        structure({"api_token": -7}, Section, path="net", file="k.toml")
    assert str(info.value) == "k.toml: net.api_token: must be greater than 0 (not shown: secret)"
