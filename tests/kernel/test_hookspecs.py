"""Meta-tests of the contract: every hookspec typed, documented in its docstring and in
docs/hooks.md with its exact argument names, and exercised by some test."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pluggy
import pytest

from kairox import hookspecs

ROOT = Path(__file__).resolve().parents[2]
HOOKS_DOC = ROOT / "docs" / "hooks.md"


def spec_functions() -> dict[str, object]:
    return {
        name: fn
        for name, fn in vars(hookspecs).items()
        if callable(fn) and getattr(fn, "kairox_spec", None) is not None
    }


SPECS = spec_functions()


def argnames(name: str) -> tuple[str, ...]:
    return tuple(inspect.signature(SPECS[name]).parameters)  # type: ignore[arg-type]


def test_the_hooks_of_the_contract() -> None:
    assert set(SPECS) == {
        "kairox_addhooks",
        "kairox_register_tool_providers",
        "kairox_register_skill_sources",
        "kairox_register_catalog_sources",
        "kairox_register_manifest_formats",
        "kairox_register_config_sections",
        "kairox_register_commands",
        "kairox_session_start",
        "kairox_session_end",
        "kairox_instructions",
        "kairox_pre_turn",
        "kairox_pre_tool_call",
        "kairox_post_tool_call",
        "kairox_event",
    }
    pm = pluggy.PluginManager("kairox")
    pm.add_hookspecs(hookspecs)
    assert {n for n in dir(pm.hook) if n.startswith("kairox_")} == set(SPECS)
    for name in SPECS:
        assert getattr(pm.hook, name).spec.argnames == argnames(name)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_hookspec_is_typed_and_its_docstring_covers_every_argument(name: str) -> None:
    fn = SPECS[name]
    annotations = fn.__annotations__  # type: ignore[attr-defined]
    for arg in argnames(name):
        assert arg in annotations, f"{name}: argument {arg} has no type"
        assert f":param {arg}:" in (fn.__doc__ or ""), f"{name}: docstring does not describe {arg}"
    assert "return" in annotations, f"{name}: no return type"
    assert ":return:" in (fn.__doc__ or ""), f"{name}: docstring does not say what the return value means"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_hookspec_body_is_empty(name: str) -> None:
    [node] = ast.parse(inspect.getsource(SPECS[name])).body  # type: ignore[arg-type]
    assert isinstance(node, ast.FunctionDef)
    assert len(node.body) == 1 and isinstance(node.body[0], ast.Expr), f"{name}: a spec body is its docstring only"


def documented_hooks() -> dict[str, tuple[str, ...]]:
    found: dict[str, tuple[str, ...]] = {}
    for m in re.finditer(r"^#{2,4} `(kairox_\w+)\(([^)]*)\)`", HOOKS_DOC.read_text(encoding="utf-8"), re.M):
        found[m.group(1)] = tuple(a.strip() for a in m.group(2).split(",") if a.strip())
    return found


@pytest.mark.parametrize("name", sorted(SPECS))
def test_hook_is_documented_with_its_signature(name: str) -> None:
    documented = documented_hooks()
    assert name in documented, f"{name} is not documented in docs/hooks.md (a '### `{name}(...)`' heading)"
    assert documented[name] == argnames(name), f"docs/hooks.md documents {name}{documented[name]}"


def test_docs_document_no_hook_that_does_not_exist() -> None:
    assert set(documented_hooks()) <= set(SPECS)


def test_every_hook_is_exercised_by_a_test() -> None:
    this = Path(__file__).resolve()
    sources = [
        p.read_text(encoding="utf-8")
        for base in (ROOT / "tests", *ROOT.glob("contrib/*/tests"))
        for p in base.rglob("*.py")
        if p.resolve() != this
    ]
    untested = [name for name in SPECS if not any(name in text for text in sources)]
    assert untested == [], f"hooks no test uses: {untested}"
