"""Check a Kairox built-in plugin against the repository's plugin conventions.

Usage: python check_plugin.py builtin_plugins/<feature> [...]
Exits 1 when a rule is broken. See ../references/conventions.md.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

HEAVY = ("mcp", "httpx", "httpx2", "pydantic", "starlette")
MAX_LINES = 600


def _is_type_checking(node: ast.stmt) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def _is_hookimpl(node: ast.stmt) -> bool:
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    names = [d.id if isinstance(d, ast.Name) else getattr(d, "attr", "") for d in node.decorator_list]
    return "hookimpl" in names and node.name.startswith("kairox_")


DECLARE = ("adds", "command", "config_section")


def _is_declared(node: ast.stmt) -> bool:
    """``kairox_register_x = adds(...)`` (or ``config_section(...)``) from kairox.declare, or
    ``kairox_register_commands = command(...)`` from kairox_cli."""
    if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
        return False
    func = node.value.func
    called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    names = [t.id for t in node.targets if isinstance(t, ast.Name)]
    return called in DECLARE and len(names) == len(node.targets) and all(n.startswith("kairox_") for n in names)


def check_hooks(hooks: Path) -> list[str]:
    problems = []
    tree = ast.parse(hooks.read_text(encoding="utf-8"))
    for i, node in enumerate(tree.body):
        docstring = i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if docstring or isinstance(node, (ast.Import, ast.ImportFrom)) or _is_type_checking(node):
            continue
        if _is_hookimpl(node) or _is_declared(node):
            continue
        targets = [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
        what = getattr(node, "name", None) or ", ".join(targets) or type(node).__name__
        problems.append(
            f"error: {hooks}:{node.lineno}: {what} is not a @hookimpl kairox_* function (or a kairox.declare one)"
        )
    return problems


def check_imports(package: str, src: Path) -> list[str]:
    code = (
        f"import sys; sys.path.insert(0, {str(src)!r}); import {package}.hooks; "
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, start_new_session=True
    )
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["(no output)"]
        return [f"error: importing {package}.hooks failed: {tail[0]}"]
    heavy = proc.stdout.split()
    return [f"error: importing {package}.hooks imports {', '.join(heavy)}"] if heavy else []


def check_plugin(root: Path) -> list[str]:
    problems: list[str] = []
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return [f"error: {pyproject}: missing"]
    project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    entry_points = project.get("entry-points", {}).get("kairox", {})
    if len(entry_points) != 1:
        return [f"error: {pyproject}: expected one [project.entry-points.kairox] entry, found {len(entry_points)}"]
    feature, target = next(iter(entry_points.items()))
    package = f"kairox_{feature}"
    if target != f"{package}.hooks":
        problems.append(f"error: {pyproject}: entry point {feature} = {target!r}, expected {package}.hooks")
    src = root / "src"
    pkg_dir = src / package
    for required in ("hooks.py", "py.typed", "__init__.py"):
        if not (pkg_dir / required).is_file():
            problems.append(f"error: {pkg_dir / required}: missing")
    if (pkg_dir / "hooks.py").is_file():
        problems += check_hooks(pkg_dir / "hooks.py")
        problems += check_imports(package, src)
    for module in sorted(pkg_dir.rglob("*.py")):
        text = module.read_text(encoding="utf-8")
        if text.strip() and "from __future__ import annotations" not in text:
            problems.append(f"error: {module}: no `from __future__ import annotations`")
        lines = text.count("\n")
        if lines > MAX_LINES:
            problems.append(f"warning: {module}: {lines} lines (keep modules under ~{MAX_LINES})")
    return problems


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    failed = False
    for arg in argv:
        problems = check_plugin(Path(arg))
        for line in problems:
            print(line)
        failed |= any(p.startswith("error:") for p in problems)
        if not problems:
            print(f"ok: {arg}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
