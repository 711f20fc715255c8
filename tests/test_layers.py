"""What may import what (docs/architecture.md), checked on the source with ``ast``.

- The kernel (``kernel/src/kairox``) imports no feature package (``kairox_*``).
- A feature package uses another one's public names only. The private imports
  that remain (issue 16) are listed in :data:`KNOWN_CROSS_PRIVATE`; a new one
  fails, and so does a listed one that is gone (strike it: the list only shrinks).
- Feature packages and ``contrib/`` import no private kernel module (``kairox._*``) nor one
  of kairox-cli, kairox-process or kairox-peer (``kairox_cli._*``, ``kairox_process._*``,
  ``kairox_peer._*``): ruff's TID251
  (banned-api, in the test command's lint) says so at the line; this file checks that
  the ban list names every private module.
- The distributions' dependencies (``pyproject.toml``) form no cycle, and kairox-dap
  does not depend on kairox-lsp: the layer they share is kairox-peer.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]

KNOWN_CROSS_PRIVATE: set[tuple[str, str]] = set()


def _imports(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def _feature_files() -> Iterator[tuple[str, Path]]:
    for path in sorted([*ROOT.glob("builtin_plugins/*/src/**/*.py"), *ROOT.glob("contrib/*/src/**/*.py")]):
        package = next(p for p in path.relative_to(ROOT).parts if p.startswith("kairox_"))
        yield package, path


def _kernel_private(module: str) -> bool:
    parts = module.split(".")
    if parts[0] != "kairox" or len(parts) < 2:
        return False
    return parts[1].startswith("_")


def test_the_kernel_imports_no_feature_package() -> None:
    found = {
        f"{path.relative_to(ROOT)}: {module.split('.')[0]}"
        for path in sorted((ROOT / "kernel" / "src" / "kairox").rglob("*.py"))
        for module in _imports(path)
        if module.split(".")[0].startswith("kairox_")
    }
    assert found == set()


def test_feature_packages_use_each_other_s_public_names_only() -> None:
    found = {
        (package, module)
        for package, path in _feature_files()
        for module in _imports(path)
        if module.split(".")[0].startswith("kairox_")
        and module.split(".")[0] != package
        and any(part.startswith("_") for part in module.split(".")[1:])
    }
    assert found - KNOWN_CROSS_PRIVATE == set(), "a new private import across packages"
    assert KNOWN_CROSS_PRIVATE - found == set(), "gone: strike it from KNOWN_CROSS_PRIVATE"


def test_no_feature_package_imports_a_private_kernel_module() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {module}"
        for _, path in _feature_files()
        for module in _imports(path)
        if _kernel_private(module)
    ]
    assert found == []


def test_the_lint_bans_every_private_module_of_the_kernel_and_the_libraries() -> None:
    """The libraries feature packages build on: the kernel, kairox-cli (every plugin's commands'),
    kairox-process (every feature's children) and kairox-peer (kairox-lsp's and kairox-dap's)."""
    kernel = ROOT / "kernel" / "src" / "kairox"
    private = {f"kairox.{p.stem}" for p in kernel.glob("_*.py") if p.stem != "__init__"}
    for library in ("cli", "process", "peer"):
        package = ROOT / "builtin_plugins" / library / "src" / f"kairox_{library}"
        private |= {f"kairox_{library}.{p.stem}" for p in package.glob("_*.py") if p.stem != "__init__"}
    ruff = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]["lint"]
    assert "TID251" in ruff["select"]
    assert set(ruff["flake8-tidy-imports"]["banned-api"]) == private


def _requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0].strip().lower().replace("-", "_") for r in requirements}


def test_a_feature_package_declares_every_package_it_imports() -> None:
    """A module-level import needs a dependency; a function-local one (an optional
    feature, its absence reported) needs at least an optional dependency (an extra)."""
    problems = []
    for pyproject in sorted([*ROOT.glob("builtin_plugins/*/pyproject.toml"), *ROOT.glob("contrib/*/pyproject.toml")]):
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        required = _requirement_names(project.get("dependencies", []))
        extras = set().union(*map(_requirement_names, project.get("optional-dependencies", {}).values()))
        src = pyproject.parent / "src"
        own = {p.name for p in src.iterdir() if p.is_dir()}
        for path in sorted(src.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            top_level = {id(node) for node in tree.body}
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    modules = [node.module]
                elif isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if not top.startswith("kairox_") or top in own:
                        continue
                    allowed = required if id(node) in top_level else required | extras
                    if top not in allowed:
                        problems.append(f"{path.relative_to(ROOT)}: imports {top}, not declared in {pyproject.name}")
    assert problems == []


def _distributions() -> dict[str, set[str]]:
    """Each distribution of the repository -> the repository's distributions it requires (extras included)."""
    projects = [
        tomllib.loads(p.read_text(encoding="utf-8"))["project"]
        for p in [
            ROOT / "kernel" / "pyproject.toml",
            *ROOT.glob("builtin_plugins/*/pyproject.toml"),
            *ROOT.glob("contrib/*/pyproject.toml"),
        ]
    ]
    names = {_requirement_names([p["name"]]).pop() for p in projects}
    graph = {}
    for project in projects:
        requirements = list(project.get("dependencies", []))
        for extra in project.get("optional-dependencies", {}).values():
            requirements += extra
        own = _requirement_names([project["name"]]).pop()
        graph[own] = (_requirement_names(requirements) & names) - {own}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One dependency cycle of ``graph`` (``[a, b, a]``), or ``[]``."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str]:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return []
        for required in sorted(graph.get(node, ())):
            found = visit(required, [*path, node])
            if found:
                return found
        done.add(node)
        return []

    for node in sorted(graph):
        found = visit(node, [])
        if found:
            return found
    return []


def test_no_distribution_depends_on_itself_through_others() -> None:
    """``kairox[all]`` requires every feature and the features require ``kairox``; that edge
    is an optional extra, so the kernel's extras are left out (it imports no feature)."""
    graph = _distributions()
    graph["kairox"] = set()
    assert _cycle(graph) == []


def test_the_cycle_check_sees_one() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_kairox_dap_builds_on_kairox_peer_not_on_kairox_lsp() -> None:
    graph = _distributions()
    assert "kairox_peer" in graph["kairox_dap"] and "kairox_peer" in graph["kairox_lsp"]
    assert "kairox_lsp" not in graph["kairox_dap"]
    assert graph["kairox_peer"] == {"kairox", "kairox_process"}, (
        "kairox-peer is the layer under both; it requires neither"
    )


# -- no object reaches into another's private state ----------------------------------------------

#: ``obj._name`` outside ``obj``'s class that stays, with why (the list only shrinks)
KNOWN_PRIVATE_REACHES: dict[tuple[str, str], str] = {
    ("builtin_plugins/process/src/kairox_process/_children.py", "self._stdin_closed._log_traceback"): (
        "the backport of CPython's fix (gh-109538) for 3.10-3.11: the Future whose traceback the fix silences"
    ),
    ("builtin_plugins/process/src/kairox_process/_children.py", "pipe_connection_lost._kairox_backport"): (
        "the backport's own marker"
    ),
}

#: what the check reads: the kernel, and kairox-process (the kernel's child-process layer before it moved out)
_REACH_CHECKED = (ROOT / "kernel" / "src" / "kairox", ROOT / "builtin_plugins" / "process" / "src" / "kairox_process")


def _private_reaches(path: Path) -> Iterator[tuple[int, str, str]]:
    """``(line, expression, enclosing class)`` for each ``x._name`` where ``x`` is not ``self``
    or ``cls`` and ``_name`` is not an attribute the enclosing class defines itself (a class
    may touch the private state of another instance of its own kind)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))

    def own_names(cls: ast.ClassDef) -> set[str]:
        names = set()
        for node in ast.walk(cls):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                names.add(node.attr)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.Assign):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        return names

    def visit(node: ast.AST, cls: ast.ClassDef | None, names: set[str]) -> Iterator[tuple[int, str, str]]:
        for child in ast.iter_child_nodes(node):
            inner, inner_names = cls, names
            if isinstance(child, ast.ClassDef):
                inner, inner_names = child, own_names(child)
            if isinstance(child, ast.Attribute) and child.attr.startswith("_") and not child.attr.startswith("__"):
                base = child.value
                mine = isinstance(base, ast.Name) and base.id in ("self", "cls")
                if not mine and child.attr not in inner_names:
                    yield child.lineno, ast.unparse(child), inner.name if inner else "<module>"
            yield from visit(child, inner, inner_names)

    yield from visit(tree, None, set())


def test_the_kernel_reaches_into_no_other_objects_private_state() -> None:
    found = []
    for path in sorted(p for root in _REACH_CHECKED for p in root.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        for line, expr, where in _private_reaches(path):
            if (rel, expr) not in KNOWN_PRIVATE_REACHES:
                found.append(f"{rel}:{line} in {where}: {expr}")
    assert found == [], "use or add a public method:\n" + "\n".join(found)


def test_every_known_private_reach_is_still_there() -> None:
    present = {
        (str(path.relative_to(ROOT)), expr)
        for path in sorted(p for root in _REACH_CHECKED for p in root.rglob("*.py"))
        for _line, expr, _where in _private_reaches(path)
    }
    assert sorted(set(KNOWN_PRIVATE_REACHES) - present) == []


def test_kairox_mcp_reaches_into_no_other_objects_private_state() -> None:
    """The MCP SDK's objects included: what the SDK offers no public way to do is named in
    kairox_mcp._compat (tests/mcp/test_compat.py pins it to the installed SDK)."""
    src = ROOT / "builtin_plugins" / "mcp" / "src" / "kairox_mcp"
    found = [
        f"{path.relative_to(ROOT)}:{line} in {where}: {expr}"
        for path in sorted(src.rglob("*.py"))
        if path.name != "_compat.py"
        for line, expr, where in _private_reaches(path)
    ]
    assert found == [], "use or add a public method:\n" + "\n".join(found)


def test_the_private_reach_check_sees_one(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "class A:\n"
        "    def __init__(self):\n"
        "        self._mine = 1\n"
        "    def same(self, other):\n"
        "        return other._mine\n"
        "    def across(self, registry):\n"
        "        return registry._entries\n"
        "def module_level(engine):\n"
        "    return engine._cache\n"
    )
    found = [(expr, where) for _line, expr, where in _private_reaches(sample)]
    assert found == [("registry._entries", "A"), ("engine._cache", "<module>")]


def test_no_kernel_module_is_longer_than_a_reader_holds() -> None:
    # one concern a module: a kernel module over 600 lines is split where its concerns part
    long = {
        str(p.relative_to(ROOT)): n
        for p in (ROOT / "kernel" / "src" / "kairox").rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert long == {}
