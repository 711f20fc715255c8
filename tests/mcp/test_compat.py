"""kairox-mcp uses the MCP SDK through its public API; the private names it cannot do
without are in one module, ``kairox_mcp._compat``, and pinned here against the installed SDK.

A release of the SDK that moves or removes one of them fails
:func:`test_each_private_name_is_where_the_installed_sdk_keeps_it`; a module of kairox-mcp
that imports a private SDK module elsewhere fails
:func:`test_no_other_module_imports_a_private_sdk_module`; and while a private name is used
at run time, kairox-mcp's ``mcp`` range must stop at the newest release tested
(:func:`test_the_sdk_range_is_the_tested_one`).
"""

from __future__ import annotations

import ast
import importlib
import sys
import typing
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from kairox_mcp import _compat

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "builtin_plugins" / "mcp"
SDK = ("mcp", "mcp_types")

#: what kairox uses of each private name: a release where one lacks it fails here
USED: dict[tuple[str, str], set[str]] = {
    # kairox_mcp.transport.Streams: the transports' streams, as the SDK's client reads and writes them
    ("mcp.shared._stream_protocols", "ReadStream"): {"receive", "aclose", "__aiter__", "__anext__", "__aenter__"},
    ("mcp.shared._stream_protocols", "WriteStream"): {"send", "aclose", "__aenter__", "__aexit__"},
}


def _private_sdk_imports(path: Path) -> Iterator[tuple[bool, str, str]]:
    """``(under TYPE_CHECKING, module, name)`` for each import of a private SDK module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
        for stmt in node.body
        for inner in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found = [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found = [(alias.name, "") for alias in node.names]
        else:
            continue
        for module, name in found:
            parts = module.split(".")
            if parts[0] in SDK and any(p.startswith("_") for p in parts[1:]):
                yield id(node) in typing_only, module, name


def test_no_other_module_imports_a_private_sdk_module() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {module}"
        for path in sorted((PACKAGE / "src").rglob("*.py"))
        if path.name != "_compat.py"
        for _typing, module, _name in _private_sdk_imports(path)
    ]
    assert found == [], "use the SDK's public API, or add the name to kairox_mcp._compat with why"


def test_compat_lists_what_it_imports() -> None:
    imports = list(_private_sdk_imports(PACKAGE / "src" / "kairox_mcp" / "_compat.py"))
    assert sorted((m, n) for typing_only, m, n in imports if typing_only) == sorted(_compat.TYPING_NAMES)
    assert sorted((m, n) for typing_only, m, n in imports if not typing_only) == sorted(_compat.RUNTIME_NAMES)


def test_each_private_name_is_where_the_installed_sdk_keeps_it() -> None:
    assert set(USED) == {*_compat.RUNTIME_NAMES, *_compat.TYPING_NAMES}, "say here what kairox uses of each"
    for (module, name), members in USED.items():
        found = getattr(importlib.import_module(module), name, None)
        assert found is not None, f"mcp {version('mcp')} has no {module}.{name}"
        assert typing.get_origin(found) is None and members <= set(dir(found)), (
            f"mcp {version('mcp')}: {module}.{name} lacks {sorted(members - set(dir(found)))}"
        )


def range_problem(specifier: SpecifierSet, tested: Version, runtime_names: tuple[object, ...]) -> str | None:
    """Why ``specifier`` (kairox-mcp's ``mcp`` range) does not fit the SDK ``tested`` here, if it does not."""
    if tested not in specifier:
        return f"the installed mcp {tested} is outside kairox-mcp's range {specifier}"
    if runtime_names:
        tops = [Version(s.version) for s in specifier if s.operator in ("<=", "==", "===")]
        if not tops or min(tops) > tested:
            return f"private SDK names are used at run time: the range {specifier} must stop at {tested}, the newest tested"
    return None


def test_the_sdk_range_is_the_tested_one() -> None:
    project = tomllib.loads((PACKAGE / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    [sdk] = [r for r in map(Requirement, project["dependencies"]) if r.name == "mcp"]
    assert range_problem(sdk.specifier, Version(version("mcp")), _compat.RUNTIME_NAMES) is None


def test_a_range_past_the_tested_release_is_refused_while_a_private_name_runs() -> None:
    name = (("mcp.shared._x", "y"),)
    assert range_problem(SpecifierSet(">=2.3,<3"), Version("2.3.0"), ()) is None
    assert "must stop at 2.3.0" in str(range_problem(SpecifierSet(">=2.3,<3"), Version("2.3.0"), name))
    assert "must stop" in str(range_problem(SpecifierSet(">=2.3,<=2.4"), Version("2.3.0"), name))
    assert range_problem(SpecifierSet(">=2.3,<=2.3.0"), Version("2.3.0"), name) is None
    assert "outside" in str(range_problem(SpecifierSet(">=2.4"), Version("2.3.0"), ()))
