"""Fixtures for the kernel tests: fake installed distributions with real ``.dist-info`` dirs."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest


@attrs.define
class FakeSite:
    """A directory on ``sys.path`` holding fake distributions (``.dist-info`` + module)."""

    root: Path
    modules: list[str] = attrs.field(factory=list)

    def add(
        self,
        dist: str,
        *,
        version: str = "1.0",
        entry_points: dict[str, str],
        modules: dict[str, str] | None = None,
        group: str = "kairox",
        more_groups: dict[str, dict[str, str]] | None = None,
    ) -> Path:
        """Install ``dist`` with ``entry_points`` (name -> "module:attr") of ``group`` (and
        the entry points of ``more_groups``: group -> name -> "module:attr") and module sources."""
        info = self.root / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n", encoding="utf-8")
        lines: list[str] = []
        for each, points in {group: entry_points, **(more_groups or {})}.items():
            lines += [f"[{each}]", *(f"{name} = {target}" for name, target in points.items())]
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        for module, source in (modules or {}).items():
            (self.root / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
            self.modules.append(module)
        importlib.invalidate_caches()
        return info


@pytest.fixture
def fake_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSite]:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    site = FakeSite(root)
    yield site
    for module in site.modules:
        sys.modules.pop(module, None)
