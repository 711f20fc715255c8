"""Real, separate virtual environments built with uv from the local paths (for contrib/ tests)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).resolve().parents[2]


@attrs.frozen
class Venv:
    root: Path
    workspace: Path
    home: Path

    @property
    def bin(self) -> Path:
        return self.root / ("Scripts" if os.name == "nt" else "bin")

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KAIROX_", "VIRTUAL_ENV", "PYTHON"))}
        env["KAIROX_HOME"] = str(self.home)
        return env

    def run(self, program: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin / program), "--workspace", str(self.workspace), *args],
            capture_output=True,
            text=True,
            env={**self.env(), **(env or {})},
            timeout=120,
        )

    def python(self, code: str) -> str:
        out = subprocess.run(
            [str(self.bin / "python"), "-c", code], capture_output=True, text=True, env=self.env(), timeout=60
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()


def build_venv(root: Path, *packages: Path) -> None:
    uv = shutil.which("uv")
    assert uv, "uv is needed to build the test environment (the README installs it)"
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    # copies, not hard links to uv's cache: a new link changes the status-change time of
    # files the suite's own environment shares with the cache (its dist-info
    # entry_points.txt), which the entry point index fingerprints, so a test of the index
    # running at the same time (another xdist worker) would see "something was installed"
    env["UV_LINK_MODE"] = "copy"
    for cmd in (
        [uv, "venv", "--quiet", str(root), "--python", sys.executable],
        [uv, "pip", "install", "--quiet", "--python", str(root / "bin" / "python"), *map(str, packages)],
    ):
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        assert out.returncode == 0, f"{' '.join(cmd)}\n{out.stdout}\n{out.stderr}"


@pytest.fixture(scope="session")
def make_venv(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Venv]:
    """``make_venv("name", "kernel", "builtin_plugins/tools", ...)``: paths relative to the repository."""

    def make(name: str, *packages: str) -> Venv:
        base = tmp_path_factory.mktemp(name)
        build_venv(base / "venv", *(ROOT / p for p in packages))
        (base / "workspace").mkdir()
        (base / "home").mkdir()
        return Venv(base / "venv", base / "workspace", base / "home")

    return make


def clean_workspace(venv: Venv) -> None:
    for path in venv.workspace.iterdir():
        path.unlink() if path.is_file() else shutil.rmtree(path)


@pytest.fixture(scope="module")
def minimal(make_venv: Callable[..., Venv]) -> Venv:
    return make_venv("minimal", "kernel", "builtin_plugins/tools", "builtin_plugins/skills", "contrib/kairox-minimal")


@pytest.fixture(scope="module")
def example(make_venv: Callable[..., Venv]) -> Venv:
    return make_venv("example", "kernel", "contrib/kairox-example")


@pytest.fixture
def venv(minimal: Venv) -> Iterator[Venv]:
    yield minimal
    clean_workspace(minimal)
