"""The public API: every name in kairox.__all__ resolves lazily; __all__ is the export table."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kairox
import kairox.cli


def test_all_matches_the_lazy_export_table() -> None:
    assert kairox.__all__ == sorted([*kairox._EXPORTS, "hookimpl", "hookspec"])
    assert sorted(dir(kairox)) == kairox.__all__


@pytest.mark.parametrize("name", kairox.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(kairox, name) is not None


def test_unknown_attribute() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        kairox.nope  # noqa: B018


def test_names_load_lazily() -> None:
    code = "import kairox, sys; assert 'kairox._runtime' not in sys.modules; kairox.Runtime; assert 'kairox._runtime' in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_cli_helpers_for_plugins() -> None:
    assert set(kairox.cli.__all__) >= {"run_with_runtime", "echo_json", "want_json", "tty_approver", "main"}
