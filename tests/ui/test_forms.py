"""The dashboard's request-body parsers: typed values or a FormError naming the field, nothing else."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox_catalog.install import InstallOptions
from kairox_ui.forms import (
    MAX_BODY,
    FormError,
    InstallRequest,
    coerce_arguments,
    parse_answer,
    parse_install,
    parse_json_object,
    parse_path_override,
    parse_plugin_config,
    parse_plugin_toggle,
    parse_server_action,
    parse_session_skill,
    parse_skill_arguments,
    parse_skill_toggle,
    parse_tool_call,
    parse_uninstall,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
FIELDS = [
    "scope",
    "enabled",
    "contribution",
    "path",
    "name",
    "inputs",
    "force",
    "prepare",
    "verify",
    "answer",
    "kind",
    "description",
    "values",
    "unset",
    "body",
]
bodies = st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8), json_values, max_size=8)

PARSERS = [
    parse_skill_toggle,
    parse_plugin_toggle,
    parse_path_override,
    parse_plugin_config,
    parse_install,
    parse_uninstall,
    parse_answer,
    parse_server_action,
    parse_session_skill,
    parse_skill_arguments,
    parse_tool_call,
]


@given(st.binary(max_size=300))
def test_any_bytes_are_an_object_or_a_form_error(body: bytes) -> None:
    try:
        data = parse_json_object(body)
    except FormError as exc:
        assert exc.field == "" and exc.message
        return
    assert isinstance(data, dict)


@given(json_values)
def test_json_that_is_not_an_object_is_refused(value: Any) -> None:
    body = json.dumps(value).encode()
    if isinstance(value, dict):
        assert parse_json_object(body) == value
    else:
        with pytest.raises(FormError, match="expected a JSON object"):
            parse_json_object(body)


def test_an_oversized_body_is_refused_before_parsing() -> None:
    with pytest.raises(FormError, match="over"):
        parse_json_object(b" " * (MAX_BODY + 1))


@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: p.__name__)
@given(data=bodies)
def test_every_parser_returns_or_names_the_field(parser: Any, data: dict[str, Any]) -> None:
    try:
        parser(data)
    except FormError as exc:
        assert exc.message
        assert (
            exc.field == ""
            or exc.field.split(".")[0] in data
            or exc.field.split(".")[0] in [*FIELDS, "arguments", "form"]
        )


@given(st.sampled_from(["user", "workspace"]), st.booleans())
def test_a_valid_skill_toggle_round_trips(scope: str, enabled: bool) -> None:
    assert parse_skill_toggle({"scope": scope, "enabled": enabled}) == (scope, enabled)


@given(json_values.filter(lambda v: v not in ("user", "workspace")))
def test_a_scope_is_user_or_workspace(scope: Any) -> None:
    with pytest.raises(FormError) as info:
        parse_skill_toggle({"scope": scope, "enabled": True})
    assert info.value.field == "scope"


@given(json_values.filter(lambda v: not isinstance(v, bool)))
def test_enabled_must_be_a_boolean(value: Any) -> None:
    with pytest.raises(FormError) as info:
        parse_plugin_toggle({"enabled": value})
    assert info.value.field == "enabled"


@given(st.text(min_size=1, max_size=20).filter(lambda s: "/" not in s and "\x00" not in s))
def test_a_contribution_is_kind_slash_name(text: str) -> None:
    with pytest.raises(FormError) as info:
        parse_plugin_toggle({"enabled": True, "contribution": text})
    assert info.value.field == "contribution"
    assert parse_plugin_toggle({"enabled": False, "contribution": f"skill/{text}"}) == ("user", False, f"skill/{text}")


@given(st.text(max_size=30))
def test_a_path_override_is_absolute_or_removed(path: str) -> None:
    try:
        scope, value = parse_path_override({"path": path})
    except FormError as exc:
        assert exc.field == "path"
        return
    assert scope == "user"
    assert value is None if path == "" else value == path and (path.startswith("/") or path[1:3] in (":\\", ":/"))


@given(
    st.text(min_size=1, max_size=30).filter(lambda s: s.strip() and "\x00" not in s),
    st.dictionaries(
        st.text(min_size=1, max_size=10).filter(lambda s: "\x00" not in s),
        st.text(max_size=10).filter(lambda s: "\x00" not in s),
        max_size=4,
    ),
    st.booleans(),
)
def test_a_valid_install_request_keeps_every_value(name: str, inputs: dict[str, str], force: bool) -> None:
    request = parse_install({"name": name, "scope": "user", "inputs": inputs, "force": force})
    assert request == InstallRequest(
        name=name.strip(), options=InstallOptions(scope="user", values=inputs, force=force, verify_before_writing=True)
    )


@given(st.dictionaries(st.text(max_size=5), json_values, max_size=4))
def test_install_inputs_must_be_strings(inputs: dict[str, Any]) -> None:
    try:
        request = parse_install({"name": "x", "inputs": inputs})
    except FormError as exc:
        assert exc.field.startswith("inputs")
        return
    assert all(isinstance(v, str) for v in request.options.values.values())


@given(json_values)
def test_an_answer_is_one_of_three_words(value: Any) -> None:
    if value in ("allow_once", "allow_session", "deny"):
        assert parse_answer({"answer": value}) == value
    else:
        with pytest.raises(FormError):
            parse_answer({"answer": value})


SCHEMA_TYPES = st.sampled_from(["string", "integer", "number", "boolean", "array", "object", ["integer", "null"]])


@given(
    st.dictionaries(st.text(min_size=1, max_size=6), SCHEMA_TYPES, max_size=5),
    st.dictionaries(st.text(min_size=1, max_size=6), st.text(max_size=12), max_size=5),
)
def test_form_text_is_coerced_by_the_schema_or_names_the_field(types: dict[str, Any], form: dict[str, str]) -> None:
    schema = {"type": "object", "properties": {k: {"type": t} for k, t in types.items()}}
    try:
        out = coerce_arguments(schema, form)
    except FormError as exc:
        assert exc.field.startswith("form.") and exc.field[5:] in form
        return
    assert set(out) == {k for k, v in form.items() if v != ""}
    for key, value in out.items():
        kind = types.get(key, "string")
        kind = "integer" if isinstance(kind, list) else kind
        expected: Any = {
            "string": str,
            "integer": int,
            "number": (int, float),
            "boolean": bool,
            "array": list,
            "object": dict,
        }[kind]
        assert isinstance(value, expected)
        if isinstance(value, float):
            assert math.isfinite(value)


@given(st.integers(), st.booleans(), st.lists(st.integers(), max_size=3))
def test_typed_values_survive_the_form(number: int, flag: bool, items: list[int]) -> None:
    schema = {"properties": {"n": {"type": "integer"}, "f": {"type": "boolean"}, "xs": {"type": "array"}}}
    form = {"n": str(number), "f": "true" if flag else "false", "xs": json.dumps(items)}
    assert coerce_arguments(schema, form) == {"n": number, "f": flag, "xs": items}


def test_tool_call_arguments_are_an_object() -> None:
    assert parse_tool_call({"arguments": {"a": 1}}) == {"a": 1}
    with pytest.raises(FormError) as info:
        parse_tool_call({"arguments": [1]})
    assert info.value.field == "arguments"
    assert parse_tool_call({"form": {"n": "2"}}, {"properties": {"n": {"type": "number"}}}) == {"n": 2}


def test_a_server_action_names_its_kind_or_none() -> None:
    assert parse_server_action({}) is None
    assert parse_server_action({"kind": "lsp"}) == "lsp"
    with pytest.raises(FormError) as caught:
        parse_server_action({"kind": "shell"})
    assert caught.value.field == "kind"


@given(st.text(max_size=80))
def test_a_session_skill_name_is_checked_before_anything_is_added(name: str) -> None:
    try:
        request = parse_session_skill({"name": name, "description": "d"})
    except FormError as exc:
        assert exc.field == "name"
        return
    assert request.name == name.strip() and ":" not in request.name and 1 <= len(request.name) <= 64


def test_a_session_skill_needs_a_description() -> None:
    with pytest.raises(FormError) as caught:
        parse_session_skill({"name": "notes", "description": "  "})
    assert caught.value.field == "description"
    assert parse_session_skill({"name": "notes", "description": "Notes", "body": "hi"}).body == "hi"
