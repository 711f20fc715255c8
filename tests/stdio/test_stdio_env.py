"""build_env: the base set, declared env ("" = inherit), env_vars, inherit_env."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox_stdio import BASE_ENV_VARS, build_env

#: the variables of ``RUNTIME`` in the base set
BASE_PART = {
    "PATH": "/usr/bin",
    "HOME": "/home/u",
    "LANG": "C.UTF-8",
    "HTTPS_PROXY": "http://proxy:3128",
    "no_proxy": "localhost",
    "SSL_CERT_FILE": "/etc/ca.pem",
}
RUNTIME = {
    **BASE_PART,
    "OPENAI_API_KEY": "sk-secret",
    "GITHUB_TOKEN": "ghp_secret",
    "BASH_FUNC_x%%": "() { echo hi; }",
    "MY_VAR": "mine",
}


def test_base_set_only_by_default() -> None:
    env = build_env(RUNTIME)
    assert env == BASE_PART


def test_declared_env_inherit_marker_and_literal_values() -> None:
    declared: dict[str, object] = {"GITHUB_TOKEN": "", "MODE": "fast", "PORT": 8080}
    env = build_env(RUNTIME, env=declared)
    assert env["GITHUB_TOKEN"] == "ghp_secret"
    assert env["MODE"] == "fast"
    assert env["PORT"] == "8080"
    assert "OPENAI_API_KEY" not in env


def test_declared_value_overrides_the_base_set() -> None:
    assert build_env(RUNTIME, env={"PATH": "/opt/bin"})["PATH"] == "/opt/bin"


def test_inherit_marker_for_an_unset_variable_leaves_it_out_and_warns_by_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        env = build_env(RUNTIME, env={"MISSING_TOKEN": ""}, server_name="gh")
    assert "MISSING_TOKEN" not in env
    assert "MISSING_TOKEN" in caplog.text and "'gh'" in caplog.text


def test_env_vars_pass_named_variables() -> None:
    env = build_env(RUNTIME, env_vars=["MY_VAR", "NOT_SET"])
    assert env["MY_VAR"] == "mine"
    assert "NOT_SET" not in env and "OPENAI_API_KEY" not in env


def test_inherit_env_passes_everything_but_shell_functions() -> None:
    env = build_env(RUNTIME, inherit_env=True, env={"MODE": "x"})
    assert env == {k: v for k, v in RUNTIME.items() if not k.startswith("BASH_FUNC")} | {"MODE": "x"}


def test_secret_values_are_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        build_env(RUNTIME, env={"GITHUB_TOKEN": "", "X": ""}, inherit_env=False)
    assert "ghp_secret" not in caplog.text and "sk-secret" not in caplog.text


names = st.text(alphabet=st.characters(min_codepoint=65, max_codepoint=90), min_size=1, max_size=8)
values = st.text(max_size=10)


@given(
    runtime=st.dictionaries(st.one_of(names, st.sampled_from(BASE_ENV_VARS)), values, max_size=12),
    declared=st.dictionaries(names, st.one_of(st.just(""), values), max_size=6),
    passed=st.lists(names, max_size=4),
    inherit=st.booleans(),
)
def test_properties(runtime: dict[str, str], declared: dict[str, str], passed: list[str], inherit: bool) -> None:
    env = build_env(runtime, env=declared, env_vars=passed, inherit_env=inherit)
    for name, value in env.items():
        if name in declared and declared[name] != "":
            assert value == declared[name]  # a literal always wins
        else:
            assert value == runtime[name]  # everything else comes from the runtime unchanged
            allowed = inherit or name in BASE_ENV_VARS or name in passed or name in declared
            assert allowed
    for name, value in declared.items():
        if value == "":
            assert (name in env) == (name in runtime)
        else:
            assert name in env
    for name in BASE_ENV_VARS:
        if name in runtime and not runtime[name].startswith("()") and declared.get(name, None) != "":
            assert name in env
