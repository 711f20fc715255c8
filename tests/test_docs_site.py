"""The documentation site builds with no warning, and its API reference covers every public name.

mkdocs.yml makes docs/*.md the site's pages and docs/reference/ the API reference, which
mkdocstrings generates from the docstrings. ``mkdocs build --strict`` fails on any warning:
a link to a page or heading that does not exist, a page left out of the nav, and griffe's
complaints about a docstring (a ``:param x:`` for a parameter the function does not have).
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import griffe
import pytest

ROOT = Path(__file__).resolve().parents[1]
#: each public module and its page under docs/reference/
PAGES = {
    "kairox": "kairox",
    "kairox.hosts": "hosts",
    "kairox.files": "files",
    "kairox.protocols": "protocols",
    "kairox.declare": "declare",
    "kairox.hookspecs": "hookspecs",
    "kairox.errors": "errors",
    "kairox_testing": "kairox_testing",
    "kairox_cli": "kairox_cli",
    "kairox_process": "kairox_process",
}
SOURCES = ["kernel/src", "builtin_plugins/cli/src", "builtin_plugins/process/src", "builtin_plugins/testing/src"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    warnings = [line for line in build.stderr.splitlines() if not line.startswith("INFO")]
    assert build.returncode == 0, "\n".join(warnings) or build.stderr[-5000:]
    assert not warnings, "\n".join(warnings)
    return out


def test_every_public_name_has_its_entry_in_the_reference(site: Path) -> None:
    for module, page in PAGES.items():
        html = (site / "reference" / page / "index.html").read_text(encoding="utf-8")
        anchors = set(re.findall(r'id="([\w.]+)"', html))
        missing = [name for name in importlib.import_module(module).__all__ if f"{module}.{name}" not in anchors]
        assert not missing, f"docs/reference/{page}.md lacks {module}: {missing}"


def test_every_public_name_has_a_docstring() -> None:
    """What the reference shows of a name is its docstring (``#:`` comments for attributes,
    as mkdocs.yml's griffe extensions read them)."""
    extensions = griffe.load_extensions("griffe_public_redundant_aliases", "griffe_sphinx")
    loader = griffe.GriffeLoader(search_paths=[ROOT / s for s in SOURCES], extensions=extensions)
    for package in {module.split(".")[0] for module in PAGES}:
        loader.load(package)
    loader.resolve_aliases(implicit=True, external=None)
    undocumented = []
    for module in PAGES:
        members = loader.modules_collection[module].members
        for name in importlib.import_module(module).__all__:
            obj = members[name]
            if not (obj.final_target if obj.is_alias else obj).docstring:
                undocumented.append(f"{module}.{name}")
    assert not undocumented, f"public names without a docstring: {undocumented}"
