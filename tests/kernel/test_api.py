"""The public API: every name in kairox.__all__ resolves lazily; __all__ is the export table."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import kairox


def test_the_stub_is_the_one_export_list() -> None:
    stub = ast.parse((Path(kairox.__file__).parent / "__init__.pyi").read_text())
    listed = [alias.name for node in stub.body if isinstance(node, ast.ImportFrom) for alias in node.names]
    assert sorted(listed) == kairox.__all__ == sorted(dir(kairox))
    assert len(set(listed)) == len(listed)  # each name once
    # each re-exported by name (``X as X``), so type checkers see it as public
    assert all(
        alias.asname == alias.name for node in stub.body if isinstance(node, ast.ImportFrom) for alias in node.names
    )
    assert not [name for name in listed if name.startswith("_")]


@pytest.mark.parametrize("name", kairox.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(kairox, name) is not None


def test_unknown_attribute() -> None:
    with pytest.raises(AttributeError, match="nope"):
        kairox.nope  # noqa: B018


def test_names_load_lazily() -> None:
    code = "import kairox, sys; assert 'kairox._runtime' not in sys.modules; kairox.Runtime; assert 'kairox._runtime' in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_public_api_is_small_and_every_name_is_documented() -> None:
    # plugin authors and embedding hosts hold it in their head: at most 60 names, each in docs/api.md
    assert len(kairox.__all__) <= 60
    page = (Path(__file__).parents[2] / "docs" / "api.md").read_text()
    undocumented = [name for name in kairox.__all__ if f"| `{name}` |" not in page]
    assert not undocumented, f"not described in docs/api.md: {undocumented}"


def test_what_the_builtins_share_is_in_kairox_ext_listed_once() -> None:
    import kairox.ext

    page = (Path(__file__).parents[2] / "docs" / "api.md").read_text()
    ext_part = page[page.index("## `kairox.ext`") :]
    assert not set(kairox.ext.__all__) & set(kairox.__all__)
    assert [name for name in kairox.ext.__all__ if f"`{name}`" not in ext_part] == []
    for name in kairox.ext.__all__:
        assert getattr(kairox.ext, name) is not None


def test_kairox_ext_loads_lazily() -> None:
    code = (
        "import sys, kairox.ext; assert 'kairox._policy' not in sys.modules; "
        "kairox.ext.PolicyEngine; assert 'kairox._policy' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
