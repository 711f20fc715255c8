"""What a team assembling its own kairox gets from the wheels (issue 18, items 1 and 3):
every distribution built from this repository (``uv build --all-packages``) carries the
licence and complete metadata, declares a kernel range, ``kairox[all]`` installs the whole
distribution, ``pip install kairox-mcp`` alone names the transport it lacks and
``kairox[mcp]`` brings the transports.

Real wheels (built once per change of the sources, tests/contrib/conftest.py), real virtual environments, a real MCP server process.
"""

from __future__ import annotations

import email.parser
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

import pytest

from contrib.conftest import run, uv_env, wheel_of

# the wheels (the session-scoped ``wheels`` of conftest.py) are built once per change of the sources
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheels")]

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "mcp_servers"
PACKAGES = sorted(
    re.search(r'^name = "([^"]+)"', (p.parent / "pyproject.toml").read_text(), re.M).group(1)  # type: ignore[union-attr]
    for p in [
        *ROOT.glob("kernel/pyproject.toml"),
        *ROOT.glob("builtin_plugins/*/pyproject.toml"),
        *ROOT.glob("contrib/*/pyproject.toml"),
    ]
)
# plugin packages: the built-ins with a ``kairox`` entry point (kairox-peer is a library under kairox-lsp and kairox-dap)
PLUGINS = sorted(
    project["name"]
    for project in (tomllib.loads(p.read_text())["project"] for p in ROOT.glob("builtin_plugins/*/pyproject.toml"))
    if "kairox" in project.get("entry-points", {})
)


def metadata(wheel: Path) -> tuple[email.message.Message, list[str]]:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        [meta] = [n for n in names if n.endswith(".dist-info/METADATA")]
        return email.parser.Parser().parsestr(zf.read(meta).decode()), names


def test_every_distribution_is_built(wheels: Path) -> None:
    assert sorted(w.name.split("-")[0].replace("_", "-") for w in wheels.glob("*.whl")) == PACKAGES


@pytest.mark.parametrize("package", PACKAGES)
def test_each_wheel_carries_the_licence_and_complete_metadata(wheels: Path, package: str) -> None:
    meta, names = metadata(wheel_of(wheels, package))
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]
    licence = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    assert licence, names
    with zipfile.ZipFile(wheel_of(wheels, package)) as zf:
        assert zf.read(licence[0]).decode().startswith("MIT License")
    assert meta["Author"] or meta["Author-email"]
    classifiers = meta.get_all("Classifier") or []
    for version in ("3.10", "3.11", "3.12", "3.13"):
        assert f"Programming Language :: Python :: {version}" in classifiers
    assert "Typing :: Typed" in classifiers
    # a real README, not a pointer elsewhere
    assert meta["Description-Content-Type"] == "text/markdown"
    assert len(meta.get_payload()) > 200 and "See the repository README" not in meta.get_payload()
    # every dependency on a kairox package (the kernel included) has a range with an upper bound
    for requirement in meta.get_all("Requires-Dist") or []:
        name = re.match(r"[A-Za-z0-9._-]+", requirement).group(0)  # type: ignore[union-attr]
        if name.startswith("kairox") and "extra ==" not in requirement:
            assert ">=0.1" in requirement and "<0.2" in requirement, f"{package}: {requirement}"


@pytest.fixture(scope="module")
def everything(wheels: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    uv = shutil.which("uv")
    assert uv
    venv = tmp_path_factory.mktemp("all") / "venv"
    run([uv, "venv", "--quiet", str(venv), "--python", sys.executable], env=uv_env())
    run(
        [
            uv,
            "pip",
            "install",
            "--quiet",
            "--python",
            str(venv / "bin" / "python"),
            "--find-links",
            str(wheels),
            "kairox[all]",
        ],
        env=uv_env(),
    )
    yield venv


def clean_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAIROX_", "VIRTUAL_ENV", "PYTHON"))}
    env["KAIROX_HOME"] = str(tmp / "home")
    env["PATH"] = "/usr/bin:/bin"  # not activated: kairox finds its own bin/ for the servers it starts
    return env


def test_kairox_all_installs_every_plugin_package(everything: Path, tmp_path: Path) -> None:
    out = run([str(everything / "bin" / "kairox"), "--json", "-v", "--version"], env=clean_env(tmp_path))
    versions = json.loads(out.stdout)
    assert sorted(versions["plugin_packages"]) == PLUGINS
    plugins = json.loads(
        run([str(everything / "bin" / "kairox"), "--json", "plugins"], env=clean_env(tmp_path), cwd=tmp_path).stdout
    )
    assert plugins["failures"] == []
    assert sorted({p["distribution"] for p in plugins["plugins"]}) == PLUGINS


def test_kairox_mcp_alone_names_the_transport_and_kairox_mcp_extra_brings_it(wheels: Path, tmp_path: Path) -> None:
    """With plain ``python -m venv`` and pip, as a team without uv would. ``kairox-mcp`` alone
    brings no transport (each transport depends on it, not the other way round): a stdio
    server fails, naming the distribution to install; ``kairox[mcp]`` installs the client
    with its three transports, and the server starts."""
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)])

    def pip_install(*requirements: str) -> None:
        run(
            [
                str(venv / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-compile",  # the CLI runs below compile what they import; pip would compile all
                "--find-links",
                str(wheels),
                *requirements,
            ],
            env={**os.environ, "PIP_NO_INPUT": "1"},
        )

    def plugins() -> set[str]:
        out = run([str(venv / "bin" / "kairox"), "--json", "plugins"], env=clean_env(tmp_path), cwd=tmp_path)
        return {p["name"] for p in json.loads(out.stdout)["plugins"]}

    pip_install("kairox-mcp")
    home = tmp_path / "home"
    home.mkdir()
    server = [str(venv / "bin" / "python"), str(FIXTURES / "well_behaved.py")]
    (home / "kairox.toml").write_text(
        f"[mcp_servers.echo]\ncommand = {json.dumps(server[0])}\nargs = [{json.dumps(server[1])}]\n"
    )
    assert plugins() == {"mcp"}
    status = subprocess.run(
        [str(venv / "bin" / "kairox"), "status"],
        capture_output=True,
        text=True,
        timeout=300,
        env=clean_env(tmp_path),
        cwd=tmp_path,
        check=False,
    )
    assert status.returncode == 1, status.stdout + status.stderr
    assert (
        'transport "stdio" is provided by kairox-stdio, which is not installed (pip install kairox-stdio)'
        in status.stdout
    ), status.stdout + status.stderr
    pip_install("kairox[mcp]")
    assert plugins() == {"mcp", "stdio", "sse", "streamable_http"}
    called = run(
        [
            str(venv / "bin" / "kairox"),
            "tools",
            "call",
            "echo.echo",
            "--args",
            '{"message": "from a pip install"}',
            "--yes",
        ],
        env=clean_env(tmp_path),
        cwd=tmp_path,
    )
    assert "from a pip install" in called.stdout
