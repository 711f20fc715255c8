"""What every peer server entry has (:class:`kairox_peer.PeerServerConfig`) and how files reach it.

How ``[lsp_servers]`` and ``[dap_servers]`` entries structure through it is tested in
tests/dap/test_config.py (for both sections).
"""

from __future__ import annotations

from pathlib import PurePath

import pytest

from kairox.ext import ValueMismatch
from kairox_peer import EXTENSION_LANGUAGES, PeerServerConfig, child_env, language_patterns, matches


def test_child_env_takes_empty_values_from_the_base() -> None:
    base = {"PATH": "/bin", "TOKEN": "secret"}
    env = child_env(base, {"TOKEN": "", "MODE": "x", "MISSING": ""})
    assert env == {"PATH": "/bin", "TOKEN": "secret", "MODE": "x"}


def test_language_patterns_come_from_the_extension_table() -> None:
    assert language_patterns(["python"]) == ["*.py", "*.pyi"]
    assert language_patterns(["python", "nonexistent"]) == ["*.py", "*.pyi"]
    assert language_patterns([]) == []
    assert all(f"*{ext}" in language_patterns([lang]) for ext, lang in EXTENSION_LANGUAGES.items())


def test_matches_the_name_the_path_and_any_depth() -> None:
    assert matches(["*.py"], PurePath("pkg/deep/a.py"))
    assert matches(["src/*.c"], PurePath("src/a.c"))
    assert matches(["**/test_*.py"], PurePath("test_a.py"))
    assert not matches(["*.py"], PurePath("pkg/a.pyc"))
    assert not matches([], PurePath("a.py"))


@pytest.mark.parametrize(
    ("field", "value"), [("command", "  "), ("startup_timeout", 0), ("shutdown_timeout", -1.0), ("request_timeout", 0)]
)
def test_a_bad_field_is_refused_naming_it(field: str, value: object) -> None:
    with pytest.raises(ValueMismatch, match=field):
        PeerServerConfig(**{"command": "x", field: value})  # type: ignore[arg-type]
