"""A package's modules import each other in layers: no cycle, not even a hidden one.

A cycle is easy to hide: import the other module inside a function, or only under
``TYPE_CHECKING``, and Python stops complaining while the two modules still need
each other (kairox-catalog's ``install`` and ``bundles`` once did). So every import
counts here, wherever it stands in the file, and the graph of a package's own
modules must have no cycle. Every package of the repository is checked: the kernel,
each built-in plugin and each contrib package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PACKAGES = [
    ROOT / "kernel" / "src" / "kairox",
    *sorted(ROOT.glob("builtin_plugins/*/src/kairox_*")),
    *sorted(ROOT.glob("contrib/*/src/kairox_*")),
]

#: the packages whose modules still import each other both ways (at the top of a module,
#: inside a function or under ``TYPE_CHECKING``): the test of each is expected to fail on its
#: assertion, strictly, so a package whose cycles are gone fails it until it leaves this list
#: (while listed, a new cycle inside it goes unnoticed)
STILL_CYCLIC = {
    "kairox",
    "kairox_agents",
    "kairox_cli",
    "kairox_lsp",
    "kairox_manifests",
    "kairox_mcp",
    "kairox_stdio",
    "kairox_ui",
}


def _module_name(path: Path, package: Path) -> str:
    parts = [package.name, *path.relative_to(package).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports, anywhere in its source."""
    modules = {_module_name(p, package): p for p in sorted(package.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                    base = ".".join([*up, *([base] if base else [])])
                targets.add(base)
                targets.update(f"{base}.{alias.name}" for alias in node.names)  # `from . import mod`
        graph[name] = {t for t in targets if t in modules and t != name and t != package.name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (``[a, b, a]``), or ``None``."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for target in sorted(graph[node]):
            cycle = visit(target, [*path, node])
            if cycle:
                return cycle
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start, [])
        if cycle:
            return cycle
    return None


@pytest.mark.parametrize(
    "package",
    [
        pytest.param(
            p,
            id=p.name,
            marks=[pytest.mark.xfail(strict=True, raises=AssertionError, reason="a known cycle")]
            if p.name in STILL_CYCLIC
            else [],
        )
        for p in PACKAGES
    ],
)
def test_the_modules_of_a_package_import_each_other_without_a_cycle(package: Path) -> None:
    graph = import_graph(package)
    assert graph, f"no modules under {package}"
    assert find_cycle(graph) is None


def test_every_package_named_as_still_cyclic_is_one_this_checks() -> None:
    assert STILL_CYCLIC <= {p.name for p in PACKAGES}


def test_a_cycle_hidden_in_a_function_or_under_type_checking_is_found(tmp_path: Path) -> None:
    package = tmp_path / "kairox_demo"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "install.py").write_text("def go():\n    from .bundles import place\n    return place\n")
    (package / "bundles.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kairox_demo.install import go\n"
    )
    (package / "model.py").write_text("from . import bundles\n")
    graph = import_graph(package)
    assert graph["kairox_demo.model"] == {"kairox_demo.bundles"}
    assert find_cycle(graph) == ["kairox_demo.bundles", "kairox_demo.install", "kairox_demo.bundles"]
    (package / "bundles.py").write_text("")
    assert find_cycle(import_graph(package)) is None
