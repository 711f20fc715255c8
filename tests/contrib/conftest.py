"""Real, separate virtual environments (for contrib/ tests) with the wheels of this repository:
``uv build --all-packages`` and each example distribution left out of the workspace
(``contrib/kairox-minimal``) once per change of the sources (cached in ``peers.cache_dir()``),
installed with uv from its cache."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]
import peers
import pytest

ROOT = Path(__file__).resolve().parents[2]
#: packages of the repository that are not workspace members (installed in the development
#: environment, a distribution would narrow it to its plugin set): built on their own
OUTSIDE_WORKSPACE = tuple(
    ROOT / p for p in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]["workspace"]["exclude"]
)
#: the distributions of contrib/kairox-minimal (kairox-process: the library kairox-tools runs its commands with)
MINIMAL = ("kairox", "kairox-cli", "kairox-process", "kairox-tools", "kairox-skills", "kairox-minimal")


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


#: the directories the wheels are built from (the workspace members and :data:`OUTSIDE_WORKSPACE`)
PACKAGE_DIRS = sorted(
    p.parent
    for p in [
        *ROOT.glob("kernel/pyproject.toml"),
        *ROOT.glob("builtin_plugins/*/pyproject.toml"),
        *ROOT.glob("contrib/*/pyproject.toml"),
    ]
)
_NOT_SOURCES = {
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    "node_modules",
    "dist",
    "build",
}


def uv_env() -> dict[str, str]:
    """The environment of the ``uv`` commands: not the suite's own virtual environment, and
    copies, not hard links to uv's cache: a new link changes the status-change time of
    files the suite's own environment shares with the cache (its dist-info
    entry_points.txt), which the entry point index fingerprints, so a test of the index
    running at the same time (another xdist worker) would see "something was installed"."""
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["UV_LINK_MODE"] = "copy"
    return env


def run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)
    assert out.returncode == 0, f"{' '.join(cmd)}\n{out.stdout}\n{out.stderr}"
    return out


def _uv() -> str:
    uv = shutil.which("uv")
    assert uv, "uv is needed to build the wheels and the test environments (the README installs it)"
    return uv


def sources_digest(uv: str) -> str:
    """A hash of everything the wheels are built from: every file of every workspace member
    (caches left out), the root pyproject.toml and the version of uv."""
    digest = hashlib.sha256(run([uv, "--version"]).stdout.encode())
    digest.update((ROOT / "pyproject.toml").read_bytes())
    for package in PACKAGE_DIRS:
        for path in sorted(package.rglob("*")):
            rel = path.relative_to(ROOT)
            skipped = _NOT_SOURCES & set(rel.parts) or any(part.endswith(".egg-info") for part in rel.parts)
            if path.is_file() and not skipped and path.suffix != ".pyc":
                digest.update(rel.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:24]


def build_wheels(cache: Path) -> Path:
    """``uv build --all-packages --wheel`` (and ``uv build --wheel`` of each package of
    :data:`OUTSIDE_WORKSPACE`) into ``cache/wheels-<digest of the sources>``, once
    for as long as the sources stay the same (every xdist worker of a run, and later runs);
    a file lock makes the other workers wait for the one that builds."""
    uv = _uv()
    target = cache / f"wheels-{sources_digest(uv)}"
    with open(cache / "wheels.lock", "w") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.is_dir():
            for old in cache.glob("wheels-*"):  # builds of other sources, a day old (not another run's)
                if time.time() - old.stat().st_mtime > 86400:
                    shutil.rmtree(old, ignore_errors=True)
            partial = Path(tempfile.mkdtemp(prefix="partial-", dir=cache))
            command = [uv, "build", "--wheel", "--quiet", "--out-dir", str(partial)]
            try:
                run([*command, "--all-packages"], cwd=ROOT, env=uv_env())
                for package in OUTSIDE_WORKSPACE:
                    run([*command, str(package)], cwd=ROOT, env=uv_env())
                partial.rename(target)
            except OSError:  # without a file lock (no fcntl) another worker may have been first
                pass
            finally:
                shutil.rmtree(partial, ignore_errors=True)
    return target


def wheel_of(wheels: Path, package: str) -> Path:
    """The wheel of the distribution ``package`` (``kairox-mcp``)."""
    [found] = wheels.glob(f"{package.replace('-', '_')}-*.whl")
    return found


@pytest.fixture(scope="session")
def wheels() -> Path:
    """The directory of the wheels of every distribution of the repository (built once, cached)."""
    return build_wheels(peers.cache_dir())


def build_venv(root: Path, wheels: Path, *packages: str) -> None:
    """A virtual environment at ``root`` with the wheels of ``packages`` (names of
    distributions) and their dependencies, from uv's cache."""
    uv = _uv()
    run([uv, "venv", "--quiet", str(root), "--python", sys.executable], env=uv_env())
    files = [str(wheel_of(wheels, p)) for p in packages]
    run([uv, "pip", "install", "--quiet", "--python", str(root / "bin" / "python"), *files], env=uv_env())


@pytest.fixture(scope="session")
def make_venv(tmp_path_factory: pytest.TempPathFactory, wheels: Path) -> Callable[..., Venv]:
    """``make_venv("name", "kairox", "kairox-tools", ...)``: distributions of the repository."""

    def make(name: str, *packages: str) -> Venv:
        base = tmp_path_factory.mktemp(name)
        build_venv(base / "venv", wheels, *packages)
        (base / "workspace").mkdir()
        (base / "home").mkdir()
        return Venv(base / "venv", base / "workspace", base / "home")

    return make


def clean_workspace(venv: Venv) -> None:
    for path in venv.workspace.iterdir():
        path.unlink() if path.is_file() else shutil.rmtree(path)


@pytest.fixture(scope="module")
def minimal(make_venv: Callable[..., Venv]) -> Venv:
    return make_venv("minimal", *MINIMAL)


@pytest.fixture(scope="module")
def example(make_venv: Callable[..., Venv]) -> Venv:
    return make_venv("example", "kairox", "kairox-cli", "kairox-process", "kairox-example")


@pytest.fixture
def venv(minimal: Venv) -> Iterator[Venv]:
    yield minimal
    clean_workspace(minimal)
